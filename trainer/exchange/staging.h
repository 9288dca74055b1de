/* staging.h - gradients computed on a GPU, exchanged from host memory: the design BytePS uses for
 * its parameter servers and Horovod for its MPI path, and the way every method runs on GPU ranks
 * (--gpu-transport host). The methods themselves never learn where the gradients live: they see a
 * host buffer, filled span by span as backward completes the device's.
 *
 *   backward (compute stream)   grads_ready(first) -> staging_out: the span [first, end) is copied
 *                               to the host on the copy stream, after an event on the compute
 *                               stream (the span's last kernel); the rank goes on enqueueing
 *   the staging thread          waits for each span's copy in turn, then hands it to the method's
 *                               grads_ready, as backward would on a CPU rank (same order, same sums)
 *   finish                      waits until every span was handed over, then the method's finish;
 *                               the means go back to the device on the copy stream, and the update
 *                               (compute stream) waits on that copy's event, not on the host
 *   layer-wise updates          (ByteScheduler) each span's mean goes back just before its update,
 *                               which waits on that span's event only
 *
 * The device's side is a table of operations (struct staging_device): CUDA's streams and events
 * on a GPU rank (loop/device.c), or plain copies between two host buffers (staging_host_device),
 * so that CPU ranks run this same orchestration in the tests CI can run without a GPU. */
#ifndef STAGING_H
#define STAGING_H

#include <stdbool.h>
#include <stddef.h>

#include "common/dt_error.h"
#include "trainer/base/timeline.h"

/* What moving a span between the device and the host takes. `slot` names a copy out's event: 0 ..
 * spans - 1 for the spans of one step, in the order backward completes them (the staging thread
 * waits for each later). Each returns 0, or -1 with err. */
struct staging_device {
    /* Copies device[0, count) to host once the compute enqueued so far has made it; returns at
     * once (the copy may still run). */
    int (*copy_out)(void *ctx, int slot, float *host, const float *device, size_t count, struct dt_err *err);
    /* Returns when slot's copy_out has landed in host memory (on the staging thread), with how
     * long the copy itself took on the device in *seconds (its events'), or -1 where unknown. */
    int (*wait_out)(void *ctx, int slot, double *seconds, struct dt_err *err);
    /* Copies host[0, count) to device; what the compute stream enqueues next waits for it (an
     * event the compute stream waits on at once: one event serves every copy in). */
    int (*copy_in)(void *ctx, float *device, const float *host, size_t count, struct dt_err *err);
    /* The staging thread's first call (CUDA: the rank's device made current there). NULL: none. */
    void (*thread_start)(void *ctx);
    void *ctx;
};

/* Plain copies between two host buffers: CPU ranks staged as GPU ranks are (the tests). */
struct staging_device staging_host_device(void);

struct staging;

/* Hands the method the span [first, end of the buffer) once its gradients are in host memory
 * (called on the staging thread, in backward's order). 0, or -1 with err. */
typedef int (*staging_deliver)(void *ctx, size_t first, struct dt_err *err);

/* Staging of device[0, count) through a host buffer of its own (*host, page-locked where the
 * device's ops pinned it: the caller's to register), at most `spans` spans a step. 0, or -1 with err. */
int staging_create(struct staging **s, struct staging_device device, float *device_grads, size_t count, int spans,
                   staging_deliver deliver, void *deliver_ctx, struct dt_err *err);
float *staging_host(struct staging *s);
void staging_destroy(struct staging *s);

/* A step's backward begins; its copies are drawn on timeline's "device-host copies" lane (NULL:
 * nowhere): to the host as long as the device's events say the copy ran, ending when the staging
 * thread saw it land (where the device does not say: from backward's report of the span), back to
 * the device for as long as queueing the copy took (it then runs on the GPU's copy stream). */
void staging_begin(struct staging *s, struct timeline *timeline);
/* Backward has made device gradients [first, ...) final: their copy goes out (the rank's thread). */
void staging_out(struct staging *s, size_t first);
/* Waits until every span of this step was handed to the method. 0, or -1 with the first error the
 * staging thread met (a copy or the method's grads_ready). */
int staging_drain(struct staging *s, struct dt_err *err);
/* The means of host[first, first + count) back to the device; the compute stream's next work (the
 * update) waits for them, and for nothing else. 0, or -1 with err. */
int staging_in(struct staging *s, size_t first, size_t count, struct dt_err *err);

/* Spans copied out and in over the run (the tests check the orchestration ran). */
struct staging_stats {
    long out, in;
};
struct staging_stats staging_stats(const struct staging *s);

#endif
