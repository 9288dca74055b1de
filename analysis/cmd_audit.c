/* cmd_audit.c - dtrain-analyze audit: hand-made tables, notebooks and method comparison tables
 * recomputed, and what does not add up reported with its line. */
#include "analysis/command.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/audit.h"
#include "analysis/methods.h"
#include "analysis/scaling_audit.h"
#include "formats/table.h"
#include "analysis/throughput.h"

static const char audit_help[] =
    "Usage: dtrain-analyze audit FILE|DIR...\n"
    "  Recompute hand-made result tables (the reference form: #Nodes, #GPUs, Epoch, Batchsize,\n"
    "  Steps, Runtime, Speedup, Node(s), bold Avg rows; Markdown or CSV) and report, with its\n"
    "  line, every Avg row that is not the mean, median or a trimmed mean of its runs; every\n"
    "  speedup that does not follow from the runtimes (baseline 1 node x 1 GPU), or that is by\n"
    "  runtime where the configurations did not train the same samples; node lists that are\n"
    "  malformed or do not name #Nodes hosts; epochs or steps that differ within a configuration\n"
    "  or do not match the dataset (MNIST, bigMNIST) over batch x GPUs. In notebooks (the reference\n"
    "  \"### lm1-160.70-1.96x, baseline: 81.84\" over Step lines): headline figures that are not\n"
    "  the peak of their Step lines, speedups that do not follow from figure / baseline,\n"
    "  baselines that are not the peak of the 1-GPU run of that model and node, runs whose lines\n"
    "  copy another run's, run headings written at their model heading's level. In method tables\n"
    "  (the reference comparison: METHOD, Baseline, \"N GPUs\" columns of \"mean +- std\"): a header with\n"
    "  more GPU columns than the rows have values, values faster than GPUs x Baseline by more\n"
    "  than their std, zero spreads, copied rows. In scaling tables as vendors publish them (a GPUs\n"
    "  column beside throughputs or times to train, and the ratios worked out from them: \"TF32\n"
    "  Strong Scaling\", \"Throughput speedup (TF32 to mixed precision)\", \"Speed-up with mixed\n"
    "  precision\", efficiency; cells such as \"938 img/s\", \"7.72 x\", \"1,022,722\"): every ratio\n"
    "  that does not follow from the numbers it was made from, allowing for the rounding of each\n"
    "  printed number; how each such table was read is said on its header's line.\n"
    "  Exit 0 nothing found, 1 findings, 2 nothing to audit or a file that cannot be read.\n"
    "  e.g. dtrain-analyze audit results/bigmnist.md\n";

static int by_line(const void *a, const void *b)
{
    return ((const struct finding *)a)->line - ((const struct finding *)b)->line;
}

/* The notebook runs of one file (headings with figures over Step lines) into a. Returns the runs
 * with a figure, or -1. */
static int audit_notebook_file(const char *path, struct audit *a)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;   /* table_parse_file has said why already */
    struct log_runs runs = {0};
    struct dt_err err;
    int n = throughput_read(f, path, &runs, &err);
    if (n < 0)
        fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
    if (n == 0) {
        throughput_baselines(&runs);
        n = audit_notebook(&runs, a);
    }
    fclose(f);
    free(runs.runs);
    return n;
}

/* The method tables of one file (methods x GPUs) into a; adds to the counts. Returns 0, or -1. */
static int audit_method_file(const char *path, struct audit *a, int *tables, int *rows, int *skipped)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;   /* table_parse_file has said why already */
    struct method_set set = {0};
    struct dt_err err;
    int rc = method_table_parse(f, path, &set, &err);
    fclose(f);
    for (int s = 0; s < set.lines_skipped && s < 8; s++)
        fprintf(stderr, "dtrain-analyze: skipped %s\n", set.skipped[s]);
    for (int t = 0; t < set.count && rc == 0; t++)
        rc = audit_method_table(&set.tables[t], a);
    *tables += set.count, *rows += set.rows_read, *skipped += set.lines_skipped;
    method_set_free(&set);
    return rc;
}

/* The published scaling tables of one file into a, each one's reading said (notes, kept apart
 * from the findings: they are not the table's faults). Returns the tables' rows, or -1. */
static int audit_scaling_file(const char *path, struct audit *a, struct audit *notes, int *tables)
{
    struct scaling_set set = {0};
    struct dt_err err;
    if (scaling_parse_file(path, &set, &err) < 0)
        return 0;   /* table_parse_file has said why already */
    int rows = 0, rc = 0;
    for (int t = 0; t < set.count && rc == 0; t++) {
        char text[sizeof notes->items[0].text];
        scaling_describe(&set.tables[t], text, sizeof text);
        rc = audit_add(notes, set.tables[t].line, "%s", text) < 0 || scaling_audit(&set.tables[t], a, notes) < 0 ? -1 : 0;
        rows += set.tables[t].rows;
    }
    if (rc == 0 && set.why_not[0])   /* a table left out whole says why */
        rc = audit_add(notes, set.why_not_line, "not read as a scaling table: %s", set.why_not) < 0 ? -1 : 0;
    *tables += set.count;
    scaling_set_free(&set);
    return rc < 0 ? -1 : rows;
}

