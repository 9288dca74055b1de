/* loader.h - batches for one rank: each epoch shuffled from the seed (the same order on every
 * rank), padded like PyTorch's DistributedSampler so every step is full, cut into steps of
 * batch x world samples of which this rank takes its own slice; a background thread prepares the
 * next batch while the current one trains. */
#ifndef LOADER_H
#define LOADER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "trainer/data/data.h"
#include "common/dt_error.h"

struct loader {
    const struct dataset *ds;
    int batch, rank, world;
    uint64_t seed;
    long steps_per_epoch;     /* ceil(count / (batch x world)) */
    long *order;              /* the current epoch's permutation */
    long order_epoch;

    /* the batch being prepared and the one handed out */
    pthread_t thread;
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    bool running, stop, ready;
    long next_step;           /* global step number (from 0) the worker prepares */
    float *x[2];
    int *y[2];
    int filling;              /* which buffer the worker writes */
};

/* Sets a loader up, without its thread. Returns 0 or -1 with err. */
int loader_init(struct loader *l, const struct dataset *ds, int batch, int rank, int world, uint64_t seed,
                struct dt_err *err);

/* Fills one batch directly: step `step`'s slice for this rank. Only while no thread runs (the
 * thread owns the epoch order once started). */
void loader_fill(struct loader *l, long step, float *x, int *y);

/* Starts the prefetching thread at global step `first_step` (resuming mid-epoch works). Returns 0
 * or -1 with err. */
int loader_start(struct loader *l, long first_step, struct dt_err *err);

/* Waits for the next batch; *x and *y stay valid until the following call. */
void loader_next(struct loader *l, const float **x, const int **y);

/* Stops the thread, if any, and frees everything. */
void loader_stop(struct loader *l);

#endif
