/* audit.c - what does not add up in a hand-made result table (see audit.h). */
#include "analysis/audit.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dt_parse.h"
#include "common/duration.h"
#include "analysis/experiment.h"
#include "common/hostlist.h"
#include "analysis/stats.h"
#include "formats/table_columns.h"


int audit_add(struct audit *a, int line, const char *fmt, ...)
{
    struct finding *bigger = realloc(a->items, (size_t)(a->count + 1) * sizeof *bigger);
    if (!bigger)
        return -1;
    a->items = bigger;
    struct finding *f = &a->items[a->count++];
    f->line = line;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->text, sizeof f->text, fmt, ap);
    va_end(ap);
    return 0;
}

void audit_free(struct audit *a)
{
    free(a->items);
    a->items = NULL;
    a->count = 0;
}

static const char *plural_of(int n, const char *word)
{
    static char buf[4][32];
    static int next;
    char *out = buf[next++ % 4];
    snprintf(out, sizeof buf[0], "%d %s%s", n, word, n == 1 ? "" : "s");
    return out;
}

/* The runs an Avg row summarises: the rows above it of its configuration, back to the previous
 * Avg row. Writes their indices; returns how many. */
static int runs_of(const struct result_table *t, int avg, int *runs)
{
    int n = 0;
    for (int i = avg - 1; i >= 0 && !t->rows[i].avg; i--)
        if (t->rows[i].nodes == t->rows[avg].nodes && t->rows[i].gpus == t->rows[avg].gpus)
            runs[n++] = i;
    return n;
}

/* The line of a run of the Avg row's configuration above it that could not be read, or 0. */
static int unread_run_of(const struct result_table *t, int avg)
{
    const struct result_row *a = &t->rows[avg];
    int first = 0;   /* the runs it summarises start after the previous Avg row */
    for (int i = avg - 1; i >= 0 && !first; i--)
        first = t->rows[i].avg ? t->rows[i].line : 0;
    for (int u = 0; u < t->unread_count; u++)
        if (t->unread[u].nodes == a->nodes && t->unread[u].gpus == a->gpus && t->unread[u].line > first &&
            t->unread[u].line < a->line)
            return t->unread[u].line;
    return 0;
}

static int check_average(const struct result_table *t, int avg, struct audit *out)
{
    int runs[4096], unread = unread_run_of(t, avg);
    if (unread)   /* an average of the rest would be no check of it */
        return audit_add(out, t->rows[avg].line, "Avg of %s x %s not checked: its run on line %d could not be read",
                   plural_of(t->rows[avg].nodes, "node"), plural_of(t->rows[avg].gpus, "GPU"), unread);
    int n = runs_of(t, avg, runs);
    if (n == 0)
        return 0;
    double times[4096];
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += times[i] = t->rows[runs[i]].runtime;
    double mean = sum / n, median = stats_sort_median(times, n);   /* sorted: the trimmed means below need it */
    double given = t->rows[avg].runtime;
    double unit = t->rows[avg].runtime_unit;   /* the runs are rounded too */
    bool matches = fabs(given - mean) <= unit || fabs(given - median) <= unit;
    for (int k = 1; 2 * k < n && !matches; k++) {   /* drop the k fastest and k slowest */
        double trimmed = 0;
        for (int i = k; i < n - k; i++)
            trimmed += times[i];
        matches = fabs(given - trimmed / (n - 2 * k)) <= unit;
    }
    if (matches)
        return 0;
    char m[32], md[32];
    int decimals = dt_decimals(t->rows[avg].runtime_text, strlen(t->rows[avg].runtime_text));
    decimals = decimals > 3 ? 3 : decimals;   /* as far as duration_format goes */
    duration_format(mean, decimals, m);
    duration_format(median, decimals, md);
    return audit_add(out, t->rows[avg].line,
               "Avg runtime %s of %s x %s is not the mean of its %d runs (%s), nor their median (%s) or any trimmed "
               "mean", t->rows[avg].runtime_text, plural_of(t->rows[avg].nodes, "node"), plural_of(t->rows[avg].gpus, "GPU"),
               n, m, md);
}

