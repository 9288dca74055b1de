/* train.c - the training loop (see train.h). */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "atomic_file.h"
#include "backend.h"
#include "backend_cuda.h"
#include "checkpoint.h"
#include "comm_nccl.h"
#include "data.h"
#include "loader.h"
#include "nn.h"
#include "optim.h"
#include "seedlog.h"

/* Set by SIGTERM or SIGUSR1 (Slurm's time-limit and preemption warnings): checkpoint and stop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The watchdog: a collective waits for the slowest rank, forever if one hung (a stuck NFS read,
 * a dead NIC): when no step finished for the timeout, it ends the whole job with one message. */
struct watchdog {
    pthread_t thread;
    struct comm *comm;
    double timeout;            /* seconds */
    _Atomic long progress_ms;  /* when the last step (or evaluation) finished */
    _Atomic int stop;
    long step;                 /* for the message; written by the training thread, read when firing */
};

static void *watchdog_main(void *arg)
{
    struct watchdog *wd = arg;
    while (!atomic_load(&wd->stop)) {
        usleep(200 * 1000);
        double idle = now_sec() - atomic_load(&wd->progress_ms) / 1000.0;
        if (idle < wd->timeout || atomic_load(&wd->stop))
            continue;
        fprintf(stderr, "dtrain-train: rank %d on %s: no step finished for %.0f s (after step %ld): a rank hung or "
                "the network failed; ending the job (--timeout)\n", wd->comm->rank, wd->comm->hostname, idle, wd->step);
        wd->comm->abort(wd->comm, 3);
        _exit(3);   /* the single-process comm returns from abort only by exiting; MPI_Abort does not return */
    }
    return NULL;
}

static void watchdog_touch(struct watchdog *wd, long step)
{
    wd->step = step;
    atomic_store(&wd->progress_ms, (long)(now_sec() * 1000));
}

/* Test-only fault injection: DTRAIN_FAULT_HANG=RANK:STEP makes that rank stop before that step. */
static void maybe_hang(struct comm *comm, long step)
{
    static int rank = -2;
    static long at;
    if (rank == -2) {
        const char *fault = getenv("DTRAIN_FAULT_HANG");
        if (!fault || sscanf(fault, "%d:%ld", &rank, &at) != 2)
            rank = -1;
    }
    if (rank == comm->rank && step == at)
        for (;;)
            pause();
}

/* On a GPU the model's state lives in device memory: params, grads, buffers and the optimizer's
 * m and v of struct run stay the host copies that broadcasts, checkpoints and --params-out use,
 * brought up to date (download, device_to_host) when one of those needs them. */
struct device_state {
    float *params, *grads, *buffers, *m, *v;
    float *x[2];               /* two batches: one uploads while the other trains */
    int *y[2];
    int slot;                  /* the one the next batch goes to */
    int batch;
    size_t x_bytes;
    bool pinned;               /* the loader's and evaluation's host buffers are page-locked */
};

/* Everything one run holds, so that cleanup is one function. */
struct run {
    struct dataset train, test;
    struct model model;
    struct backend *fast, *gpu;
    const struct backend *be;
    struct workspace ws;
    struct optimizer opt;
    struct loader loader;
    float *params, *grads, *buffers, *eval_x;
    int *eval_y;
    struct device_state dev;   /* all NULL on the CPU */
    struct comm *nccl;         /* the GPU ranks' gradient exchange, when there are several */
    bool wfbp;                 /* --comm wfbp */
};

/* The host buffers batches are uploaded from. */
static void host_batches(struct run *r, void *buffers[6], size_t bytes[6])
{
    size_t x = r->dev.x_bytes, y = (size_t)r->dev.batch * sizeof(int);
    void *b[6] = {r->loader.x[0], r->loader.x[1], r->loader.y[0], r->loader.y[1], r->eval_x, r->eval_y};
    size_t n[6] = {x, x, y, y, x, y};
    memcpy(buffers, b, sizeof b);
    memcpy(bytes, n, sizeof n);
}

/* Page-locks the host batches so that their uploads are asynchronous (a pageable source makes
 * cudaMemcpyAsync wait for the copy). */
