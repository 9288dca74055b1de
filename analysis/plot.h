/* plot.h - speedup and throughput against GPUs as pictures, drawn by gnuplot from a data file and
 * a script left beside them so users can restyle: PREFIX.dat, PREFIX.gp, then
 * PREFIX-speedup.{png,svg} and PREFIX-throughput.{png,svg}. */
#ifndef PLOT_H
#define PLOT_H

#include "dt_error.h"
#include "speedup.h"

/* Writes PREFIX.dat (one block per GPUs-per-node series: total GPUs, speedup, data/sec) and
 * PREFIX.gp. title names the runs (the model and dataset). Returns 0, or -1 with err. */
int plot_write(const char *prefix, const char *title, const struct speedup_result *result, struct dt_err *err);

/* Runs gnuplot on PREFIX.gp in PREFIX's directory. Returns 0, or -1 with err (gnuplot missing or
 * failing, with its exit status). */
int plot_render(const char *prefix, struct dt_err *err);

#endif
