/* dtrain_analyze.c - `dtrain-analyze`: turn result documents into findings and tables: run
 * records into the seeds' speedup table, hand-made tables into an audit of what does not add up. */
#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "inputs.h"
#include "dt_parse.h"
#include "record.h"
#include "plot.h"
#include "speedup.h"
#include "table.h"
#include "methods.h"
#include "throughput.h"
#include "predict.h"
#include "timeline_sum.h"
#include "version.h"

static const char usage_text[] =
    "Usage: dtrain-analyze COMMAND [options] FILE...\n"
    "\n"
    "Commands:\n"
    "  table [options] FILE|DIR...\n"
    "                  run records (dtrain-train --record; JSON lines, directories read\n"
    "                  recursively) as the seeds' speedup table: one row per completed run,\n"
    "                  then a bold Avg row per (#Nodes, #GPUs) group; Runtime H:MM:SS;\n"
    "                  Speedup = the baseline group's average runtime / the group's\n"
    "      --baseline NxG     the baseline configuration (1x1)\n"
    "      --stat mean|median how a group's runtimes are averaged (mean)\n"
    "      --format md|csv|json  (md)\n"
    "      --extra            also efficiency (speedup / GPUs) and spread (std, min-max)\n"
    "                  #GPUs is GPUs per node, or ranks per node for CPU runs.\n"
    "  throughput [--format md|csv] FILE|DIR...\n"
    "                  trainer logs in the seeds' format (Step/Epoch lines, Markdown notebooks,\n"
    "                  slurm-%j.out files) as one row per run: model, node(s) and GPUs named by\n"
    "                  its headings, peak data/sec (the largest Step value), the heading's own\n"
    "                  figure (\", not the peak\" when it is not), speedup against\n"
    "                  the 1-GPU run of the same model on the same node (for a mix of nodes, the\n"
    "                  slowest one's), efficiency (speedup / GPUs), epochs, final accuracy.\n"
    "                  Run records (files of JSON lines) make the seeds' method table instead:\n"
    "                  a row per model, batch, tag and method, a column per GPU (rank) count,\n"
    "                  mean +- std of the repeats' data/sec, and the 1-GPU Baseline.\n"
    "  plot [options] FILE|DIR...\n"
    "                  run records as pictures drawn by gnuplot: speedup against GPUs with the\n"
    "                  ideal line, and data/sec against GPUs, one line per series;\n"
    "                  PREFIX-speedup.png/.svg, PREFIX-throughput.png/.svg, beside the data\n"
    "                  (PREFIX.dat) and script (PREFIX.gp) to restyle them\n"
    "      -o, --output PREFIX   (dtrain-plot)\n"
    "      --baseline NxG        as for table\n"
    "      --series gpus-per-node|tag|method\n"
    "                            one line per GPUs-per-node value (default), per tag (e.g.\n"
    "                            the link speed of a sweep) or per method, each of the latter\n"
    "                            against its own baseline runs\n"
    "  predict [options] PROFILE\n"
    "                  every exchange method's samples/s at every job size predicted from a\n"
    "                  profile (dtrain-train --profile-out) and the links' speed and latency\n"
    "                  (or dtrain-commbench's fit), as the seeds' method table (predict --help)\n"
    "  timeline FILE...\n"
    "                  dtrain-train --timeline traces (PREFIX.rankR.json) summed up, a row per\n"
    "                  trace: steps, and the mean ms per step of the step, its forward, backward,\n"
    "                  the wait for the gradient exchange after backward (what was not hidden)\n"
    "                  and the update; transfers a step; and for how long, on average, the\n"
    "                  exchange was already under way while backward still computed (WFBP's\n"
    "                  overlap; 0 for BSP, which starts after backward)\n"
    "  audit FILE...   recompute hand-made result tables (the seeds' form: #Nodes, #GPUs, Epoch,\n"
    "                  Batchsize, Steps, Runtime, Speedup, Node(s), bold Avg rows; Markdown or\n"
    "                  CSV) and report,\n"
    "                  with its line, every Avg row that is not the mean, median or a trimmed\n"
    "                  mean of its runs; every speedup that does not follow from the runtimes\n"
    "                  (baseline 1 node x 1 GPU); node lists that are malformed or do not name\n"
    "                  #Nodes hosts; epochs or steps that differ within a configuration or do not\n"
    "                  match the dataset (MNIST, bigMNIST) over batch x GPUs. In notebooks (the\n"
    "                  seeds' \"### lm1-160.70-1.96x, baseline: 81.84\" over Step lines): headline\n"
    "                  figures that are not the peak of their Step lines, speedups that do not\n"
    "                  follow from figure / baseline, baselines that are not the peak of the\n"
    "                  1-GPU run of that model and node, runs whose lines copy another run's,\n"
    "                  run headings written at their model heading's level. In method tables\n"
    "                  (the seeds' 004: METHOD, Baseline, \"N GPUs\" columns of \"mean +- std\"):\n"
    "                  a header with more GPU columns than the rows have values, values faster\n"
    "                  than GPUs x Baseline by more than their std, zero spreads, copied rows.\n"
    "\n"

    "Options:\n"
    "  -h, --help      this text\n"
    "  -V, --version   the version\n"
    "\n"
    "Examples:\n"
    "  dtrain-analyze table runs/ > speedup.md\n"
    "  dtrain-analyze table --baseline 1x2 --stat median --extra runs.jsonl\n"
    "  dtrain-analyze plot -o results/scaling runs/\n"
    "  dtrain-analyze throughput slurm-1234.out notebook.md\n"
    "  dtrain-analyze audit results/bigmnist.md\n"
    "\n"
    "Exit status: 0 nothing found; 1 findings; 2 bad usage, an unreadable file, or no table.\n";

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
    int n = throughput_read(f, path, &runs);
    if (n == 0) {
        throughput_baselines(&runs);
        n = audit_notebook(&runs, a);
    }
    fclose(f);
    free(runs.runs);
    return n;
}