/* Half a unit in the last place the speedup was printed with ("1.6": 0.05, "3.58": 0.005). */
static double printed_tolerance(double value)
{
    for (int decimals = 0; decimals < 6; decimals++) {
        double scale = pow(10, decimals);
        if (fabs(value * scale - round(value * scale)) < 1e-6)
            return 0.5 / scale + 1e-9;
    }
    return 5e-7;
}

/* The samples a row's configuration trained: Steps (per rank, as the reference experiments count them) x Batchsize x
 * GPUs in all. */
static double samples_of(const struct result_row *r)
{
    return (double)r->steps * r->batch * r->nodes * r->gpus;
}


/* Whether speedup (printed as it is) is ratio, both runtimes having been rounded as printed. */
static bool speedup_follows(double speedup, double ratio, const struct result_row *base, const struct result_row *r)
{
    double runtime_error = ratio * (0.5 * base->runtime_unit / base->runtime + 0.5 * r->runtime_unit / r->runtime);
    return fabs(speedup - ratio) <= printed_tolerance(speedup) + runtime_error;
}

static bool table_has_avg(const struct result_table *t)
{
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].avg)
            return true;
    return false;
}

/* The table's baseline row: the 1 x 1 Avg row, or the 1 x 1 run where the table has no Avg rows;
 * a table that starts elsewhere (1 x 4), the row it gives a speedup of 1; NULL without one. */
static const struct result_row *table_baseline(const struct result_table *t)
{
    bool has_avg = table_has_avg(t);
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].nodes == 1 && t->rows[i].gpus == 1 && t->rows[i].avg == has_avg)
            return &t->rows[i];
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].avg == has_avg && fabs(t->rows[i].speedup - 1) <= t->rows[i].speedup_unit / 2 + 1e-9)
            return &t->rows[i];
    return NULL;
}

/* A speedup is the runtime ratio when the configurations trained the same samples, and the ratio of
 * samples/s when they did not (a fixed number of steps at every job size). Where the title names
 * the dataset, its epochs say the work was the same and check_counts judges the Steps cells. */
