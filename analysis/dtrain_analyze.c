/* dtrain_analyze.c - `dtrain-analyze`: turn result documents into findings and tables: run
 * records into the seeds' speedup table, hand-made tables into an audit of what does not add up. */
#include <stdbool.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "corrected.h"
#include "experiment.h"
#include "inputs.h"
#include "dt_parse.h"
#include "record.h"
#include "plot.h"
#include "plot_sources.h"
#include "speedup.h"
#include "table.h"
#include "methods.h"
#include "throughput.h"
#include "predict.h"
#include "timeline_sum.h"
#include "version.h"

/* Each command's --help; `dtrain-analyze --help` prints the overview and all of them. */
static const char table_help[] =
    "Usage: dtrain-analyze table [options] FILE|DIR...\n"
    "  Run records (dtrain-train --record; JSON lines; directories read recursively) as the\n"
    "  seeds' speedup table: one row per completed run, then a bold Avg row per (#Nodes, #GPUs)\n"
    "  group; Runtime H:MM:SS; Speedup = the baseline group's average runtime / the group's.\n"
    "  Runs are averaged together only when they differ in nothing but the job: a records file\n"
    "  that collects a study becomes one table per experiment (model, dataset, batch, epochs,\n"
    "  max-steps, method, backend, threads, optimizer, lr, tag, emulation), each under a heading.\n"
    "  When an experiment's runs did not train the same samples (--max-steps at every job\n"
    "  size), its speedup is by samples/s, and the table says so.\n"
    "  Hand-made result tables (the seeds' 003: Markdown or CSV with the columns #Nodes, #GPUs,\n"
    "  Epoch, Batchsize, Steps, Runtime, Speedup, Node(s); several a file) come out corrected:\n"
    "  Avg = the mean of the runs above it, speedups from those means, the table's own values\n"
    "  in Given columns where they differ.\n"
    "          --baseline NxG     the baseline configuration (1x1)\n"
    "          --stat mean|median how a group's runtimes are averaged (mean)\n"
    "      -f, --format md|csv|json  (md; json for records only)\n"
    "      -x, --extra            also efficiency (speedup / GPUs) and spread (std, min-max)\n"
    "          --where KEY=VALUE  only runs with that value (repeatable): --where method=wfbp-a2a\n"
    "  #GPUs is GPUs per node, or ranks per node for CPU runs. Exit 2 when a line could not be\n"
    "  read, after the table of the rest.\n"
    "  e.g. dtrain-analyze table runs/ > speedup.md\n"
    "       dtrain-analyze table --where tag=10gbit --stat median runs.jsonl\n"
    "       dtrain-analyze table 003_bigmnist.txt       # a hand-made table, corrected\n";

static const char throughput_help[] =
    "Usage: dtrain-analyze throughput [-f md|csv] FILE|DIR...\n"
    "  Trainer logs in the seeds' format (Step/Epoch lines, Markdown notebooks, slurm-%j.out\n"
    "  files) as one row per run: model, node(s) and GPUs named by its headings, peak data/sec\n"
    "  (the largest Step value), the heading's own figure (\", not the peak\" when it is not),\n"
    "  speedup against the 1-GPU run of the same model on the same node (for a mix of nodes, the\n"
    "  slowest one's), efficiency (speedup / GPUs), epochs, final accuracy.\n"
    "  Run records (files of JSON lines) make the seeds' method table instead: a row per model,\n"
    "  batch, tag and method, a column per GPU (rank) count, mean +- std of the repeats'\n"
    "  data/sec, and the 1-GPU Baseline (CSV: mean and std in columns of their own).\n"
    "      -f, --format md|csv    (md)\n"
    "  e.g. dtrain-analyze throughput slurm-1234.out notebook.md\n";

