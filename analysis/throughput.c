/* throughput.c - reference-format logs into per-run summaries (see throughput.h). */
#include "analysis/throughput.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dt_parse.h"
#include "formats/log_lines.h"

/* Where a log's reader stands: the headings above the current line. */
struct heading_state {
    char levels[6][128];
    int depth;            /* of the current heading, 1..6; 0 before the first */
    int written_depth;    /* as the author wrote it */
    int run_depth;        /* of the last run heading in this section; 0 when none yet */
    char path[400];       /* "ResNet18-2080ti / lm6-120.7" */
};

/* What dtrain's own job output says of its run, in lines the reference experiments' logs lack: the sbatch
 * template's "dtrain.sbatch: job 12 on gn[01-02], restart 0, 2 nodes x 4 GPUs per node, 8 ranks"
 * and dtrain-train's "dtrain-train: model lenet (61706 parameters), ..., batch 64 x 8 ranks (mpi)". */
struct job_facts {
    char model[64], nodelist[32];
    int ranks;
};

/* Takes what a line says into facts; other lines leave it. srun's "0: " label may come first. */
static void read_job_facts(const char *line, struct job_facts *facts)
{
    const char *at;
    if ((at = strstr(line, "dtrain-train: model ")) != NULL) {
        at += strlen("dtrain-train: model ");
        snprintf(facts->model, sizeof facts->model, "%.*s", (int)strcspn(at, " (,\n"), at);
        const char *batch = strstr(at, ", batch ");
        int size, ranks;
        if (batch && sscanf(batch, ", batch %d x %d rank", &size, &ranks) == 2 && ranks > 0)
            facts->ranks = ranks;
    } else if ((at = strstr(line, "dtrain.sbatch: job ")) != NULL && (at = strstr(at, " on ")) != NULL) {
        at += 4;
        snprintf(facts->nodelist, sizeof facts->nodelist, "%.*s", (int)strcspn(at, ", \n"), at);
        const char *shape = strstr(at, "GPUs per node, ");
        int ranks;
        if (shape && sscanf(shape, "GPUs per node, %d ranks", &ranks) == 1 && ranks > 0)
            facts->ranks = ranks;
    }
}

/* A run under no heading that names it (a job's output) is named by its job's facts. */
static void apply_job_facts(const struct job_facts *facts, const struct heading_state *h, struct run_identity *id)
{
    if (!id->model[0] && facts->model[0])
        snprintf(id->model, sizeof id->model, "%s", facts->model);
    if (h->depth > 0 || facts->ranks == 0)
        return;
    id->gpus = facts->ranks;
    if (facts->nodelist[0]) {
        snprintf(id->node[0], sizeof id->node[0], "%s", facts->nodelist);
        id->node_count = 1, id->node_gpus[0] = facts->ranks;
    }
}

/* Room for `more` runs in set. 0, or -1 out of memory. */
static int grow_runs(struct log_runs *set, int more)
{
    if (set->count + more <= set->cap)
        return 0;
    int cap = set->cap ? set->cap : 32;
    while (cap < set->count + more)
        cap *= 2;
    struct log_run *grown = realloc(set->runs, (size_t)cap * sizeof *grown);
    if (!grown)
        return -1;
    set->runs = grown, set->cap = cap;
    return 0;
}

int throughput_take(struct log_runs *into, struct log_runs *from)
{
    if (grow_runs(into, from->count) < 0)
        return -1;
    memcpy(into->runs + into->count, from->runs, (size_t)from->count * sizeof *from->runs);
    into->count += from->count;
    from->count = 0;
    return 0;
}

static struct log_run *open_run(struct log_runs *set, const char *source, int line, const struct heading_state *h,
                                const struct job_facts *facts)
{
    if (grow_runs(set, 1) < 0)
        return NULL;
    struct log_run *r = &set->runs[set->count++];
    *r = (struct log_run){.line = line, .final_accuracy = NAN, .heading_level = h->written_depth, .read_level = h->depth,
                          .fingerprint = 14695981039346656037ULL, .speedup = NAN, .efficiency = NAN};
    snprintf(r->source, sizeof r->source, "%s", source);
    snprintf(r->heading, sizeof r->heading, "%s", h->path);
    snprintf(r->title, sizeof r->title, "%s", h->depth ? h->levels[h->depth - 1] : "");
    runid_from_headings((const char(*)[128])h->levels, &r->id);
    apply_job_facts(facts, h, &r->id);
    return r;
}

