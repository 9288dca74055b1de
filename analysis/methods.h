/* methods.h - run records into the method comparison table of the reference experiments: one row per model,
 * batch, tag (the link, say) and gradient-exchange method, one column per GPU count (ranks in
 * all), each cell the mean +- std of the repeats' throughput:
 *   | Model | BS | Tag | Method | Baseline | 1 GPU | 2 GPUs | 4 GPUs |
 *   | lenet | 64 | 1gbit | allreduce | 40210.5 | 40210.500 +- 12.30 | 70113.250 +- 80.02 | - |
 * Throughput is a run's final data/sec (samples of all ranks per second over the whole run, the
 * figure a repeat reports); std is the sample standard deviation (0 for one repeat); Baseline is
 * the mean 1-rank throughput of the model, batch and tag with any method. */
#ifndef METHODS_H
#define METHODS_H

#include <stdio.h>

#include "formats/record.h"

enum methods_format { METHODS_MD, METHODS_CSV };

/* Prints the table of runs[0..n). Returns the number of rows, or -1 when out of memory. */
int methods_table(FILE *out, const struct run_record *runs, int n, enum methods_format format);

/* The ranks of r that trained: a parameter-server run's servers (comm_options "servers=N", or
 * "servers=colocated": one per node) are not GPUs of the reference experiments' columns. */
int methods_workers_of(const struct run_record *r);

/* Whether r's servers sat beside its workers (comm_options "servers=colocated"). */
bool methods_servers_colocated(const struct run_record *r);

#endif