static const char plot_help[] =
    "Usage: dtrain-analyze plot [options] FILE|DIR...\n"
    "  Run records as pictures drawn by gnuplot: speedup against GPUs (or CPU ranks) with the\n"
    "  ideal line, and data/sec against them, one line per series, error bars from the repeats;\n"
    "  PREFIX-speedup.png/.svg, PREFIX-throughput.png/.svg, beside the data (PREFIX.dat) and\n"
    "  script (PREFIX.gp) to restyle them; the folders of PREFIX are made.\n"
    "      -o, --output PREFIX    (dtrain-plot)\n"
    "          --baseline NxG     as for table\n"
    "          --series gpus-per-node|tag|method\n"
    "                             one line per GPUs-per-node value (default), per tag (e.g. the\n"
    "                             link speed of a sweep) or per method, each of the latter\n"
    "                             against its own baseline runs\n"
    "  e.g. dtrain-analyze plot -o results/scaling runs/\n";

static const char timeline_help[] =
    "Usage: dtrain-analyze timeline [-f md|csv] FILE...\n"
    "  dtrain-train --timeline traces (PREFIX.rankR.json) summed up, a row per trace: steps, and\n"
    "  the mean ms per step of the step, its forward, backward, the wait for the gradient\n"
    "  exchange after backward (what was not hidden) and the update; transfers a step; and for\n"
    "  how long, on average, the exchange was already under way while backward still computed\n"
    "  (WFBP's overlap; 0 for BSP, which starts after backward).\n"
    "  e.g. dtrain-analyze timeline trace.rank0.json trace.rank1.json\n";

static const char audit_help[] =
    "Usage: dtrain-analyze audit FILE|DIR...\n"
    "  Recompute hand-made result tables (the seeds' form: #Nodes, #GPUs, Epoch, Batchsize,\n"
    "  Steps, Runtime, Speedup, Node(s), bold Avg rows; Markdown or CSV) and report, with its\n"
    "  line, every Avg row that is not the mean, median or a trimmed mean of its runs; every\n"
    "  speedup that does not follow from the runtimes (baseline 1 node x 1 GPU), or that is by\n"
    "  runtime where the configurations did not train the same samples; node lists that are\n"
    "  malformed or do not name #Nodes hosts; epochs or steps that differ within a configuration\n"
    "  or do not match the dataset (MNIST, bigMNIST) over batch x GPUs. In notebooks (the seeds'\n"
    "  \"### lm1-160.70-1.96x, baseline: 81.84\" over Step lines): headline figures that are not\n"
    "  the peak of their Step lines, speedups that do not follow from figure / baseline,\n"
    "  baselines that are not the peak of the 1-GPU run of that model and node, runs whose lines\n"
    "  copy another run's, run headings written at their model heading's level. In method tables\n"
    "  (the seeds' 004: METHOD, Baseline, \"N GPUs\" columns of \"mean +- std\"): a header with\n"
    "  more GPU columns than the rows have values, values faster than GPUs x Baseline by more\n"
    "  than their std, zero spreads, copied rows.\n"
    "  Exit 0 nothing found, 1 findings, 2 nothing to audit or a file that cannot be read.\n"
    "  e.g. dtrain-analyze audit results/bigmnist.md\n";

static const char overview[] =
    "Usage: dtrain-analyze COMMAND [options] FILE...\n"
    "Turns result documents into findings and tables. Commands (COMMAND --help for one):\n"
    "  table       run records -> the seeds' speedup table; hand-made tables -> corrected\n"
    "  throughput  trainer logs -> data/sec per run; records -> the seeds' method table\n"
    "  plot        run records -> speedup and throughput pictures (gnuplot)\n"
    "  predict     a profile and the links -> every method's samples/s (predict --help)\n"
    "  timeline    dtrain-train --timeline traces -> where a step's time went\n"
    "  audit       hand-made tables, notebooks, method tables -> what does not add up\n"
    "Options: -h, --help (this text), -V, --version.\n"
    "Options may come before or after the files; -- ends them.\n"
    "Exit status: 0 ok (audit: nothing found); 1 audit findings; 2 bad usage, an unreadable\n"
    "file or line (after what could be done with the rest), or nothing to table.\n\n";