/* The method tables of one file (the seeds' 004) into a; adds to the counts. Returns 0, or -1. */
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
        struct audit a = {0};
        int failed = 0, in_notebook;
        for (int t = 0; t < set.count && !failed; t++)
            failed = audit_table(&set.tables[t], &a) < 0;
        if (failed || (in_notebook = audit_notebook_file(argv[i], &a)) < 0 ||
            audit_method_file(argv[i], &a, &tables, &rows, &skipped) < 0) {
            fprintf(stderr, "dtrain-analyze: out of memory\n");
            audit_free(&a);
            table_set_free(&set);
            return 2;
        }
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
    if (tables == 0 && notebook_runs == 0) {
        fprintf(stderr, "dtrain-analyze: no result table (a header with #Nodes, #GPUs, Epoch, Batchsize, Steps, "
                "Runtime, Speedup, Node(s)), no method table (METHOD and \"N GPUs\" columns) and no notebook run "
                "(a heading with its figure over Step lines) in the input\n");
        return 2;
    }
    return findings ? 1 : 0;
}

/* ---------- table ---------- */

static int parse_baseline(const char *text, struct speedup_options *opt)
{
    char extra;
    if (sscanf(text, "%dx%d%c", &opt->base_nodes, &opt->base_gpus, &extra) != 2 || opt->base_nodes < 1 ||
        opt->base_gpus < 1)
        return fprintf(stderr, "dtrain-analyze: --baseline \"%s\": expected NxG, e.g. 1x1\n", text), 2;
    return 0;
}

/* Logs and records together: a file whose first non-blank character is '{' holds records. */
struct throughput_inputs {
    struct log_runs logs;
    struct record_set records;
};

static void throughput_reader(const char *path, void *set)
{
    struct throughput_inputs *in = set;
    if (inputs_hold_records(path))
        read_records(path, &in->records);
    else
        read_log(path, &in->logs);
}