static int pin_batches(struct run *r)
{
    void *buffers[6];
    size_t bytes[6];
    host_batches(r, buffers, bytes);
    for (int i = 0; i < 6; i++)
        if (backend_cuda_pin(r->gpu, buffers[i], bytes[i]) < 0) {
            while (i-- > 0)
                backend_cuda_unpin(r->gpu, buffers[i]);
            return -1;
        }
    r->dev.pinned = true;
    return 0;
}

static void device_free(struct run *r)
{
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

static void run_free(struct run *r)
{
    if (r->nccl)
        comm_nccl_destroy(r->nccl);
    if (r->gpu)
        device_free(r);   /* before the loader frees the pinned buffers */
    loader_stop(&r->loader);
    optim_free(&r->opt);
    if (r->ws.act)
        workspace_free(&r->ws, &r->model, r->be);
    backend_cpu_destroy(r->fast);
    backend_cuda_destroy(r->gpu);
    model_free(&r->model);
    dataset_free(&r->train);
    dataset_free(&r->test);
    free(r->params);
    free(r->grads);
    free(r->buffers);
    free(r->eval_x);
    free(r->eval_y);
}

static int gpu_failed(const struct run *r, struct dt_err *err)
{
    return dt_fail(err, "GPU: %s", backend_cuda_error(r->gpu) ? backend_cuda_error(r->gpu) : "failed");
}

/* The host copies into device memory (after setup's broadcast, or a resume). */
static int host_to_device(struct run *r)
{
    size_t n = r->model.num_params * sizeof(float), b = r->model.num_buffers * sizeof(float);
    return backend_cuda_upload(r->gpu, r->dev.params, r->params, n) < 0 ||
                   backend_cuda_upload(r->gpu, r->dev.buffers, r->buffers, b) < 0 ||
                   backend_cuda_upload(r->gpu, r->dev.m, r->opt.m, n) < 0 ||
                   (r->opt.v && backend_cuda_upload(r->gpu, r->dev.v, r->opt.v, n) < 0) || backend_cuda_sync(r->gpu) < 0
               ? -1 : 0;
}

/* One device array into its host copy; a no-op on the CPU, where the host array is the one. */
static int download(struct run *r, float *host, const float *device, size_t count, struct dt_err *err)
{
    if (!r->gpu || count == 0)
        return 0;
    return backend_cuda_download(r->gpu, host, device, count * sizeof(float)) < 0 ? gpu_failed(r, err) : 0;
}

/* Everything a checkpoint saves, from the device into the host copies. */
static int device_to_host(struct run *r, struct dt_err *err)
{
    size_t n = r->model.num_params;
    return download(r, r->params, r->dev.params, n, err) < 0 ||
                   download(r, r->buffers, r->dev.buffers, r->model.num_buffers, err) < 0 ||
                   download(r, r->opt.m, r->dev.m, n, err) < 0 || (r->opt.v && download(r, r->opt.v, r->dev.v, n, err) < 0)
               ? -1 : 0;
}

/* Device copies of the model's state and two batches, and NCCL when there are several ranks.
 * After loader_init: the loader's batches are pinned. */
static int device_setup(struct run *r, int batch, size_t sample, struct comm *comm, struct dt_err *err)
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
    if (!ok || host_to_device(r) < 0 || pin_batches(r) < 0)
        return gpu_failed(r, err);
    if (comm->world > 1 && !(r->nccl = comm_nccl_create(comm, backend_cuda_stream(r->gpu), err)))
        return dt_wrap(err, "NCCL");
    return 0;
}

/* A batch where the backend reads it: on a GPU, the device's copy, uploaded on the copy stream
 * into the slot the previous step is not reading. */
static int batch_in(struct run *r, const float *x, const int *y, int n, const float **x_in, const int **y_in,
                    struct dt_err *err)
{
    *x_in = x, *y_in = y;
    if (!r->gpu)
        return 0;
    size_t sample = (size_t)r->train.c * r->train.h * r->train.w;
    int slot = r->dev.slot;
    struct cuda_copy copies[2] = {{r->dev.x[slot], x, (size_t)n * sample * sizeof(float)},
                                  {r->dev.y[slot], y, (size_t)n * sizeof(int)}};
    if (backend_cuda_stage(r->gpu, slot, copies, 2) < 0)
        return gpu_failed(r, err);
    r->dev.slot = 1 - slot;
    *x_in = r->dev.x[slot], *y_in = r->dev.y[slot];
    return 0;
}

