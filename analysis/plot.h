/* plot.h - speedup and throughput against GPUs as pictures, drawn by gnuplot from a data file and
 * a script left beside them so users can restyle: PREFIX.dat, PREFIX.gp, then
 * PREFIX-speedup.{png,svg} and PREFIX-throughput.{png,svg}. */
#ifndef PLOT_H
#define PLOT_H

#include "common/dt_error.h"
#include "analysis/speedup.h"

/* What one line of the pictures is drawn from. */
enum plot_by { PLOT_BY_GPUS_PER_NODE, PLOT_BY_TAG, PLOT_BY_METHOD };

struct plot_point {
    int total_gpus, nodes;
    double speedup, data_per_sec;   /* speedup NAN where there is no baseline (not drawn) */
    double speedup_std, data_per_sec_std;   /* the repeats' spread, drawn as error bars; 0 for one run */
};

struct plot_series {
    char label[160];             /* "2 GPUs per node", "tag 1gbit", "allreduce" */
    struct plot_point *points;   /* ascending total GPUs */
    int count;
};

/* The series of runs[0..n): per GPUs-per-node value (speedups against one baseline), or per tag
 * or method (each against its own baseline configuration, so a slow link is compared with itself).
 * The runs of one series must be one experiment (experiment.h) but for the job size; speedups are
 * by samples/s where they did not train the same samples. Returns how many, or -1 with err (no
 * baseline run in a series, runs of different experiments in one, out of memory). */
int plot_series_of(const struct run_record *runs, int n, const struct speedup_options *opt, enum plot_by by,
                   struct plot_series **out, struct dt_err *err);

void plot_series_free(struct plot_series *series, int count);

/* Inserts a point into a series, in ascending total GPUs. Returns 0, or -1 out of memory. */
int plot_add_point(struct plot_series *series, struct plot_point point);

/* Appends an empty series labelled label. Returns it, or NULL out of memory. */
struct plot_series *plot_new_series(struct plot_series **list, int *count, const char *label);

/* Writes PREFIX.dat (one block per series: total GPUs, speedup, data/sec, nodes, and their stds)
 * and PREFIX.gp. title names the runs (the model and dataset); x_unit what was counted ("GPUs",
 * "CPU ranks"); rate_what what a point's data/sec is ("peak rate, mean of the runs"), for
 * its axis. Each series keeps its colour in both figures; the key sits outside the data; error
 * bars are one std of the runs either way, and the axes say so; where the job sizes span 8x or
 * more the GPU axis is log2, and nothing in a name is read as gnuplot markup.
 * Returns 0, or -1 with err. */
int plot_write(const char *prefix, const char *title, const char *x_unit, const char *rate_what,
               const struct plot_series *series,
               int count, struct dt_err *err);

/* Runs gnuplot on PREFIX.gp in PREFIX's directory. Returns 0, or -1 with err (gnuplot missing or
 * failing, with its exit status). */
int plot_render(const char *prefix, struct dt_err *err);

#endif