static int audit_files(int argc, char **argv)
{
    int tables = 0, rows = 0, notebook_runs = 0, skipped = 0, findings = 0;
    for (int i = 0; i < argc; i++) {
        struct table_set set = {0};
        struct dt_err err;
        if (table_parse_file(argv[i], &set, &err) < 0) {
            fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
            table_set_free(&set);
            return 2;
        }
        for (int s = 0; s < set.lines_skipped && s < 8; s++)
            fprintf(stderr, "dtrain-analyze: skipped %s\n", set.skipped[s]);
        struct audit a = {0}, notes = {0};
        int failed = 0, in_notebook, published = 0;
        for (int t = 0; t < set.count && !failed; t++)
            failed = audit_table(&set.tables[t], &a) < 0;
        if (failed || (in_notebook = audit_notebook_file(argv[i], &a)) < 0 ||
            audit_method_file(argv[i], &a, &tables, &rows, &skipped) < 0 ||
            (published = audit_scaling_file(argv[i], &a, &notes, &tables)) < 0) {
            fprintf(stderr, "dtrain-analyze: %s: not audited (out of memory, or the read error above)\n", argv[i]);
            audit_free(&a), audit_free(&notes);
            table_set_free(&set);
            return 2;
        }
        rows += published;
        for (int n = 0; n < notes.count; n++)
            printf("%s:%d: %s\n", argv[i], notes.items[n].line, notes.items[n].text);
        audit_free(&notes);
        if (a.count > 0)   /* qsort must not see the NULL of an empty list */
            qsort(a.items, (size_t)a.count, sizeof a.items[0], by_line);
        for (int f = 0; f < a.count; f++)
            printf("%s:%d: %s\n", argv[i], a.items[f].line, a.items[f].text);
        findings += a.count;
        audit_free(&a);
        tables += set.count;
        rows += set.rows_read;
        notebook_runs += in_notebook;
        skipped += set.lines_skipped;
        table_set_free(&set);
    }
    printf("audit: %d table%s, %d rows read, ", tables, tables == 1 ? "" : "s", rows);
    if (notebook_runs > 0)
        printf("%d notebook run%s, ", notebook_runs, notebook_runs == 1 ? "" : "s");
    printf("%d lines skipped; %d finding%s\n", skipped, findings, findings == 1 ? "" : "s");
    if (rows == 0 && notebook_runs == 0) {   /* "0 findings" of nothing read is no audit */
        fprintf(stderr, "dtrain-analyze: nothing audited: %s\n", tables > 0 ? "no row of the tables could be read"
                : "no result table (a header naming the nodes, the GPUs and the runtime: #Nodes, #GPUs, Runtime or "
                  "Nodes, GPUs/node, Time (s) ...), no scaling table (a GPUs column beside throughput or time-to-train "
                  "columns: GPUs, Throughput - TF32, TF32 Strong Scaling ...), no method table (METHOD and \"N GPUs\" "
                  "columns) and no notebook run (a heading with its figure over Step lines) in the input");
        return 2;
    }
    return findings ? 1 : skipped ? 2 : 0;
}

/* The files to audit: those named, and every file of the directories named. */
struct path_list {
    char **paths;
    int count, cap;
    bool out_of_memory;
};

static void collect_path(const char *path, void *set)
{
    struct path_list *list = set;
    if (list->count == list->cap) {
        int cap = list->cap ? 2 * list->cap : 16;
        char **grown = realloc(list->paths, (size_t)cap * sizeof *grown);
        if (!grown) {
            list->out_of_memory = true;
            return;
        }
        list->paths = grown, list->cap = cap;
    }
    if (!(list->paths[list->count] = strdup(path)))
        list->out_of_memory = true;
    else
        list->count++;
}

static int audit_run(int argc, char **argv)
{
    int rc = command_help_only(argc, argv, "audit", audit_help);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct path_list list = {0};
    inputs_read_own_outputs();
    rc = read_inputs(argv + optind, argc - optind, collect_path, &list);
    if (rc == 0 && list.out_of_memory)
        rc = (fputs("dtrain-analyze: out of memory\n", stderr), 2);
    if (rc == 0)
        rc = audit_files(list.count, list.paths);
    for (int i = 0; i < list.count; i++)
        free(list.paths[i]);
    free(list.paths);
    return rc;
}

const struct analyze_command audit_command = {
    "audit", "hand-made tables, notebooks, method tables -> what does not add up", audit_help, audit_run};