/* The loader's next batch, once the upload of the last one has read its host memory (the loader
 * refills that buffer). */
static int next_batch(struct run *r, const float **x, const int **y, struct dt_err *err)
{
    if (r->gpu && backend_cuda_staged(r->gpu) < 0)
        return gpu_failed(r, err);
    loader_next(&r->loader, x, y);
    return 0;
}

/* The arrays the backend computes on. */
static float *work_params(struct run *r) { return r->gpu ? r->dev.params : r->params; }
static float *work_grads(struct run *r) { return r->gpu ? r->dev.grads : r->grads; }
static float *work_buffers(struct run *r) { return r->gpu ? r->dev.buffers : r->buffers; }

/* The mean gradient of all ranks: NCCL on GPUs, the host comm otherwise. */
static int average_gradients(struct run *r, struct comm *comm, struct dt_err *err)
{
    if (comm->world == 1)
        return 0;   /* nothing to average; and a GPU's gradients must never reach a host collective */
    if (r->nccl)
        return r->nccl->allreduce_mean(r->nccl, r->dev.grads, r->model.num_params, err);
    return comm->allreduce_mean(comm, work_grads(r), r->model.num_params, err);
}

/* WFBP (wait-free backpropagation): a layer's gradients go out, MPI_Iallreduce, as soon as
 * backward has computed them, while the layers before it still compute; the last layer's go first.
 * The sums of all pieces are the BSP sum, element for element. */
struct exchange {
    struct comm *comm;
    float *grads;
    size_t unsent_end;   /* gradients [0, unsent_end) not yet sent */
    int failed;
    struct dt_err *err;
};

static void send_ready_grads(void *ctx, size_t first)
{
    struct exchange *x = ctx;
    if (x->failed || first >= x->unsent_end)
        return;
    x->failed = x->comm->start_sum(x->comm, x->grads + first, x->unsent_end - first, x->err) < 0 ||
                x->comm->progress(x->comm, x->err) < 0;
    x->unsent_end = first;
}

static bool wfbp_on(const struct run *r, const struct comm *comm) { return r->wfbp && comm->world > 1; }

static int backward_exchanging(struct run *r, struct comm *comm, int batch, struct dt_err *err)
{
    struct exchange x = {.comm = comm, .grads = r->grads, .unsent_end = r->model.num_params, .err = err};
    struct grads_ready ready = {send_ready_grads, &x};
    model_backward_notify(&r->model, r->be, &r->ws, r->params, r->grads, batch, &ready);
    if (!x.failed && x.unsent_end > 0)
        x.failed = comm->start_sum(comm, r->grads, x.unsent_end, err) < 0;
    if (x.failed)
        return -1;   /* the caller aborts the job: the other ranks' pieces need not be waited for */
    return comm->finish_mean(comm, r->grads, r->model.num_params, err);
}

/* The optimizer's step count and, for Adam on a GPU, the scalars of the coming update: host
 * work, done every step, also when the update itself is a replayed CUDA graph. */
static void advance_optimizer(struct run *r)
{
    struct optimizer *o = &r->opt;
    o->step++;
    if (o->kind == OPTIM_ADAM) {
        float step_size, root2;
        optim_adam_scalars(o, &step_size, &root2);
        backend_cuda_adam_scalars(r->gpu, step_size, root2);
    }
}

/* The GPU's update, queued (SGD's first step starts its momentum buffer). */
static void queue_update(struct run *r)
{
    struct optimizer *o = &r->opt;
    if (o->kind == OPTIM_SGD)
        backend_cuda_sgd(r->gpu, r->dev.params, r->dev.grads, r->dev.m, o->count, o->lr, o->momentum, o->weight_decay,
                         o->step == 1);
    else
        backend_cuda_adam(r->gpu, r->dev.params, r->dev.grads, r->dev.m, r->dev.v, o->count, o->beta1, o->beta2, o->eps,
                          o->weight_decay);
}

