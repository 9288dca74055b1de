/* test_cuda.c - the GPU backend against the CPU reference (backend_ref.c): every kernel's forward
 * and backward on the same random inputs (whole models training: test_cuda_models.c). Without a
 * GPU (or built with CUDA=0) every test ends skipped (tu_skip), never passed.
 *
 * Tolerances: the GPU may use TF32 tensor cores in convolutions and linear layers (10-bit
 * mantissas, relative error up to ~1e-3 per product, sums of hundreds of them), so those compare
 * with |gpu - ref| <= 2e-2 * (1 + |ref|) relative to the largest magnitude; elementwise kernels,
 * pooling, batch norm statistics and the loss agree to 1e-4; the optimizers to 1e-6. In bf16 mode
 * (--precision bf16) GEMM and convolution operands are rounded to 8-bit mantissas (relative error
 * 2^-9 each) and a convolution's result too: 4e-2 on the same measure. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
#include "trainer/data/data.h"
#include "trainer/optim/optim.h"
#include "trainer/base/page_memory.h"
#include "trainer/base/rng.h"
#include "tests/cuda_util.h"
#include "tests/testutil.h"
#include "trainer/loop/train.h"

/* One linear layer's forward and backward on backend `be` (gpu or gpu_bf16), n rows: past 256, the
 * bias's gradient is summed by several blocks (blas_cuda.cu's k_sum_rows), the last one short. */
static void check_linear(struct backend *be, int n, double tolerance)
{
    struct backend *was_on = on;   /* given back at the end: later tests download through it */
    on = be;
    const struct backend *ref = backend_reference();
    int in = 300, out = 70;
    float *x = random_floats((size_t)n * in, 1), *w = random_floats((size_t)out * in, 2), *b = random_floats(out, 3);
    float *dy = random_floats((size_t)n * out, 4), *y = calloc((size_t)n * out, 4), *dx = random_floats((size_t)n * in, 5);
    /* weight gradients are added to (backend.h): start them away from zero, as a second
     * micro-batch or a tensor read twice would find them */
    float *dw = random_floats((size_t)out * in, 6), *db = random_floats(out, 7);
    float *gx = up(x, n * in * 4), *gw = up(w, out * in * 4), *gb = up(b, out * 4), *gdy = up(dy, n * out * 4);
    float *gy = up(y, n * out * 4), *gdx = up(dx, n * in * 4), *gdw = up(dw, out * in * 4), *gdb = up(db, out * 4);
    ref->linear_forward(NULL, x, w, b, y, n, in, out);
    be->linear_forward(be->state, gx, gw, gb, gy, n, in, out);
    ref->linear_backward(NULL, x, w, dy, dx, dw, db, n, in, out, true);   /* accumulate onto dx's values */
    be->linear_backward(be->state, gx, gw, gdy, gdx, gdw, gdb, n, in, out, true);
    float *hy = down(gy, n * out), *hdx = down(gdx, n * in), *hdw = down(gdw, out * in), *hdb = down(gdb, out);
    print_message("%s:\n", be->name);
    assert_close("linear forward", hy, y, (size_t)n * out, tolerance);
    assert_close("linear input gradient", hdx, dx, (size_t)n * in, tolerance);
    assert_close("linear weight gradient", hdw, dw, (size_t)out * in, tolerance);
    assert_close("linear bias gradient", hdb, db, out, 1e-4);
    void *held[] = {gx, gw, gb, gdy, gy, gdx, gdw, gdb};
    for (int i = 0; i < 8; i++)
        backend_release(be, held[i]);
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    free(hy), free(hdx), free(hdw), free(hdb);
    on = was_on;
}

static void test_linear(void **state)
{
    (void)state;
    require_gpu();
    check_linear(gpu, 32, 2e-2);
    check_linear(gpu, 600, 2e-2);
    check_linear(gpu_bf16, 32, 4e-2);
}

static void test_convolutions(void **state)
{
    (void)state;
    require_gpu();
    struct { struct backend *be; double tolerance; } modes[] = {{gpu, 2e-2}, {gpu_bf16, 4e-2}};
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
    }
}