static int check_speedups(const struct result_table *t, struct audit *out)
{
    bool has_avg = table_has_avg(t);
    const struct result_row *base = table_baseline(t);
    if (!base)
        return 0;
    for (int i = 0; i < t->count; i++) {
        const struct result_row *r = &t->rows[i];
        if (isnan(r->speedup) || r->avg != has_avg || r->runtime <= 0)
            continue;
        double by_time = base->runtime / r->runtime;
        double by_rate = samples_of(base) > 0 ? (samples_of(r) / r->runtime) / (samples_of(base) / base->runtime) : by_time;
        bool same_work = audit_dataset_size(t->title) > 0 ||
                         experiment_work_agrees(fmin(samples_of(r), samples_of(base)), fmax(samples_of(r), samples_of(base)));
        if (same_work ? speedup_follows(r->speedup, by_time, base, r) : speedup_follows(r->speedup, by_rate, base, r))
            continue;
        int rc;
        if (same_work)
            rc = audit_add(out, r->line, "speedup %g of %s x %s does not follow from the runtimes: %s / %s = %.2f", r->speedup,
                     plural_of(r->nodes, "node"), plural_of(r->gpus, "GPU"), base->runtime_text, r->runtime_text, by_time);
        else if (speedup_follows(r->speedup, by_time, base, r))
            rc = audit_add(out, r->line, "speedup %g of %s x %s is a runtime ratio, but the runs did not train the same "
                     "samples (%.0f at %d x %d, %.0f here: Steps x Batchsize x GPUs); by samples/s it is %.2f",
                     r->speedup, plural_of(r->nodes, "node"), plural_of(r->gpus, "GPU"), samples_of(base), base->nodes,
                     base->gpus, samples_of(r), by_rate);
        else
            rc = audit_add(out, r->line, "speedup %g of %s x %s does not follow from samples/s (the runs did not train the "
                     "same samples): %.2f", r->speedup, plural_of(r->nodes, "node"), plural_of(r->gpus, "GPU"), by_rate);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int check_nodelist(const struct result_row *r, struct audit *out)
{
    struct hostlist hosts;
    hostlist_init(&hosts);
    struct dt_err err;
    int rc = 0;
    if (hostlist_expand(r->nodelist, &hosts, &err) < 0)
        rc = audit_add(out, r->line, "node list is malformed: %s", err.msg);
    else if ((int)hosts.count != r->nodes)
        rc = audit_add(out, r->line, "%s, but the node list %s names %zu", plural_of(r->nodes, "node"), r->nodelist, hosts.count);
    hostlist_free(&hosts);
    return rc;
}

/* Whether a row's Epoch (epochs) or Steps cell said "-": not known, nothing to check. */
static bool count_unknown(const struct result_row *r, bool epochs)
{
    return r->unknown & (1u << (epochs ? COL_EPOCH : COL_STEPS));
}

/* The value most rows of a configuration have (of those that say one). */
static long usual_count(const struct result_table *t, int nodes, int gpus, bool epochs)
{
    long best = 0;
    int best_count = 0;
    for (int i = 0; i < t->count; i++) {
        if (t->rows[i].nodes != nodes || t->rows[i].gpus != gpus || count_unknown(&t->rows[i], epochs))
            continue;
        long v = epochs ? t->rows[i].epoch : t->rows[i].steps;
        int count = 0;
        for (int j = 0; j < t->count; j++)
            count += t->rows[j].nodes == nodes && t->rows[j].gpus == gpus && !count_unknown(&t->rows[j], epochs) &&
                     (epochs ? t->rows[j].epoch : t->rows[j].steps) == v;
        if (count > best_count)
            best = v, best_count = count;
    }
    return best;
}

long audit_dataset_size(const char *title)
{
    if (strcasestr(title, "bigMNIST"))
        return 60000L * 120;
    if (strcasestr(title, "MNIST"))
        return 60000;
    return 0;
}

static int check_counts(const struct result_table *t, const struct result_row *r, struct audit *out)
{
    long epochs = usual_count(t, r->nodes, r->gpus, true), steps = usual_count(t, r->nodes, r->gpus, false);
    const char *config = plural_of(r->nodes, "node"), *gpus = plural_of(r->gpus, "GPU");
    if (!count_unknown(r, true) && r->epoch != epochs &&
        audit_add(out, r->line, "Epoch %d, but the other runs of %s x %s have %ld", r->epoch, config, gpus, epochs) < 0)
        return -1;
    if (!count_unknown(r, false) && r->steps != steps &&
        audit_add(out, r->line, "%ld steps, but the other runs of %s x %s have %ld", r->steps, config, gpus, steps) < 0)
        return -1;
    long size = audit_dataset_size(t->title), per_step = (long)r->batch * r->nodes * r->gpus;
    if (!size || r->steps != steps || !t->has_steps || !t->has_batch)
        return 0;
    long per_epoch = (size + per_step - 1) / per_step, total = (epochs * size + per_step - 1) / per_step;
    /* a table counts steps per epoch or in all; either way to within one (a counter's convention) */
    if (labs(r->steps - per_epoch) <= 1 || labs(r->steps - total) <= 1)
        return 0;
    return audit_add(out, r->line, "%ld steps, but %ld samples / (batch %d x %ld GPUs) make %ld an epoch (%ld in %ld epochs)",
               r->steps, size, r->batch, (long)r->nodes * r->gpus, per_epoch, total, epochs);
}

/* The batch most rows of the table have: a table compares one experiment, so one batch per replica. */
static int usual_batch(const struct result_table *t)
{
    int best = 0, best_count = 0;
    for (int i = 0; i < t->count; i++) {
        int count = 0;
        for (int j = 0; j < t->count; j++)
            count += t->rows[j].batch == t->rows[i].batch;
        if (count > best_count)
            best = t->rows[i].batch, best_count = count;
    }
    return best;
}

/* Efficiency is speedup / the GPUs' ratio to the baseline's (speedup / GPUs in all over one GPU),
 * both as printed. */
static int check_efficiency(const struct result_row *r, int base_gpus, struct audit *out)
{
    if (isnan(r->efficiency) || isnan(r->speedup))
        return 0;
    int gpus = r->nodes * r->gpus;
    double scale = (double)gpus / base_gpus;
    double ratio = r->speedup / scale, slack = r->efficiency_unit / 2 + r->speedup_unit / 2 / scale + 1e-9;
    if (fabs(r->efficiency - ratio) <= slack)
        return 0;
    if (base_gpus > 1)
        return audit_add(out, r->line, "efficiency %.4g of %s x %s is not speedup / (GPUs / the baseline's %d): "
                         "%g / %g = %.3f", r->efficiency, plural_of(r->nodes, "node"), plural_of(r->gpus, "GPU"),
                         base_gpus, r->speedup, scale, ratio);
    return audit_add(out, r->line, "efficiency %.4g of %s x %s is not speedup / GPUs: %g / %d = %.3f", r->efficiency,
                       plural_of(r->nodes, "node"), plural_of(r->gpus, "GPU"), r->speedup, gpus, ratio);
}

/* The mean and standard deviation of the runtimes of the runs an Avg row summarises; their count. */
static int run_stats(const struct result_table *t, int avg, double *mean, double *std)
{
    int runs[4096], n = runs_of(t, avg, runs);
    double times[4096];
    for (int i = 0; i < n; i++)
        times[i] = t->rows[runs[i]].runtime;
    stats_mean_std(times, n, mean, std);
    return n;
}

/* An Avg row's speedup above 1 claims a gain; where its runs and the baseline's (two or more each)
 * give a 95% interval of the runtime ratio that contains 1, the runs do not show one (stats.h:
 * the delta method, t at the smaller count). Tables of the same work only: a ratio of runtimes. */
static int check_gains(const struct result_table *t, struct audit *out)
{
    int base = -1;
    for (int i = 0; i < t->count && base < 0; i++)
        if (t->rows[i].avg && t->rows[i].nodes == 1 && t->rows[i].gpus == 1)
            base = i;
    double base_mean, base_std, mean, std, lo, hi;
    int base_runs = base < 0 ? 0 : run_stats(t, base, &base_mean, &base_std);
    for (int i = 0; i < t->count && base_runs >= 2; i++) {
        const struct result_row *r = &t->rows[i];
        double work = samples_of(r), base_work = samples_of(&t->rows[base]);
        bool same_work = audit_dataset_size(t->title) > 0 || (work == 0 && base_work == 0) ||
                         experiment_work_agrees(fmin(work, base_work), fmax(work, base_work));
        if (!r->avg || i == base || !(r->speedup > 1) || !same_work)
            continue;
        int n = run_stats(t, i, &mean, &std);
        stats_ratio_ci95(base_mean / mean, base_mean, base_std, base_runs, mean, std, n, &lo, &hi);
        if (isnan(lo) || lo > 1)
            continue;
        if (audit_add(out, r->line, "speedup %g of %s x %s claims a gain its runs do not show: the 95%% interval of "
                        "the runtime ratio, %.2f-%.2f (from %d and %d runs), contains 1", r->speedup,
                        plural_of(r->nodes, "node"), plural_of(r->gpus, "GPU"), lo, hi, base_runs, n) < 0)
            return -1;
    }
    return 0;
}

int audit_table(const struct result_table *t, struct audit *out)
{
    const struct result_row *base = table_baseline(t);   /* efficiencies are against it too */
    int batch = usual_batch(t), base_gpus = base ? base->nodes * base->gpus : 1;
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].batch != batch && !(t->rows[i].unknown & (1u << COL_BATCH)) &&
            audit_add(out, t->rows[i].line, "Batchsize %d, but the table's other runs have %d: a run of another experiment, "
                "not comparable in this table", t->rows[i].batch, batch) < 0)
            return -1;
    for (int i = 0; i < t->count; i++) {
        const struct result_row *r = &t->rows[i];
        /* a table without a Node(s) column says nothing of its nodes to check */
        if ((r->avg ? check_average(t, i, out) : t->has_nodelist ? check_nodelist(r, out) : 0) < 0 ||
            check_counts(t, r, out) < 0 ||
            check_efficiency(r, base_gpus, out) < 0)
            return -1;
    }
    return check_speedups(t, out) < 0 || check_gains(t, out) < 0 ? -1 : 0;
}

