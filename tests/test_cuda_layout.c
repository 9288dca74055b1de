/* test_cuda_layout.c - the GPU backend's channels-last mode (--channels-last: images NHWC) against
 * the CPU reference, which is NCHW: every kernel that sees the layout (convolutions, batch norm in
 * each fused form, both poolings, the input's transpose) runs on NHWC copies of the reference's
 * inputs, and what it gives back is turned to NCHW before the comparison. Weights and their
 * gradients keep PyTorch's layout in both modes, so they compare as they are. Tolerances as
 * test_cuda.c's; the convolutions' check is test_cuda.c's own (cuda_util.c's check_conv, which
 * keeps images in the backend's layout). Last, bf16 mode's tensors kept in bf16 alone between
 * convolutions and batch norms. Without a GPU every test ends skipped (tu_skip), never passed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/cuda_util.h"
#include "tests/testutil.h"
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
#include "trainer/nn/nn.h"
#include "trainer/nn/nn_build.h"

/* test_cuda.c's shapes, plus the ImageNet stem (7x7 stride 2 over 3 channels) and a channel count
 * that is no multiple of 8 (cuDNN's NHWC kernels vectorise over channels). */
static void test_convolutions_channels_last(void **state)
{
    (void)state;
    require_gpu();
    struct { struct backend *be; double tolerance; } modes[] = {{gpu_cl, 2e-2}, {gpu_cl_bf16, 4e-2}};
    for (int m = 0; m < 2; m++) {
        struct backend *be = modes[m].be;
        double tol = modes[m].tolerance;
        check_conv(be, (struct conv_shape){.n = 8, .c = 1, .h = 28, .w = 28, .c_out = 6, .kh = 5, .kw = 5, .stride = 1},
                   true, false, tol);
        check_conv(be, (struct conv_shape){.n = 8, .c = 16, .h = 14, .w = 14, .c_out = 32, .kh = 3, .kw = 3,
                                           .stride = 1, .pad = 1}, false, true, tol);
        check_conv(be, (struct conv_shape){.n = 4, .c = 32, .h = 15, .w = 15, .c_out = 64, .kh = 3, .kw = 3,
                                           .stride = 2, .pad = 1}, false, false, tol);
        check_conv(be, (struct conv_shape){.n = 4, .c = 64, .h = 8, .w = 8, .c_out = 128, .kh = 1, .kw = 1,
                                           .stride = 2}, false, true, tol);
        check_conv(be, (struct conv_shape){.n = 2, .c = 3, .h = 32, .w = 32, .c_out = 64, .kh = 7, .kw = 7,
                                           .stride = 2, .pad = 3}, false, false, tol);
        check_conv(be, (struct conv_shape){.n = 3, .c = 20, .h = 9, .w = 9, .c_out = 12, .kh = 3, .kw = 3,
                                           .stride = 1, .pad = 1}, true, true, tol);
    }
}

/* One batch norm on the channels-last backend: training forward, backward overwriting and then
 * adding, eval forward, each against the reference (test_cuda.c's check_batchnorm, in NHWC). */
