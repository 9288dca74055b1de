/* predictions.h - a prediction file: what dtrain-analyze predict said a planned grid of jobs would
 * train at, written before any of them ran (predict --save) and read back by dtrain-analyze
 * compare beside the runs. The file says when it was made, so that compare can tell a blind
 * prediction (every run it is held against started later) from a fit to runs already seen. */
#ifndef PREDICTIONS_H
#define PREDICTIONS_H

#include <stdbool.h>

#include "common/dt_error.h"

/* One planned job: a method at a job size, laid out as it will run. */
struct predicted_cell {
    char method[32];
    int workers, nodes, per_node;
    int servers;               /* parameter servers (0: none; with colocated, one a worker node) */
    bool colocated;            /* the servers sit beside the workers (dtrain-train --ps-colocated) */
    double samples_per_second, step_seconds;
};

struct prediction_set {
    char made[32];             /* ISO 8601, UTC: when predict wrote it */
    char model[64], tag[128];  /* tag: the runs' dtrain-train --tag ("" for any) */
    char profile[512];         /* the profile predicted from, as given */
    int batch;                 /* samples per worker a step */
    struct predicted_cell *cells;
    int count, cap;
};

/* One cell more; 0, or -1 out of memory. */
int predictions_add(struct prediction_set *set, const struct predicted_cell *cell);

/* The set as a JSON file, written whole or not at all (atomic_write). 0, or -1 with err. */
int predictions_write(const char *path, const struct prediction_set *set, struct dt_err *err);

/* A file predictions_write made; every field checked. 0, or -1 with err naming the file and what
 * is wrong; set is the caller's to free either way. */
int predictions_read(const char *path, struct prediction_set *set, struct dt_err *err);

void predictions_free(struct prediction_set *set);

#endif
