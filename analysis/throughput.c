/* throughput.c - seed-format logs into per-run summaries (see throughput.h). */
#include "throughput.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seedlog.h"

static struct log_run *open_run(struct log_runs *set, const char *source, int line, const char *heading,
                                const char *title)
{
    if (set->count == set->cap) {
        int cap = set->cap ? set->cap * 2 : 32;
        struct log_run *grown = realloc(set->runs, (size_t)cap * sizeof *grown);
        if (!grown)
            return NULL;
        set->runs = grown, set->cap = cap;
    }
    struct log_run *r = &set->runs[set->count++];
    *r = (struct log_run){.line = line, .final_accuracy = NAN};
    snprintf(r->source, sizeof r->source, "%s", source);
    snprintf(r->heading, sizeof r->heading, "%s", heading);
    snprintf(r->title, sizeof r->title, "%s", title);
    return r;
}

/* The run's name is the path of headings above it ("ResNet18-2080ti / lm6-120.7"): a seeds'
 * notebook names the model in one level and the node in the next. */
static const char *enter_heading(const char *line, char levels[6][128], char *path, size_t size)
{
    size_t depth = strspn(line, "#");
    line += depth;
    line += strspn(line, " \t");
    size_t n = strcspn(line, "\r\n");
    while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    depth = depth > 6 ? 6 : depth;
    snprintf(levels[depth - 1], 128, "%.*s", (int)n, line);
    for (size_t d = depth; d < 6; d++)
        levels[d][0] = '\0';
    size_t used = 0;
    path[0] = '\0';
    for (size_t d = 0; d < 6 && used < size; d++)
        if (levels[d][0])
            used += (size_t)snprintf(path + used, size - used, "%s%s", used ? " / " : "", levels[d]);
    return levels[depth - 1];
}

int throughput_read(FILE *in, const char *source, struct log_runs *set)
{
    char *text = NULL, heading[sizeof set->runs->heading] = "", levels[6][128] = {{0}};
    const char *title = "";
    size_t size = 0;
    int number = 0, heading_line = 0;
    struct log_run *run = NULL;   /* the run the current lines belong to */
    while (getline(&text, &size, in) > 0) {
        number++;
        if (text[0] == '#') {
            title = enter_heading(text, levels, heading, sizeof heading);
            heading_line = number;
            run = NULL;
            continue;
        }
        struct seedlog_line l;
        if (seedlog_parse(text, &l) == SEEDLOG_OTHER)
            continue;
        if (!run && !(run = open_run(set, source, heading_line ? heading_line : number, heading, title))) {
            free(text);
            return -1;
        }
        if (l.kind == SEEDLOG_STEP) {
            run->steps_logged++;
            run->peak_data_per_sec = fmax(run->peak_data_per_sec, l.data_per_sec);
        } else {
            run->epochs++;
            if (!isnan(l.accuracy))
                run->final_accuracy = l.accuracy;
        }
    }
    free(text);
    return 0;
}

void throughput_print(FILE *out, const struct log_runs *set)
{
    fputs("| Log | Run | Steps logged | Peak data/sec | Epochs | Final accuracy |\n"
          "|-----|-----|--------------|---------------|--------|----------------|\n",
          out);
    for (int i = 0; i < set->count; i++) {
        const struct log_run *r = &set->runs[i];
        char accuracy[32] = "-";
        if (!isnan(r->final_accuracy))
            snprintf(accuracy, sizeof accuracy, "%.4f", r->final_accuracy);
        fprintf(out, "| %s:%d | %s | %d | %.2f | %d | %s |\n", r->source, r->line, r->heading[0] ? r->heading : "-",
                r->steps_logged, r->peak_data_per_sec, r->epochs, accuracy);
    }
}
