/* cmd_throughput.c - dtrain-analyze throughput: trainer logs as data/sec per run, run records as
 * a method comparison table. */
#include "analysis/command.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/methods.h"
#include "formats/record.h"
#include "formats/table.h"
#include "analysis/throughput.h"

static const char throughput_help[] =
    "Usage: dtrain-analyze throughput [-f md|csv] FILE|DIR...\n"
    "  Trainer logs in the reference format (Step/Epoch lines, Markdown notebooks, slurm-%j.out\n"
    "  files) as one row per run: model, node(s) and GPUs named by its headings, peak data/sec\n"
    "  (the largest Step value), the heading's own figure (\", not the peak\" when it is not),\n"
    "  speedup against the 1-GPU run of the same model on the same node (for a mix of nodes, the\n"
    "  slowest one's), efficiency (speedup / GPUs), epochs, final accuracy.\n"
    "  Run records (files of JSON lines) make a method comparison table instead: a row per model,\n"
    "  batch, tag and method, a column per GPU (rank) count, mean +- std of the repeats'\n"
    "  data/sec, and the 1-GPU Baseline (CSV: mean and std in columns of their own).\n"
    "      -f, --format md|csv    (md)\n"
    "  e.g. dtrain-analyze throughput slurm-1234.out notebook.md\n";

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

static int throughput_run(int argc, char **argv)
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
    if (rc == 0)
        table_mark(stdout, "throughput", format == METHODS_CSV);
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

const struct analyze_command throughput_command = {
    "throughput", "trainer logs -> data/sec per run; records -> a method comparison table", throughput_help,
    throughput_run};