/* The run's name is the path of headings above it ("ResNet18-2080ti / lm6-120.7"): a reference experiments'
 * notebook names the model in one level and the node in the next. A run heading written at the
 * level of the model headings above it ("## lm1-41.9" after "### lm6-60.44") would replace its
 * model; it is read at its siblings' level, and heading_level keeps what was written. */
static void enter_heading(const char *line, struct heading_state *h)
{
    size_t depth = strspn(line, "#");
    line += depth;
    line += strspn(line, " \t");
    size_t n = strcspn(line, "\r\n");
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    depth = depth > 6 ? 6 : depth;
    char text[128];
    snprintf(text, sizeof text, "%.*s", (int)n, line);
    h->written_depth = (int)depth;
    if (depth == 1)
        h->run_depth = 0;
    bool is_run = runid_is_run_heading(text);
    if (is_run && h->run_depth > (int)depth && h->levels[depth - 1][0] && !runid_is_run_heading(h->levels[depth - 1]))
        depth = (size_t)h->run_depth;
    if (is_run)
        h->run_depth = (int)depth;
    snprintf(h->levels[depth - 1], 128, "%s", text);
    for (size_t d = depth; d < 6; d++)
        h->levels[d][0] = '\0';
    h->depth = (int)depth;
    size_t used = 0;
    h->path[0] = '\0';
    for (size_t d = 0; d < 6 && used < sizeof h->path; d++)
        if (h->levels[d][0])
            used += (size_t)snprintf(h->path + used, sizeof h->path - used, "%s%s", used ? " / " : "", h->levels[d]);
}

static void fingerprint_add(uint64_t *hash, const void *bytes, size_t size)
{
    for (size_t i = 0; i < size; i++)
        *hash = (*hash ^ ((const unsigned char *)bytes)[i]) * 1099511628211ULL;
}

static void add_line(struct log_run *run, const struct log_lines_line *l)
{
    if (l->kind == SEEDLOG_STEP) {
        run->steps_logged++;
        run->peak_data_per_sec = fmax(run->peak_data_per_sec, l->data_per_sec);
        fingerprint_add(&run->fingerprint, &l->step, sizeof l->step);
        fingerprint_add(&run->fingerprint, &l->data_per_sec, sizeof l->data_per_sec);
        return;
    }
    run->epochs++;
    if (!isnan(l->accuracy))
        run->final_accuracy = l->accuracy;
    double numbers[] = {l->epoch, l->train_sec, l->test_sec, isnan(l->accuracy) ? -1 : l->accuracy};
    fingerprint_add(&run->fingerprint, numbers, sizeof numbers);
}

int throughput_read(FILE *in, const char *source, struct log_runs *set, struct dt_err *err)
{
    struct heading_state headings = {0};
    char *text = NULL;
    size_t size = 0;
    int number = 0, heading_line = 0;
    struct log_run *run = NULL;   /* the run the current lines belong to */
    struct job_facts facts = {0};
    while (getline(&text, &size, in) > 0) {
        number++;
        if (text[0] == '#') {
            enter_heading(text, &headings);
            heading_line = number;
            run = NULL;
            continue;
        }
        struct log_lines_line l;
        if (log_lines_parse(text, &l) == SEEDLOG_OTHER) {
            read_job_facts(text, &facts);
            continue;
        }
        if (!run && !(run = open_run(set, source, heading_line ? heading_line : number, &headings, &facts))) {
            free(text);
            return dt_fail(err, "%s: out of memory", source);
        }
        add_line(run, &l);
    }
    free(text);
    if (ferror(in))   /* a read error is not the end of the log: what follows it is not read */
        return dt_fail(err, "%s: a read error after line %d (%s): the runs after it are not read", source, number,
                       strerror(errno));
    return 0;
}

const struct log_run *throughput_one_gpu_run(const struct log_runs *set, const struct log_run *of, const char *node)
{
    const struct log_run *elsewhere = NULL;
    for (int i = 0; i < set->count; i++) {
        const struct log_run *r = &set->runs[i];
        bool same_node = node ? r->id.node_count == 1 && strcmp(r->id.node[0], node) == 0 : r->id.node_count == 0;
        if (r->id.gpus == 1 && r->steps_logged > 0 && strcmp(r->id.model, of->id.model) == 0 && same_node) {
            if (strcmp(r->source, of->source) == 0)
                return r;
            if (!elsewhere)
                elsewhere = r;
        }
    }
    return elsewhere;
}

