/* test_cuda_exchange.c - the GPU's half of host-staged gradient exchange (exchange/staging.h,
 * backend/staging_cuda.cu): spans of device gradients that kernels still being queued write are
 * copied to the host only after those kernels (events), handed over in backward's order from the
 * staging thread, and the means copied back before the next kernel reads them. Without a GPU (or
 * built with CUDA=0) every test ends skipped, never passed. Every method over it, on CPU ranks
 * staged the same way, is test_mpi's (a GPU machine without MPI cannot run two ranks). */
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

#include "backend.h"
#include "backend_cuda.h"
#include "cuda_util.h"
#include "device.h"
#include "staging.h"
#include "testutil.h"

#define N 3000
#define SPANS 3
static const size_t span_first[SPANS] = {2000, 700, 0};   /* backward's order: the last layer first */

/* What the staging thread handed over: each span's first and whether its host values were the
 * kernel's (1 - k * lr for element k), checked when handed over. */
struct handed {
    const float *host;
    size_t firsts[SPANS + 1];
    int count;
    bool values_right;
    size_t end;
};

static int deliver(void *ctx, size_t first, struct dt_err *err)
{
    (void)err;
    struct handed *h = ctx;
    for (size_t k = first; k < h->end; k++)
        if (h->host[k] != 1.0f - 0.5f * (float)(k % 97))
            h->values_right = false;
    h->end = first;
    h->firsts[h->count++] = first;
    return 0;
}

/* Spans written by a queued SGD kernel, staged out as "backward" reports them, then means back. */
static void test_spans_staged_out_and_back_on_the_gpu(void **state)
{
    (void)state;
    require_gpu();
    float *ones = malloc(N * sizeof(float)), *grads = malloc(N * sizeof(float));
    for (int k = 0; k < N; k++)
        ones[k] = 1.0f, grads[k] = (float)(k % 97);
    float *d_params = up(ones, N * sizeof(float)), *d_grads = up(grads, N * sizeof(float));
    float *d_momentum = up(ones, N * sizeof(float));
    struct cuda_staging *handle;
    struct staging_device device;
    struct staging *s;
    struct dt_err err;
    assert_int_equal(device_staging_on(gpu, SPANS + 1, &handle, &device, &err), 0);
    struct handed h = {.values_right = true, .end = N};
    assert_int_equal(staging_create(&s, device, d_params, N, SPANS + 1, deliver, &h, &err), 0);
    h.host = staging_host(s);
    for (int step = 0; step < 3; step++) {
        backend_cuda_upload(gpu, d_params, ones, N * sizeof(float));
        staging_begin(s, NULL);
        h.count = 0, h.end = N;
        for (int i = 0; i < SPANS; i++) {
            size_t first = span_first[i], end = i ? span_first[i - 1] : N;
            /* "backward" of this span: queued, not finished, when its copy out is queued */
            backend_cuda_sgd(gpu, d_params + first, d_grads + first, d_momentum + first, end - first, 0.5f, 0, 0, true);
            staging_out(s, first);
        }
        assert_int_equal(staging_drain(s, &err), 0);
        assert_int_equal(h.count, SPANS);
        for (int i = 0; i < SPANS; i++)
            assert_int_equal(h.firsts[i], span_first[i]);
        assert_true(h.values_right);
        /* the "means" (halved) back; a span's own copy back for a layer-wise update */
        float *host = staging_host(s);
        for (int k = 0; k < N; k++)
            host[k] *= 0.5f;
        assert_int_equal(staging_in(s, 0, 700, &err), 0);
        assert_int_equal(staging_in(s, 700, N - 700, &err), 0);
        float *back = down(d_params, N);
        for (int k = 0; k < N; k++)
            assert_true(back[k] == 0.5f * (1.0f - 0.5f * (float)(k % 97)));
        free(back);
    }
    struct staging_stats stats = staging_stats(s);
    assert_int_equal(stats.out, 3 * SPANS);
    assert_int_equal(stats.in, 6);
    staging_destroy(s);
    backend_cuda_staging_destroy(handle);
    backend_release(gpu, d_params), backend_release(gpu, d_grads), backend_release(gpu, d_momentum);
    free(ones), free(grads);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spans_staged_out_and_back_on_the_gpu),
    };
    return cmocka_run_group_tests_name("cuda exchange", tests, cuda_setup, cuda_teardown);
}
