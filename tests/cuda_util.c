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