static void check_batchnorm(int n, int c, int hw, bool relu, bool residual)
{
    struct backend *was_on = on;
    on = gpu_cl;
    const struct backend *ref = backend_reference();
    size_t count = (size_t)n * c * hw;
    float *x = random_floats(count, 21), *gamma = random_floats(c, 22), *beta = random_floats(c, 23);
    float *dy = random_floats(count, 24), *y = calloc(count, 4), *dx = random_floats(count, 25);
    float *r = random_floats(count, 28), *dr = random_floats(count, 29);
    float *mean = calloc(c, 4), *var = malloc(c * 4), *save = calloc(2 * c, 4);
    float *dg = random_floats(c, 26), *dbt = random_floats(c, 27);
    for (int i = 0; i < c; i++)
        var[i] = 1;
    float *gx = up_image(x, n, c, hw), *gg = up(gamma, c * 4), *gbt = up(beta, c * 4), *gdy = up_image(dy, n, c, hw);
    float *gy = up(y, count * 4), *gdx = up_image(dx, n, c, hw), *gmean = up(mean, c * 4), *gvar = up(var, c * 4);
    float *gsave = up(save, 2 * c * 4), *gdg = up(dg, c * 4), *gdbt = up(dbt, c * 4), *gr = up_image(r, n, c, hw);
    float *gdr = up_image(dr, n, c, hw);
    struct bn_call cpu = {n, c, hw, x, gamma, beta, mean, var, save, save + c, y, residual ? r : NULL, relu, false};
    struct bn_call dev = {n, c, hw, gx, gg, gbt, gmean, gvar, gsave, gsave + c, gy, residual ? gr : NULL, relu, false};
    print_message("channels-last batch norm n %d c %d hw %d%s%s\n", n, c, hw, residual ? " + residual" : "",
                  relu ? ", ReLU" : "");
    ref->batchnorm_forward(NULL, &cpu, true, 0.1f, 1e-5f);
    gpu_cl->batchnorm_forward(gpu_cl->state, &dev, true, 0.1f, 1e-5f);
    float *hy = down_image(gy, n, c, hw), *cpu_dr = residual ? dr : NULL, *dev_dr = residual ? gdr : NULL;
    assert_close("batchnorm forward (train)", hy, y, count, 1e-4);
    cpu.y = hy;   /* the GPU's mask, for backward */
    for (int pass = 0; pass < 2; pass++) {   /* overwriting, then adding onto what the first wrote */
        ref->batchnorm_backward(NULL, &cpu, dy, dx, dg, dbt, cpu_dr, pass, pass);
        gpu_cl->batchnorm_backward(gpu_cl->state, &dev, gdy, gdx, gdg, gdbt, dev_dr, pass, pass);
        float *hdx = down_image(gdx, n, c, hw), *hdr = down_image(gdr, n, c, hw);
        float *hm = down(gmean, c), *hv = down(gvar, c), *hdg = down(gdg, c), *hdb = down(gdbt, c);
        assert_close("  running mean", hm, mean, c, 1e-4);
        assert_close("  running variance (unbiased)", hv, var, c, 1e-5);
        assert_close(pass ? "  input gradient, added to" : "  input gradient", hdx, dx, count, 1e-4);
        assert_close("  gamma gradient", hdg, dg, c, 1e-3);
        assert_close("  beta gradient", hdb, dbt, c, 1e-3);
        assert_close("  residual gradient", hdr, dr, count, 1e-6);
        free(hdx), free(hdr), free(hm), free(hv), free(hdg), free(hdb);
    }
    cpu.y = y;
    ref->batchnorm_forward(NULL, &cpu, false, 0.1f, 1e-5f);
    gpu_cl->batchnorm_forward(gpu_cl->state, &dev, false, 0.1f, 1e-5f);
    free(hy), hy = down_image(gy, n, c, hw);
    assert_close("batchnorm forward (eval)", hy, y, count, 1e-4);
    void *held[] = {gx, gg, gbt, gdy, gy, gdx, gmean, gvar, gsave, gdg, gdbt, gr, gdr};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        backend_release(gpu_cl, held[i]);
    free(x), free(gamma), free(beta), free(dy), free(y), free(dx), free(mean), free(var), free(save), free(dg), free(dbt);
    free(r), free(dr), free(hy);
    on = was_on;
}

/* Channel counts below a warp's 32, not a multiple of it, and several tiles; few rows (one split)
 * and many (a tile's rows spread over splits); each plain, with the ReLU and with the residual. */
static void test_batchnorm_channels_last(void **state)
{
    (void)state;
    require_gpu();
    for (int fused = 0; fused < 3; fused++) {
        check_batchnorm(16, 12, 49, fused > 0, fused > 1);
        check_batchnorm(3, 300, 49, fused > 0, fused > 1);
        check_batchnorm(5, 70, 700, fused > 0, fused > 1);
        check_batchnorm(2, 64, 3, fused > 0, fused > 1);
    }
}

/* The input's transpose, max pooling (overlapping 3x3 stride 2 with padding: the ImageNet stem's;
 * and 2x2), global average pooling, each way. */