/* Forward, backward, gradient average and update of one batch that is where the backend reads
 * it. Eager: *loss is the step's, and a loss that is not finite stops before the update
 * (returns 1). Captured (a CUDA graph being recorded): nothing runs, *loss is 0. 0, or -1 with err. */
static int queue_step(struct run *r, const float *x, const int *y, int batch, struct comm *comm, bool captured,
                      double *loss, struct dt_err *err)
{
    *loss = model_forward(&r->model, r->be, &r->ws, work_params(r), work_buffers(r), x, y, batch, true, NULL);
    if (r->gpu && backend_cuda_error(r->gpu))
        return gpu_failed(r, err);
    if (!captured && !isfinite(*loss))
        return 1;
    backend_zero(r->be, work_grads(r), r->model.num_params * sizeof(float));
    if (wfbp_on(r, comm)) {
        if (backward_exchanging(r, comm, batch, err) < 0)
            return -1;
    } else {
        model_backward(&r->model, r->be, &r->ws, work_params(r), work_grads(r), batch);
        if (average_gradients(r, comm, err) < 0)
            return -1;
    }
    if (!r->gpu) {
        optim_step(&r->opt, r->params, r->grads);
    } else {
        if (!captured)
            advance_optimizer(r);
        queue_update(r);
    }
    return 0;
}

/* The step as a CUDA graph: captured the first time a batch slot is used (and again whenever a
 * buffer it points into has moved), then replayed; the loss is read after the launch. */
static int graph_step(struct run *r, const float *x, const int *y, int batch, struct comm *comm, double *loss,
                      struct dt_err *err)
{
    int slot = x == r->dev.x[0] ? 0 : 1;
    /* The last update may still be queued (after an eager step it is): it must read its Adam
     * scalars before the host sets this step's. After a replay the stream is idle already. */
    if (backend_cuda_sync(r->gpu) < 0)
        return gpu_failed(r, err);
    advance_optimizer(r);
    if (!backend_cuda_graph_ready(r->gpu, slot)) {
        if (backend_cuda_capture_begin(r->gpu) < 0)
            return gpu_failed(r, err);
        int rc = queue_step(r, x, y, batch, comm, true, loss, err);
        if (backend_cuda_capture_end(r->gpu, slot) < 0 && rc == 0)
            rc = gpu_failed(r, err);
        if (rc != 0)
            return rc;
    }
    if (backend_cuda_graph_launch(r->gpu, slot) < 0)
        return gpu_failed(r, err);
    *loss = backend_cuda_deferred_loss(r->gpu);
    return backend_cuda_error(r->gpu) ? gpu_failed(r, err) : 0;
}