/* Six batches staged alternately into two slots from `host`, each added on the compute stream into
 * a sum that must see every step's values: 1 + 2 + ... + 6. Returns how many sampled values are
 * wrong, with the first one's index and value. */
static size_t staged_sum_wrong(float *host, size_t count, size_t *first, float *value)
{
    float *slot[2] = {backend_alloc(gpu, count * 4), backend_alloc(gpu, count * 4)};
    float *sum = backend_alloc(gpu, count * 4);
    backend_zero(gpu, sum, count * 4);
    for (int step = 0; step < 6; step++) {
        assert_int_equal(backend_cuda_staged(gpu), 0);   /* the last copy has read host */
        for (size_t i = 0; i < count; i++)
            host[i] = (float)(step + 1);
        struct cuda_copy copy = {slot[step % 2], host, count * sizeof *host};
        assert_int_equal(backend_cuda_stage(gpu, step % 2, &copy, 1), 0);
        gpu->add_forward(gpu->state, sum, slot[step % 2], sum, count);   /* must see this step's values */
    }
    float *got = down(sum, count);
    size_t wrong = 0;
    for (size_t i = 0; i < count; i += 4099)
        if (got[i] != 21.0f && wrong++ == 0)
            *first = i, *value = got[i];
    backend_release(gpu, slot[0]), backend_release(gpu, slot[1]), backend_release(gpu, sum);
    free(got);
    return wrong;
}

/* Batches staged alternately into two slots arrive whole, in order, while the compute stream keeps
 * reading the other slot: from page-locked memory on a page boundary (as the loader allocates it),
 * page-locked memory off one (malloc's), and pageable memory. */
static void test_staged_uploads(void **state)
{
    (void)state;
    require_gpu();
    size_t count = 1 << 20, bytes = count * sizeof(float);
    float *aligned = page_memory_alloc(bytes), *unaligned = malloc(bytes), *pageable = malloc(bytes);
    char why[256];
    assert_int_equal(backend_cuda_pin(gpu, aligned, bytes, why, sizeof why), 0);
    assert_int_equal(backend_cuda_pin(gpu, unaligned, bytes, why, sizeof why), 0);
    struct { const char *what; float *host; } cases[] = {
        {"page-locked, page-aligned", aligned}, {"page-locked, malloc's", unaligned}, {"pageable", pageable}};
    size_t wrong_cases = 0;
    for (int c = 0; c < 3; c++) {
        size_t first = 0;
        float value = 0;
        size_t wrong = staged_sum_wrong(cases[c].host, count, &first, &value);
        print_message("staged uploads from %s memory (%p): %zu of %zu sampled sums wrong%s", cases[c].what,
                      (void *)cases[c].host, wrong, (count + 4098) / 4099, wrong ? "" : "\n");
        if (wrong)
            print_message(", the first at %zu: %g, not 21\n", first, value);
        wrong_cases += wrong != 0;
    }
    backend_cuda_unpin(gpu, aligned), backend_cuda_unpin(gpu, unaligned);
    free(aligned), free(unaligned), free(pageable);
    assert_int_equal(wrong_cases, 0);
}

/* One shape of batch norm (bn_cuda.cu) against the reference: training forward, backward (dx
 * overwritten, then added to), eval forward; with relu the fused ReLU, with residual the add. The
 * reference's backward masks dy by the GPU's output: the GPU's mask (recomputed without a residual)
 * is held to its forward's (a value within rounding of zero may fall either side on two machines). */