static int throughput_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    enum methods_format format = METHODS_MD;
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "f:h", options, NULL)) != -1) {
        if (c == 'h')
            return fputs(usage_text, stdout), 0;
        if (c == 'f' && (strcmp(optarg, "md") == 0 || strcmp(optarg, "csv") == 0))
            format = strcmp(optarg, "md") == 0 ? METHODS_MD : METHODS_CSV;
        else
            return c == 'f' ? fprintf(stderr, "dtrain-analyze: --format \"%s\": expected md or csv\n", optarg), 2 : 2;
    }
    if (optind >= argc)
        return fputs("dtrain-analyze: throughput needs log or record files, or directories\n", stderr), 2;
    struct throughput_inputs in = {0};
    int rc = read_inputs(argv + optind, argc - optind, throughput_reader, &in);
    if (rc == 0) {
        fprintf(stderr, "throughput: %d log runs, %d records read, %d not completed (left out), %d lines skipped\n",
                in.logs.count, in.records.count, in.records.not_completed, in.records.lines_skipped);
        if (in.logs.count == 0 && in.records.count == 0) {
            fputs("dtrain-analyze: no Step or Epoch line and no completed run record in the input\n", stderr);
            rc = 2;
        }
    }
    if (rc == 0 && in.logs.count > 0) {
        throughput_baselines(&in.logs);
        throughput_print(stdout, &in.logs);
    }
    if (rc == 0 && in.records.count > 0) {
        if (in.logs.count > 0)
            fputc('\n', stdout);
        if (methods_table(stdout, in.records.runs, in.records.count, format) < 0) {
            fputs("dtrain-analyze: out of memory\n", stderr);
            rc = 2;
        }
    }
    free(in.logs.runs);
    free_records(&in.records);
    return rc;
}

/* Whether some runs of set were emulated and some real. */
static bool mixes_emulated_and_real(const struct record_set *set)
{
    int emulated = 0;
    for (int i = 0; i < set->count; i++)
        emulated += set->runs[i].emulation[0] != '\0';
    return emulated > 0 && emulated < set->count;
}

static int table_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"baseline", required_argument, NULL, 'b'}, {"stat", required_argument, NULL, 's'},
        {"format", required_argument, NULL, 'f'}, {"extra", no_argument, NULL, 'x'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0}};
    struct speedup_options opt = {.base_nodes = 1, .base_gpus = 1};
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "b:s:f:xh", options, NULL)) != -1) {
        switch (c) {
        case 'b':
            if (parse_baseline(optarg, &opt) != 0)
                return 2;
            break;
        case 's':
            if (strcmp(optarg, "mean") && strcmp(optarg, "median"))
                return fprintf(stderr, "dtrain-analyze: --stat \"%s\": mean or median\n", optarg), 2;
            opt.stat = strcmp(optarg, "median") == 0 ? STAT_MEDIAN : STAT_MEAN;
            break;
        case 'f':
            if (strcmp(optarg, "md") && strcmp(optarg, "csv") && strcmp(optarg, "json"))
                return fprintf(stderr, "dtrain-analyze: --format \"%s\": md, csv or json\n", optarg), 2;
            opt.format = optarg[0] == 'm' ? FORMAT_MD : optarg[0] == 'c' ? FORMAT_CSV : FORMAT_JSON;
            break;
        case 'x': opt.extra = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs("Try 'dtrain-analyze --help'.\n", stderr); return 2;
        }
    }
    struct record_set set = {0};
    int rc = load_records("table", argv + optind, argc - optind, &set);
    struct dt_err err;
    if (rc == 0 && mixes_emulated_and_real(&set))
        fprintf(stderr, "dtrain-analyze table: warning: the records mix emulated runs (dtrain-train --emulate) "
                "with real ones; `throughput` tables them apart\n");
    if (rc == 0 && speedup_table(stdout, set.runs, set.count, &opt, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
        rc = 2;
    }
    free_records(&set);
    return rc;
}

/* ---------- plot ---------- */

