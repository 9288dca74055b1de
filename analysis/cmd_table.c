/* cmd_table.c - dtrain-analyze table: run records as speedup tables, one per experiment, and
 * hand-made result tables corrected. */
#include "analysis/command.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/corrected.h"
#include "formats/record.h"
#include "formats/scaling_table.h"
#include "formats/table.h"
#include "analysis/scaling_audit.h"

static const char table_help[] =
    "Usage: dtrain-analyze table [options] FILE|DIR...\n"
    "  Run records (dtrain-train --record; JSON lines; directories read recursively) as the\n"
    "  reference speedup table: one row per completed run, then a bold Avg row per (#Nodes, #GPUs)\n"
    "  group; Runtime H:MM:SS; Speedup = the baseline group's average runtime / the group's.\n"
    "  Runs are averaged together only when they differ in nothing but the job: a records file\n"
    "  that collects a study becomes one table per experiment (model, dataset, batch, epochs,\n"
    "  max-steps, method, backend, threads, optimizer, lr, tag, emulation), each under a heading.\n"
    "  When an experiment's runs did not train the same samples (--max-steps at every job\n"
    "  size), its speedup is by samples/s, and the table says so.\n"
    "  Hand-made result tables (as the reference bigMNIST table: Markdown or CSV, columns\n"
    "  #Nodes, #GPUs, Epoch, Batchsize, Steps, Runtime, Speedup, Node(s); several a file) come\n"
    "  out corrected: Avg = the mean of the runs above it, speedups from those means, the\n"
    "  table's own values in Given columns where they differ by more than their printing explains.\n"
    "  Labs' tables need only nodes, GPUs and runtime, by their usual names (Nodes, GPUs/node,\n"
    "  Time (s), Wall time, Hosts, ...); runtimes H:MM:SS, MM:SS, D-HH:MM:SS or a number (seconds\n"
    "  unless the header says min or h; a header's clock says what its parts count: [h:m], [d:h]);\n"
    "  Speedup and Avg rows optional; ';' CSV with decimal commas. Efficiency = speedup / the\n"
    "  GPUs' ratio to the baseline's.\n"
    "  Scaling tables as vendors publish them (a GPUs column beside throughputs or times to train:\n"
    "  GPUs, Throughput - TF32, ...) come out as speedup tables, one per throughput or time\n"
    "  column: speedup over the smallest job, efficiency = speedup / the GPU count's ratio.\n"
    "  Tables dtrain-analyze printed (their first line says so) are passed over in directories.\n"    "          --baseline NxG     the baseline configuration (1x1)\n"
    "          --stat mean|median  how a group's runtimes are averaged (mean)\n"
    "      -f, --format md|csv|json|reference  (md; json for records only). md, csv and json give\n"
    "                             each Avg row its number of runs, the 95% confidence intervals of\n"
    "                             its mean runtime (Student's t) and of its speedup (the delta\n"
    "                             method over both groups' runs), and its efficiency (speedup /\n"
    "                             GPUs in all); one run gives no interval and says so. reference:\n"
    "                             the reference experiments' columns alone, as they printed them\n"
    "      -x, --extra            also the spread (std, min-max)\n"
    "          --where KEY=VALUE  only runs with that value (repeatable): --where method=wfbp-a2a\n"
    "  #GPUs is GPUs per node, or ranks per node for CPU runs. Exit 2 when a line could not be\n"
    "  read, after the table of the rest.\n"
    "  e.g. dtrain-analyze table runs/ > speedup.md\n"
    "       dtrain-analyze table --where tag=10gbit --stat median runs.jsonl\n"
    "       dtrain-analyze table 003_bigmnist.txt       # a hand-made table, corrected\n";

/* Whether some runs of set were emulated and some real. */
static bool mixes_emulated_and_real(const struct record_set *set)
{
    int emulated = 0;
    for (int i = 0; i < set->count; i++)
        emulated += set->runs[i].emulation[0] != '\0';
    return emulated > 0 && emulated < set->count;
}

/* What `table` reads: run records, and hand-made result tables (the reference experiments' 003) to correct. */
struct table_inputs {
    struct record_set records;
    struct table_set tables;
    struct scaling_set scaling;   /* published scaling tables, of the files named in scaling_path */
    char **scaling_path;
    int files_without_tables;   /* named files that hold neither */
};

/* A file's published scaling tables into in; whether it had any. */
static bool read_scaling_tables(const char *path, struct table_inputs *in)
{
    int before = in->scaling.count;
    struct dt_err err;
    if (scaling_parse_file(path, &in->scaling, &err) < 0 || in->scaling.count == before)
        return false;
    char **grown = realloc(in->scaling_path, (size_t)in->scaling.count * sizeof *grown);
    if (!grown)
        return false;
    in->scaling_path = grown;
    for (int t = before; t < in->scaling.count; t++)
        in->scaling_path[t] = strdup(path);
    return true;
}

