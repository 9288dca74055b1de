/* corrected.h - a hand-made result table (the seeds' 003: per-run rows, Avg rows written by hand)
 * recomputed: every configuration's runs, then its Avg row as the mean (or median) of those runs
 * and its speedup against the 1 node x 1 GPU Avg, with the table's own Avg and speedup beside them
 * where they differ. `dtrain-analyze table` prints it for files that hold such tables. */
#ifndef CORRECTED_H
#define CORRECTED_H

#include <stdio.h>

#include "speedup.h"
#include "table.h"

/* Prints t corrected, under its title, in opt's format and statistic (opt->base_nodes x base_gpus
 * is the baseline; without one, speedups are "-"). *changed gets how many Avg runtimes and
 * speedups differ from the table's own. Returns 0, or -1 out of memory. */
int corrected_print(FILE *out, const struct result_table *t, const struct speedup_options *opt, int *changed);

#endif
