/* cmd_timeline.c - dtrain-analyze timeline: dtrain-train --timeline traces summed up, where a
 * step's time went. */
#include "analysis/command.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline_sum.h"

static const char timeline_help[] =
    "Usage: dtrain-analyze timeline [-f md|csv] FILE...\n"
    "  dtrain-train --timeline traces (PREFIX.rankR.json) summed up, a row per trace: steps, and\n"
    "  the mean ms per step of the step (and its median and slowest: a mean far above the\n"
    "  median is a few stalled steps), its forward, backward, the wait for the gradient\n"
    "  exchange after backward (what was not hidden) and the update; transfers a step; and for\n"
    "  how long, on average, the exchange was already under way while backward still computed\n"
    "  (WFBP's overlap; 0 for BSP, which starts after backward). Given the traces of several ranks of\n"
    "  one run, how far behind the first trace's each rank starts the same transfers (median and 90th\n"
    "  percentile, by the wall clock each trace records for its time 0: a follower waiting for rank\n"
    "  0's choice, a rank whose backward runs late).\n"
    "  e.g. dtrain-analyze timeline trace.rank0.json trace.rank1.json\n";

/* dtrain-analyze timeline [-f md|csv] FILE...: one summary row per trace. */
static int timeline_run(int argc, char **argv)
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
    for (int k = 0; k < count; k++)
        timeline_sum_free(&sums[k]);
    free(sums);
    return rc;
}

const struct analyze_command timeline_command = {
    "timeline", "dtrain-train --timeline traces -> where a step's time went", timeline_help, timeline_run};