static void check_batchnorm(int n, int c, int hw, bool relu, bool residual, float momentum)
{
    const struct backend *ref = backend_reference();
    size_t count = (size_t)n * c * hw;
    float *x = random_floats(count, 21), *gamma = random_floats(c, 22), *beta = random_floats(c, 23);
    float *dy = random_floats(count, 24), *y = calloc(count, 4), *dx = random_floats(count, 25);
    float *r = random_floats(count, 28), *dr = random_floats(count, 29);
    float *mean = calloc(c, 4), *var = malloc(c * 4), *save = calloc(2 * c, 4);
    float *dg = random_floats(c, 26), *dbt = random_floats(c, 27);   /* added to: not from zero */
    for (int i = 0; i < c; i++)
        var[i] = 1;
    float *gx = up(x, count * 4), *gg = up(gamma, c * 4), *gbt = up(beta, c * 4), *gdy = up(dy, count * 4);
    float *gy = up(y, count * 4), *gdx = up(dx, count * 4), *gmean = up(mean, c * 4), *gvar = up(var, c * 4);
    float *gsave = up(save, 2 * c * 4), *gdg = up(dg, c * 4), *gdbt = up(dbt, c * 4), *gr = up(r, count * 4);
    float *gdr = up(dr, count * 4);
    struct bn_call cpu = {n, c, hw, x, gamma, beta, mean, var, save, save + c, y, residual ? r : NULL, relu, false};
    struct bn_call dev = {n, c, hw, gx, gg, gbt, gmean, gvar, gsave, gsave + c, gy, residual ? gr : NULL, relu, false};
    print_message("batch norm n %d c %d hw %d%s%s\n", n, c, hw, residual ? " + residual" : "", relu ? ", ReLU" : "");
    ref->batchnorm_forward(NULL, &cpu, true, momentum, 1e-5f);
    gpu->batchnorm_forward(gpu->state, &dev, true, momentum, 1e-5f);
    float *hy = down(gy, count), *cpu_dr = residual ? dr : NULL, *dev_dr = residual ? gdr : NULL;
    assert_close("batchnorm forward (train)", hy, y, count, 1e-4);
    cpu.y = hy;   /* the GPU's mask, for backward */
    ref->batchnorm_backward(NULL, &cpu, dy, dx, dg, dbt, cpu_dr, false, false);
    gpu->batchnorm_backward(gpu->state, &dev, gdy, gdx, gdg, gdbt, dev_dr, false, false);
    float *hdx = down(gdx, count), *hm = down(gmean, c), *hv = down(gvar, c), *hdg = down(gdg, c);
    float *hdb = down(gdbt, c), *hdr = down(gdr, count);
    assert_close("  running mean", hm, mean, c, 1e-4);
    assert_close("  running variance (unbiased)", hv, var, c, 1e-5);
    assert_close("  input gradient", hdx, dx, count, 1e-4);
    assert_close("  gamma gradient", hdg, dg, c, 1e-3);
    assert_close("  beta gradient", hdb, dbt, c, 1e-3);
    assert_close("  residual gradient", hdr, dr, count, 1e-6);
    /* again, adding onto dx and the residual's gradient (inputs with other readers) and the gradients */
    ref->batchnorm_backward(NULL, &cpu, dy, dx, dg, dbt, cpu_dr, true, true);
    gpu->batchnorm_backward(gpu->state, &dev, gdy, gdx, gdg, gdbt, dev_dr, true, true);
    free(hdx), free(hdg), free(hdb), free(hdr);
    hdx = down(gdx, count), hdg = down(gdg, c), hdb = down(gdbt, c), hdr = down(gdr, count);
    assert_close("  input gradient, added to", hdx, dx, count, 1e-4);
    assert_close("  gamma gradient, twice", hdg, dg, c, 1e-3);
    assert_close("  beta gradient, twice", hdb, dbt, c, 1e-3);
    assert_close("  residual gradient, added to", hdr, dr, count, 1e-6);
    cpu.y = y;   /* its own again */
    ref->batchnorm_forward(NULL, &cpu, false, 0.1f, 1e-5f);
    gpu->batchnorm_forward(gpu->state, &dev, false, 0.1f, 1e-5f);
    free(hy), hy = down(gy, count);
    assert_close("batchnorm forward (eval)", hy, y, count, 1e-4);
    void *held[] = {gx, gg, gbt, gdy, gy, gdx, gmean, gvar, gsave, gdg, gdbt, gr, gdr};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++)
        backend_release(gpu, held[i]);
    free(x), free(gamma), free(beta), free(dy), free(y), free(dx), free(mean), free(var), free(save), free(dg), free(dbt);
    free(r), free(dr), free(hy), free(hdx), free(hm), free(hv), free(hdg), free(hdb), free(hdr);
}

