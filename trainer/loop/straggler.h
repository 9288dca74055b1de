/* straggler.h - the slow rank, named while the job runs. A data-parallel step ends when its slowest
 * rank's gradients are in, so one slow GPU or node sets the pace of all. Each rank sums the time
 * its steps spent computing (forward and backward); every --log-every steps the workers exchange
 * their means over that stretch (one small allgather, off the step's path) and rank 0 names every
 * rank whose mean is `threshold` above the median, with its host. */
#ifndef STRAGGLER_H
#define STRAGGLER_H

#include <stdio.h>

#include "trainer/comm/comm.h"
#include "common/dt_error.h"

/* A rank's compute times; zero-initialised. */
struct straggler_watch {
    double interval_seconds;   /* since the last report */
    long interval_steps;
    double total_seconds;      /* over the run */
    long total_steps;
    double report_seconds;     /* the reports themselves took, over the run: what naming costs */
    long reports;
};

/* One step's forward and backward took seconds. */
void straggler_step(struct straggler_watch *w, double seconds);

/* Every rank of comm calls it (a collective): rank 0 writes a line to out for each rank that
 * computed `threshold` (0.25: 25%) above the workers' median over the stretch since the last
 * report ("dtrain-train: straggler: rank 5 on gn03 computes 1.31x the median ..."), and the
 * stretch starts again. Returns the number of stragglers named (on rank 0; 0 elsewhere), or -1 with
 * err when the collective failed. */
int straggler_report(struct straggler_watch *w, struct comm *comm, double threshold, FILE *out, struct dt_err *err);

/* This rank's mean compute time a step over the run, in milliseconds (0 before any step). */
double straggler_mean_ms(const struct straggler_watch *w);

#endif