static void print_all_help(void)
{
    fputs(overview, stdout);
    const char *const parts[] = {table_help, throughput_help, plot_help, timeline_help, audit_help};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
        fputs(parts[i], stdout), fputc('\n', stdout);
}

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
            return fputs(throughput_help, stdout), 0;
        if (c == 'f' && (strcmp(optarg, "md") == 0 || strcmp(optarg, "csv") == 0))
            format = strcmp(optarg, "md") == 0 ? METHODS_MD : METHODS_CSV;
        else
            return c == 'f' ? fprintf(stderr, "dtrain-analyze: --format \"%s\": expected md or csv\n", optarg), 2
                            : (fputs("Try 'dtrain-analyze throughput --help'.\n", stderr), 2);
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
        throughput_print(stdout, &in.logs, format == METHODS_CSV);
    }
    if (rc == 0 && in.records.count > 0) {
        if (in.logs.count > 0)
            fputc('\n', stdout);
        if (methods_table(stdout, in.records.runs, in.records.count, format) < 0) {
            fputs("dtrain-analyze: out of memory\n", stderr);
            rc = 2;
        }
    }
    if (rc == 0 && in.records.lines_skipped > 0)   /* the table is of what could be read */
        rc = (fprintf(stderr, "dtrain-analyze: %d record line%s could not be read (above): the table is of the rest\n",
                      in.records.lines_skipped, in.records.lines_skipped == 1 ? "" : "s"), 2);
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

/* What `table` reads: run records, and hand-made result tables (the seeds' 003) to correct. */
struct table_inputs {
    struct record_set records;
    struct table_set tables;
    int files_without_tables;   /* named files that hold neither */
};

