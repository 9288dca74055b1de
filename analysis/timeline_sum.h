/* timeline_sum.h - dtrain-train --timeline traces summed up per rank: where a step's time goes
 * (forward, backward, the wait for the gradient exchange, the update) and how much of the exchange
 * ran behind the backward pass. */
#ifndef TIMELINE_SUM_H
#define TIMELINE_SUM_H

#include <stdbool.h>
#include <stdio.h>

#include "common/dt_error.h"

struct timeline_sum {
    char process[128];         /* "rank 0 on gn01" */
    int steps;
    double step, forward, backward, exchange, update;   /* mean ms per step */
    double median_step, slowest_step;   /* ms: a mean far above the median is a few stalled steps */
    double transfers;          /* per step */
    double overlap;            /* mean ms from a step's first transfer to the end of its backward */
    double wall_origin;        /* the trace's time 0 by the wall clock (s), 0 where it does not say */
    struct transfer_start *starts;   /* its transfers' starts, by name then time (timeline_lag.h) */
    size_t nstarts;
};

/* A transfer's name ("allreduce L3.0") and start (us on the trace's clock). */
struct transfer_start {
    char name[40];
    double at;
};

/* Reads one trace. 0, or -1 with err naming the file and what is wrong. */
int timeline_sum_file(const char *path, struct timeline_sum *sum, struct dt_err *err);

/* Frees what timeline_sum_file allocated in sum. */
void timeline_sum_free(struct timeline_sum *sum);

/* A Markdown table (or CSV), a row per trace; where several traces of one run say their wall
 * origin, a column more: how far behind the first trace's each starts the same transfers. */
void timeline_sum_print(FILE *out, const char *const *paths, const struct timeline_sum *sums, int count, bool csv);

#endif
