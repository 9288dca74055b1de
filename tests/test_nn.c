/* test_nn.c - the engine: parameter counts, every layer's backward against central differences,
 * the fast CPU backend against the reference. The gradient checker is tests/gradcheck.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trainer/nn/nn.h"
#include "trainer/nn/nn_build.h"
#include "tests/gradcheck.h"
#include "trainer/base/rng.h"

static void build_or_fail(struct model *m, const char *name, int c, int h, int w, int classes)
{
    struct dt_err err;
    int rc = model_build(m, name, c, h, w, classes, &err);
    if (rc < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void test_parameter_counts(void **state)
{
    (void)state;
    static const struct { const char *name; int c, h, classes; size_t params; } known[] = {
        {"mlp", 1, 28, 10, 535818},     /* 784*512+512 + 512*256+256 + 256*10+10 */
        {"lenet", 1, 28, 10, 44426},
        {"cnn", 1, 28, 10, 421642},
        /* torchvision.models.resnetNN() with the ImageNet stem and 1000 classes */
        {"resnet18", 3, 224, 1000, 11689512}, {"resnet34", 3, 224, 1000, 21797672},
        {"resnet50", 3, 224, 1000, 25557032}, {"resnet101", 3, 224, 1000, 44549160},
        /* the same with a 3x3 one-channel stem and 10 classes (MNIST): -9408+576 in the stem,
         * fc 512*10+10 (2048*10+10) instead of 512*1000+1000 (2048*1000+1000) */
        {"resnet18", 1, 28, 10, 11172810}, {"resnet50", 1, 28, 10, 23519690},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        struct model m;
        build_or_fail(&m, known[i].name, known[i].c, known[i].h, known[i].h, known[i].classes);
        if (m.num_params != known[i].params)
            print_error("%s %dx%d: %zu parameters, want %zu\n", known[i].name, known[i].h, known[i].h, m.num_params,
                        known[i].params);
        assert_int_equal(m.num_params, known[i].params);
        model_free(&m);
    }
    struct model m;
    struct dt_err err;
    assert_int_equal(model_build(&m, "vgg", 1, 28, 28, 10, &err), -1);
    assert_non_null(strstr(err.msg, "unknown model \"vgg\""));
    assert_int_equal(model_build(&m, "lenet", 3, 32, 32, 10, &err), -1);
    assert_non_null(strstr(err.msg, "28x28x1"));
}

/* Small models, one per layer kind, built by hand. */
#define TINY_MODELS 6
static void tiny_model(struct model *m, int kind)
{
    switch (kind) {
    case 0:   /* linear */
        nn_begin(m, "linear", 12, 1, 1, 5);
        nn_softmax_xent(m, nn_linear(m, nn_relu(m, nn_linear(m, 0, 7)), 5));
        break;
    case 1:   /* conv with stride, padding, bias */
        nn_begin(m, "conv", 2, 7, 7, 4);
        nn_softmax_xent(m, nn_linear(m, nn_relu(m, nn_conv(m, 0, 3, 3, 2, 1, true, NN_INIT_PYTORCH_DEFAULT)), 4));
        break;
    case 2:   /* batch norm (training mode), global average pool */
        nn_begin(m, "bn", 3, 4, 4, 3);
        nn_softmax_xent(m, nn_linear(m, nn_avgpool(m, nn_relu(m, nn_batchnorm(m, nn_conv(m, 0, 4, 3, 1, 1, false,
                                                                                         NN_INIT_KAIMING_FAN_OUT)))), 3));
        break;
    case 3:   /* max pool 2x2 and 3x3 stride 2 pad 1 */
        nn_begin(m, "maxpool", 2, 8, 8, 3);
        nn_softmax_xent(m, nn_linear(m, nn_maxpool(m, nn_maxpool(m, nn_conv(m, 0, 3, 3, 1, 1, true, NN_INIT_PYTORCH_DEFAULT),
                                                                2, 2, 0), 3, 2, 1), 3));
        break;
    case 4: { /* a residual block with a strided 1x1 downsample, as separate ops */
        nn_begin(m, "residual", 3, 6, 6, 3);
        int t = nn_relu(m, nn_batchnorm(m, nn_conv(m, 0, 4, 3, 1, 1, false, NN_INIT_KAIMING_FAN_OUT)));
        int a = nn_batchnorm(m, nn_conv(m, t, 6, 3, 2, 1, false, NN_INIT_KAIMING_FAN_OUT));
        int b = nn_batchnorm(m, nn_conv(m, t, 6, 1, 2, 0, false, NN_INIT_KAIMING_FAN_OUT));
        nn_softmax_xent(m, nn_linear(m, nn_avgpool(m, nn_relu(m, nn_add(m, a, b))), 3));
        break;
    }
    default: { /* as the ResNets build it: BN and ReLU one op, the downsample's BN adding and ReLU-ing,
                  then a block whose identity is its input (read twice: gradients added) */
        nn_begin(m, "fused", 3, 6, 6, 3);
        int t = nn_batchnorm_relu(m, nn_conv(m, 0, 4, 3, 1, 1, false, NN_INIT_KAIMING_FAN_OUT));
        int a = nn_batchnorm(m, nn_conv(m, t, 6, 3, 2, 1, false, NN_INIT_KAIMING_FAN_OUT));
        t = nn_batchnorm_add_relu(m, nn_conv(m, t, 6, 1, 2, 0, false, NN_INIT_KAIMING_FAN_OUT), a);
        t = nn_batchnorm_add_relu(m, nn_conv(m, t, 6, 3, 1, 1, false, NN_INIT_KAIMING_FAN_OUT), t);
        nn_softmax_xent(m, nn_linear(m, nn_avgpool(m, t), 3));
    }
    }
    assert_false(m->failed);
    assert_int_equal(nn_finish(m), 0);
}

