/* device.c - the model's state on a GPU: mirrors, staged batches, the update, CUDA graphs (see
 * device.h). */
#include "trainer/loop/device.h"

#include <stdio.h>
#include <string.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/loop/run.h"
#include "trainer/exchange/staging.h"

int device_failed(const struct run *r, struct dt_err *err)
{
    return dt_fail(err, "GPU: %s", backend_cuda_error(r->gpu) ? backend_cuda_error(r->gpu) : "failed");
}

int device_check(const struct run *r, struct dt_err *err)
{
    return backend_cuda_error(r->gpu) ? device_failed(r, err) : 0;
}

/* The host batches uploads read from: the loader's two and the evaluation's. */
static void host_batches(struct run *r, void *buffers[6], size_t bytes[6])
{
    size_t x = r->dev.x_bytes, y = (size_t)r->dev.batch * sizeof(int);
    void *b[6] = {r->loader.x[0], r->loader.x[1], r->loader.y[0], r->loader.y[1], r->eval_x, r->eval_y};
    size_t n[6] = {x, x, y, y, x, y};
    memcpy(buffers, b, sizeof b);
    memcpy(bytes, n, sizeof n);
}

static void gpu_pin_batches(struct run *r)
{
    void *buffers[6];
    size_t bytes[6];
    char why[256];
    host_batches(r, buffers, bytes);
    for (int i = 0; i < 6; i++)
        if (backend_cuda_pin(r->gpu, buffers[i], bytes[i], why, sizeof why) < 0) {
            /* locked memory may be limited (ulimit -l, a container): slower uploads, not an end */
            while (i-- > 0)
                backend_cuda_unpin(r->gpu, buffers[i]);
            fprintf(stderr, "dtrain-train: %s; batches are uploaded from pageable memory (no overlap with "
                    "compute)\n", why);
            return;
        }
    r->dev.pinned = true;
}

static int staging_failed(void *ctx, struct dt_err *err)
{
    return dt_fail(err, "GPU: %s", backend_cuda_staging_error(ctx));
}

static int cuda_copy_out(void *ctx, int slot, float *host, const float *device, size_t count, struct dt_err *err)
{
    return backend_cuda_staging_out(ctx, slot, host, device, count) < 0 ? staging_failed(ctx, err) : 0;
}

static int cuda_wait_out(void *ctx, int slot, double *seconds, struct dt_err *err)
{
    return backend_cuda_staging_wait(ctx, slot, seconds) < 0 ? staging_failed(ctx, err) : 0;
}

static int cuda_copy_in(void *ctx, float *device, const float *host, size_t count, struct dt_err *err)
{
    return backend_cuda_staging_in(ctx, device, host, count) < 0 ? staging_failed(ctx, err) : 0;
}

static void cuda_thread_start(void *ctx)
{
    backend_cuda_staging_thread(ctx);
}

int device_staging_on(struct backend *gpu, int slots, struct cuda_staging **handle, struct staging_device *out,
                      struct dt_err *err)
{
    char why[256];
    if (!(*handle = backend_cuda_staging_create(gpu, slots, why, sizeof why)))
        return dt_fail(err, "--gpu-transport host: %s", why);
    *out = (struct staging_device){.copy_out = cuda_copy_out, .wait_out = cuda_wait_out, .copy_in = cuda_copy_in,
                                   .thread_start = cuda_thread_start, .ctx = *handle};
    return 0;
}

int device_staging(struct run *r, int slots, struct staging_device *out, struct dt_err *err)
{
    return device_staging_on(r->gpu, slots, &r->dev.staging, out, err);
}

void device_pin_staging(struct run *r, float *host, size_t count)
{
    char why[256];
    if (backend_cuda_pin(r->gpu, host, count * sizeof(float), why, sizeof why) < 0)
        fprintf(stderr, "dtrain-train: %s; gradients are staged through pageable memory (slower copies)\n", why);
    else
        r->dev.staging_pinned = host;
}

void device_unpin_staging(struct run *r)
{
    if (r->dev.staging_pinned) {   /* set on a GPU alone */
        backend_cuda_sync(r->gpu);
        backend_cuda_unpin(r->gpu, r->dev.staging_pinned);
    }
    r->dev.staging_pinned = NULL;
}

static void gpu_release(struct run *r)
{
    backend_cuda_staging_destroy(r->dev.staging);   /* after the exchange: its thread waits on these events */
    if (r->dev.pinned) {
        void *buffers[6];
        size_t bytes[6];
        backend_cuda_sync(r->gpu);
        backend_cuda_staged(r->gpu);
        host_batches(r, buffers, bytes);
        for (int i = 0; i < 6; i++)
            backend_cuda_unpin(r->gpu, buffers[i]);
    }
    void *held[] = {r->dev.params, r->dev.grads, r->dev.buffers, r->dev.m, r->dev.v,
                    r->dev.x[0], r->dev.x[1], r->dev.y[0], r->dev.y[1]};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        if (held[i])
            backend_release(r->be, held[i]);
    memset(&r->dev, 0, sizeof r->dev);
}