/* Shapes that reach each path: a split per sample (few channels), more channels than a block of
 * the per-channel kernels, a plane wider than a row's block (its loop), a 7x7 plane (a partial
 * warp); each plain, with the ReLU (its mask recomputed) and with the residual too (read from y).
 * Last, the running variance must be the unbiased one: at hundreds of values a channel the biased
 * one is within 1e-5, so again with 8 values a channel (n 4, hw 2) and momentum 1, where it is 8/7
 * off (test_nn shows the reference can tell them apart). */
static void test_batchnorm(void **state)
{
    (void)state;
    require_gpu();
    for (int fused = 0; fused < 3; fused++) {
        check_batchnorm(16, 12, 49, fused > 0, fused > 1, 0.1f);
        check_batchnorm(3, 300, 49, fused > 0, fused > 1, 0.1f);
        check_batchnorm(5, 4, 700, fused > 0, fused > 1, 0.1f);
    }
    check_batchnorm(4, 12, 2, false, false, 1.0f);
}

/* ReLU, residual add, both poolings and the loss: the reference's arithmetic. */
static void test_elementwise_pooling_and_loss(void **state)
{
    (void)state;
    require_gpu();
    const struct backend *ref = backend_reference();
    int n = 8, c = 5, h = 13, w = 13, k = 3, stride = 2, pad = 1;
    int ho = conv_out_size(h, k, stride, pad), wo = conv_out_size(w, k, stride, pad);
    size_t count = (size_t)n * c * h * w, pooled = (size_t)n * c * ho * wo;
    float *x = random_floats(count, 31), *x2 = random_floats(count, 32), *dy = random_floats(count, 33);
    float *y = calloc(count, 4), *dx = calloc(count, 4), *dx2 = calloc(count, 4);
    float *gx = up(x, count * 4), *gx2 = up(x2, count * 4), *gdy = up(dy, count * 4), *gy = up(y, count * 4);
    float *gdx = up(dx, count * 4), *gdx2 = up(dx2, count * 4);
    ref->relu_forward(NULL, x, y, count), gpu->relu_forward(gpu->state, gx, gy, count);
    ref->relu_backward(NULL, y, dy, dx, count, false), gpu->relu_backward(gpu->state, gy, gdy, gdx, count, false);
    float *hy = down(gy, count), *hdx = down(gdx, count);
    assert_close("relu forward", hy, y, count, 1e-6);
    assert_close("relu backward", hdx, dx, count, 1e-6);
    free(hy), free(hdx);
    ref->add_forward(NULL, x, x2, y, count), gpu->add_forward(gpu->state, gx, gx2, gy, count);
    ref->add_backward(NULL, dy, dx, dx2, count), gpu->add_backward(gpu->state, gdy, gdx, gdx2, count);
    hy = down(gy, count), hdx = down(gdx, count);
    float *hdx2 = down(gdx2, count);
    assert_close("add forward", hy, y, count, 1e-6);
    assert_close("add backward", hdx, dx, count, 1e-6);
    assert_close("add backward (second input)", hdx2, dx2, count, 1e-6);
    free(hy), free(hdx), free(hdx2);
    int *argmax = calloc(pooled, sizeof(int)), *gargmax = backend_alloc(gpu, pooled * sizeof(int));
    ref->maxpool_forward(NULL, x, y, argmax, n, c, h, w, k, stride, pad);
    gpu->maxpool_forward(gpu->state, gx, gy, gargmax, n, c, h, w, k, stride, pad);
    ref->maxpool_backward(NULL, argmax, dy, dx, n, c, h, w, ho, wo, k, stride, pad, false);
    gpu->maxpool_backward(gpu->state, gargmax, gdy, gdx, n, c, h, w, ho, wo, k, stride, pad, false);
    hy = down(gy, pooled), hdx = down(gdx, count);
    assert_close("maxpool 3x3 s2 p1 forward", hy, y, pooled, 1e-6);
    assert_close("maxpool backward (overlapping)", hdx, dx, count, 1e-5);
    free(hy), free(hdx);
    ref->avgpool_forward(NULL, x, y, n, c, h * w), gpu->avgpool_forward(gpu->state, gx, gy, n, c, h * w);
    ref->avgpool_backward(NULL, dy, dx, n, c, h * w, true), gpu->avgpool_backward(gpu->state, gdy, gdx, n, c, h * w, true);
    hy = down(gy, (size_t)n * c), hdx = down(gdx, count);
    assert_close("avgpool forward", hy, y, (size_t)n * c, 1e-5);
    assert_close("avgpool backward", hdx, dx, count, 1e-5);
    free(hy), free(hdx);
    int rows = 64, classes = 10, labels[64], right_ref, right_gpu;
    for (int i = 0; i < rows; i++)
        labels[i] = (i * 7) % classes;
    int *glabels = up(labels, sizeof labels);
    double loss_ref = ref->softmax_xent(NULL, x, labels, dx, rows, classes, &right_ref);
    double loss_gpu = gpu->softmax_xent(gpu->state, gx, glabels, gdx, rows, classes, &right_gpu);
    hdx = down(gdx, (size_t)rows * classes);
    print_message("softmax cross-entropy        loss %.6f vs %.6f, right %d vs %d\n", loss_gpu, loss_ref, right_gpu,
                  right_ref);
    assert_true(fabs(loss_gpu - loss_ref) <= 1e-5 * (1 + fabs(loss_ref)));
    assert_int_equal(right_gpu, right_ref);
    assert_close("softmax cross-entropy grad", hdx, dx, (size_t)rows * classes, 1e-6);
    free(hdx);
    void *held[] = {gx, gx2, gdy, gy, gdx, gdx2, gargmax, glabels};
    for (int i = 0; i < 8; i++)
        backend_release(gpu, held[i]);
    free(x), free(x2), free(dy), free(y), free(dx), free(dx2), free(argmax);
}