/* ---------- notebooks ---------- */

/* A number as a heading prints it: its value, its text, and what it may be off by from rounding. */
struct printed {
    double value, half_unit;
    const char *text;
    int length;
};

static struct printed printed_at(const char *heading, regmatch_t m)
{
    struct printed p = {.text = heading + m.rm_so, .length = (int)(m.rm_eo - m.rm_so)};
    p.value = strtod(p.text, NULL);
    p.half_unit = dt_last_digit_unit(p.text, (size_t)p.length) / 2;
    return p;
}

/* The baseline a heading states against the 1-GPU run it names: the same model on the same node
 * (for a mix of nodes, any of theirs is accepted: the reference experiments take the slowest). */
static int check_stated_baseline(const struct log_runs *runs, const struct log_run *r, struct printed stated,
                                 struct audit *out)
{
    if (!r->baseline)
        return 0;
    for (int n = 0; n < r->id.node_count; n++) {
        const struct log_run *b = throughput_one_gpu_run(runs, r, r->id.node[n]);
        if (b && fabs(stated.value - b->peak_data_per_sec) <= stated.half_unit + 1e-9)
            return 0;
    }
    return audit_add(out, r->line, "baseline %.*s of \"%s\" is not the peak of the 1-GPU run of %s on %s (line %d: %.2f)",
               stated.length, stated.text, r->title, r->id.model, r->baseline->id.node[0], r->baseline->line,
               r->baseline->peak_data_per_sec);
}