struct run {
    float *params, *buffers, *grads, *x;
    int *labels;
    struct workspace ws;
};

static void setup_run(const struct model *m, struct run *r, int n, uint64_t seed)
{
    r->params = calloc(m->num_params, sizeof(float));
    r->grads = calloc(m->num_params, sizeof(float));
    r->buffers = calloc(m->num_buffers + 1, sizeof(float));
    size_t in = tensor_size(m, 0) * (size_t)n;
    r->x = malloc(in * sizeof(float));
    r->labels = malloc((size_t)n * sizeof(int));
    model_init_params(m, r->params, r->buffers, seed);
    struct rng rng;
    rng_seed(&rng, seed + 1);
    for (size_t i = 0; i < in; i++)
        r->x[i] = (float)rng_normal(&rng);
    for (int i = 0; i < n; i++)
        r->labels[i] = (int)rng_below(&rng, (uint64_t)m->classes);
    assert_int_equal(workspace_create(&r->ws, m, backend_reference(), n, NULL), 0);
}

static void free_run(const struct model *m, struct run *r)
{
    workspace_free(&r->ws, m, backend_reference());
    free(r->params);
    free(r->grads);
    free(r->buffers);
    free(r->x);
    free(r->labels);
}

static void test_backward_matches_central_differences(void **state)
{
    (void)state;
    const int n = 3;
    for (int kind = 0; kind < TINY_MODELS; kind++) {
        struct model m;
        tiny_model(&m, kind);
        struct run r;
        setup_run(&m, &r, n, 42 + (uint64_t)kind);
        struct batch b = {.n = n, .x = r.x, .labels = r.labels};
        double float_loss = model_forward(&m, backend_reference(), &r.ws, r.params, r.buffers, &b, true, NULL, NULL);
        memset(r.grads, 0, m.num_params * sizeof(float));
        model_backward(&m, backend_reference(), &r.ws, r.params, r.grads, n);
        /* h = 1e-6: far from any ReLU or max-pool kink */
        double forward_error, worst = gradcheck_worst(&m, r.params, r.grads, &b, float_loss, 1e-6, 1e-3, &forward_error);
        assert_true(forward_error <= 1e-5);   /* the two forward passes agree */
        assert_true(worst <= 1e-3);
        print_message("%-9s %5zu parameters, worst relative difference %.2e\n", m.name, m.num_params, worst);
        free_run(&m, &r);
        model_free(&m);
    }
}

/* A ResNet block's end as separate ops (conv, BN, ReLU, conv, BN, add of the input, ReLU) or as
 * ResNets build it (nn_batchnorm_relu, nn_batchnorm_add_relu). */