/* A named file with nothing to table: what was needed and, where it has a table, what it lacks. */
static void say_not_read(const char *path)
{
    char why[512];
    fprintf(stderr, "dtrain-analyze: %s: no run record and no result table (a header naming the nodes, the GPUs and "
            "the runtime: #Nodes, #GPUs, Runtime or Nodes, GPUs/node, Time (s) ...) and no scaling table (GPUs beside "
            "throughputs or times to train: GPUs, Throughput - TF32 ...)", path);
    if (scaling_why_not_read(path, why, sizeof why) || table_why_not_read(path, why, sizeof why))
        fprintf(stderr, "; %s", why);
    fputc('\n', stderr);
}

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
        return;
    }
    /* A file may hold both: a lab's table under a published one it is compared with (audit reads both too). */
    bool published = read_scaling_tables(path, in);
    if (in->tables.count == before && !published) {
        if (inputs_walking())
            in->records.other_files++;   /* a sweep's directory also has its jobs' outputs */
        else
            in->files_without_tables++, say_not_read(path);
    }
}

/* Reorders runs so that each experiment's (index[i]: run i's) sit together, in their order (a
 * stable counting sort, applied in place a swap at a time: a copy of a million runs would double
 * what `table` holds); starts[e] is where experiment e begins, starts[experiments] the end.
 * Returns 0, or -1 out of memory. */
static int group_by_experiment(struct run_record *runs, int n, const int *index, int experiments, int *starts)
{
    int *to = malloc((size_t)n * sizeof *to + 1), *next = calloc((size_t)experiments + 1, sizeof *next);
    if (!to || !next)
        return free(to), free(next), -1;
    for (int i = 0; i < n; i++)
        next[index[i] + 1]++;
    for (int e = 0; e < experiments; e++)
        next[e + 1] += next[e];
    for (int e = 0; e <= experiments; e++)
        starts[e] = next[e];
    for (int i = 0; i < n; i++)
        to[i] = next[index[i]]++;
    for (int i = 0; i < n; i++)
        while (to[i] != i) {   /* run i belongs at to[i]: swapped there, the one from there looked at next */
            int j = to[i];
            struct run_record held = runs[j];
            runs[j] = runs[i], runs[i] = held;
            to[i] = to[j], to[j] = j;
        }
    free(to), free(next);
    return 0;
}

/* One table per experiment of the records (a heading each when there are several); the runs are
 * regrouped by experiment. Returns 0, or 2. */
static int table_of_records(struct record_set *set, struct speedup_options opt)
{
    int *index = malloc((size_t)set->count * sizeof *index), *starts = NULL, experiments = 0, rc = 0;
    if (index) {
        experiments = experiment_split(set->runs, set->count, index);
        starts = malloc(((size_t)experiments + 1) * sizeof *starts);
    }
    if (!index || !starts || group_by_experiment(set->runs, set->count, index, experiments, starts) < 0) {
        free(index), free(starts);
        return fputs("dtrain-analyze: out of memory\n", stderr), 2;
    }
    if (experiments > 1)
        fprintf(stderr, "table: %d experiments (runs that differ in more than the job size are not averaged "
                "together; --where KEY=VALUE picks one)\n", experiments);
    if (opt.format == FORMAT_JSON)
        fputs("{\"experiments\": [", stdout);
    for (int e = 0; e < experiments && rc == 0; e++) {
        const struct run_record *runs = set->runs + starts[e];
        int n = starts[e + 1] - starts[e];
        char heading[768];
        experiment_describe(&runs[0], heading, sizeof heading);
        opt.by_rate = !experiment_same_work(runs, n);
        opt.heading = experiments > 1 || opt.format == FORMAT_JSON ? heading : NULL;
        opt.baseline_optional = experiments > 1;
        if (opt.format == FORMAT_JSON)
            fputs(e ? ",\n" : "\n", stdout);
        struct dt_err err;
        if (speedup_table(stdout, runs, n, &opt, &err) < 0)
            rc = (fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2);
        else if (opt.format != FORMAT_JSON && e + 1 < experiments)
            fputc('\n', stdout);
    }
    if (opt.format == FORMAT_JSON && rc == 0)
        fputs("\n]}\n", stdout);
    free(index), free(starts);
    return rc;
}

