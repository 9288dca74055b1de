/* cuda_util.c - what the CUDA tests share (cuda_util.h): the backends, skipping without a GPU,
 * copies up and down, and the closeness check. */
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

#include "trainer/backend/backend_cuda.h"
#include "tests/cuda_util.h"
#include "trainer/base/rng.h"
#include "tests/testutil.h"

struct backend *gpu, *gpu_bf16, *gpu_cl, *gpu_cl_bf16;
struct backend *on;   /* the backend whose stream up() and down() use: gpu unless a test says */

/* Why the tests cannot run although this is a GPU machine ("" when they can, or it is not one). */
static char broken[600];

int cuda_setup(void **state)
{
    (void)state;
    char why[512];
    struct cuda_options bf16 = {.bf16 = true, .conv_algo = CONV_ALGO_FIND};
    struct cuda_options cl = {.channels_last = true, .conv_algo = CONV_ALGO_FIND};
    struct cuda_options cl_bf16 = {.bf16 = true, .channels_last = true, .conv_algo = CONV_ALGO_FIND};
    char versions[256];
    backend_cuda_versions(versions, sizeof versions);
    print_message("test_cuda: %s\n", versions);   /* the libraries this run loaded, in its output */
    int devices = backend_cuda_probe(why, sizeof why);
    if (devices < 0)
        snprintf(broken, sizeof broken, "%s", why);
    else if (devices > 0 && !(gpu = backend_cuda_create(0, NULL, why, sizeof why)))
        snprintf(broken, sizeof broken, "a GPU is there but the backend did not start: %s", why);
    else if (gpu && !(gpu_bf16 = backend_cuda_create(0, &bf16, why, sizeof why)))
        snprintf(broken, sizeof broken, "the bf16 backend did not start: %s", why);
    else if (gpu && !(gpu_cl = backend_cuda_create(0, &cl, why, sizeof why)))
        snprintf(broken, sizeof broken, "the channels-last backend did not start: %s", why);
    else if (gpu && !(gpu_cl_bf16 = backend_cuda_create(0, &cl_bf16, why, sizeof why)))
        snprintf(broken, sizeof broken, "the channels-last bf16 backend did not start: %s", why);
    on = gpu;
    return 0;
}

int cuda_teardown(void **state)
{
    (void)state;
    backend_cuda_destroy(gpu);
    backend_cuda_destroy(gpu_bf16);
    backend_cuda_destroy(gpu_cl);
    backend_cuda_destroy(gpu_cl_bf16);
    return 0;
}

/* Ends the test as skipped, with a visible line, where there is no GPU; fails it where there is
 * one that cannot be used (a SKIP there would hide a broken GPU machine). */
void require_gpu(void)
{
    if (broken[0])
        fail_msg("%s", broken);
    if (gpu)
        return;
    char why[256];
    backend_cuda_probe(why, sizeof why);
    tu_skip("no GPU here (%s): the CUDA backend is built, not run", why);
}

float *random_floats(size_t n, uint64_t seed)
{
    float *x = malloc((n ? n : 1) * sizeof *x);
    struct rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rng_normal(&rng);
    return x;
}

/* A device copy of host data. */
void *up(const void *host, size_t bytes)
{
    void *d = backend_alloc(on, bytes);
    assert_non_null(d);
    assert_int_equal(backend_cuda_upload(on, d, host, bytes), 0);
    return d;
}

/* The device's array back on the host (freed by the caller), after checking nothing failed. */
float *down(const void *device, size_t count)
{
    float *h = malloc((count ? count : 1) * sizeof *h);
    assert_int_equal(backend_cuda_download(on, h, device, count * sizeof *h), 0);
    assert_null(backend_cuda_error(on));
    return h;
}

/* max |a - b| / (1 + max |b|) over count values, against tolerance. */
void assert_close(const char *what, const float *got, const float *want, size_t count, double tolerance)
{
    double worst = 0, scale = 0;
    for (size_t i = 0; i < count; i++)
        scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < count; i++) {
        double error = fabs((double)got[i] - want[i]) / (1 + scale);
        worst = isnan(error) ? INFINITY : fmax(worst, error);   /* fmax would pass over a NaN */
    }
    print_message("%-28s max error %.2e (tolerance %.0e)\n", what, worst, tolerance);
    assert_true(worst <= tolerance);
}