static int setup(struct run *r, const struct train_config *cfg, struct comm *comm, struct dt_err *err)
{
    memset(r, 0, sizeof *r);
    if (dataset_open(cfg->dataset, cfg->data_dir, &r->train, &r->test, err) < 0 ||
        model_build(&r->model, cfg->model, r->train.c, r->train.h, r->train.w, r->train.classes, err) < 0)
        return -1;
    if (strcmp(cfg->backend, "reference") == 0) {
        r->be = backend_reference();
    } else if (strcmp(cfg->backend, "cpu") == 0) {
        if (!(r->fast = backend_cpu_create(cfg->threads)))
            return dt_fail(err, "out of memory for the cpu backend");
        r->be = r->fast;
    } else if (strcmp(cfg->backend, "cuda") == 0) {
        char why[512];
        struct cuda_options options = {.bf16 = cfg->bf16, .find_algorithms = cfg->find_algorithms};
        if (!(r->gpu = backend_cuda_create(cfg->gpu, &options, why, sizeof why)))
            return dt_fail(err, "--device cuda: %s", why);
        r->be = r->gpu;
    } else {
        return dt_fail(err, "unknown backend \"%s\" (cpu, reference or cuda)", cfg->backend);
    }
    if (!r->gpu && (cfg->bf16 || cfg->find_algorithms || cfg->cuda_graphs))
        return dt_fail(err, "%s needs --device cuda (the CPU backends compute in fp32 with their own kernels)",
                       cfg->bf16 ? "--precision bf16" : cfg->find_algorithms ? "--conv-algo find" : "--cuda-graphs");
    if (cfg->wfbp && r->gpu)
        return dt_fail(err, "--comm wfbp runs on CPU ranks for now (NCCL per layer is not built): use --comm allreduce");
    if (cfg->wfbp && !model_params_in_op_order(&r->model))
        return dt_fail(err, "--comm wfbp: model %s has parameters out of op order", cfg->model);
    r->wfbp = cfg->wfbp;
    if (cfg->cuda_graphs && comm->world > 1)
        return dt_fail(err, "--cuda-graphs runs one rank for now (%d here): NCCL inside a captured step is not built",
                       comm->world);
    size_t n = r->model.num_params, sample = (size_t)r->train.c * r->train.h * r->train.w;
    r->params = malloc(n * sizeof(float));
    r->grads = malloc(n * sizeof(float));
    r->buffers = malloc((r->model.num_buffers + 1) * sizeof(float));
    r->eval_x = loader_batch_alloc(sample * cfg->batch * sizeof(float));
    r->eval_y = loader_batch_alloc((size_t)cfg->batch * sizeof(int));
    if (!r->params || !r->grads || !r->buffers || !r->eval_x || !r->eval_y)
        return dt_fail(err, "out of memory for %zu parameters", n);
    model_init_params(&r->model, r->params, r->buffers, cfg->seed);
    /* Every rank starts from rank 0's values, whatever its own seed or generator did. */
    if (comm->broadcast(comm, r->params, n * sizeof(float), 0, err) < 0 ||
        comm->broadcast(comm, r->buffers, r->model.num_buffers * sizeof(float), 0, err) < 0)
        return -1;
    if (workspace_create(&r->ws, &r->model, r->be, cfg->batch, err) < 0 || optim_create(&r->opt, cfg->optimizer, n, err) < 0)
        return -1;
    r->opt.lr = (float)(cfg->lr * (cfg->lr_scale_linear ? comm->world : 1));
    r->opt.momentum = (float)cfg->momentum;
    r->opt.weight_decay = (float)cfg->weight_decay;
    if (loader_init(&r->loader, &r->train, cfg->batch, comm->rank, comm->world, cfg->seed, err) < 0)
        return -1;
    return r->gpu ? device_setup(r, cfg->batch, sample, comm, err) : 0;
}