static void test_pooling_channels_last(void **state)
{
    (void)state;
    require_gpu();
    struct backend *was_on = on;
    on = gpu_cl;
    const struct backend *ref = backend_reference();
    int n = 4, c = 40, h = 13, w = 13, hw = h * w;
    size_t count = (size_t)n * c * hw;
    float *x = random_floats(count, 31), *dy = random_floats(count, 33), *y = calloc(count, 4), *dx = calloc(count, 4);
    float *gx_nchw = up(x, count * 4), *gx = up_image(x, n, c, hw), *gt = up(y, count * 4);
    gpu_cl->to_channels_last(gpu_cl->state, gx_nchw, gt, n, c, hw);
    float *transposed = down_image(gt, n, c, hw);
    assert_close("to channels-last", transposed, x, count, 0);
    free(transposed);
    for (int k = 2; k <= 3; k++) {
        int stride = 2, pad = k == 3, ho = conv_out_size(h, k, stride, pad), wo = conv_out_size(w, k, stride, pad);
        size_t pooled = (size_t)n * c * ho * wo;
        int *argmax = calloc(pooled, sizeof(int)), *gargmax = backend_alloc(gpu_cl, pooled * sizeof(int));
        float *gy = up(y, pooled * 4), *gdy = up_image(dy, n, c, ho * wo), *gdx = up(dx, count * 4);
        ref->maxpool_forward(NULL, x, y, argmax, n, c, h, w, k, stride, pad);
        gpu_cl->maxpool_forward(gpu_cl->state, gx, gy, gargmax, n, c, h, w, k, stride, pad);
        ref->maxpool_backward(NULL, argmax, dy, dx, n, c, h, w, ho, wo, k, stride, pad, false);
        gpu_cl->maxpool_backward(gpu_cl->state, gargmax, gdy, gdx, n, c, h, w, ho, wo, k, stride, pad, false);
        float *hy = down_image(gy, n, c, ho * wo), *hdx = down_image(gdx, n, c, hw);
        print_message("channels-last maxpool %dx%d s%d p%d\n", k, k, stride, pad);
        assert_close("  forward", hy, y, pooled, 1e-6);
        assert_close("  backward", hdx, dx, count, 1e-5);
        free(hy), free(hdx), free(argmax);
        void *held[] = {gargmax, gy, gdy, gdx};
        for (int i = 0; i < 4; i++)
            backend_release(gpu_cl, held[i]);
    }
    float *gy = up(y, (size_t)n * c * 4), *gdy = up(dy, (size_t)n * c * 4), *gdx = up_image(dx, n, c, hw);
    ref->avgpool_forward(NULL, x, y, n, c, hw), gpu_cl->avgpool_forward(gpu_cl->state, gx, gy, n, c, hw);
    ref->avgpool_backward(NULL, dy, dx, n, c, hw, true), gpu_cl->avgpool_backward(gpu_cl->state, gdy, gdx, n, c, hw, true);
    float *hy = down(gy, (size_t)n * c), *hdx = down_image(gdx, n, c, hw);
    assert_close("channels-last avgpool forward ([n][c] either way)", hy, y, (size_t)n * c, 1e-5);
    assert_close("channels-last avgpool backward, added to", hdx, dx, count, 1e-5);
    free(hy), free(hdx);
    void *held[] = {gx_nchw, gx, gt, gy, gdy, gdx};
    for (int i = 0; i < 6; i++)
        backend_release(gpu_cl, held[i]);
    free(x), free(dy), free(y), free(dx);
    on = was_on;
}

/* One convolution forward with the filter now in gw, then, with `between` (if given) uploaded
 * into gw, its backward: the input gradient, on the host. */