/* The hand-made tables, corrected. Returns 0, or 2. */
static int table_of_tables(const struct table_set *tables, const struct speedup_options *opt)
{
    int changed = 0;
    for (int t = 0; t < tables->count; t++) {
        const struct result_table *table = &tables->tables[t];
        if (table->seconds_assumed)
            fprintf(stderr, "table: \"%s\" (header on line %d): runtimes without a unit read as seconds (a header "
                    "such as \"Time (min)\" says otherwise)\n", table->title[0] ? table->title : "Table", table->line);
        if (table->gpus_total)
            fprintf(stderr, "table: \"%s\" (header on line %d): its GPUs column holds the job's total (more than a "
                    "node holds, a multiple of the nodes on every row), read as GPUs / Nodes a node\n",
                    table->title[0] ? table->title : "Table", table->line);
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
            if (command_parse_baseline(optarg, opt) != 0)
                return 2;
            break;
        case O_STAT:
            if (strcmp(optarg, "mean") && strcmp(optarg, "median"))
                return fprintf(stderr, "dtrain-analyze: --stat \"%s\": mean or median\n", optarg), 2;
            opt->stat = strcmp(optarg, "median") == 0 ? STAT_MEDIAN : STAT_MEAN;
            break;
        case 'f': {
            static const struct { const char *name; enum speedup_format format; } formats[] = {
                {"md", FORMAT_MD}, {"csv", FORMAT_CSV}, {"json", FORMAT_JSON}, {"reference", FORMAT_REFERENCE}};
            size_t f = 0;
            while (f < sizeof formats / sizeof formats[0] && strcmp(optarg, formats[f].name) != 0)
                f++;
            if (f == sizeof formats / sizeof formats[0])
                return fprintf(stderr, "dtrain-analyze: --format \"%s\": md, csv, json or reference\n", optarg), 2;
            opt->format = formats[f].format;
            break;
        }
        case 'x': opt->extra = 1; break;
        case O_WHERE:
            if (command_add_where(optarg, where, where_count) != 0)
                return 2;
            break;
        case 'h': fputs(table_help, stdout); return -1;
        default: fputs("Try 'dtrain-analyze table --help'.\n", stderr); return 2;
        }
    }
    return 0;
}

static int table_run(int argc, char **argv)
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
        int tables = in.tables.count + in.scaling.count;
        if (set->count + set->not_completed + skipped > 0 || tables == 0) {
            fprintf(stderr, "table: %d runs read, %d not completed (left out), %d lines skipped", set->count,
                    set->not_completed, skipped);
            if (set->other_files)
                fprintf(stderr, "; %d files without records passed over", set->other_files);
            fputc('\n', stderr);
        }
        for (int s = 0; s < in.tables.lines_skipped && s < 8; s++)
            fprintf(stderr, "dtrain-analyze: skipped %s\n", in.tables.skipped[s]);
        command_keep_where("table", set, where, where_count);
        if (set->count == 0 && tables == 0)
            rc = (fputs("dtrain-analyze: no completed run and no result table in the input\n", stderr), 2);
        else if (tables > 0 && opt.format == FORMAT_JSON)
            rc = (fputs("dtrain-analyze: --format json is for run records; hand-made tables come out as md or csv\n",
                        stderr), 2);
    }
    if (rc == 0 && mixes_emulated_and_real(set))
        fprintf(stderr, "dtrain-analyze table: warning: the records mix emulated runs (dtrain-train --emulate) "
                "with real ones; they are tabled as separate experiments\n");
    if (rc == 0 && opt.format != FORMAT_JSON)
        table_mark(stdout, "table", opt.format == FORMAT_CSV);
    if (rc == 0 && set->count > 0)
        rc = table_of_records(set, opt);
    if (rc == 0 && in.tables.count > 0) {
        if (set->count > 0)
            fputc('\n', stdout);
        rc = table_of_tables(&in.tables, &opt);
    }
    for (int t = 0; rc == 0 && t < in.scaling.count; t++) {   /* published: speedup tables of their own */
        if (set->count > 0 || in.tables.count > 0 || t > 0)
            fputc('\n', stdout);
        scaling_print(stdout, &in.scaling.tables[t], in.scaling_path[t]);
    }
    if (rc == 0 && (skipped > 0 || in.files_without_tables > 0)) {   /* the table is of what could be read */
        fprintf(stderr, "dtrain-analyze: %d line%s of the input could not be read (above), %d file%s held nothing "
                "to table: the table is of the rest\n", skipped, skipped == 1 ? "" : "s", in.files_without_tables,
                in.files_without_tables == 1 ? "" : "s");
        rc = 2;
    }
    free_records(set);
    table_set_free(&in.tables);
    for (int t = 0; t < in.scaling.count; t++)
        free(in.scaling_path[t]);
    free(in.scaling_path);
    scaling_set_free(&in.scaling);
    return rc;
}

const struct analyze_command table_command = {
    "table", "run records -> speedup tables; hand-made tables -> corrected", table_help, table_run};