static void table_reader(const char *path, void *set)
{
    struct table_inputs *in = set;
    if (inputs_hold_records(path)) {
        read_records(path, &in->records);
        return;
    }
    int before = in->tables.count;
    struct dt_err err;
    if (table_parse_file(path, &in->tables, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
        in->records.lines_skipped++;
    } else if (in->tables.count == before) {
        if (inputs_walking())
            in->records.other_files++;   /* a sweep's directory also has its jobs' outputs */
        else
            in->files_without_tables++, fprintf(stderr, "dtrain-analyze: %s: no run record and no result table "
                                                "(#Nodes, #GPUs, Epoch, Batchsize, Steps, Runtime, Speedup, Node(s))\n", path);
    }
}

/* The runs of experiment e as their own array (shallow copies: the table only reads them). */
static int runs_of_experiment(const struct record_set *set, const int *index, int e, struct run_record *out)
{
    int n = 0;
    for (int i = 0; i < set->count; i++)
        if (index[i] == e)
            out[n++] = set->runs[i];
    return n;
}

/* One table per experiment of the records (a heading each when there are several). Returns 0, or 2. */
static int table_of_records(const struct record_set *set, struct speedup_options opt)
{
    int *index = malloc((size_t)set->count * sizeof *index);
    struct run_record *subset = malloc((size_t)set->count * sizeof *subset);
    if (!index || !subset) {
        free(index), free(subset);
        return fputs("dtrain-analyze: out of memory\n", stderr), 2;
    }
    int experiments = experiment_split(set->runs, set->count, index), rc = 0;
    if (experiments > 1)
        fprintf(stderr, "table: %d experiments (runs that differ in more than the job size are not averaged "
                "together; --where KEY=VALUE picks one)\n", experiments);
    if (opt.format == FORMAT_JSON)
        fputs("{\"experiments\": [", stdout);
    for (int e = 0; e < experiments && rc == 0; e++) {
        int n = runs_of_experiment(set, index, e, subset);
        char heading[768];
        experiment_describe(&subset[0], heading, sizeof heading);
        opt.by_rate = !experiment_same_work(subset, n);
        opt.heading = experiments > 1 || opt.format == FORMAT_JSON ? heading : NULL;
        opt.baseline_optional = experiments > 1;
        if (opt.format == FORMAT_JSON)
            fputs(e ? ",\n" : "\n", stdout);
        struct dt_err err;
        if (speedup_table(stdout, subset, n, &opt, &err) < 0)
            rc = (fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2);
        else if (opt.format != FORMAT_JSON && e + 1 < experiments)
            fputc('\n', stdout);
    }
    if (opt.format == FORMAT_JSON && rc == 0)
        fputs("\n]}\n", stdout);
    free(index), free(subset);
    return rc;
}

/* The hand-made tables, corrected. Returns 0, or 2. */
static int table_of_tables(const struct table_set *tables, const struct speedup_options *opt)
{
    int changed = 0;
    for (int t = 0; t < tables->count; t++) {
        int c;
        if (corrected_print(stdout, &tables->tables[t], opt, &c) < 0)
            return fputs("dtrain-analyze: out of memory\n", stderr), 2;
        changed += c;
    }
    fprintf(stderr, "table: %d hand-made table%s, %d rows read; %d Avg runtime%s or speedup%s corrected (the table's "
            "own in the Given columns); `dtrain-analyze audit` lists the rest\n", tables->count,
            tables->count == 1 ? "" : "s", tables->rows_read, changed, changed == 1 ? "" : "s", changed == 1 ? "" : "s");
    return 0;
}

/* Keeps the runs that meet every --where condition. */
static void keep_where(const char *command, struct record_set *set, const struct experiment_where *where, int count)
{
    int kept = 0;
    for (int i = 0; i < set->count; i++) {
        if (experiment_matches(&set->runs[i], where, count))
            set->runs[kept++] = set->runs[i];
        else
            record_free(&set->runs[i]);
    }
    if (kept < set->count)
        fprintf(stderr, "%s: %d of %d runs meet --where\n", command, kept, set->count);
    set->count = kept;
}

enum { MAX_WHERE = 16 };

/* One --where condition more (table and plot take them alike). Returns 0, or 2 with a message. */
static int add_where(const char *text, struct experiment_where *where, int *count)
{
    struct dt_err err;
    if (*count == MAX_WHERE)
        return fprintf(stderr, "dtrain-analyze: at most %d --where conditions\n", MAX_WHERE), 2;
    if (experiment_where_parse(text, &where[*count], &err) < 0)
        return fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2;
    ++*count;
    return 0;
}

/* Options with no short form: -b, -s and -w mean other things in dtrain's other tools (batch size,
 * separator, sweep's Slurm-like node list). */
enum { O_BASELINE = 256, O_STAT, O_SERIES, O_WHERE };

static int table_options(int argc, char **argv, struct speedup_options *opt, struct experiment_where *where,
                         int *where_count)
{
    static const struct option options[] = {
        {"baseline", required_argument, NULL, O_BASELINE}, {"stat", required_argument, NULL, O_STAT},
        {"format", required_argument, NULL, 'f'},         {"extra", no_argument, NULL, 'x'},
        {"where", required_argument, NULL, O_WHERE},      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "f:xh", options, NULL)) != -1) {
        switch (c) {
        case O_BASELINE:
            if (parse_baseline(optarg, opt) != 0)
                return 2;
            break;
        case O_STAT:
            if (strcmp(optarg, "mean") && strcmp(optarg, "median"))
                return fprintf(stderr, "dtrain-analyze: --stat \"%s\": mean or median\n", optarg), 2;
            opt->stat = strcmp(optarg, "median") == 0 ? STAT_MEDIAN : STAT_MEAN;
            break;
        case 'f':
            if (strcmp(optarg, "md") && strcmp(optarg, "csv") && strcmp(optarg, "json"))
                return fprintf(stderr, "dtrain-analyze: --format \"%s\": md, csv or json\n", optarg), 2;
            opt->format = optarg[0] == 'm' ? FORMAT_MD : optarg[0] == 'c' ? FORMAT_CSV : FORMAT_JSON;
            break;
        case 'x': opt->extra = 1; break;
        case O_WHERE:
            if (add_where(optarg, where, where_count) != 0)
                return 2;
            break;
        case 'h': fputs(table_help, stdout); return -1;
        default: fputs("Try 'dtrain-analyze table --help'.\n", stderr); return 2;
        }
    }
    return 0;
}