static float *input_gradient(struct backend *be, float *gw, const float *between)
{
    struct conv_shape s = {.n = 2, .c = 8, .h = 6, .w = 6, .c_out = 16, .kh = 3, .kw = 3, .stride = 1, .pad = 1,
                           .h_out = 6, .w_out = 6};
    size_t nx = 2 * 8 * 36, ny = 2 * 16 * 36, nw = 16 * 8 * 9;
    float *x = random_floats(nx, 51), *dy = random_floats(ny, 52), *dw = random_floats(nw, 55);   /* dw: added to */
    float *gx = up(x, nx * 4), *gdy = up(dy, ny * 4), *gy = backend_alloc(be, ny * 4), *gdx = backend_alloc(be, nx * 4);
    float *gdw = up(dw, nw * 4);
    be->conv_forward(be->state, &s, gx, gw, NULL, gy);
    if (between)
        assert_int_equal(backend_cuda_upload(be, gw, between, nw * 4), 0);
    be->conv_backward(be->state, &s, gx, gw, gdy, gdx, gdw, NULL, false);
    float *dx = down(gdx, nx);
    void *held[] = {gx, gdy, gy, gdx, gdw};
    for (int i = 0; i < 5; i++)
        backend_release(be, held[i]);
    free(x), free(dy), free(dw);
    return dx;
}

/* Channels-last convolutions read their filter as a transposed copy in the compute type, made by
 * the forward and read again by that step's backward (once a step, not twice): the backward's
 * input gradient is the one of the filter its forward saw even when the filter changed between
 * them (no exchange method changes it there), and the next forward's new filter is the one its
 * backward then uses; to the bit, in both precisions. */
static void test_backward_reads_the_filter_its_forward_made(void **state)
{
    (void)state;
    require_gpu();
    struct backend *backends[] = {gpu_cl, gpu_cl_bf16};
    size_t nw = 16 * 8 * 9, nx = 2 * 8 * 36;
    float *w1 = random_floats(nw, 53), *w2 = random_floats(nw, 54);
    for (int b = 0; b < 2; b++) {
        struct backend *was_on = on;
        on = backends[b];
        float *g1 = up(w1, nw * 4), *g2 = up(w2, nw * 4), *gw = up(w1, nw * 4);
        float *with_w1 = input_gradient(backends[b], g1, NULL), *with_w2 = input_gradient(backends[b], g2, NULL);
        float *changed = input_gradient(backends[b], gw, w2);   /* forward w1, backward after w2 arrived */
        float *next = input_gradient(backends[b], gw, NULL);    /* forward and backward w2 */
        print_message("%s: a filter changed between forward and backward\n", backends[b]->name);
        assert_close("the forward's filter", changed, with_w1, nx, 0);
        assert_close("the next forward's", next, with_w2, nx, 0);
        assert_memory_not_equal(with_w1, with_w2, nx * sizeof *with_w1);   /* the two filters tell apart */
        void *held[] = {g1, g2, gw};
        for (int i = 0; i < 3; i++)
            backend_release(backends[b], held[i]);
        free(with_w1), free(with_w2), free(changed), free(next);
        on = was_on;
    }
    free(w1), free(w2);
}

/* A convolution, a batch norm (ReLU) and a second convolution, forward and back, on a bf16
 * backend; its results (the second convolution's output, the input gradient, both weight
 * gradients, gamma's gradient, the running mean) into out[0..5]. alone: each tensor between them
 * and their gradients kept in bf16 alone (conv_shape's y_for_batchnorm and dx_for_batchnorm,
 * bn_call's y_for_bf16_readers), whose fp32 copies, NaN here, must then stay unwritten:
 * *untouched tells whether they did. */