/* A tensor past the largest grid (about 268 M elements): the kernels' grid-stride loops must
 * reach the tail. ReLU forward, then its backward adding onto a gradient of ones. */
static void test_grid_stride_tail(void **state)
{
    (void)state;
    require_gpu();
    size_t count = ((size_t)1 << 28) + 4099;
    float *host = malloc(count * sizeof *host);
    assert_non_null(host);
    for (size_t i = 0; i < count; i++)
        host[i] = (float)((long)(i % 5) - 2);   /* -2 .. 2 */
    float *gx = up(host, count * 4), *gy = backend_alloc(gpu, count * 4);
    for (size_t i = 0; i < count; i++)
        host[i] = 1;
    float *gdx = up(host, count * 4);
    gpu->relu_forward(gpu->state, gx, gy, count);
    gpu->relu_backward(gpu->state, gy, gx, gdx, count, true);   /* dy = x: dx = 1 + (y > 0 ? x : 0) */
    float *y = down(gy, count), *dx = down(gdx, count);
    size_t wrong = 0, first_wrong = count;
    for (size_t i = 0; i < count; i++) {
        float x = (float)((long)(i % 5) - 2), want_y = x > 0 ? x : 0;
        if (y[i] != want_y || dx[i] != 1 + want_y)
            wrong++, first_wrong = first_wrong < i ? first_wrong : i;
    }
    print_message("grid-stride tail             %zu elements, %zu wrong (first at %zu)\n", count, wrong,
                  wrong ? first_wrong : 0);
    assert_int_equal(wrong, 0);
    backend_release(gpu, gx), backend_release(gpu, gy), backend_release(gpu, gdx);
    free(host), free(y), free(dx);
}