void throughput_baselines(struct log_runs *set)
{
    for (int i = 0; i < set->count; i++) {
        struct log_run *r = &set->runs[i];
        r->baseline = r->id.node_count == 0 && r->id.model[0] ? throughput_one_gpu_run(set, r, NULL) : NULL;
        for (int n = 0; n < r->id.node_count; n++) {
            const struct log_run *b = throughput_one_gpu_run(set, r, r->id.node[n]);
            if (!b) {   /* a node without a baseline leaves the mix without one */
                r->baseline = NULL;
                break;
            }
            if (!r->baseline || b->peak_data_per_sec < r->baseline->peak_data_per_sec)
                r->baseline = b;
        }
        if (r->baseline && r->baseline->peak_data_per_sec > 0 && r->steps_logged > 0) {
            r->speedup = r->peak_data_per_sec / r->baseline->peak_data_per_sec;
            r->efficiency = r->speedup / r->id.gpus;
        }
    }
}

/* The heading's figure, as printed, and whether it is the peak to its precision: "241.8, not the
 * peak" when it is not. */
static void headline_cell(const struct log_run *r, char *out, int size)
{
    char figure[32];
    runid_headline(r->title, figure, sizeof figure);
    if (!figure[0] || r->steps_logged == 0) {
        snprintf(out, (size_t)size, "-");
        return;
    }
    double half_unit = dt_last_digit_unit(figure, strlen(figure)) / 2;
    bool is_peak = fabs(strtod(figure, NULL) - r->peak_data_per_sec) <= half_unit + 1e-9;
    snprintf(out, (size_t)size, "%s%s", figure, is_peak ? "" : ", not the peak");
}

void throughput_print(FILE *out, const struct log_runs *set, bool csv)
{
    if (csv)   /* numbers as numbers: no "x" or "%", empty for none */
        fputs("Log,Line,Run,Model,Node(s),GPUs,Steps logged,Peak data/sec,Headline,Headline is peak,Speedup,"
              "Efficiency,Epochs,Final accuracy\n", out);
    else
        fputs("| Log | Run | Model | Node(s) | GPUs | Steps logged | Peak data/sec | Headline | Speedup | Efficiency | "
              "Epochs | Final accuracy |\n"
              "|-----|-----|-------|---------|------|--------------|---------------|----------|---------|------------|"
              "--------|----------------|\n",
              out);
    for (int i = 0; i < set->count; i++) {
        const struct log_run *r = &set->runs[i];
        char accuracy[32] = "-", speedup[32] = "-", efficiency[32] = "-", nodes[128], headline[64];
        headline_cell(r, headline, sizeof headline);
        runid_nodes(&r->id, nodes, sizeof nodes);
        if (csv) {
            char figure[32];
            runid_headline(r->title, figure, sizeof figure);
            fprintf(out, "\"%s\",%d,\"%s\",\"%s\",\"%s\",%d,%d,%.2f,%s,%s,", r->source, r->line, r->heading,
                    r->id.model, nodes, r->id.gpus, r->steps_logged, r->peak_data_per_sec, figure,
                    !figure[0] ? "" : strstr(headline, "not the peak") ? "no" : "yes");
            isnan(r->speedup) ? fputs(",,", out) : fprintf(out, "%.4f,%.4f,", r->speedup, r->efficiency);
            fprintf(out, "%d,", r->epochs);
            isnan(r->final_accuracy) ? fputc('\n', out) : fprintf(out, "%.4f\n", r->final_accuracy);
            continue;
        }
        if (!isnan(r->final_accuracy))
            snprintf(accuracy, sizeof accuracy, "%.4f", r->final_accuracy);
        if (!isnan(r->speedup)) {
            snprintf(speedup, sizeof speedup, "%.2fx", r->speedup);
            snprintf(efficiency, sizeof efficiency, "%.1f%%", 100 * r->efficiency);
        }
        fprintf(out, "| %s:%d | %s | %s | %s | %d | %d | %.2f | %s | %s | %s | %d | %s |\n", r->source, r->line,
                r->heading[0] ? r->heading : "-", r->id.model[0] ? r->id.model : "-", nodes, r->id.gpus,
                r->steps_logged, r->peak_data_per_sec, headline, speedup, efficiency, r->epochs, accuracy);
    }
}