static int table_command(int argc, char **argv)
{
    struct speedup_options opt = {.base_nodes = 1, .base_gpus = 1};
    struct experiment_where where[MAX_WHERE];
    int where_count = 0, rc = table_options(argc, argv, &opt, where, &where_count);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (optind >= argc)
        return fputs("dtrain-analyze: table needs record files, hand-made tables or directories\n", stderr), 2;
    struct table_inputs in = {0};
    rc = read_inputs(argv + optind, argc - optind, table_reader, &in);
    struct record_set *set = &in.records;
    int skipped = set->lines_skipped + in.tables.lines_skipped;
    if (rc == 0) {
        if (set->count + set->not_completed + skipped > 0 || in.tables.count == 0) {
            fprintf(stderr, "table: %d runs read, %d not completed (left out), %d lines skipped", set->count,
                    set->not_completed, skipped);
            if (set->other_files)
                fprintf(stderr, "; %d files without records passed over", set->other_files);
            fputc('\n', stderr);
        }
        for (int s = 0; s < in.tables.lines_skipped && s < 8; s++)
            fprintf(stderr, "dtrain-analyze: skipped %s\n", in.tables.skipped[s]);
        keep_where("table", set, where, where_count);
        if (set->count == 0 && in.tables.count == 0)
            rc = (fputs("dtrain-analyze: no completed run and no result table in the input\n", stderr), 2);
        else if (in.tables.count > 0 && opt.format == FORMAT_JSON)
            rc = (fputs("dtrain-analyze: --format json is for run records; hand-made tables come out as md or csv\n",
                        stderr), 2);
    }
    if (rc == 0 && mixes_emulated_and_real(set))
        fprintf(stderr, "dtrain-analyze table: warning: the records mix emulated runs (dtrain-train --emulate) "
                "with real ones; they are tabled as separate experiments\n");
    if (rc == 0 && set->count > 0)
        rc = table_of_records(set, opt);
    if (rc == 0 && in.tables.count > 0) {
        if (set->count > 0)
            fputc('\n', stdout);
        rc = table_of_tables(&in.tables, &opt);
    }
    if (rc == 0 && (skipped > 0 || in.files_without_tables > 0)) {   /* the table is of what could be read */
        fprintf(stderr, "dtrain-analyze: %d line%s of the input could not be read (above), %d file%s held nothing "
                "to table: the table is of the rest\n", skipped, skipped == 1 ? "" : "s", in.files_without_tables,
                in.files_without_tables == 1 ? "" : "s");
        rc = 2;
    }
    free_records(set);
    table_set_free(&in.tables);
    return rc;
}

/* ---------- plot ---------- */

/* What `plot` reads: run records, and the documents people have (result tables, notebooks,
 * method tables). */
struct plot_inputs {
    struct record_set records;
    struct table_set tables;
    struct method_set methods;
    struct log_runs logs;
    int unreadable;
};