static void conv_batchnorm_conv(struct backend *be, bool alone, float *out[6], bool *untouched)
{
    struct conv_shape s = {.n = 4, .c = 16, .h = 10, .w = 10, .c_out = 32, .kh = 3, .kw = 3, .stride = 1, .pad = 1,
                           .h_out = 10, .w_out = 10, .y_for_batchnorm = alone};
    struct conv_shape s2 = {.n = 4, .c = 32, .h = 10, .w = 10, .c_out = 24, .kh = 1, .kw = 1, .stride = 1,
                            .h_out = 10, .w_out = 10, .dx_for_batchnorm = alone};
    size_t nx = (size_t)s.n * s.c * 100, nw = (size_t)s.c_out * s.c * 9, ny = (size_t)s.n * s.c_out * 100;
    size_t nw2 = (size_t)s2.c_out * s2.c, nz = (size_t)s2.n * s2.c_out * 100, most = nx > nw ? nx : nw;
    int c = s.c_out;
    float *x = random_floats(nx, 41), *w = random_floats(nw, 42), *w2 = random_floats(nw2, 46);
    float *dz = random_floats(nz, 43), *gamma = random_floats(c, 44), *beta = random_floats(c, 45);
    float *nan = malloc(ny * sizeof *nan), *zeros = calloc(most > nz ? most : nz, sizeof *zeros);
    float *ones = malloc(c * sizeof *ones);
    for (size_t i = 0; i < ny; i++)
        nan[i] = NAN;
    for (int i = 0; i < c; i++)
        ones[i] = 1;
    float *gx = up(x, nx * 4), *gw = up(w, nw * 4), *gw2 = up(w2, nw2 * 4), *gdz = up(dz, nz * 4);
    float *gg = up(gamma, c * 4), *gb = up(beta, c * 4), *gconv = up(nan, ny * 4), *gy = up(nan, ny * 4);
    float *gdconv = up(nan, ny * 4), *gdy = up(nan, ny * 4), *gz = up(zeros, nz * 4), *gdx = up(zeros, nx * 4);
    float *gdw = up(zeros, nw * 4), *gdw2 = up(zeros, nw2 * 4), *gmean = up(zeros, c * 4), *gvar = up(ones, c * 4);
    float *gsave = up(zeros, 2 * c * 4), *gdg = up(zeros, c * 4), *gdb = up(zeros, c * 4);
    struct bn_call bn = {s.n, c, 100, gconv, gg, gb, gmean, gvar, gsave, gsave + c, gy, NULL, true, alone};
    be->conv_forward(be->state, &s, gx, gw, NULL, gconv);
    be->batchnorm_forward(be->state, &bn, true, 0.1f, 1e-5f);
    be->conv_forward(be->state, &s2, gy, gw2, NULL, gz);
    be->conv_backward(be->state, &s2, gy, gw2, gdz, gdy, gdw2, NULL, false);
    be->batchnorm_backward(be->state, &bn, gdy, gdconv, gdg, gdb, NULL, false, false);
    be->conv_backward(be->state, &s, gx, gw, gdconv, gdx, gdw, NULL, false);
    out[0] = down(gz, nz), out[1] = down(gdx, nx), out[2] = down(gdw, nw), out[3] = down(gdw2, nw2);
    out[4] = down(gdg, c), out[5] = down(gmean, c);
    float *between[4] = {down(gconv, ny), down(gy, ny), down(gdy, ny), down(gdconv, ny)};
    *untouched = true;
    for (int t = 0; t < 4; t++) {
        for (size_t i = 0; i < ny; i++)
            *untouched = *untouched && isnan(between[t][i]);
        free(between[t]);
    }
    void *held[] = {gx, gw, gw2, gdz, gg, gb, gconv, gy, gdconv, gdy, gz, gdx, gdw, gdw2, gmean, gvar, gsave, gdg, gdb};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        backend_release(be, held[i]);
    free(x), free(w), free(w2), free(dz), free(gamma), free(beta), free(nan), free(zeros), free(ones);
}

/* A bf16 convolution's output and input gradient are bf16 (cuDNN's compute type), and the
 * convolutions after a batch norm read its bf16 copies: kept in bf16 alone (the first
 * convolution's output, the batch norm's, and their gradients), every result is the bits it was
 * with those tensors also written in fp32, in both layouts; and the fp32 tensors, NaN, were
 * neither read nor written. */