/* Three Adam and three SGD steps on the GPU against optim.c. */
static void test_optimizers(void **state)
{
    (void)state;
    require_gpu();
    const char *names[] = {"adam", "sgd"};
    size_t count = 5000;
    for (int k = 0; k < 2; k++) {
        struct optimizer cpu, dev;
        assert_int_equal(optim_create(&cpu, names[k], count, NULL), 0);
        assert_int_equal(optim_create(&dev, names[k], count, NULL), 0);
        cpu.lr = dev.lr = 0.01f, cpu.momentum = dev.momentum = 0.9f, cpu.weight_decay = dev.weight_decay = 1e-4f;
        float *p = random_floats(count, 41), *gp = up(p, count * 4), *gm = up(cpu.m, count * 4);
        float *gv = cpu.v ? up(cpu.v, count * 4) : NULL;
        for (int step = 0; step < 3; step++) {
            float *g = random_floats(count, 50 + (uint64_t)step), *gg = up(g, count * 4);
            optim_step(&cpu, p, g);
            dev.step++;
            if (dev.kind == OPTIM_SGD) {
                backend_cuda_sgd(gpu, gp, gg, gm, count, dev.lr, dev.momentum, dev.weight_decay, dev.step == 1);
            } else {
                float step_size, root2;
                optim_adam_scalars(&dev, &step_size, &root2);
                backend_cuda_adam_scalars(gpu, step_size, root2);
                backend_cuda_adam(gpu, gp, gg, gm, gv, count, dev.beta1, dev.beta2, dev.eps, dev.weight_decay);
                assert_int_equal(backend_cuda_sync(gpu), 0);   /* the scalars are read before the next are set */
            }
            backend_release(gpu, gg);
            free(g);
        }
        float *hp = down(gp, count);
        assert_close(names[k], hp, p, count, 1e-6);
        backend_release(gpu, gp), backend_release(gpu, gm);
        if (gv)
            backend_release(gpu, gv);
        free(p), free(hp);
        optim_free(&cpu), optim_free(&dev);
    }
}

/* ---------- the language models' kernels ---------- */

/* A token batch of n sequences of T tokens, ids below vocab, the last `pad` tokens of each padding,
 * every third token with a masked-LM label. */
static float *token_batch(int n, int T, int vocab, int pad, uint64_t seed)
{
    float *tok = malloc((size_t)n * T * SEQ_TOKEN_FIELDS * sizeof *tok);
    struct rng rng;
    rng_seed(&rng, seed);
    for (int r = 0; r < n * T; r++) {
        int t = r % T;
        bool padding = t >= T - pad;
        tok[r * SEQ_TOKEN_FIELDS] = padding ? SEQ_PAD_ID : (float)(1 + rng_next(&rng) % (uint64_t)(vocab - 1));
        tok[r * SEQ_TOKEN_FIELDS + 1] = (float)(t >= T / 2);
        tok[r * SEQ_TOKEN_FIELDS + 2] = !padding && t % 3 == 1 ? (float)(rng_next(&rng) % (uint64_t)vocab) : SEQ_NO_LABEL;
    }
    return tok;
}

/* Attention forward and backward on backend `be` with padding (the last `pad` tokens of each
 * sequence) and the weights' dropout, dqkv added to or overwritten. */
