/* profile.h - what a training step costs, layer by layer: measured in a real run and written with
 * dtrain-train --profile-out FILE, read back by --emulate FILE (emulate.h), where each layer then
 * takes the profile's time instead of computing. A "layer" is an op with parameters and the ops
 * after it up to the next (trace.h's). The file is JSON, described in formats/FORMAT.md. */
#ifndef PROFILE_H
#define PROFILE_H

#include <stddef.h>

#include "common/dt_error.h"

struct model;

#define PROFILE_FORMAT "dtrain-profile"
#define PROFILE_VERSION 1

/* The most parameters a profile's layer may say it has (2^40, a trillion): more is a hand edit, and
 * its bytes would overflow the cost model's sums. */
#define PROFILE_MAX_LAYER_PARAMS (1LL << 40)

struct profile {
    char model[64], device[192], backend[32];
    int batch;                 /* samples per step the times were measured at */
    long steps;                /* steps averaged */
    int layers;
    char (*names)[32];         /* "conv 0": kind and index */
    size_t *params;            /* floats of each layer's parameters */
    double *forward, *backward;   /* seconds a step, each layer */
    double update;             /* seconds a step: the optimizer */
    double step;               /* seconds a step, as measured whole (data and exchange waits included) */
};

/* Room for m's layers, names and parameter counts filled, times zero. 0, or -1 with err. */
int profile_for_model(struct profile *p, const struct model *m, struct dt_err *err);
void profile_free(struct profile *p);

/* Writes p to path whole or not at all. 0, or -1 with err naming the file. */
int profile_write(const struct profile *p, const char *path, struct dt_err *err);

/* Reads path: 0, or -1 with err naming the file and what is wrong in it. */
int profile_read(const char *path, struct profile *p, struct dt_err *err);

/* Whether p was measured on a model with m's layers (their number, kinds and sizes); if not, err
 * says where they part. 0 or -1. */
int profile_matches(const struct profile *p, const struct model *m, struct dt_err *err);

/* Seconds of one step's compute: forward, backward and update of every layer. */
double profile_compute_seconds(const struct profile *p);

#endif