static void test_bf16_tensors_between_convolutions_stay_bf16(void **state)
{
    (void)state;
    require_gpu();
    struct backend *backends[] = {gpu_bf16, gpu_cl_bf16};
    static const char *const what[6] = {"second convolution's output", "input gradient", "weight gradient",
                                        "second weight gradient", "gamma gradient", "running mean"};
    static const size_t counts[6] = {4 * 24 * 100, 4 * 16 * 100, 32 * 16 * 9, 24 * 32, 32, 32};
    for (int b = 0; b < 2; b++) {
        struct backend *was_on = on;
        on = backends[b];
        float *landed[6], *alone[6];
        bool written_anyway, untouched;
        conv_batchnorm_conv(backends[b], false, landed, &written_anyway);
        conv_batchnorm_conv(backends[b], true, alone, &untouched);
        print_message("%s: convolution, batch norm, convolution, in bf16 alone against also in fp32\n",
                      backends[b]->name);
        assert_false(written_anyway);   /* the check sees writes */
        assert_true(untouched);
        for (int i = 0; i < 6; i++) {
            assert_close(what[i], alone[i], landed[i], counts[i], 0);
            free(landed[i]), free(alone[i]);
        }
        on = was_on;
    }
}

/* A stem and two bottlenecks as the ResNets build them (the first with a downsample, the second
 * adding its input), on 8 channels of 8x8: nn_finish marks every convolution's and batch norm's
 * output for bf16 alone (the last block's read by the average pool). unmarked: none (every tensor
 * also in fp32). */
static void two_blocks(struct model *m, bool unmarked)
{
    enum nn_conv_init kaiming = NN_INIT_KAIMING_FAN_OUT;
    nn_begin(m, "two blocks", 8, 8, 8, 5);
    int t = nn_batchnorm_relu(m, nn_conv(m, 0, 16, 3, 1, 1, false, kaiming));
    int down = nn_batchnorm(m, nn_conv(m, t, 32, 1, 2, 0, false, kaiming));
    int u = nn_batchnorm_relu(m, nn_conv(m, t, 16, 3, 2, 1, false, kaiming));
    t = nn_batchnorm_add_relu(m, nn_conv(m, u, 32, 1, 1, 0, false, kaiming), down);
    u = nn_batchnorm_relu(m, nn_conv(m, t, 16, 3, 1, 1, false, kaiming));
    t = nn_batchnorm_add_relu(m, nn_conv(m, u, 32, 1, 1, 0, false, kaiming), t);
    nn_softmax_xent(m, nn_linear(m, nn_avgpool(m, t), 5));
    assert_false(m->failed);
    assert_int_equal(nn_finish(m), 0);
    for (int i = 0; unmarked && i < m->num_ops; i++) {
        struct op *op = &m->ops[i];
        if (op->kind == OP_CONV)
            op->conv.into_batchnorm = op->conv.dx_for_batchnorm = false;
        else if (op->kind == OP_BATCHNORM || op->kind == OP_BATCHNORM_ADD_RELU)
            op->bn.y_for_bf16_readers = false;
    }
}

/* One training step's passes of two_blocks on be (batch 6), every activation and gradient NaN
 * before: the gradients and running statistics into out[0..1], the loss returned, and in
 * *untouched how many fp32 tensors (activations and gradients) are still all NaN after. */