static void check_attention(struct backend *be, int n, int T, int H, int heads, int pad, bool accumulate,
                            double tolerance)
{
    const struct backend *ref = backend_reference();
    size_t qkv_count = (size_t)n * T * 3 * H, y_count = (size_t)n * T * H, p_count = (size_t)n * heads * T * T;
    float *qkv = random_floats(qkv_count, 11), *dy = random_floats(y_count, 12), *tok = token_batch(n, T, 50, pad, 13);
    float *probs = calloc(p_count, 4), *y = calloc(y_count, 4), *dqkv = random_floats(qkv_count, 14);
    struct seq_draw drop = {.rate = 0.2f, .noise = 0xabc, .position = 7};
    float *gqkv = up(qkv, qkv_count * 4), *gdy = up(dy, y_count * 4), *gtok = up(tok, (size_t)n * T * 3 * 4);
    float *gprobs = up(probs, p_count * 4), *gy = up(y, y_count * 4), *gdqkv = up(dqkv, qkv_count * 4);
    ref->attention_forward(NULL, qkv, tok, probs, y, n, T, H, heads, &drop);
    be->attention_forward(be->state, gqkv, gtok, gprobs, gy, n, T, H, heads, &drop);
    ref->attention_backward(NULL, qkv, probs, dy, dqkv, n, T, H, heads, &drop, accumulate);
    be->attention_backward(be->state, gqkv, gprobs, gdy, gdqkv, n, T, H, heads, &drop, accumulate);
    float *hprobs = down(gprobs, p_count), *hy = down(gy, y_count), *hdqkv = down(gdqkv, qkv_count);
    print_message("%s: n %d, T %d, H %d, %d heads\n", be->name, n, T, H, heads);
    assert_close("attention weights", hprobs, probs, p_count, tolerance);   /* Q K^T in TF32 or bf16 */
    assert_close("attention forward", hy, y, y_count, tolerance);
    assert_close("attention backward", hdqkv, dqkv, qkv_count, tolerance);
    void *held[] = {gqkv, gdy, gtok, gprobs, gy, gdqkv};
    for (int i = 0; i < 6; i++)
        backend_release(be, held[i]);
    free(qkv), free(dy), free(tok), free(probs), free(y), free(dqkv), free(hprobs), free(hy), free(hdqkv);
}

/* Layer norm, GELU, embeddings, dropout and the masked-LM loss against the reference. */
static void check_token_kernels(void)
{
    const struct backend *ref = backend_reference();
    int n = 4, T = 10, H = 48, vocab = 30, rows = n * T;
    size_t count = (size_t)rows * H;
    float *x = random_floats(count, 21), *dy = random_floats(count, 22), *gamma = random_floats(H, 23);
    float *beta = random_floats(H, 24), *tok = token_batch(n, T, vocab, 2, 25), *table = random_floats((size_t)vocab * H, 26);
    float *y = calloc(count, 4), *mean = calloc(rows, 4), *invstd = calloc(rows, 4), *dx = random_floats(count, 27);
    float *dgamma = calloc(H, 4), *dbeta = calloc(H, 4), *dtable = calloc((size_t)vocab * H, 4);
    float *gx = up(x, count * 4), *gdy = up(dy, count * 4), *ggamma = up(gamma, H * 4), *gbeta = up(beta, H * 4);
    float *gy = up(y, count * 4), *gmean = up(mean, rows * 4), *ginvstd = up(invstd, rows * 4), *gdx = up(dx, count * 4);
    float *gdgamma = up(dgamma, H * 4), *gdbeta = up(dbeta, H * 4), *gtok = up(tok, (size_t)rows * 3 * 4);
    float *gtable = up(table, (size_t)vocab * H * 4), *gdtable = up(dtable, (size_t)vocab * H * 4);
    ref->layernorm_forward(NULL, x, gamma, beta, mean, invstd, y, rows, H, 1e-12f);
    gpu->layernorm_forward(gpu->state, gx, ggamma, gbeta, gmean, ginvstd, gy, rows, H, 1e-12f);
    ref->layernorm_backward(NULL, x, gamma, mean, invstd, dy, dx, dgamma, dbeta, rows, H, true);
    gpu->layernorm_backward(gpu->state, gx, ggamma, gmean, ginvstd, gdy, gdx, gdgamma, gdbeta, rows, H, true);
    float *h = down(gy, count);
    assert_close("layer norm forward", h, y, count, 1e-4);
    free(h), h = down(gdx, count);
    assert_close("layer norm backward", h, dx, count, 1e-4);
    free(h), h = down(gdgamma, H);
    assert_close("layer norm gamma gradient", h, dgamma, H, 1e-4);
    free(h);
    ref->gelu_forward(NULL, x, y, count);
    gpu->gelu_forward(gpu->state, gx, gy, count);
    ref->gelu_backward(NULL, x, dy, dx, count, false);
    gpu->gelu_backward(gpu->state, gx, gdy, gdx, count, false);
    h = down(gy, count);
    assert_close("GELU forward", h, y, count, 1e-5);
    free(h), h = down(gdx, count);
    assert_close("GELU backward", h, dx, count, 1e-5);
    free(h);
    /* embeddings: one table for all three (the sizes allow it), gradients added up */
    ref->embedding_forward(NULL, tok, table, table, table, y, n, T, H);
    gpu->embedding_forward(gpu->state, gtok, gtable, gtable, gtable, gy, n, T, H);
    ref->embedding_backward(NULL, tok, dy, dtable, dtable, dtable, n, T, H);
    gpu->embedding_backward(gpu->state, gtok, gdy, gdtable, gdtable, gdtable, n, T, H);
    h = down(gy, count);
    assert_close("embedding forward", h, y, count, 1e-6);
    free(h), h = down(gdtable, (size_t)vocab * H);
    assert_close("embedding backward", h, dtable, (size_t)vocab * H, 1e-5);
    free(h);
    uint8_t *mask = malloc(count), *gmask = backend_alloc(gpu, count);
    ref->dropout_forward(NULL, x, y, mask, n, (size_t)T * H, 0.3f, 99, 5);
    gpu->dropout_forward(gpu->state, gx, gy, gmask, n, (size_t)T * H, 0.3f, 99, 5);
    h = down(gy, count);
    assert_close("dropout forward (same draws)", h, y, count, 1e-6);
    free(h);
    /* the masked LM over H classes: rows with a label only */
    int counted_ref, counted_gpu;
    double loss_ref = ref->token_xent(NULL, x, tok, dx, rows, H, &counted_ref);
    double loss_gpu = gpu->token_xent(gpu->state, gx, gtok, gdx, rows, H, &counted_gpu);
    assert_null(backend_cuda_error(gpu));
    assert_int_equal(counted_gpu, counted_ref);
    assert_true(fabs(loss_gpu - loss_ref) <= 1e-5 * (1 + fabs(loss_ref)));
    h = down(gdx, count);
    assert_close("masked-LM loss gradient", h, dx, count, 1e-5);
    free(h);
    void *held[] = {gx, gdy, ggamma, gbeta, gy, gmean, ginvstd, gdx, gdgamma, gdbeta, gtok, gtable, gdtable, gmask};
    for (int i = 0; i < 14; i++)
        backend_release(gpu, held[i]);
    free(x), free(dy), free(gamma), free(beta), free(tok), free(table), free(y), free(mean), free(invstd);
    free(dx), free(dgamma), free(dbeta), free(dtable), free(mask);
}