/* [n][c][hw] -> [n][hw][c], a new array. */
float *nhwc_of(const float *x, int n, int c, int hw)
{
    float *y = malloc((size_t)n * c * hw * sizeof *y);
    for (int s = 0; s < n; s++)
        for (int ch = 0; ch < c; ch++)
            for (int j = 0; j < hw; j++)
                y[((size_t)s * hw + j) * c + ch] = x[((size_t)s * c + ch) * hw + j];
    return y;
}

/* [n][hw][c] -> [n][c][hw], a new array. */
float *nchw_of(const float *x, int n, int c, int hw)
{
    float *y = malloc((size_t)n * c * hw * sizeof *y);
    for (int s = 0; s < n; s++)
        for (int ch = 0; ch < c; ch++)
            for (int j = 0; j < hw; j++)
                y[((size_t)s * c + ch) * hw + j] = x[((size_t)s * hw + j) * c + ch];
    return y;
}

float *up_image(const float *x, int n, int c, int hw)
{
    if (!on->channels_last)
        return up(x, (size_t)n * c * hw * sizeof(float));
    float *t = nhwc_of(x, n, c, hw), *d = up(t, (size_t)n * c * hw * sizeof(float));
    free(t);
    return d;
}

float *down_image(const float *d, int n, int c, int hw)
{
    float *t = down(d, (size_t)n * c * hw);
    if (!on->channels_last)
        return t;
    float *x = nchw_of(t, n, c, hw);
    free(t);
    return x;
}

void check_conv(struct backend *be, struct conv_shape s, bool bias, bool accumulate, double tolerance)
{
    struct backend *was_on = on;   /* given back at the end: later tests download through it */
    on = be;
    const struct backend *ref = backend_reference();
    s.h_out = conv_out_size(s.h, s.kh, s.stride, s.pad), s.w_out = conv_out_size(s.w, s.kw, s.stride, s.pad);
    int hw = s.h * s.w, hw_out = s.h_out * s.w_out;
    size_t nx = (size_t)s.n * s.c * hw, nw = (size_t)s.c_out * s.c * s.kh * s.kw, ny = (size_t)s.n * s.c_out * hw_out;
    float *x = random_floats(nx, 11), *w = random_floats(nw, 12), *b = random_floats(s.c_out, 13);
    float *dy = random_floats(ny, 14), *y = calloc(ny, 4), *dx = random_floats(nx, 15), *dw = random_floats(nw, 16);
    float *db = random_floats(s.c_out, 17);   /* added to, as the weight gradient: not from zero */
    float *gx = up_image(x, s.n, s.c, hw), *gw = up(w, nw * 4), *gb = up(b, s.c_out * 4);
    float *gdy = up_image(dy, s.n, s.c_out, hw_out), *gy = up(y, ny * 4), *gdx = up_image(dx, s.n, s.c, hw);
    float *gdw = up(dw, nw * 4), *gdb = up(db, s.c_out * 4);
    ref->conv_forward(NULL, &s, x, w, bias ? b : NULL, y);
    be->conv_forward(be->state, &s, gx, gw, bias ? gb : NULL, gy);
    ref->conv_backward(NULL, &s, x, w, dy, dx, dw, bias ? db : NULL, accumulate);
    be->conv_backward(be->state, &s, gx, gw, gdy, gdx, gdw, bias ? gdb : NULL, accumulate);
    float *hy = down_image(gy, s.n, s.c_out, hw_out), *hdx = down_image(gdx, s.n, s.c, hw);
    float *hdw = down(gdw, nw), *hdb = down(gdb, s.c_out);
    char what[112];
    snprintf(what, sizeof what, "%s conv %d->%d %dx%d s%d p%d", be->name, s.c, s.c_out, s.kh, s.kw, s.stride, s.pad);
    assert_close(what, hy, y, ny, tolerance);
    assert_close("  input gradient", hdx, dx, nx, tolerance);
    assert_close("  weight gradient", hdw, dw, nw, tolerance);   /* PyTorch's layout in every mode */
    if (bias)
        assert_close("  bias gradient", hdb, db, s.c_out, 1e-3);
    void *held[] = {gx, gw, gb, gdy, gy, gdx, gdw, gdb};
    for (int i = 0; i < 8; i++)
        backend_release(be, held[i]);
    free(x), free(w), free(b), free(dy), free(y), free(dx), free(dw), free(db);
    free(hy), free(hdx), free(hdw), free(hdb);
    on = was_on;
}
