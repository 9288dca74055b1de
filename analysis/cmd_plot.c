/* cmd_plot.c - dtrain-analyze plot: run records and the tables people have as speedup and
 * throughput pictures (gnuplot). */
#include "analysis/command.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/methods.h"
#include "analysis/plot.h"
#include "analysis/plot_sources.h"
#include "formats/record.h"
#include "formats/table.h"
#include "analysis/throughput.h"

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

/* What `plot` reads: run records, and the documents people have (result tables, notebooks,
 * method tables). */
struct plot_inputs {
    struct record_set records;
    struct table_set tables;
    struct method_set methods;
    struct log_runs logs;
    /* Logs found in a folder (a sweep's job .out files and step logs beside its records): drawn
     * only where the folders hold no records, whose runs they are (each drawn alone, a 2-node job
     * came out as "1 GPU, mlp on -", 54 pictures for one sweep) */
    struct log_runs walked_logs;
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
    struct log_runs *logs_set = inputs_walking() ? &in->walked_logs : &in->logs;
    int tables = in->tables.count, methods = in->methods.count, logs = logs_set->count;
    FILE *f = fopen(path, "r");
    if (!f || table_parse_file(path, &in->tables, &err) < 0 || method_table_parse(f, path, &in->methods, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s: %s\n", path, f ? err.msg : strerror(errno));
        in->unreadable++;
    } else if (rewind(f), throughput_read(f, path, logs_set, &err) < 0) {
        fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
        in->unreadable++;
    }
    if (f)
        fclose(f);
    if (in->tables.count == tables && in->methods.count == methods && logs_set->count == logs && !inputs_walking()) {
        fprintf(stderr, "dtrain-analyze: %s: no run record, result table, method table or notebook run\n", path);
        in->unreadable++;
    }
}

/* Draws one chart: PREFIX-speedup/-throughput pictures. Returns 0, or 2. */
static int draw_plot(const char *prefix, const char *title, const char *x_unit, const char *rate_what,
                     const struct plot_series *series, int count)
{
    struct dt_err err;
    if (plot_write(prefix, title, x_unit, rate_what, series, count, &err) < 0 || plot_render(prefix, &err) < 0)
        return fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2;
    char throughput[4200];   /* not drawn where no point had a rate (a table without Steps) */
    snprintf(throughput, sizeof throughput, "%s-throughput.png", prefix);
    if (access(throughput, F_OK) == 0)
        printf("%s-speedup.png %s-speedup.svg %s-throughput.png %s-throughput.svg (from %s.dat, %s.gp)\n", prefix,
               prefix, prefix, prefix, prefix, prefix);
    else
        printf("%s-speedup.png %s-speedup.svg (from %s.dat, %s.gp; no throughput: the input gives no samples)\n",
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
        rc = draw_plot(prefix, title,
                  set->runs[0].emulation[0] ? "emulated GPUs" : set->runs[0].gpus_per_node == 0 ? "CPU ranks" : "GPUs",
                  "peak rate, mean of the runs", series, count);
    plot_series_free(series, count > 0 ? count : 0);
    return rc;
}

/* The logs found in folders join those named, unless the folders hold run records: then they are
 * the records' own jobs' logs, passed over and said so. 0, or 2 out of memory. */
static int keep_walked_logs(struct plot_inputs *in)
{
    if (in->records.count > 0) {
        fprintf(stderr, "plot: %d log run%s found beside the run records passed over (the records are their runs); "
                "name a log to draw it\n", in->walked_logs.count, in->walked_logs.count == 1 ? "" : "s");
        return 0;
    }
    return throughput_take(&in->logs, &in->walked_logs) < 0 ? (fputs("dtrain-analyze: out of memory\n", stderr), 2) : 0;
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
    if (rc == 0 && in.walked_logs.count > 0)
        rc = keep_walked_logs(&in);
    if (rc == 0) {
        command_keep_where("plot", &in.records, where, where_count);
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
        rc = draw_plot(chart_prefix, charts.charts[c].title, "GPUs", charts.charts[c].rate_what, charts.charts[c].series,
                       charts.charts[c].count);
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
    free(in.walked_logs.runs);
    return rc;
}

static int plot_run(int argc, char **argv)
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
            if (command_add_where(optarg, where, &where_count) != 0)
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
            if (command_parse_baseline(optarg, &opt) != 0)
                return 2;
            break;
        case 'h': fputs(plot_help, stdout); return 0;
        default: fputs("Try 'dtrain-analyze plot --help'.\n", stderr); return 2;
        }
    }
    return plot_inputs(argv + optind, argc - optind, prefix, &opt, by, where, where_count);
}

const struct analyze_command plot_command = {
    "plot", "run records, tables, notebooks -> speedup and throughput pictures (gnuplot)", plot_help, plot_run};