/* m[1]: the figure; with_speedup: m[2] the speedup, m[3] the baseline. */
static int check_notebook_run(const struct log_runs *runs, const struct log_run *r, const regmatch_t *m,
                              bool with_speedup, struct audit *out)
{
    const char *t = r->title;
    struct printed figure = printed_at(t, m[1]);
    if (r->steps_logged > 0 && fabs(figure.value - r->peak_data_per_sec) > figure.half_unit + 1e-9 &&
        audit_add(out, r->line, "headline %.*s of \"%s\" is not the peak of its %d Step lines (%.2f)", figure.length,
            figure.text, t, r->steps_logged, r->peak_data_per_sec) < 0)
        return -1;
    if (!with_speedup)
        return 0;
    struct printed speedup = printed_at(t, m[2]), baseline = printed_at(t, m[3]);
    if (check_stated_baseline(runs, r, baseline, out) < 0)
        return -1;
    if (baseline.value <= 0 || figure.value <= 0)
        return 0;
    /* the GPU count read from the headings against the speedup the line states: far above linear,
     * the count was probably not read (a form the reader does not know) */
    if (speedup.value > r->id.gpus * 1.05 + speedup.half_unit &&
        audit_add(out, r->line, "speedup %.*sx of \"%s\" is more than its %d GPU%s as read from the headings "
                    "(%.0f%% efficiency): is the GPU count written in a form not read (2x<GPU>, <GPU>x2, 2 GPUs)?",
                    speedup.length, speedup.text, t, r->id.gpus, r->id.gpus == 1 ? "" : "s",
                    100 * speedup.value / r->id.gpus) < 0)
        return -1;
    double computed = figure.value / baseline.value;
    double rounding = computed * (figure.half_unit / figure.value + baseline.half_unit / baseline.value);
    if (fabs(speedup.value - computed) > speedup.half_unit + rounding &&
        audit_add(out, r->line, "speedup %.*sx of \"%s\" does not follow from its figures: %.*s / %.*s = %.3f",
            speedup.length, speedup.text, t, figure.length, figure.text, baseline.length, baseline.text, computed) < 0)
        return -1;
    return 0;
}