static void plot_reader(const char *path, void *set)
{
    struct plot_inputs *in = set;
    if (inputs_hold_records(path)) {
        read_records(path, &in->records);
        return;
    }
    struct dt_err err;
    int tables = in->tables.count, methods = in->methods.count, logs = in->logs.count;
    FILE *f = fopen(path, "r");
    if (!f || table_parse_file(path, &in->tables, &err) < 0 || method_table_parse(f, path, &in->methods, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s: %s\n", path, f ? err.msg : strerror(errno));
        in->unreadable++;
    } else if (rewind(f), throughput_read(f, path, &in->logs) < 0) {
        fprintf(stderr, "dtrain-analyze: %s: out of memory\n", path);
        in->unreadable++;
    }
    if (f)
        fclose(f);
    if (in->tables.count == tables && in->methods.count == methods && in->logs.count == logs && !inputs_walking()) {
        fprintf(stderr, "dtrain-analyze: %s: no run record, result table, method table or notebook run\n", path);
        in->unreadable++;
    }
}

/* Draws one chart: PREFIX-speedup/-throughput pictures. Returns 0, or 2. */
static int draw(const char *prefix, const char *title, const char *x_unit, const struct plot_series *series, int count)
{
    struct dt_err err;
    if (plot_write(prefix, title, x_unit, series, count, &err) < 0 || plot_render(prefix, &err) < 0)
        return fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2;
    printf("%s-speedup.png %s-speedup.svg %s-throughput.png %s-throughput.svg (from %s.dat, %s.gp)\n", prefix, prefix,
           prefix, prefix, prefix, prefix);
    return 0;
}

/* The records' chart, named PREFIX. Returns 0, or 2. */
static int draw_records(const struct record_set *set, const char *prefix, const struct speedup_options *opt,
                        enum plot_by by)
{
    struct plot_series *series = NULL;
    struct dt_err err;
    char title[160];
    snprintf(title, sizeof title, "%s on %s", set->runs[0].model, set->runs[0].dataset);
    int count = plot_series_of(set->runs, set->count, opt, by, &series, &err), rc = 0;
    if (count < 0)
        rc = (fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2);
    else
        rc = draw(prefix, title,
                  set->runs[0].emulation[0] ? "emulated GPUs" : set->runs[0].gpus_per_node == 0 ? "CPU ranks" : "GPUs",
                  series, count);
    plot_series_free(series, count > 0 ? count : 0);
    return rc;
}

static int plot_inputs(char **paths, int count, const char *prefix, const struct speedup_options *opt, enum plot_by by,
                       const struct experiment_where *where, int where_count)
{
    if (count == 0)
        return fputs("dtrain-analyze: plot needs record files, tables, notebooks or directories\n", stderr), 2;
    struct plot_inputs in = {0};
    int rc = read_inputs(paths, count, plot_reader, &in);
    struct plot_charts charts = {0};
    struct dt_err err;
    if (rc == 0) {
        keep_where("plot", &in.records, where, where_count);
        throughput_baselines(&in.logs);
        if (plot_charts_of_tables(&in.tables, opt, &charts, &err) < 0 || plot_charts_of_logs(&in.logs, &charts, &err) < 0 ||
            plot_charts_of_methods(&in.methods, &charts, &err) < 0)
            rc = (fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2);
        else if (in.records.count == 0 && charts.count == 0)
            rc = (fputs("dtrain-analyze: nothing to plot: no completed run record, result table, notebook run or "
                        "method table\n", stderr), 2);
    }
    if (rc == 0 && in.records.count > 0)
        rc = draw_records(&in.records, prefix, opt, by);
    bool one = in.records.count == 0 && charts.count == 1;   /* else each chart is PREFIX-NAME */
    for (int c = 0; c < charts.count && rc == 0; c++) {
        char chart_prefix[4200];
        snprintf(chart_prefix, sizeof chart_prefix, one ? "%s" : "%s-%s", prefix, charts.charts[c].name);
        rc = draw(chart_prefix, charts.charts[c].title, "GPUs", charts.charts[c].series, charts.charts[c].count);
    }
    int skipped = in.records.lines_skipped + in.tables.lines_skipped + in.methods.lines_skipped;
    if (rc == 0 && (skipped > 0 || in.unreadable > 0))
        rc = (fprintf(stderr, "dtrain-analyze: %d line%s could not be read, %d file%s held nothing to plot: the pictures "
                      "are of the rest\n", skipped, skipped == 1 ? "" : "s", in.unreadable, in.unreadable == 1 ? "" : "s"), 2);
    plot_charts_free(&charts);
    free_records(&in.records);
    table_set_free(&in.tables);
    method_set_free(&in.methods);
    free(in.logs.runs);
    return rc;
}

static int plot_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"output", required_argument, NULL, 'o'}, {"baseline", required_argument, NULL, O_BASELINE},
        {"series", required_argument, NULL, O_SERIES}, {"where", required_argument, NULL, O_WHERE},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    struct speedup_options opt = {.base_nodes = 1, .base_gpus = 1};
    const char *prefix = "dtrain-plot";
    enum plot_by by = PLOT_BY_GPUS_PER_NODE;
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    struct experiment_where where[MAX_WHERE];
    int where_count = 0;
    while ((c = getopt_long(argc, argv, "o:h", options, NULL)) != -1) {
        switch (c) {
        case 'o': prefix = optarg; break;
        case O_WHERE:
            if (add_where(optarg, where, &where_count) != 0)
                return 2;
            break;
        case O_SERIES:
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
        case O_BASELINE:
            if (parse_baseline(optarg, &opt) != 0)
                return 2;
            break;
        case 'h': fputs(plot_help, stdout); return 0;
        default: fputs("Try 'dtrain-analyze plot --help'.\n", stderr); return 2;
        }
    }
    return plot_inputs(argv + optind, argc - optind, prefix, &opt, by, where, where_count);
}

