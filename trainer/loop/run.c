/* run.c - making and releasing what one training run holds (see run.h). */
#include "trainer/loop/run.h"

#include <stdlib.h>
#include <string.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/comm/comm_nccl.h"
#include "trainer/base/page_memory.h"

float *run_params(struct run *r) { return r->gpu ? r->dev.params : r->params; }
float *run_grads(struct run *r) { return r->gpu ? r->dev.grads : r->grads; }
float *run_buffers(struct run *r) { return r->gpu ? r->dev.buffers : r->buffers; }

static void update_layer(void *ctx, size_t first, size_t count)
{
    compute_update(ctx, first, count);
}

void run_free(struct run *r)
{
    timeline_close(r->timeline_file, &(struct dt_err){0});   /* still open: the run failed */
    trace_free(&r->trace);
    profile_free(&r->measured);
    emulation_close(&r->emu);
    device_unpin_staging(r);   /* before the exchange frees its host copy */
    exchange_destroy(&r->exchange);
    if (r->nccl)
        comm_nccl_destroy(r->nccl);
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

/* The backend cfg names, with the options only a GPU takes refused elsewhere. */
static int choose_backend(struct run *r, const struct train_config *cfg, struct dt_err *err)
{
    if (strcmp(cfg->backend, "reference") == 0) {
        r->be = backend_reference();
    } else if (strcmp(cfg->backend, "cpu") == 0) {
        if (!(r->fast = backend_cpu_create(cfg->threads)))
            return dt_fail(err, "out of memory for the cpu backend");
        r->be = r->fast;
    } else if (strcmp(cfg->backend, "cuda") == 0) {
        char why[512];
        struct cuda_options options = {.bf16 = cfg->bf16, .channels_last = cfg->channels_last,
                                       .conv_algo = cfg->conv_algo};
        int devices = backend_cuda_probe(why, sizeof why);   /* "no GPU here" said as that, with the fix */
        if (devices == 0)
            return dt_fail(err, "--device cuda, but this node has no GPU CUDA can use (%s): run on a GPU node, or "
                           "train on the CPU with --device cpu", why);
        if (devices > 0 && cfg->gpu >= devices)
            return dt_fail(err, "--device cuda: GPU %d, but this node has %d (GPUs 0-%d)", cfg->gpu, devices,
                           devices - 1);
        if (!(r->gpu = backend_cuda_create(cfg->gpu, &options, why, sizeof why)))
            return dt_fail(err, "--device cuda: %s", why);
        r->be = r->gpu;
        r->device = &device_gpu;
    } else {
        return dt_fail(err, "unknown backend \"%s\" (cpu, reference or cuda)", cfg->backend);
    }
    if (!r->gpu && (cfg->bf16 || cfg->conv_algo != CONV_ALGO_HEURISTIC || cfg->cuda_graphs || cfg->channels_last)) {
        char option[64] = "--cuda-graphs";
        if (cfg->channels_last)
            snprintf(option, sizeof option, "--channels-last");
        else if (cfg->bf16)
            snprintf(option, sizeof option, "--precision bf16");
        else if (cfg->conv_algo != CONV_ALGO_HEURISTIC)
            snprintf(option, sizeof option, "--conv-algo %s", conv_algo_names[cfg->conv_algo]);
        return dt_fail(err, "%s needs --device cuda (the CPU backends compute in fp32 with their own kernels)", option);
    }
    return 0;
}

/* How a GPU rank's gradients travel: --gpu-transport, or by default NCCL for BSP and host-staged
 * for the rest (per-layer NCCL, --gpu-transport nccl for the allreduce methods, becomes their
 * default once it has run on a GPU: docs/gpu.md). On CPU ranks "host" stages them through a
 * second host buffer, exactly as a GPU rank would (the tests of the GPU path that run without one). */
static int choose_transport(const struct run *r, const struct train_config *cfg, const struct exchange_method *method,
                            bool *staged, struct dt_err *err)
{
    const char *transport = cfg->gpu_transport;
    bool over_nccl = exchange_facts(method)->over_nccl;
    if (!r->gpu) {
        if (transport && strcmp(transport, "nccl") == 0)
            return dt_fail(err, "--gpu-transport nccl needs --device cuda (CPU ranks exchange over MPI)");
        *staged = transport != NULL;
        return 0;
    }
    if (!transport)
        transport = method == &exchange_bsp ? "nccl" : "host";
    if (strcmp(transport, "nccl") == 0 && !over_nccl)   /* said before NCCL's set-up makes every rank wait */
        return dt_fail(err, "--comm %s has parameter servers, which sum in host memory: --gpu-transport host "
                       "(its default) stages its gradients there", method->name);
    *staged = strcmp(transport, "host") == 0;
    return 0;
}

/* The gradient exchange among the ranks of comm: over NCCL, or host-staged, when the gradients
 * live on GPUs. */
static int choose_exchange(struct run *r, const struct train_config *cfg, struct comm *comm, struct dt_err *err)
{
    const struct exchange_method *method = cfg->exchange ? cfg->exchange : &exchange_bsp;
    bool staged = false;
    if (cfg->cuda_graphs && comm->world > 1)
        return dt_fail(err, "--cuda-graphs runs one rank for now (%d here): NCCL inside a captured step is not built",
                       comm->world);
    if (choose_transport(r, cfg, method, &staged, err) < 0)
        return -1;
    staged = staged && comm->world > 1;   /* a world of one exchanges nothing */
    if (r->gpu && !staged && comm->world > 1 && !(r->nccl = comm_nccl_create(comm, backend_cuda_stream(r->gpu), err)))
        return dt_wrap(err, "NCCL");
    struct staging_device device = staging_host_device();
    if (staged && r->gpu && device_staging(r, exchange_staged_spans(&r->model), &device, err) < 0)
        return -1;
    if (exchange_create(&r->exchange, method, &cfg->exchange_options, comm, r->nccl, staged ? &device : NULL,
                        &r->model, run_grads(r), r->model.num_params, err) < 0)
        return -1;
    if (r->gpu && r->exchange.staging)
        device_pin_staging(r, r->exchange.grads, r->model.num_params);
    r->workers = r->exchange.workers;
    /* for methods that update layer by layer */
    exchange_set_update(&r->exchange, (struct exchange_update){update_layer, r});
    return 0;
}

/* The host arrays, at their initial values: rank 0's on every rank. */
static int initial_state(struct run *r, const struct train_config *cfg, struct comm *comm, struct dt_err *err)
{
    size_t n = r->model.num_params, sample = (size_t)r->train.c * r->train.h * r->train.w;
    r->params = malloc(n * sizeof(float));
    r->grads = malloc(n * sizeof(float));
    r->buffers = malloc((r->model.num_buffers + 1) * sizeof(float));
    r->eval_x = page_memory_alloc(sample * cfg->batch * sizeof(float));
    r->eval_y = page_memory_alloc((size_t)cfg->batch * sizeof(int));
    if (!r->params || !r->grads || !r->buffers || !r->eval_x || !r->eval_y)
        return dt_fail(err, "out of memory for %zu parameters", n);
    model_init_params(&r->model, r->params, r->buffers, cfg->seed);
    /* Every rank starts from rank 0's values, whatever its own seed or generator did. */
    if (comm->broadcast(comm, r->params, n * sizeof(float), 0, err) < 0 ||
        comm->broadcast(comm, r->buffers, r->model.num_buffers * sizeof(float), 0, err) < 0)
        return -1;
    return 0;
}

/* A language model reads token batches, the others images: each only its own kind of data. BERT
 * on pre-training data (synthetic-text) gets BertForPreTraining's heads, as the reference experiments ran it; the
 * transformer stays the reference experiments' classifier (the next-sentence label its class). */
static int build_model(struct run *r, const struct train_config *cfg, struct dt_err *err)
{
    bool text = r->train.vocab > 0, seq_model = model_is_seq(cfg->model);
    if (text != seq_model)
        return dt_fail(err, "model %s reads %s, but --dataset %s holds %s", cfg->model, seq_model ? "text" : "images",
                       cfg->dataset, text ? "text (try --model transformer)" : "images (try a text dataset: wordnet, "
                       "sst5, tsv, synthetic-text)");
    if (text)
        return model_build_seq(&r->model, cfg->model,
                               &(struct seq_model_input){.tokens = r->train.c, .vocab = r->train.vocab,
                                                         .classes = r->train.classes,
                                                         .dropout = cfg->dropout_set ? (float)cfg->dropout
                                                                                     : TRAIN_DEFAULT_DROPOUT,
                                                         .pretraining = r->train.pretraining &&
                                                                        strncmp(cfg->model, "bert", 4) == 0},
                               err);
    if (cfg->dropout_set)
        return dt_fail(err, "--dropout is for the language models (transformer, bert-base, bert-large), not %s",
                       cfg->model);
    return model_build(&r->model, cfg->model, r->train.c, r->train.h, r->train.w, r->train.classes, err);
}

int run_setup(struct run *r, const struct train_config *cfg, struct comm *comm, struct dt_err *err)
{
    memset(r, 0, sizeof *r);
    r->device = &device_host;   /* until a GPU is chosen: run_free's calls go through it */
    if (dataset_open_text(cfg->dataset, cfg->data_dir, cfg->seq_len, cfg->vocab, &r->train, &r->test, err) < 0 ||
        build_model(r, cfg, err) < 0 || choose_backend(r, cfg, err) < 0)
        return -1;
    if (cfg->emulate && r->gpu)
        return dt_fail(err, "--emulate runs on CPU ranks: the profile stands for the device (drop --device cuda)");
    if (cfg->emulate && emulation_open(&r->emu, cfg->emulate, cfg->emulate_rate, cfg->dilate > 0 ? cfg->dilate : 1,
                                       cfg->batch, &r->model, err) < 0)
        return -1;
    r->emulating = cfg->emulate != NULL;
    r->compute = r->emulating ? &compute_emulated : r->gpu ? &compute_gpu : &compute_host;
    /* an emulated run computes nothing: no activations to keep */
    if (initial_state(r, cfg, comm, err) < 0 ||
        (!r->emulating && workspace_create(&r->ws, &r->model, r->be, cfg->batch, err) < 0) ||
        optim_create(&r->opt, cfg->optimizer, r->model.num_params, err) < 0)
        return -1;
    size_t sample = (size_t)r->train.c * r->train.h * r->train.w;
    if (device_setup(r, cfg->batch, sample, err) < 0 || choose_exchange(r, cfg, comm, err) < 0)
        return -1;
    r->opt.lr = (float)(cfg->lr * (cfg->lr_scale_linear ? r->workers.count : 1));
    r->opt.momentum = (float)cfg->momentum;
    r->opt.weight_decay = (float)cfg->weight_decay;
    if ((long)cfg->batch * r->workers.count > r->train.count)
        return dt_fail(err, "--batch-size %d x %d rank%s is %ld samples a step, more than the %ld of %s's training set",
                       cfg->batch, r->workers.count, r->workers.count > 1 ? "s" : "", (long)cfg->batch * r->workers.count,
                       r->train.count, cfg->dataset);
    if (loader_init(&r->loader, &r->train, cfg->batch, r->workers.rank, r->workers.count, cfg->seed, err) < 0)
        return -1;
    device_pin_batches(r);
    return 0;
}