static int plot_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'}, {"baseline", required_argument, NULL, 'b'},
        {"series", required_argument, NULL, 's'}, {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct speedup_options opt = {.base_nodes = 1, .base_gpus = 1};
    const char *prefix = "dtrain-plot";
    enum plot_by by = PLOT_BY_GPUS_PER_NODE;
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "o:b:s:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': prefix = optarg; break;
        case 's':
            if (strcmp(optarg, "gpus-per-node") == 0)
                by = PLOT_BY_GPUS_PER_NODE;
            else if (strcmp(optarg, "tag") == 0)
                by = PLOT_BY_TAG;
            else if (strcmp(optarg, "method") == 0)
                by = PLOT_BY_METHOD;
            else
                return fprintf(stderr, "dtrain-analyze: --series \"%s\": expected gpus-per-node, tag or method\n",
                               optarg), 2;
            break;
        case 'b':
            if (parse_baseline(optarg, &opt) != 0)
                return 2;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs("Try 'dtrain-analyze --help'.\n", stderr); return 2;
        }
    }
    struct record_set set = {0};
    int rc = load_records("plot", argv + optind, argc - optind, &set);
    struct plot_series *series = NULL;
    int count = 0;
    struct dt_err err;
    char title[160];
    if (rc == 0) {
        snprintf(title, sizeof title, "%s on %s", set.runs[0].model, set.runs[0].dataset);
        if ((count = plot_series_of(set.runs, set.count, &opt, by, &series, &err)) < 0 ||
            plot_write(prefix, title, series, count, &err) < 0 || plot_render(prefix, &err) < 0) {
            fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
            rc = 2;
        } else {
            printf("%s-speedup.png %s-speedup.svg %s-throughput.png %s-throughput.svg (from %s.dat, %s.gp)\n",
                   prefix, prefix, prefix, prefix, prefix, prefix);
        }
    }
    plot_series_free(series, count > 0 ? count : 0);
    free_records(&set);
    return rc;
}

/* dtrain-analyze timeline FILE...: one summary row per trace. */
static int timeline_command(int argc, char **argv)
{
    if (argc < 2)
        return fputs("dtrain-analyze: timeline needs at least one FILE\n", stderr), 2;
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
        return fputs(usage_text, stdout), 0;
    struct timeline_sum *sums = calloc((size_t)argc, sizeof *sums);
    if (!sums)
        return fputs("dtrain-analyze: out of memory\n", stderr), 2;
    int rc = 0;
    for (int k = 1; k < argc && rc == 0; k++) {
        struct dt_err err;
        if (timeline_sum_file(argv[k], &sums[k - 1], &err) < 0) {
            fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
            rc = 2;
        }
    }
    if (rc == 0)
        timeline_sum_print(stdout, (const char *const *)argv + 1, sums, argc - 1);
    free(sums);
    return rc;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        switch (opt) {
        case 'h': fputs(usage_text, stdout); return 0;
        case 'V': printf("dtrain-analyze %s\n", DTRAIN_VERSION); return 0;
        default: fputs("Try 'dtrain-analyze --help'.\n", stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs("dtrain-analyze: no command given (try --help)\n", stderr);
        return 2;
    }
    const char *command = argv[optind];
    if (strcmp(command, "table") == 0)
        return table_command(argc - optind, argv + optind);
    if (strcmp(command, "plot") == 0)
        return plot_command(argc - optind, argv + optind);
    if (strcmp(command, "throughput") == 0)
        return throughput_command(argc - optind, argv + optind);
    if (strcmp(command, "timeline") == 0)
        return timeline_command(argc - optind, argv + optind);
    if (strcmp(command, "predict") == 0)
        return predict_command(argc - optind, argv + optind);
    if (strcmp(command, "audit") != 0) {
        fprintf(stderr, "dtrain-analyze: unknown command \"%s\" (this version has: table, throughput, plot, timeline, "
                "predict, audit)\n", command);
        return 2;
    }
    if (optind + 1 < argc && (strcmp(argv[optind + 1], "--help") == 0 || strcmp(argv[optind + 1], "-h") == 0)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (optind + 1 >= argc) {
        fputs("dtrain-analyze: audit needs at least one FILE\n", stderr);
        return 2;
    }
    return audit_files(argc - optind - 1, argv + optind + 1);
}