/* Copies (a run's lines pasted under another configuration's heading) and misplaced headings. */
static int check_notebook_structure(const struct log_runs *runs, int i, struct audit *out)
{
    const struct log_run *r = &runs->runs[i];
    if (r->heading_level != r->read_level &&
        audit_add(out, r->line, "run heading \"%s\" is at level %d, the level of the model headings; read as a run of %s "
            "(level %d, like the runs beside it)", r->title, r->heading_level, r->id.model[0] ? r->id.model : "-",
            r->read_level) < 0)
        return -1;
    for (int j = 0; j < i; j++) {
        const struct log_run *first = &runs->runs[j];
        if (r->steps_logged == 0 || first->fingerprint != r->fingerprint || first->steps_logged != r->steps_logged ||
            first->epochs != r->epochs)
            continue;
        char nodes[128];
        runid_nodes(&r->id, nodes, sizeof nodes);
        return audit_add(out, r->line, "the %d Step and %d Epoch lines of \"%s\" (%s, %d GPU%s on %s) are those of line %d "
                   "(\"%s\", %d GPU%s): a copy, not a measurement", r->steps_logged, r->epochs, r->title, r->id.model,
                   r->id.gpus, r->id.gpus == 1 ? "" : "s", nodes, first->line, first->title, first->id.gpus,
                   first->id.gpus == 1 ? "" : "s");
    }
    return 0;
}

int audit_notebook(const struct log_runs *runs, struct audit *out)
{
    /* "...-198.38-1.648x, baseline: 120.7" and "..., 140.88-1.72x, Baseline:81.84"; or "lm6-120.7" */
    static const char with_speedup[] = "([0-9]+(\\.[0-9]+)?)-([0-9]+(\\.[0-9]+)?)x, *baseline: *([0-9]+(\\.[0-9]+)?) *$";
    static const char figure_only[] = "-([0-9]+(\\.[0-9]+)?) *$";
    regex_t speedup_re, figure_re;
    if (regcomp(&speedup_re, with_speedup, REG_EXTENDED | REG_ICASE) != 0)
        return -1;
    if (regcomp(&figure_re, figure_only, REG_EXTENDED) != 0) {
        regfree(&speedup_re);
        return -1;
    }
    int with_figure = 0, rc = 0;
    for (int i = 0; i < runs->count && rc == 0; i++) {
        regmatch_t m[7], picked[4];
        if (regexec(&speedup_re, runs->runs[i].title, 7, m, 0) == 0) {
            picked[1] = m[1], picked[2] = m[3], picked[3] = m[5];
            rc = check_notebook_run(runs, &runs->runs[i], picked, true, out);
        } else if (regexec(&figure_re, runs->runs[i].title, 3, m, 0) == 0) {
            picked[1] = m[1];
            rc = check_notebook_run(runs, &runs->runs[i], picked, false, out);
        } else {
            continue;
        }
        with_figure++;
    }
    for (int i = 0; i < runs->count && rc == 0; i++)
        rc = check_notebook_structure(runs, i, out);
    regfree(&speedup_re);
    regfree(&figure_re);
    return rc < 0 ? -1 : with_figure;
}

/* ---------- method tables ---------- */

/* The GPU count of a row's value k when the values sit shift columns right of where written. */
static int gpus_at(const struct method_table *t, const struct method_row *r, int k, int shift)
{
    int column = k + (r->values < t->columns ? shift : 0);
    return column < t->columns ? t->gpus[column] : 0;
}

/* Whether value k is more than GPUs x Baseline even less its std: faster than linear scaling. */
static bool is_superlinear(const struct method_table *t, const struct method_row *r, int k, int shift)
{
    int gpus = gpus_at(t, r, k, shift);
    return gpus > 0 && !isnan(r->baseline) && r->cell[k].mean - r->cell[k].std > gpus * r->baseline * (1 + 1e-9);
}