static void test_language_model_kernels(void **state)
{
    (void)state;
    require_gpu();
    on = gpu;
    check_attention(gpu, 3, 12, 32, 4, 3, true, 2e-2);
    /* bf16 mode: heads of 64 and T a multiple of 16 up to 128 run fused (attention_fused_cuda.cu),
     * the whole block (T 128), fewer strips than warps (T 48), every key padding (its weights all 0);
     * T 12 takes the unfused path */
    on = gpu_bf16;
    check_attention(gpu_bf16, 2, 128, 128, 2, 5, true, 4e-2);
    check_attention(gpu_bf16, 3, 48, 192, 3, 7, false, 4e-2);
    check_attention(gpu_bf16, 1, 16, 64, 1, 16, true, 4e-2);
    check_attention(gpu_bf16, 3, 12, 32, 4, 3, true, 4e-2);
    on = gpu;
    check_token_kernels();
}

int main(int argc, char **argv)
{
    if (argc > 1)   /* a test's name (or a pattern): one test, under compute-sanitizer say */
        cmocka_set_test_filter(argv[1]);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_convolutions),
        cmocka_unit_test(test_batchnorm),
        cmocka_unit_test(test_elementwise_pooling_and_loss),
        cmocka_unit_test(test_grid_stride_tail),
        cmocka_unit_test(test_optimizers),
        cmocka_unit_test(test_staged_uploads),
        cmocka_unit_test(test_language_model_kernels),
    };
    return cmocka_run_group_tests(tests, cuda_setup, cuda_teardown);
}
