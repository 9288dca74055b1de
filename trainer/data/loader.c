/* loader.c - shuffled, sharded, prefetched batches (see loader.h). */
#include "trainer/data/loader.h"

#include <stdlib.h>
#include <string.h>

#include "trainer/base/page_memory.h"   /* batches a GPU backend pins, each alone */
#include "trainer/base/rng.h"

/* The epoch's order: a Fisher-Yates shuffle seeded by (seed, epoch), identical on every rank. */
static void shuffle_epoch(struct loader *l, long epoch)
{
    struct rng r;
    rng_seed(&r, l->seed * 1000003ULL + (uint64_t)epoch);
    for (long i = 0; i < l->ds->count; i++)
        l->order[i] = i;
    for (long i = l->ds->count - 1; i > 0; i--) {
        long j = (long)rng_below(&r, (uint64_t)i + 1);
        long t = l->order[i];
        l->order[i] = l->order[j];
        l->order[j] = t;
    }
    l->order_epoch = epoch;
}

void loader_fill(struct loader *l, long step, float *x, int *y)
{
    long epoch = step / l->steps_per_epoch, within = step % l->steps_per_epoch;
    if (epoch != l->order_epoch)
        shuffle_epoch(l, epoch);
    size_t size = (size_t)l->ds->c * l->ds->h * l->ds->w;
    long first = (within * l->world + l->rank) * (long)l->batch;
    for (int i = 0; i < l->batch; i++) {
        long at = (first + i) % l->ds->count;   /* the last step wraps to the epoch's start */
        dataset_sample(l->ds, l->order[at], x + (size_t)i * size, &y[i]);
    }
}

static void *loader_worker(void *arg)
{
    struct loader *l = arg;
    pthread_mutex_lock(&l->mutex);
    while (!l->stop) {
        if (l->ready) {   /* the prepared batch has not been taken yet */
            pthread_cond_wait(&l->cond, &l->mutex);
            continue;
        }
        long step = l->next_step;
        int buf = l->filling;
        pthread_mutex_unlock(&l->mutex);
        loader_fill(l, step, l->x[buf], l->y[buf]);
        pthread_mutex_lock(&l->mutex);
        l->ready = true;
        pthread_cond_broadcast(&l->cond);
    }
    pthread_mutex_unlock(&l->mutex);
    return NULL;
}

int loader_init(struct loader *l, const struct dataset *ds, int batch, int rank, int world, uint64_t seed,
                struct dt_err *err)
{
    memset(l, 0, sizeof *l);
    l->ds = ds, l->batch = batch, l->rank = rank, l->world = world, l->seed = seed;
    long per_step = (long)batch * world;
    l->steps_per_epoch = (ds->count + per_step - 1) / per_step;
    l->order_epoch = -1;
    size_t size = (size_t)ds->c * ds->h * ds->w * batch;
    l->order = malloc((size_t)ds->count * sizeof(long));
    for (int b = 0; b < 2; b++) {
        l->x[b] = page_memory_alloc(size * sizeof(float));
        l->y[b] = page_memory_alloc((size_t)batch * sizeof(int));
    }
    if (!l->order || !l->x[0] || !l->x[1] || !l->y[0] || !l->y[1]) {
        loader_stop(l);
        return dt_fail(err, "out of memory for batches of %d samples", batch);
    }
    return 0;
}

int loader_start(struct loader *l, long first_step, struct dt_err *err)
{
    l->next_step = first_step;
    pthread_mutex_init(&l->mutex, NULL);
    pthread_cond_init(&l->cond, NULL);
    if (pthread_create(&l->thread, NULL, loader_worker, l) != 0) {
        pthread_mutex_destroy(&l->mutex);
        pthread_cond_destroy(&l->cond);
        loader_stop(l);
        return dt_fail(err, "cannot start the data loader thread");
    }
    l->running = true;
    return 0;
}

void loader_next(struct loader *l, const float **x, const int **y)
{
    pthread_mutex_lock(&l->mutex);
    while (!l->ready)
        pthread_cond_wait(&l->cond, &l->mutex);
    int done = l->filling;
    *x = l->x[done];
    *y = l->y[done];
    l->filling = 1 - done;   /* the worker fills the other buffer meanwhile */
    l->next_step++;
    l->ready = false;
    pthread_cond_broadcast(&l->cond);
    pthread_mutex_unlock(&l->mutex);
}

void loader_stop(struct loader *l)
{
    if (l->running) {
        pthread_mutex_lock(&l->mutex);
        l->stop = true;
        pthread_cond_broadcast(&l->cond);
        pthread_mutex_unlock(&l->mutex);
        pthread_join(l->thread, NULL);
        pthread_mutex_destroy(&l->mutex);
        pthread_cond_destroy(&l->cond);
        l->running = false;
    }
    free(l->order);
    for (int b = 0; b < 2; b++) {
        free(l->x[b]);
        free(l->y[b]);
    }
    memset(l, 0, sizeof *l);
}