/* The options of a command that has only --help: 0 with optind at the first file, -1 when the help
 * was printed, 2 for anything else. */
static int help_only_options(int argc, char **argv, const char *command, const char *help)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (c == 'h')
            return fputs(help, stdout), -1;
        return fprintf(stderr, "Try 'dtrain-analyze %s --help'.\n", command), 2;
    }
    if (optind >= argc)
        return fprintf(stderr, "dtrain-analyze: %s needs at least one FILE\n", command), 2;
    return 0;
}

/* dtrain-analyze timeline [-f md|csv] FILE...: one summary row per trace. */
static int timeline_command(int argc, char **argv)
{
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool csv = false;
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "f:h", options, NULL)) != -1) {
        if (c == 'h')
            return fputs(timeline_help, stdout), 0;
        if (c != 'f')
            return fputs("Try 'dtrain-analyze timeline --help'.\n", stderr), 2;
        if (strcmp(optarg, "md") != 0 && strcmp(optarg, "csv") != 0)
            return fprintf(stderr, "dtrain-analyze: --format \"%s\": expected md or csv\n", optarg), 2;
        csv = strcmp(optarg, "csv") == 0;
    }
    if (optind >= argc)
        return fputs("dtrain-analyze: timeline needs at least one FILE\n", stderr), 2;
    int first = optind, count = argc - optind, rc = 0;
    struct timeline_sum *sums = calloc((size_t)count, sizeof *sums);
    if (!sums)
        return fputs("dtrain-analyze: out of memory\n", stderr), 2;
    for (int k = 0; k < count && rc == 0; k++) {
        struct dt_err err;
        if (timeline_sum_file(argv[first + k], &sums[k], &err) < 0) {
            fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
            rc = 2;
        }
    }
    if (rc == 0)
        timeline_sum_print(stdout, (const char *const *)argv + first, sums, count, csv);
    free(sums);
    return rc;
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

static int audit_command(int argc, char **argv)
{
    int rc = help_only_options(argc, argv, "audit", audit_help);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct path_list list = {0};
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

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        switch (opt) {
        case 'h': print_all_help(); return 0;
        case 'V': printf("dtrain-analyze %s\n", DTRAIN_VERSION); return 0;
        default: fputs("Try 'dtrain-analyze --help'.\n", stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs("dtrain-analyze: no command given (try --help)\n", stderr);
        return 2;
    }
    static const struct {
        const char *name;
        int (*run)(int argc, char **argv);
    } commands[] = {{"table", table_command},       {"plot", plot_command},
                    {"throughput", throughput_command}, {"timeline", timeline_command},
                    {"predict", predict_command},   {"audit", audit_command}};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[optind], commands[i].name) == 0)
            return commands[i].run(argc - optind, argv + optind);
    fprintf(stderr, "dtrain-analyze: unknown command \"%s\" (this version has: table, throughput, plot, timeline, "
            "predict, audit)\n", argv[optind]);
    return 2;
}