static int gpu_upload(struct run *r, float *device, const float *host, size_t count, struct dt_err *err)
{
    return backend_cuda_upload(r->gpu, device, host, count * sizeof(float)) < 0 ? device_failed(r, err) : 0;
}

static int gpu_download(struct run *r, float *host, const float *device, size_t count, struct dt_err *err)
{
    if (count == 0)
        return 0;
    return backend_cuda_download(r->gpu, host, device, count * sizeof(float)) < 0 ? device_failed(r, err) : 0;
}

static int gpu_setup(struct run *r, int batch, size_t sample, struct dt_err *err)
{
    size_t n = r->model.num_params * sizeof(float);
    r->dev.batch = batch;
    r->dev.x_bytes = (size_t)batch * sample * sizeof(float);
    r->dev.params = backend_alloc(r->be, n);
    r->dev.grads = backend_alloc(r->be, n);
    r->dev.buffers = backend_alloc(r->be, (r->model.num_buffers + 1) * sizeof(float));
    r->dev.m = backend_alloc(r->be, n);
    r->dev.v = r->opt.v ? backend_alloc(r->be, n) : NULL;
    bool ok = r->dev.params && r->dev.grads && r->dev.buffers && r->dev.m && (!r->opt.v || r->dev.v);
    for (int i = 0; i < 2; i++) {
        r->dev.x[i] = backend_alloc(r->be, r->dev.x_bytes);
        r->dev.y[i] = backend_alloc(r->be, (size_t)batch * sizeof(int));
        ok = ok && r->dev.x[i] && r->dev.y[i];
    }
    if (!ok)
        return device_failed(r, err);
    return device_upload_state(r, err);
}

static int gpu_batch_in(struct run *r, const float *x, const int *y, int n, const float **x_in, const int **y_in,
                        struct dt_err *err)
{
    size_t sample = (size_t)r->train.c * r->train.h * r->train.w;
    int slot = r->dev.slot;
    struct cuda_copy copies[2] = {{r->dev.x[slot], x, (size_t)n * sample * sizeof(float)},
                                  {r->dev.y[slot], y, (size_t)n * sizeof(int)}};
    if (backend_cuda_stage(r->gpu, slot, copies, 2) < 0)
        return device_failed(r, err);
    r->dev.slot = 1 - slot;
    *x_in = r->dev.x[slot], *y_in = r->dev.y[slot];
    return 0;
}

static int gpu_staged(struct run *r, struct dt_err *err)
{
    return backend_cuda_staged(r->gpu) < 0 ? device_failed(r, err) : 0;
}

/* The optimizer's step count and, for Adam, the scalars of the coming update: host work, done
 * every step, also when the update itself is a replayed CUDA graph. */
static void advance_optimizer(struct run *r)
{
    struct optimizer *o = &r->opt;
    optim_begin_step(o);
    if (o->kind == OPTIM_ADAM) {
        float step_size, root2;
        optim_adam_scalars(o, &step_size, &root2);
        backend_cuda_adam_scalars(r->gpu, step_size, root2);
    }
}

void device_begin_update(struct run *r, bool counted)
{
    if (!counted)
        advance_optimizer(r);
}

void device_update_range(struct run *r, size_t first, size_t count)
{
    struct optimizer *o = &r->opt;
    struct device_state *d = &r->dev;
    if (o->kind == OPTIM_SGD)   /* SGD's first step starts its momentum buffer */
        backend_cuda_sgd(r->gpu, d->params + first, d->grads + first, d->m + first, count, o->lr, o->momentum,
                         o->weight_decay, o->step == 1);
    else
        backend_cuda_adam(r->gpu, d->params + first, d->grads + first, d->m + first, d->v + first, count, o->beta1,
                          o->beta2, o->eps, o->weight_decay);
}

int device_graph_step(struct run *r, const float *x, const int *y, int batch, device_step_fn step, double *loss,
                      struct dt_err *err)
{
    int slot = x == r->dev.x[0] ? 0 : 1;
    /* The last update may still be queued (after an eager step it is): it must read its Adam
     * scalars before the host sets this step's. After a replay the stream is idle already. */
    if (backend_cuda_sync(r->gpu) < 0)
        return device_failed(r, err);
    advance_optimizer(r);
    if (!backend_cuda_graph_ready(r->gpu, slot)) {
        if (backend_cuda_capture_begin(r->gpu) < 0)
            return device_failed(r, err);
        int rc = step(r, x, y, batch, true, loss, err);
        if (backend_cuda_capture_end(r->gpu, slot) < 0 && rc == 0)
            rc = device_failed(r, err);
        if (rc != 0)
            return rc;
    }
    if (backend_cuda_graph_launch(r->gpu, slot) < 0)
        return device_failed(r, err);
    *loss = backend_cuda_deferred_loss(r->gpu);
    return backend_cuda_error(r->gpu) ? device_failed(r, err) : 0;
}