static void bn_relu_model(struct model *m, bool fused)
{
    nn_begin(m, fused ? "fused" : "separate", 3, 5, 5, 4);
    int conv = nn_conv(m, 0, 6, 3, 1, 1, false, NN_INIT_KAIMING_FAN_OUT);
    int t = fused ? nn_batchnorm_relu(m, conv) : nn_relu(m, nn_batchnorm(m, conv));
    conv = nn_conv(m, t, 6, 3, 1, 1, false, NN_INIT_KAIMING_FAN_OUT);
    t = fused ? nn_batchnorm_add_relu(m, conv, t) : nn_relu(m, nn_add(m, nn_batchnorm(m, conv), t));
    nn_softmax_xent(m, nn_linear(m, nn_avgpool(m, t), 4));
    assert_false(m->failed);
    assert_int_equal(nn_finish(m), 0);
}

/* The fused ops are the separate ops' arithmetic: the same loss, gradients and running statistics
 * to the bit on the reference backend (the same parameters: ReLU and add own none). */
static void test_fused_batchnorm_is_the_separate_ops(void **state)
{
    (void)state;
    const int n = 4;
    struct model two, one;
    bn_relu_model(&two, false);
    bn_relu_model(&one, true);
    assert_int_equal(one.num_params, two.num_params);
    assert_int_equal(one.num_buffers, two.num_buffers);
    assert_int_equal(one.num_ops, two.num_ops - 3);
    struct run a, b;
    setup_run(&two, &a, n, 11);
    setup_run(&one, &b, n, 11);
    double loss_two = model_forward(&two, backend_reference(), &a.ws, a.params, a.buffers,
                                    &(struct batch){.n = n, .x = a.x, .labels = a.labels}, true, NULL, NULL);
    double loss_one = model_forward(&one, backend_reference(), &b.ws, b.params, b.buffers,
                                    &(struct batch){.n = n, .x = b.x, .labels = b.labels}, true, NULL, NULL);
    model_backward(&two, backend_reference(), &a.ws, a.params, a.grads, n);
    model_backward(&one, backend_reference(), &b.ws, b.params, b.grads, n);
    assert_true(loss_one == loss_two);
    assert_memory_equal(b.grads, a.grads, one.num_params * sizeof(float));
    assert_memory_equal(b.buffers, a.buffers, one.num_buffers * sizeof(float));
    free_run(&two, &a);
    free_run(&one, &b);
    model_free(&two);
    model_free(&one);
}

