/* device.h - the model's state on a GPU, kept out of the loop: device copies of parameters,
 * gradients, batch-norm buffers and the optimizer's moments (the host arrays of struct run stay
 * the copies broadcasts, checkpoints and --params-out use, refreshed when one needs them), two
 * batch slots uploaded from pinned memory on a copy stream, the update queued on the device, and
 * training steps captured as CUDA graphs. Each run calls these through its table of where the
 * state lives (struct device_ops): on the CPU backends and emulated devices that is the host
 * arrays themselves, and every call a no-op that hands them back. */
#ifndef DEVICE_H
#define DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "common/dt_error.h"

struct run;
struct staging_device;
struct backend;
struct cuda_staging;

struct device_state {
    float *params, *grads, *buffers, *m, *v;
    float *x[2];               /* two batches: one uploads while the other trains */
    int *y[2];
    int slot;                  /* the one the next batch goes to */
    int batch;
    size_t x_bytes;
    bool pinned;               /* the loader's and evaluation's host buffers are page-locked */
    struct cuda_staging *staging;   /* host-staged exchange: the copy stream and events (NULL: none) */
    float *staging_pinned;     /* the exchange's host copy of the gradients, page-locked (NULL: not) */
};

/* Where the model's state lives, chosen once with the backend (run.c): the host arrays, or device
 * copies on a GPU. The device_* calls below go through it, so the loop never asks which. */
struct device_ops {
    const char *name;
    /* the device copies made and uploaded, and two batch slots (device_setup) */
    int (*setup)(struct run *r, int batch, size_t sample, struct dt_err *err);
    void (*pin_batches)(struct run *r);
    void (*release)(struct run *r);
    /* count floats between a host array and its device copy */
    int (*upload)(struct run *r, float *device, const float *host, size_t count, struct dt_err *err);
    int (*download)(struct run *r, float *host, const float *device, size_t count, struct dt_err *err);
    int (*batch_in)(struct run *r, const float *x, const int *y, int n, const float **x_in, const int **y_in,
                    struct dt_err *err);
    /* the last upload has read its host buffer; everything queued is done */
    int (*staged)(struct run *r, struct dt_err *err);
    int (*sync)(struct run *r, struct dt_err *err);
    void (*describe)(const struct run *r, int threads, char *text, size_t size);
};

extern const struct device_ops device_host, device_gpu;

/* The GPU's half of a host-staged exchange (exchange/staging.h), `slots` copy events a step. 0, or
 * -1 with err. After the exchange is made, device_pin_staging page-locks its host copy (where
 * locked memory is short: said, and the copies run from pageable memory); device_unpin_staging
 * undoes that before the exchange frees it. */
int device_staging(struct run *r, int slots, struct staging_device *out, struct dt_err *err);
/* The same for any CUDA backend (the tests): *handle is the caller's to free
 * (backend_cuda_staging_destroy) once the staging using it is gone. */
int device_staging_on(struct backend *gpu, int slots, struct cuda_staging **handle, struct staging_device *out,
                      struct dt_err *err);
void device_pin_staging(struct run *r, float *host, size_t count);
void device_unpin_staging(struct run *r);

/* Device copies of the model's state (uploaded from the host arrays) and two batch slots. 0 or -1
 * with err. */
int device_setup(struct run *r, int batch, size_t sample, struct dt_err *err);
/* Page-locks the loader's and the evaluation's host batches (after loader_init), so that their
 * uploads are asynchronous (from pageable memory cudaMemcpyAsync waits for the copy). Where that
 * fails (locked memory is limited), says so on stderr and goes on with pageable batches. */
void device_pin_batches(struct run *r);
void device_free(struct run *r);

/* The GPU's error as err ("GPU: ..."); returns -1. */
int device_failed(const struct run *r, struct dt_err *err);

/* compute_gpu's check (compute.h; GPU runs only): -1 with err when the GPU has failed since
 * (kernels queued run later: a failure shows up late). */
int device_check(const struct run *r, struct dt_err *err);

/* The host copies into device memory (after the initial broadcast, or a resume). */
int device_upload_state(struct run *r, struct dt_err *err);
/* Everything a checkpoint saves, from the device into the host copies. */
int device_download_state(struct run *r, struct dt_err *err);
/* One device array into its host copy. */
int device_download(struct run *r, float *host, const float *device, size_t count, struct dt_err *err);
/* The host's BN buffers into the device's. */
int device_upload_buffers(struct run *r, struct dt_err *err);

/* The loader's next batch, once the last upload has read its host memory (the loader refills it). */
int device_next_batch(struct run *r, const float **x, const int **y, struct dt_err *err);
/* A batch where the backend reads it: on a GPU the device's copy, uploaded on the copy stream into
 * the slot the previous step is not reading; *x_in and *y_in say where. */
int device_batch_in(struct run *r, const float *x, const int *y, int n, const float **x_in, const int **y_in,
                    struct dt_err *err);
/* Waits until the last upload has read its host buffer (before refilling it). */
int device_staged(struct run *r, struct dt_err *err);

/* The optimizer's step on the device, queued: device_begin_update counts the step and sets
 * Adam's scalars (skipped when the step was counted already: a captured graph's are set before
 * each launch), then device_update_range updates any ranges of the parameters, each once. */
void device_begin_update(struct run *r, bool counted);
void device_update_range(struct run *r, size_t first, size_t count);

/* A training step as a CUDA graph: captured the first time a batch slot is used (and whenever a
 * buffer it points into has moved), then replayed; the loss is read after the launch. step is
 * the loop's eager step, called with captured = true while recording. 0, 1 (a loss that is not
 * finite) or -1 with err. */
typedef int (*device_step_fn)(struct run *r, const float *x, const int *y, int batch, bool captured, double *loss,
                              struct dt_err *err);
int device_graph_step(struct run *r, const float *x, const int *y, int batch, device_step_fn step, double *loss,
                      struct dt_err *err);

/* Waits for everything queued on the GPU; 0 on the CPU. */
int device_sync(struct run *r, struct dt_err *err);

/* What the run computes on, for a profile: the GPU's name, or "cpu: T threads of MODEL". */
void device_describe(const struct run *r, int threads, char *text, size_t size);

#endif