static int gpu_sync(struct run *r, struct dt_err *err)
{
    return backend_cuda_sync(r->gpu) < 0 ? device_failed(r, err) : 0;
}

static void gpu_describe(const struct run *r, int threads, char *text, size_t size)
{
    (void)threads;
    backend_cuda_device_name(r->gpu, text, size);
}

const struct device_ops device_gpu = {"device copies on a GPU", gpu_setup, gpu_pin_batches, gpu_release, gpu_upload,
                                      gpu_download, gpu_batch_in, gpu_staged, gpu_sync, gpu_describe};

/* The CPU's model name, from /proc/cpuinfo ("unknown CPU" where there is none). */
static void cpu_model(char *name, size_t size)
{
    snprintf(name, size, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(name, size, "%s", colon + 2);
            name[strcspn(name, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
}

static void host_describe(const struct run *r, int threads, char *text, size_t size)
{
    (void)r;
    char cpu[160];
    cpu_model(cpu, sizeof cpu);
    snprintf(text, size, "cpu: %d thread%s of %s", threads, threads == 1 ? "" : "s", cpu);
}

/* On the host the model's state is the host arrays themselves: nothing to copy or wait for. */
static int host_setup(struct run *r, int batch, size_t sample, struct dt_err *err)
{
    (void)r, (void)batch, (void)sample, (void)err;
    return 0;
}

static void host_pin_batches(struct run *r)
{
    (void)r;   /* nothing is uploaded from them */
}

static void host_release(struct run *r)
{
    (void)r;
}

static int host_copy(struct run *r, float *to, const float *from, size_t count, struct dt_err *err)
{
    (void)r, (void)to, (void)from, (void)count, (void)err;
    return 0;   /* the two are the same array */
}

static int host_batch_in(struct run *r, const float *x, const int *y, int n, const float **x_in, const int **y_in,
                         struct dt_err *err)
{
    (void)r, (void)n, (void)err;
    *x_in = x, *y_in = y;
    return 0;
}

static int host_wait(struct run *r, struct dt_err *err)
{
    (void)r, (void)err;
    return 0;   /* the CPU backends return when their work is done */
}

const struct device_ops device_host = {"the host arrays", host_setup, host_pin_batches, host_release, host_copy,
                                       host_copy, host_batch_in, host_wait, host_wait, host_describe};

/* The calls the loop makes, each through the run's table. */
int device_setup(struct run *r, int batch, size_t sample, struct dt_err *err)
{
    return r->device->setup(r, batch, sample, err);
}

void device_pin_batches(struct run *r)
{
    r->device->pin_batches(r);
}

void device_free(struct run *r)
{
    r->device->release(r);
}

int device_upload_state(struct run *r, struct dt_err *err)
{
    const struct device_ops *on = r->device;
    size_t n = r->model.num_params;
    return on->upload(r, r->dev.params, r->params, n, err) < 0 ||
                   on->upload(r, r->dev.buffers, r->buffers, r->model.num_buffers, err) < 0 ||
                   on->upload(r, r->dev.m, r->opt.m, n, err) < 0 ||
                   (r->opt.v && on->upload(r, r->dev.v, r->opt.v, n, err) < 0) || on->sync(r, err) < 0
               ? -1 : 0;
}

int device_download(struct run *r, float *host, const float *device, size_t count, struct dt_err *err)
{
    return r->device->download(r, host, device, count, err);
}

int device_download_state(struct run *r, struct dt_err *err)
{
    size_t n = r->model.num_params;
    return device_download(r, r->params, r->dev.params, n, err) < 0 ||
                   device_download(r, r->buffers, r->dev.buffers, r->model.num_buffers, err) < 0 ||
                   device_download(r, r->opt.m, r->dev.m, n, err) < 0 ||
                   (r->opt.v && device_download(r, r->opt.v, r->dev.v, n, err) < 0)
               ? -1 : 0;
}

int device_upload_buffers(struct run *r, struct dt_err *err)
{
    return r->device->upload(r, r->dev.buffers, r->buffers, r->model.num_buffers, err);
}

int device_batch_in(struct run *r, const float *x, const int *y, int n, const float **x_in, const int **y_in,
                    struct dt_err *err)
{
    return r->device->batch_in(r, x, y, n, x_in, y_in, err);
}

int device_staged(struct run *r, struct dt_err *err)
{
    return r->device->staged(r, err);
}

int device_next_batch(struct run *r, const float **x, const int **y, struct dt_err *err)
{
    if (device_staged(r, err) < 0)
        return -1;
    loader_next(&r->loader, x, y);
    return 0;
}

int device_sync(struct run *r, struct dt_err *err)
{
    return r->device->sync(r, err);
}

void device_describe(const struct run *r, int threads, char *text, size_t size)
{
    r->device->describe(r, threads, text, size);
}