/* max |a - b| / max |b| over one buffer */
static double relative_difference(const float *a, const float *b, size_t count)
{
    double diff = 0, scale = 1e-12;
    for (size_t i = 0; i < count; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return diff / scale;
}

static void compare_backends(struct model *m, int n, const char *label, enum cpu_conv_mode mode)
{
    struct backend *fast = backend_cpu_create(1);
    assert_non_null(fast);
    backend_cpu_set_conv_mode(fast, mode);
    struct run ref, cpu;
    setup_run(m, &ref, n, 7);
    setup_run(m, &cpu, n, 7);
    double ref_loss = model_forward(m, backend_reference(), &ref.ws, ref.params, ref.buffers, &(struct batch){.n = n, .x = ref.x, .labels = ref.labels}, true,
                                   NULL, NULL);
    double cpu_loss = model_forward(m, fast, &cpu.ws, cpu.params, cpu.buffers, &(struct batch){.n = n, .x = cpu.x, .labels = cpu.labels}, true, NULL, NULL);
    memset(ref.grads, 0, m->num_params * sizeof(float));
    memset(cpu.grads, 0, m->num_params * sizeof(float));
    model_backward(m, backend_reference(), &ref.ws, ref.params, ref.grads, n);
    model_backward(m, fast, &cpu.ws, cpu.params, cpu.grads, n);
    assert_false(backend_cpu_failed(fast));
    double logits = relative_difference(cpu.ws.act[m->logits], ref.ws.act[m->logits], tensor_size(m, m->logits) * n);
    /* the whole gradient buffer, each parameter tensor (weights, biases, BN gamma and beta) against
     * its own scale: the ranges the model was initialised by cover it end to end */
    double worst = 0;
    size_t covered = 0;
    for (int i = 0; i < m->num_inits; i++) {
        const struct param_init *range = &m->inits[i];
        assert_int_equal(range->offset, covered);
        worst = fmax(worst, relative_difference(cpu.grads + range->offset, ref.grads + range->offset, range->count));
        covered += range->count;
    }
    assert_int_equal(covered, m->num_params);
    static const char *const modes[] = {"auto", "gemm", "direct", "dnnl"};
    print_message("%-9s %-6s loss %.6f vs %.6f, logits %.1e, gradients %.1e (relative)\n", label, modes[mode], cpu_loss,
                  ref_loss, logits, worst);
    assert_true(fabs(cpu_loss - ref_loss) <= 1e-4 * fabs(ref_loss));
    assert_true(logits <= 1e-4);
    assert_true(worst <= 1e-4);
    free_run(m, &ref);
    free_run(m, &cpu);
    backend_cpu_destroy(fast);
}

static void test_fast_backend_matches_reference(void **state)
{
    (void)state;
    for (enum cpu_conv_mode mode = CPU_CONV_AUTO; mode <= CPU_CONV_DNNL; mode++) {
        for (int kind = 0; kind < TINY_MODELS; kind++) {
            struct model m;
            tiny_model(&m, kind);
            compare_backends(&m, 4, m.name, mode);
            model_free(&m);
        }
        const char *models[] = {"mlp", "lenet", "cnn"};
        for (int i = 0; i < 3; i++) {
            struct model m;
            build_or_fail(&m, models[i], 1, 28, 28, 10);
            compare_backends(&m, 3, models[i], mode);
            model_free(&m);
        }
    }
}

/* What a layer-wise exchange learns before each layer's forward pass: its parameter range. Over
 * a pass the ranges tile the whole buffer in order; backward's readiness calls come in reverse. */
struct spans {
    size_t next;               /* where the next range must begin */
    int calls;
    bool ok;
};

static void on_needed(void *ctx, size_t first, size_t count)
{
    struct spans *s = ctx;
    s->ok = s->ok && first == s->next && count > 0;
    s->next = first + count;
    s->calls++;
}

static void on_ready(void *ctx, size_t first)
{
    struct spans *s = ctx;
    s->ok = s->ok && first < s->next;   /* strictly towards the start */
    s->next = first;
    s->calls++;
}

static void test_passes_tell_each_layer_its_parameters(void **state)
{
    (void)state;
    const char *models[] = {"mlp", "lenet", "cnn", "resnet18"};
    for (int k = 0; k < 4; k++) {
        struct model m;
        build_or_fail(&m, models[k], 1, 28, 28, 10);
        struct run r;
        setup_run(&m, &r, 2, 3);
        struct spans fwd = {.ok = true}, bwd = {.ok = true};
        struct params_needed need = {on_needed, &fwd};
        model_forward(&m, backend_reference(), &r.ws, r.params, r.buffers, &(struct batch){.n = 2, .x = r.x, .labels = r.labels}, true,
                      &need, NULL);
        bwd.next = m.num_params + 1;
        struct grads_ready ready = {on_ready, &bwd};
        model_backward_notify(&m, backend_reference(), &r.ws, r.params, r.grads, 2, &ready);
        assert_true(fwd.ok);
        assert_int_equal(fwd.next, m.num_params);
        assert_true(bwd.ok);
        assert_int_equal(bwd.next, 0);
        assert_int_equal(bwd.calls, fwd.calls);
        free_run(&m, &r);
        model_free(&m);
    }
}

/* Every graph ends in its loss: one that does not is refused when building ends. */
static void test_a_graph_needs_a_loss(void **state)
{
    (void)state;
    struct model m;
    nn_begin(&m, "noloss", 4, 1, 1, 3);
    m.logits = nn_linear(&m, 0, 3);
    assert_int_equal(nn_finish(&m), -1);
    model_free(&m);
}

/* A channels-last backend (the GPU's --channels-last) keeps images NHWC: the ResNets, which pool
 * to one value a channel before their linear layer, get an NHWC copy of their input; LeNet and the
 * CNN, which flatten images into one, are refused with the option named; the MLP, with no
 * convolution, keeps its input as it is. (The kernels themselves: test_cuda_layout.) */
static void test_channels_last_needs_pooled_features(void **state)
{
    (void)state;
    struct backend nhwc = *backend_reference();
    nhwc.channels_last = true;
    static const struct { const char *model; int c, h; bool refused, copied; } cases[] = {
        {"resnet18", 3, 16, false, true}, {"resnet50", 3, 64, false, true}, {"lenet", 1, 28, true, false},
        {"cnn", 1, 28, true, false}, {"mlp", 1, 28, false, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct model m;
        struct workspace ws;
        struct dt_err err = {0};
        assert_int_equal(model_build(&m, cases[i].model, cases[i].c, cases[i].h, cases[i].h, 10, NULL), 0);
        int rc = workspace_create(&ws, &m, &nhwc, 2, &err);
        print_message("%s: %s\n", cases[i].model, rc < 0 ? err.msg : ws.input_nhwc ? "an NHWC input copy" : "as is");
        assert_int_equal(rc, cases[i].refused ? -1 : 0);
        if (rc < 0) {
            assert_non_null(strstr(err.msg, "--channels-last"));
            assert_non_null(strstr(err.msg, cases[i].model));
        } else {
            assert_true((ws.input_nhwc != NULL) == cases[i].copied);
            workspace_free(&ws, &m, &nhwc);
        }
        model_free(&m);
    }
}

/* How many ops of kind `kind` (a convolution or a batch norm) m has in *total, and how many of them may
 * keep their output in bf16 alone. */
static int ops_flagged(const struct model *m, enum op_kind kind, int *total)
{
    int flagged = 0;
    *total = 0;
    for (int i = 0; i < m->num_ops; i++) {
        const struct op *op = &m->ops[i];
        if (op->kind != kind)
            continue;
        (*total)++;
        flagged += kind == OP_CONV ? op->conv.into_batchnorm : op->bn.y_for_bf16_readers;
    }
    return flagged;
}

/* A 1x1 convolution of t, its output as wide as t's (4 channels). */
static int conv1x1(struct model *m, int t) { return nn_conv(m, t, 4, 1, 1, 0, false, NN_INIT_KAIMING_FAN_OUT); }

/* Which tensors a bf16 backend may keep in bf16 alone follows from their readers: a convolution's
 * output read by one batch norm; a batch norm's read only by convolutions, poolings and as batch
 * norms' residuals; the input gradient of a convolution that is a batch norm output's one reader.
 * ResNet-50: every convolution's output and every batch norm's (37 plain: the stem's read by the
 * max pool, each bottleneck's first two by convolutions, the 4 downsamples' as residuals; the 16
 * blocks' ends, the last read by the average pool), and the input gradients of each bottleneck's
 * second and third convolutions. By hand, each way a reader can refuse. */
/* How many convolutions of m may return their input gradient in bf16 alone. */
static int dx_flagged(const struct model *m)
{
    int flagged = 0;
    for (int i = 0; i < m->num_ops; i++)
        flagged += m->ops[i].kind == OP_CONV && m->ops[i].conv.dx_for_batchnorm;
    return flagged;
}

static void test_bf16_outputs_follow_their_readers(void **state)
{
    (void)state;
    struct model m;
    int total;
    build_or_fail(&m, "resnet50", 3, 64, 64, 10);
    assert_int_equal(ops_flagged(&m, OP_CONV, &total), 53);
    assert_int_equal(total, 53);
    assert_int_equal(ops_flagged(&m, OP_BATCHNORM, &total), 37);
    assert_int_equal(total, 37);
    assert_int_equal(ops_flagged(&m, OP_BATCHNORM_ADD_RELU, &total), 16);
    assert_int_equal(total, 16);
    assert_int_equal(dx_flagged(&m), 32);   /* each bottleneck's second and third convolutions */
    model_free(&m);

    nn_begin(&m, "readers", 3, 6, 6, 3);
    int t = nn_batchnorm_relu(&m, nn_conv(&m, 0, 4, 3, 1, 1, false, NN_INIT_KAIMING_FAN_OUT));   /* op 1: marked */
    int a = conv1x1(&m, t);                                /* op 2: read by a batch norm and an add */
    int b = nn_batchnorm_relu(&m, conv1x1(&m, t));         /* op 4: by a convolution and an add */
    int c = nn_batchnorm(&m, conv1x1(&m, b));              /* op 6: by an add */
    int a_sum = nn_add(&m, nn_batchnorm(&m, a), a);        /* op 7: by an add */
    int d = nn_add(&m, a_sum, nn_add(&m, c, b));
    int r = nn_batchnorm(&m, conv1x1(&m, d));              /* op 12: a residual, marked */
    int f = nn_batchnorm_add_relu(&m, conv1x1(&m, d), r);  /* op 14: by a convolution and as a residual, marked */
    int g = nn_batchnorm_add_relu(&m, conv1x1(&m, f), f);  /* op 16: by a convolution and an add */
    int e = nn_relu(&m, nn_batchnorm(&m, conv1x1(&m, g))); /* op 18: by a ReLU op */
    nn_softmax_xent(&m, nn_linear(&m, nn_avgpool(&m, nn_add(&m, e, g)), 3));
    assert_false(m.failed);
    assert_int_equal(nn_finish(&m), 0);
    assert_int_equal(ops_flagged(&m, OP_BATCHNORM, &total), 2);
    assert_int_equal(total, 6);
    assert_true(m.ops[1].bn.y_for_bf16_readers && m.ops[12].bn.y_for_bf16_readers);
    assert_int_equal(ops_flagged(&m, OP_BATCHNORM_ADD_RELU, &total), 1);
    assert_int_equal(total, 2);
    assert_true(m.ops[14].bn.y_for_bf16_readers);
    assert_int_equal(ops_flagged(&m, OP_CONV, &total), 7);   /* all but a's (op 2) */
    assert_int_equal(total, 8);
    assert_false(m.ops[2].conv.into_batchnorm);
    /* every convolution here reads the input, an add or a batch norm's output read twice */
    assert_int_equal(dx_flagged(&m), 0);
    model_free(&m);
}

/* The running variance is the unbiased one (PyTorch's), and a check of 8 values a channel with
 * momentum 1 tells it from the biased one by far more than test_cuda's 1e-5: the sensitivity
 * test_cuda's batch-norm test relies on, shown on both CPU backends. */
static void test_batchnorm_running_variance_is_unbiased(void **state)
{
    (void)state;
    struct backend *fast = backend_cpu_create(1);
    const struct backend *backends[] = {backend_reference(), fast};
    float x[4 * 2 * 2], y[4 * 2 * 2], save[4];
    for (int i = 0; i < 16; i++)
        x[i] = (float)((i * 7) % 5) - 1.5f;
    float gamma[2] = {1, 1}, beta[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        float mean[2] = {0, 0}, var[2] = {1, 1};
        struct bn_call bn = {.n = 4, .c = 2, .hw = 2, .x = x, .gamma = gamma, .beta = beta, .running_mean = mean,
                             .running_var = var, .save_mean = save, .save_invstd = save + 2, .y = y};
        backends[k]->batchnorm_forward(backends[k]->state, &bn, true, 1.0f, 1e-5f);
        for (int ch = 0; ch < 2; ch++) {
            double m = 0, ss = 0;
            for (int b = 0; b < 4; b++)
                for (int j = 0; j < 2; j++)
                    m += x[(b * 2 + ch) * 2 + j] / 8.0;
            for (int b = 0; b < 4; b++)
                for (int j = 0; j < 2; j++)
                    ss += pow(x[(b * 2 + ch) * 2 + j] - m, 2);
            double unbiased = ss / 7, biased = ss / 8;
            assert_true(fabs(var[ch] - unbiased) <= 1e-6 * unbiased);
            assert_true(fabs(var[ch] - biased) > 0.1 * biased);
            assert_true(fabs(mean[ch] - m) <= 1e-6);
        }
    }
    backend_cpu_destroy(fast);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parameter_counts),
        cmocka_unit_test(test_backward_matches_central_differences),
        cmocka_unit_test(test_fast_backend_matches_reference),
        cmocka_unit_test(test_passes_tell_each_layer_its_parameters),
        cmocka_unit_test(test_a_graph_needs_a_loss),
        cmocka_unit_test(test_batchnorm_running_variance_is_unbiased),
        cmocka_unit_test(test_fused_batchnorm_is_the_separate_ops),
        cmocka_unit_test(test_channels_last_needs_pooled_features),
        cmocka_unit_test(test_bf16_outputs_follow_their_readers),
    };
    return cmocka_run_group_tests_name("nn", tests, NULL, NULL);
}
