/* staging.c - device gradients exchanged from host memory (see staging.h). The rank's thread
 * queues each span's copy as backward completes it; the staging thread waits for the copies in
 * that order and hands the spans to the method, so the method sees what backward on a CPU rank
 * would show it, a little later. */
#include "trainer/exchange/staging.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/base/page_memory.h"

struct span_out {
    size_t first;
    int slot;
    double queued;             /* when backward reported it (timeline_now) */
};

struct staging {
    struct staging_device device;
    float *device_grads, *host;
    size_t count;
    int spans;                 /* slots a step */
    staging_deliver deliver;
    void *deliver_ctx;

    pthread_mutex_t lock;      /* everything below */
    pthread_cond_t queued;     /* the staging thread: a span was queued, or stop */
    pthread_cond_t delivered;  /* the rank: a span was handed over, or one failed */
    pthread_t thread;
    bool running, stop, failed;
    struct dt_err error;
    struct span_out *queue;    /* this step's spans, in backward's order */
    int queued_count, delivered_count;
    size_t end;                /* the step's spans so far cover [end, count) */
    struct staging_stats stats;
    struct timeline *timeline; /* this step's (NULL: none) */
};

/* ---------- plain host copies (CPU ranks, the tests) ---------- */

static int host_copy_out(void *ctx, int slot, float *host, const float *device, size_t count, struct dt_err *err)
{
    (void)ctx, (void)slot, (void)err;
    memcpy(host, device, count * sizeof(float));
    return 0;
}

static int host_wait_out(void *ctx, int slot, double *seconds, struct dt_err *err)
{
    (void)ctx, (void)slot, (void)err;
    *seconds = -1;   /* the copy was made when it was queued */
    return 0;
}

static int host_copy_in(void *ctx, float *device, const float *host, size_t count, struct dt_err *err)
{
    (void)ctx, (void)err;
    memcpy(device, host, count * sizeof(float));
    return 0;
}

struct staging_device staging_host_device(void)
{
    return (struct staging_device){.copy_out = host_copy_out, .wait_out = host_wait_out, .copy_in = host_copy_in};
}

/* ---------- the staging thread ---------- */

static void *staging_main(void *arg)
{
    struct staging *s = arg;
    if (s->device.thread_start)
        s->device.thread_start(s->device.ctx);
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->delivered_count == s->queued_count)
            pthread_cond_wait(&s->queued, &s->lock);
        if (s->stop)
            break;
        struct span_out span = s->queue[s->delivered_count];
        bool skip = s->failed;   /* after a failure the rest is only counted off: finish reports it */
        pthread_mutex_unlock(&s->lock);
        struct dt_err err;
        double took = -1;
        int rc = skip ? 0 : s->device.wait_out(s->device.ctx, span.slot, &took, &err);
        double landed = timeline_now();
        timeline_span(s->timeline, LANE_COPY, "copy", "to host", took >= 0 ? landed - took : span.queued, landed);
        if (rc == 0 && !skip)
            rc = s->deliver(s->deliver_ctx, span.first, &err);
        pthread_mutex_lock(&s->lock);
        if (rc < 0 && !s->failed) {
            s->failed = true;
            s->error = err;
        }
        s->delivered_count++;
        pthread_cond_broadcast(&s->delivered);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

int staging_create(struct staging **out, struct staging_device device, float *device_grads, size_t count, int spans,
                   staging_deliver deliver, void *deliver_ctx, struct dt_err *err)
{
    struct staging *s = calloc(1, sizeof *s);
    *out = NULL;
    if (!s)
        return dt_fail(err, "out of memory");
    *s = (struct staging){.device = device, .device_grads = device_grads, .count = count, .spans = spans,
                          .deliver = deliver, .deliver_ctx = deliver_ctx, .end = count};
    s->host = page_memory_alloc(count * sizeof(float));   /* pinned by the GPU backend, alone on its pages */
    if (s->host)
        memset(s->host, 0, count * sizeof(float));
    s->queue = calloc((size_t)spans, sizeof *s->queue);
    if (!s->host || !s->queue) {
        free(s->host), free(s->queue), free(s);
        return dt_fail(err, "out of memory for the host copy of %zu gradients", count);
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->queued, NULL);
    pthread_cond_init(&s->delivered, NULL);
    if (pthread_create(&s->thread, NULL, staging_main, s) != 0) {
        staging_destroy(s);
        return dt_fail(err, "cannot start the gradient staging thread");
    }
    s->running = true;
    *out = s;
    return 0;
}

float *staging_host(struct staging *s)
{
    return s->host;
}

void staging_destroy(struct staging *s)
{
    if (!s)
        return;
    if (s->running) {
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->queued);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->queued);
    pthread_cond_destroy(&s->delivered);
    free(s->host);
    free(s->queue);
    free(s);
}

/* ---------- the rank's side ---------- */

void staging_begin(struct staging *s, struct timeline *timeline)
{
    pthread_mutex_lock(&s->lock);
    s->timeline = timeline;
    s->queued_count = s->delivered_count = 0;
    s->end = s->count;
    pthread_mutex_unlock(&s->lock);
}

void staging_out(struct staging *s, size_t first)
{
    pthread_mutex_lock(&s->lock);
    size_t end = s->end;
    int slot = s->queued_count;
    bool failed = s->failed;
    pthread_mutex_unlock(&s->lock);
    if (failed || first >= end || slot >= s->spans)
        return;   /* nothing new (a span reported twice), or more spans than backward has: a bug said at finish */
    struct dt_err err;
    double queued = timeline_now();
    int rc = s->device.copy_out(s->device.ctx, slot, s->host + first, s->device_grads + first, end - first, &err);
    pthread_mutex_lock(&s->lock);
    if (rc < 0 && !s->failed) {
        s->failed = true;
        s->error = err;
    }
    s->end = first;
    s->queue[s->queued_count++] = (struct span_out){first, slot, queued};
    s->stats.out++;
    pthread_cond_signal(&s->queued);
    pthread_mutex_unlock(&s->lock);
}

int staging_drain(struct staging *s, struct dt_err *err)
{
    pthread_mutex_lock(&s->lock);
    bool whole = s->end == 0;
    pthread_mutex_unlock(&s->lock);
    if (!whole)   /* a model whose backward did not report its first span: the rest goes now */
        staging_out(s, 0);
    pthread_mutex_lock(&s->lock);
    while (s->delivered_count < s->queued_count)
        pthread_cond_wait(&s->delivered, &s->lock);
    int rc = s->failed ? -1 : 0;
    if (s->failed)
        *err = s->error;
    else if (s->end != 0)
        rc = dt_fail(err, "gradient staging: backward reported more than %d spans", s->spans);
    pthread_mutex_unlock(&s->lock);
    return rc;
}

int staging_in(struct staging *s, size_t first, size_t count, struct dt_err *err)
{
    s->stats.in++;
    double start = timeline_now();
    int rc = s->device.copy_in(s->device.ctx, s->device_grads + first, s->host + first, count, err);
    timeline_span(s->timeline, LANE_COPY, "copy", "to device", start, timeline_now());
    return rc;
}

struct staging_stats staging_stats(const struct staging *s)
{
    return s->stats;
}
