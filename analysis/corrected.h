/* corrected.h - a hand-made result table (the reference experiments' 003: per-run rows, Avg rows written by hand)
 * recomputed: every configuration's runs, then its Avg row as the mean (or median) of those runs
 * and its speedup against the 1 node x 1 GPU Avg, with the table's own Avg and speedup beside them
 * where they differ. `dtrain-analyze table` prints it for files that hold such tables. */
#ifndef CORRECTED_H
#define CORRECTED_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/speedup.h"
#include "formats/table.h"

/* One (#Nodes, #GPUs) configuration of a table, in the order the table first shows it. */
struct corrected_config {
    int nodes, gpus;
    int *runs, count;          /* row indices of its runs (not Avg rows) */
    int given;                 /* the row whose Runtime and Speedup the table gives for it: its last Avg
                                * row, or its lone run where it has no Avg row; -1: none */
    const struct result_row *usual;   /* a run with the configuration's usual Epoch, Batchsize, Steps */
    double runtime, std;       /* the runs' mean (or median) and std, seconds */
    double samples;            /* Steps x Batchsize x GPUs of the usual run */
    double speedup;            /* against the baseline configuration; NAN without one */
    double runtime_unit;       /* of the last digit its runs were printed with: they are rounded */
    double speedup_error;      /* how far speedup may be off, its runtimes having been rounded */
    int unread_line;           /* a run of it that could not be read (its Avg is incomplete), or 0 */
    double mean;               /* the runs' mean, seconds (runtime is the median with STAT_MEDIAN) */
    double min, max;           /* the fastest and slowest run, seconds (--extra) */
    struct avg_uncertainty uncertainty;   /* its Avg row's runs and 95% intervals (speedup.h) */
};

/* The configurations of t, their runtimes (opt->stat) and speedups; *by_rate: speedups from
 * samples/s, as the configurations did not train the same samples. Returns how many, or -1 out of
 * memory; the caller frees with corrected_free. */
int corrected_configs(const struct result_table *t, const struct speedup_options *opt, struct corrected_config **out,
                      bool *by_rate);
void corrected_free(struct corrected_config *configs, int count);

/* Prints t corrected, under its title, in opt's format and statistic (opt->base_nodes x base_gpus
 * is the baseline; without one, speedups are "-"). *changed gets how many Avg runtimes and
 * speedups differ from the table's own. Returns 0, or -1 out of memory. */
int corrected_print(FILE *out, const struct result_table *t, const struct speedup_options *opt, int *changed);

#endif
