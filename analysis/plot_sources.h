/* plot_sources.h - the documents people already have as charts: hand-made result tables (as the
 * reference bigMNIST tables), notebooks of trainer logs and method tables (methods x GPUs). Each becomes one or
 * more charts (speedup and data/sec against GPUs, a line per series) that plot.h draws. */
#ifndef PLOT_SOURCES_H
#define PLOT_SOURCES_H

#include "formats/method_table.h"
#include "analysis/plot.h"
#include "analysis/speedup.h"
#include "formats/table.h"
#include "analysis/throughput.h"

struct plot_chart {
    char title[200];
    char name[80];                 /* for file names: "bigmnist-performance-results" */
    struct plot_series *series;
    int count;
    const char *rate_what;         /* what its data/sec is ("peak rate, mean of the runs") */
};

struct plot_charts {
    struct plot_chart *charts;
    int count;
};

/* A chart per result table: a line for one node (GPUs vary), one per GPUs per node (nodes vary),
 * from the corrected means (Avg as the runs say, not as written), error bars from the runs' std.
 * Returns 0, or -1 with err. */
int plot_charts_of_tables(const struct table_set *tables, const struct speedup_options *opt, struct plot_charts *out,
                          struct dt_err *err);

/* A chart per notebook file: a line per model and node(s), GPUs against the run's peak data/sec
 * and its speedup over the 1-GPU run of the same model and node. Returns 0, or -1 with err. */
int plot_charts_of_logs(const struct log_runs *runs, struct plot_charts *out, struct dt_err *err);

/* A chart per method table and model/batch/connection: a line per method, the values at the GPU
 * counts they were measured at (a header with an extra column read as the audit reads it),
 * speedup = value / Baseline, error bars from their +- std. Returns 0, or -1 with err. */
int plot_charts_of_methods(const struct method_set *methods, struct plot_charts *out, struct dt_err *err);

void plot_charts_free(struct plot_charts *charts);

#endif