static int count_superlinear(const struct method_table *t, int shift, int *first_row)
{
    int count = 0;
    *first_row = -1;
    for (int i = 0; i < t->count; i++)
        for (int k = 0; k < t->rows[i].values; k++)
            if (is_superlinear(t, &t->rows[i], k, shift) && count++ == 0)
                *first_row = i;
    return count;
}

/* A header with more GPU columns than the rows have values: which reading the Baselines support.
 * Returns the shift to read the values with (0: as written), or -1 out of memory. */
static int check_columns(const struct method_table *t, struct audit *out)
{
    int short_rows = 0, values = t->columns;
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].values < t->columns)
            short_rows++, values = t->rows[i].values;
    if (short_rows == 0)
        return 0;
    int shift = t->columns - values, written_row, shifted_row;
    int written = count_superlinear(t, 0, &written_row), shifted = count_superlinear(t, shift, &shifted_row);
    /* audit_method_shift reads the same way */
    char why[256] = "";
    if (written > shifted && written_row >= 0) {
        const struct method_row *r = &t->rows[written_row];
        snprintf(why, sizeof why, "; read as written, %d values beat GPUs x Baseline (line %d: %s under %d GPU%s is "
                 "%.2fx its Baseline %g), read %d column%s to the right, %d do: the first GPU column is the extra one",
                 written, r->line, r->cell[0].text, t->gpus[0], t->gpus[0] == 1 ? "" : "s",
                 r->cell[0].mean / r->baseline, r->baseline, shift, shift == 1 ? "" : "s", shifted);
    }
    if (audit_add(out, t->line, "the header has %d GPU columns, but %d of the %d rows have %d values: a value is not under "
            "the GPU count it was measured at%s", t->columns, short_rows, t->count, values, why) < 0)
        return -1;
    return written > shifted ? shift : 0;
}

int audit_method_shift(const struct method_table *t)
{
    int short_rows = 0, values = t->columns, row;
    for (int i = 0; i < t->count; i++)
        if (t->rows[i].values < t->columns)
            short_rows++, values = t->rows[i].values;
    if (short_rows == 0)
        return 0;
    int shift = t->columns - values;
    return count_superlinear(t, 0, &row) > count_superlinear(t, shift, &row) ? shift : 0;
}

int audit_method_gpus(const struct method_table *t, const struct method_row *r, int k, int shift)
{
    return gpus_at(t, r, k, shift);
}

static int check_method_row(const struct method_table *t, int i, int shift, struct audit *out)
{
    const struct method_row *r = &t->rows[i];
    for (int k = 0; k < r->values; k++) {
        int gpus = gpus_at(t, r, k, shift);
        if (is_superlinear(t, r, k, shift) &&
            audit_add(out, r->line, "%s at %d GPUs is more than %d x its Baseline %g (%.1f) by more than its std: "
                "%.1f%% efficiency (%s)", r->cell[k].text, gpus, gpus, r->baseline, gpus * r->baseline,
                100 * r->cell[k].mean / (gpus * r->baseline), r->label) < 0)
            return -1;
        if (r->cell[k].std == 0 && !r->cell[k].single && audit_add(out, r->line, "%s at %d GPUs: a spread of zero, repeats identical to the "
                                       "last digit (%s)", r->cell[k].text, gpus, r->label) < 0)
            return -1;
    }
    for (int j = 0; j < i; j++) {
        const struct method_row *o = &t->rows[j];
        bool same = o->values == r->values;
        for (int k = 0; k < r->values && same; k++)
            same = strcmp(o->cell[k].text, r->cell[k].text) == 0;
        if (same)
            return audit_add(out, r->line, "the values of %s are those of line %d (%s): a copy", r->label, o->line, o->label);
    }
    return 0;
}

int audit_method_table(const struct method_table *t, struct audit *out)
{
    int shift = check_columns(t, out);
    for (int i = 0; i < t->count && shift >= 0; i++)
        if (check_method_row(t, i, shift, out) < 0)
            return -1;
    return shift < 0 ? -1 : 0;
}