static double two_blocks_step(struct backend *be, bool unmarked, float *out[2], int *untouched)
{
    enum { N = 6 };
    struct model m;
    two_blocks(&m, unmarked);
    float *params = calloc(m.num_params, sizeof *params), *buffers = calloc(m.num_buffers, sizeof *buffers);
    model_init_params(&m, params, buffers, 7);
    size_t in = tensor_size(&m, 0) * N, most = in;
    float *x = random_floats(in, 8);
    int labels[N] = {0, 1, 2, 3, 4, 0};
    float *gp = up(params, m.num_params * 4), *gbuf = up(buffers, m.num_buffers * 4), *gx = up(x, in * 4);
    float *ggrads = backend_alloc(be, m.num_params * 4);
    int *glabels = up(labels, sizeof labels);
    struct workspace ws;
    assert_int_equal(workspace_create(&ws, &m, be, N, NULL), 0);
    for (int t = 1; t < m.num_tensors; t++)
        most = tensor_size(&m, t) * N > most ? tensor_size(&m, t) * N : most;
    float *nan = malloc(most * sizeof *nan);
    for (size_t i = 0; i < most; i++)
        nan[i] = NAN;
    for (int t = 1; t < m.num_tensors; t++) {
        assert_int_equal(backend_cuda_upload(be, ws.act[t], nan, tensor_size(&m, t) * N * 4), 0);
        assert_int_equal(backend_cuda_upload(be, ws.grad[t], nan, tensor_size(&m, t) * N * 4), 0);
    }
    backend_zero(be, ggrads, m.num_params * 4);
    double loss = model_forward(&m, be, &ws, gp, gbuf, &(struct batch){.n = N, .x = gx, .labels = glabels}, true,
                                NULL, NULL);
    model_backward(&m, be, &ws, gp, ggrads, N);
    out[0] = down(ggrads, m.num_params), out[1] = down(gbuf, m.num_buffers);
    *untouched = 0;
    for (int t = 1; t < m.num_tensors - 1; t++)   /* the last, the loss op's output, is never written */
        for (int g = 0; g < 2; g++) {
            float *h = down(g ? ws.grad[t] : ws.act[t], tensor_size(&m, t) * N);
            bool all_nan = true;
            for (size_t i = 0; i < tensor_size(&m, t) * N; i++)
                all_nan = all_nan && isnan(h[i]);
            *untouched += all_nan;
            free(h);
        }
    workspace_free(&ws, &m, be);
    void *held[] = {gp, gbuf, gx, ggrads, glabels};
    for (int i = 0; i < 5; i++)
        backend_release(be, held[i]);
    free(params), free(buffers), free(x), free(nan);
    model_free(&m);
    return loss;
}

/* bf16 mode keeps every tensor between two convolutions of a ResNet block in bf16 alone where all
 * its readers take bf16 (batch norms' outputs read by convolutions, a pooling and as residuals,
 * the ReLU's mask from y, the gradients between them): one step's loss, gradients and running
 * statistics as with every tensor also in fp32, but for the residuals and the pooling's input now
 * read in bf16 (as in PyTorch's autocast), in both layouts; and those tensors' fp32 copies, NaN,
 * are neither written nor read (every result finite). Kept alone: 6 batch norms' outputs (the last read by the average
 * pool, in bf16) and 6 convolutions', the 6 convolution outputs' gradients, and those of the 2
 * batch norm outputs a convolution alone reads. */
static void test_bf16_resnet_blocks_keep_bf16_alone(void **state)
{
    (void)state;
    require_gpu();
    struct backend *backends[] = {gpu_bf16, gpu_cl_bf16};
    for (int b = 0; b < 2; b++) {
        struct backend *was_on = on;
        on = backends[b];
        float *both[2], *alone[2];
        int written, untouched;
        double loss_both = two_blocks_step(backends[b], true, both, &written);
        double loss_alone = two_blocks_step(backends[b], false, alone, &untouched);
        print_message("%s: two ResNet blocks, loss %.6f in bf16 alone, %.6f also in fp32; %d fp32 tensors "
                      "untouched (%d)\n", backends[b]->name, loss_alone, loss_both, untouched, written);
        assert_true(isfinite(loss_alone) && fabs(loss_alone - loss_both) <= 1e-2 * (1 + fabs(loss_both)));
        assert_int_equal(written, 0);
        assert_int_equal(untouched, 6 + 6 + 6 + 2);
        struct model m;
        two_blocks(&m, false);
        assert_close("parameter gradients", alone[0], both[0], m.num_params, 2e-2);
        assert_close("running statistics", alone[1], both[1], m.num_buffers, 1e-2);
        model_free(&m);
        for (int i = 0; i < 2; i++)
            free(both[i]), free(alone[i]);
        on = was_on;
    }
}

int main(int argc, char **argv)
{
    if (argc > 1)   /* a test's name (or a pattern): one test */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_convolutions_channels_last),
        cmocka_unit_test(test_batchnorm_channels_last),
        cmocka_unit_test(test_pooling_channels_last),
        cmocka_unit_test(test_backward_reads_the_filter_its_forward_made),
        cmocka_unit_test(test_bf16_tensors_between_convolutions_stay_bf16),
        cmocka_unit_test(test_bf16_resnet_blocks_keep_bf16_alone),
    };
    return cmocka_run_group_tests(tests, cuda_setup, cuda_teardown);
}