static uint64_t run_fingerprint(const struct train_config *cfg, const struct model *m, int world)
{
    char text[512];
    snprintf(text, sizeof text, "%s|%s|%s|%d|%d|%llu|%zu|%zu", cfg->model, cfg->dataset, cfg->optimizer, cfg->batch,
             world, (unsigned long long)cfg->seed, m->num_params, m->num_buffers);
    uint64_t h = 1469598103934665603ULL;
    for (const char *c = text; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ULL;
    return h;
}

static struct checkpoint checkpoint_view(struct run *r, const struct train_config *cfg, int world)
{
    return (struct checkpoint){.fingerprint = run_fingerprint(cfg, &r->model, world),
                               .num_params = r->model.num_params, .num_buffers = r->model.num_buffers,
                               .params = r->params, .buffers = r->buffers, .opt_m = r->opt.m, .opt_v = r->opt.v,
                               .opt_step = r->opt.step};
}

/* Rank 0 reads the newest valid checkpoint and every rank takes its values. Returns the step to
 * continue after (0: none found) or -1 with err. */
static long resume(struct run *r, const struct train_config *cfg, struct comm *comm, int *resumed, struct dt_err *err)
{
    struct checkpoint ck = checkpoint_view(r, cfg, comm->world);
    long found = 0;
    if (comm->rank == 0) {
        int rc = checkpoint_load_newest(cfg->checkpoint_dir, &ck, err);
        if (rc < 0)
            found = -1;
        else if (rc == 1)
            found = 1;
    }
    if (comm->broadcast(comm, &found, sizeof found, 0, err) < 0 || found < 0)
        return -1;
    if (!found)
        return 0;
    long state[3] = {ck.step, ck.opt_step, ck.resumed};
    size_t n = r->model.num_params * sizeof(float);
    if (comm->broadcast(comm, state, sizeof state, 0, err) < 0 || comm->broadcast(comm, r->params, n, 0, err) < 0 ||
        comm->broadcast(comm, r->buffers, r->model.num_buffers * sizeof(float), 0, err) < 0 ||
        comm->broadcast(comm, r->opt.m, n, 0, err) < 0 || (r->opt.v && comm->broadcast(comm, r->opt.v, n, 0, err) < 0))
        return -1;
    r->opt.step = state[1];
    *resumed = (int)state[2] + 1;
    if (r->gpu && host_to_device(r) < 0)
        return gpu_failed(r, err);
    return state[0];
}

/* Accuracy over the whole test set in eval mode (running BN statistics, rank 0's: each rank
 * gathered its own), each rank evaluating its share. Returns -1 with err if a collective fails. */
static double evaluate(struct run *r, int batch, struct comm *comm, struct dt_err *err)
{
    if (download(r, r->buffers, r->dev.buffers, r->model.num_buffers, err) < 0 ||
        comm->broadcast(comm, r->buffers, r->model.num_buffers * sizeof(float), 0, err) < 0)
        return -1;
    if (r->gpu && (backend_cuda_upload(r->gpu, r->dev.buffers, r->buffers, r->model.num_buffers * sizeof(float)) < 0))
        return gpu_failed(r, err);
    size_t sample = (size_t)r->test.c * r->test.h * r->test.w;
    long begin = r->test.count * comm->rank / comm->world, end = r->test.count * (comm->rank + 1) / comm->world;
    long correct = 0;
    for (long first = begin; first < end; first += batch) {
        int n = end - first < batch ? (int)(end - first) : batch;
        if (r->gpu && backend_cuda_staged(r->gpu) < 0)   /* the last batch's upload has read eval_x */
            return gpu_failed(r, err);
        for (int i = 0; i < n; i++)
            dataset_sample(&r->test, first + i, r->eval_x + i * sample, &r->eval_y[i]);
        int right = 0;
        const float *x;
        const int *y;
        if (batch_in(r, r->eval_x, r->eval_y, n, &x, &y, err) < 0)
            return -1;
        model_forward(&r->model, r->be, &r->ws, work_params(r), work_buffers(r), x, y, n, false, &right);
        if (r->gpu && backend_cuda_error(r->gpu))
            return gpu_failed(r, err);
        correct += right;
    }
    if (comm->sum_long(comm, &correct, err) < 0)
        return -1;
    return (double)correct / r->test.count;
}

/* A fingerprint of the parameters' exact bits (FNV-1a over the buffer). */
static unsigned long long params_fingerprint(const float *params, size_t count)
{
    const unsigned char *p = (const unsigned char *)params;
    unsigned long long h = 1469598103934665603ULL;
    for (size_t i = 0; i < count * sizeof(float); i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

struct params_out {
    const float *params;
    size_t count;
};

static int fill_params(FILE *out, const void *arg)
{
    const struct params_out *p = arg;
    return fwrite(p->params, sizeof(float), p->count, out) == p->count ? 0 : -1;
}

/* Writes the parameters, raw float32, to PREFIX.rankR, atomically. */
static int write_params(const char *prefix, int rank, const float *params, size_t count, struct dt_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.rank%d", prefix, rank);
    struct params_out p = {params, count};
    struct dt_err inner;
    if (atomic_write(path, fill_params, &p, &inner) < 0)
        return dt_fail(err, "--params-out: %s", inner.msg);
    return 0;
}

static void print_eta(long step, long total, double elapsed, double loss)
{
    double left = elapsed / step * (total - step);
    fprintf(stderr, "dtrain-train: step %ld/%ld, loss %.4f, %.0f s elapsed, ETA %dm%02ds\n", step, total, loss, elapsed,
            (int)(left / 60), (int)left % 60);
}

void train_result_free(struct train_result *res)
{
    free(res->epoch_seconds);
    free(res->epoch_accuracy);
    res->epoch_seconds = res->epoch_accuracy = NULL;
}

int train_run(const struct train_config *cfg, FILE *out, struct train_result *res, struct dt_err *err)
{
    memset(res, 0, sizeof *res);
    res->final_accuracy = -1;
    res->epoch_seconds = calloc((size_t)cfg->epochs, sizeof(double));
    res->epoch_accuracy = calloc((size_t)cfg->epochs, sizeof(double));
    if (!res->epoch_seconds || !res->epoch_accuracy)
        return dt_fail(err, "out of memory");
    struct comm *comm = cfg->comm ? cfg->comm : comm_single();
    bool leader = comm->rank == 0;   /* only rank 0 prints the log lines */
    struct run r;
    if (setup(&r, cfg, comm, err) < 0) {
        run_free(&r);
        return -1;
    }
    res->params = r.model.num_params;
    res->flops_per_sample = model_train_flops(&r.model);
    long first = 0;
    if (cfg->checkpoint_dir && cfg->resume && (first = resume(&r, cfg, comm, &res->resumed, err)) < 0) {
        run_free(&r);
        return -1;
    }
    if (loader_start(&r.loader, first, err) < 0) {
        run_free(&r);
        return -1;
    }
    if (cfg->checkpoint_dir) {
        stop_signal = 0;
        struct sigaction sa = {.sa_handler = on_stop_signal};
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
    }
    struct watchdog wd = {.comm = comm, .timeout = cfg->timeout_minutes * 60};
    watchdog_touch(&wd, first);
    bool watching = cfg->timeout_minutes > 0 && pthread_create(&wd.thread, NULL, watchdog_main, &wd) == 0;
    long per_epoch = r.loader.steps_per_epoch, total = per_epoch * cfg->epochs;
    if (cfg->max_steps > 0 && cfg->max_steps < total)
        total = cfg->max_steps;
    if (leader && first > 0)
        fprintf(stderr, "dtrain-train: resumed at step %ld from %s (resume %d)\n", first, cfg->checkpoint_dir,
                res->resumed);
    if (leader)
        fprintf(stderr, "dtrain-train: model %s (%zu parameters), dataset %s (%ld train, %ld test), backend %s, "
                "%d thread%s, batch %d x %d rank%s (%s), %s lr %g, %ld steps (%ld per epoch)\n", cfg->model,
                r.model.num_params, cfg->dataset, r.train.count, r.test.count, r.be->name, cfg->threads,
                cfg->threads > 1 ? "s" : "", cfg->batch, comm->world, comm->world > 1 ? "s" : "", comm->name,
                cfg->optimizer, r.opt.lr, total, per_epoch);
    /* Rates count wall time since training started, evaluations left out, data waits included;
     * samples are all ranks': speedup = data/sec(W) / data/sec(1), as in the seeds. */
    double samples_per_step = (double)cfg->batch * comm->world, start = now_sec(), eval_time = 0, trained = 0;
    double epoch_start = start;
    int rc = 0;
    for (long step = first + 1; step <= total; step++) {
        const float *x;
        const int *y;
        maybe_hang(comm, step);
        if (next_batch(&r, &x, &y, err) < 0 || batch_in(&r, x, y, cfg->batch, &x, &y, err) < 0) {
            rc = -1;
            break;
        }
        /* the first step of a process runs eagerly: it makes the plans and buffers a graph points to */
        double loss;
        int stepped = cfg->cuda_graphs && step > first + 1
                          ? graph_step(&r, x, y, cfg->batch, comm, &loss, err)
                          : queue_step(&r, x, y, cfg->batch, comm, false, &loss, err);
        if (stepped < 0) {
            rc = dt_wrap(err, "step %ld", step);
            break;
        }
        if (stepped > 0 || !isfinite(loss)) {
            rc = dt_fail(err, "step %ld: the loss is %f (diverged: try a smaller --lr)", step, loss);
            break;
        }
        if (cfg->check_replicas && download(&r, r.params, r.dev.params, r.model.num_params, err) < 0) {
            rc = -1;
            break;
        }
        if (cfg->check_replicas) {
            unsigned long long lo, hi, mine = params_fingerprint(r.params, r.model.num_params);
            if (comm->min_max_u64(comm, mine, &lo, &hi, err) < 0 || lo != hi) {
                rc = lo != hi ? dt_fail(err, "step %ld: the ranks' parameters differ (replicas diverged)", step) : -1;
                break;
            }
        }
        trained = now_sec() - start - eval_time;
        watchdog_touch(&wd, step);
        res->steps = step;
        res->final_loss = loss;
        if (cfg->loss_curve && step <= cfg->max_steps)
            cfg->loss_curve[step - 1] = loss;
        res->final_rate = (step - first) * samples_per_step / trained;
        if (cfg->checkpoint_dir) {
            /* every rank stops at the same step: the signal may reach them a step apart */
            long stop = stop_signal;
            if (comm->sum_long(comm, &stop, err) < 0) {
                rc = -1;
                break;
            }
            bool due = cfg->checkpoint_every > 0 && step % cfg->checkpoint_every == 0;
            if ((stop || due) && device_to_host(&r, err) < 0) {
                rc = -1;
                break;
            }
            if (stop || due) {
                struct checkpoint ck = checkpoint_view(&r, cfg, comm->world);
                ck.step = step;
                ck.opt_step = r.opt.step;
                ck.resumed = res->resumed;
                if (leader && checkpoint_save(cfg->checkpoint_dir, &ck, err) < 0) {
                    rc = -1;
                    break;
                }
            }
            if (stop) {
                res->stop_signal = stop_signal ? stop_signal : SIGTERM;
                if (leader)
                    fprintf(stderr, "dtrain-train: stopped by a signal at step %ld; checkpoint saved in %s\n", step,
                            cfg->checkpoint_dir);
                break;
            }
        }
        if (step % cfg->log_every == 0) {
            if (leader)
                seedlog_step(out, step, res->final_rate);
            if (res->final_rate > res->peak_rate)
                res->peak_rate = res->final_rate;
            if (cfg->progress && leader)
                print_eta(step, total, trained, loss);
        }
        bool epoch_end = step % per_epoch == 0 || step == total;
        if (!epoch_end)
            continue;
        int epoch = (int)((step - 1) / per_epoch);
        double train_sec = now_sec() - epoch_start;
        res->epoch_seconds[epoch] = train_sec;
        res->epoch_accuracy[epoch] = -1;
        if (cfg->eval_every > 0 && ((epoch + 1) % cfg->eval_every == 0 || step == total)) {
            double e0 = now_sec();
            res->final_accuracy = evaluate(&r, cfg->batch, comm, err);
            if (res->final_accuracy < 0) {
                rc = -1;
                break;
            }
            double test_sec = now_sec() - e0;
            eval_time += test_sec;
            watchdog_touch(&wd, step);
            res->epoch_accuracy[epoch] = res->final_accuracy;
            if (leader)
                seedlog_epoch(out, epoch, train_sec, test_sec, res->final_accuracy);
        }
        res->epochs_done = epoch + 1;
        epoch_start = now_sec();
    }
    if (r.fast && backend_cpu_failed(r.fast))
        rc = dt_fail(err, "the cpu backend ran out of memory for its im2col buffers");
    if (rc == 0 && r.gpu && backend_cuda_sync(r.gpu) < 0)
        rc = gpu_failed(&r, err);
    if (rc == 0 && cfg->params_out)
        rc = download(&r, r.params, r.dev.params, r.model.num_params, err) < 0
                 ? -1 : write_params(cfg->params_out, comm->rank, r.params, r.model.num_params, err);
    res->seconds = trained;
    if (watching) {
        atomic_store(&wd.stop, 1);
        pthread_join(wd.thread, NULL);
    }
    if (cfg->checkpoint_dir) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGUSR1, SIG_DFL);
    }
    if (res->peak_rate < res->final_rate && res->steps < cfg->log_every)
        res->peak_rate = res->final_rate;   /* no Step line was printed: the only rate there is */
    run_free(&r);
    return rc;
}
