/* test_cuda_exchange.c - the GPU's half of host-staged gradient exchange (exchange/staging.h,
 * backend/staging_cuda.cu): spans of device gradients that kernels still being queued write are
 * copied to the host only after those kernels (events), handed over in backward's order from the
 * staging thread, and the means copied back before the next kernel reads them. Without a GPU (or
 * built with CUDA=0) every test ends skipped, never passed. Every method over it, on CPU ranks
 * staged the same way, is test_mpi's, and bench/gpu_methods_check.sh runs them on ranks sharing a
 * GPU. Then per-layer NCCL (--gpu-transport nccl) with a world of one: the transport's marks,
 * non-blocking allreduces, split and drain, and each allreduce method's whole NCCL path (NCCL
 * refuses two ranks on one GPU, so more ranks need a machine with more GPUs). */
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
#include "tests/cuda_util.h"
#include "trainer/comm/comm_nccl.h"
#include "trainer/loop/device.h"
#include "trainer/exchange/exchange.h"
#include "trainer/nn/nn.h"
#include "trainer/exchange/staging.h"
#include "tests/testutil.h"

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

static int deliver_layer(void *ctx, size_t first, struct dt_err *err)
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
    assert_int_equal(staging_create(&s, device, d_params, N, SPANS + 1, deliver_layer, &h, &err), 0);
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

/* Counts a layer-wise method's updates: each parameter must be updated once a step. */
struct updates {
    size_t floats;
    int calls;
};

static void count_update(void *ctx, size_t first, size_t count)
{
    (void)first;
    struct updates *u = ctx;
    u->floats += count, u->calls++;
}

/* One step of a method through NCCL with a world of one: backward's spans reported from the last,
 * the finish (and, layer-wise, the settle); a world of one's mean is the gradient itself. */
static void one_nccl_step(const struct exchange_method *method, struct comm *nccl, const struct model *m,
                          float *d_grads, const float *host_grads)
{
    struct exchange x;
    struct dt_err err;
    struct exchange_options options = {.partition_bytes = 40000};
    int rc = exchange_create(&x, method, &options, comm_single(), nccl, NULL, m, d_grads, m->num_params, &err);
    if (rc < 0)
        print_error("%s: %s\n", method->name, err.msg);
    assert_int_equal(rc, 0);
    struct updates u = {0};
    exchange_set_update(&x, (struct exchange_update){count_update, &u});
    int layers = model_layer_spans(m, NULL, NULL);
    size_t *first = calloc((size_t)layers, sizeof *first);
    model_layer_spans(m, first, NULL);
    for (int step = 0; step < 3; step++) {
        if (method->begin_backward)
            method->begin_backward(&x);
        for (int l = layers - 1; l >= 0; l--)
            assert_int_equal(method->grads_ready(&x, first[l], &err), 0);
        assert_int_equal(method->finish(&x, &err), 0);
        if (method->updates_layerwise)
            assert_int_equal(method->settle(&x, &err), 0);
    }
    float *back = down(d_grads, m->num_params);
    assert_memory_equal(back, host_grads, m->num_params * sizeof(float));
    if (method->updates_layerwise)
        assert_int_equal(u.floats, 3 * m->num_params);
    print_message("%s over NCCL, a world of one: 3 steps, %ld transfers, %d layer-wise updates\n", method->name,
                  x.stats.transfers, u.calls);
    free(back), free(first);
    exchange_destroy(&x);
}

static void test_per_layer_nccl_with_a_world_of_one(void **state)
{
    (void)state;
    require_gpu();
    struct dt_err err;
    struct comm *nccl = comm_nccl_create(comm_single(), backend_cuda_stream(gpu), &err);
    if (!nccl)
        print_error("NCCL: %s\n", err.msg);
    assert_non_null(nccl);
    assert_true(nccl->iallreduce_sum && nccl->mark_ready && nccl->drain && nccl->split && nccl->sums_are_means);
    struct model m;
    assert_int_equal(model_build(&m, "lenet", 1, 28, 28, 10, &err), 0);
    float *grads = random_floats(m.num_params, 11);
    float *d_grads = up(grads, m.num_params * sizeof(float));
    /* the transport alone: a mark after queued work, an allreduce waiting for it, polled to its end */
    struct comm *sub;
    assert_int_equal(nccl->split(nccl, 0, 0, &sub, &err), 0);
    assert_int_equal(sub->mark_ready(sub, 1, &err), 0);
    struct comm_request req = {.ready_mark = 1};
    assert_int_equal(sub->iallreduce_sum(sub, d_grads, m.num_params, &req, &err), 0);
    for (bool done = false; !done;)
        assert_int_equal(sub->test_all(sub, &req, 1, &done, &err), 0);
    assert_int_equal(sub->drain(sub, &err), 0);
    sub->destroy(sub);
    const struct exchange_method *methods[] = {&exchange_wfbp, &exchange_mgwfbp, &exchange_bytescheduler_a2a};
    for (int i = 0; i < 3; i++)
        one_nccl_step(methods[i], nccl, &m, d_grads, grads);
    backend_release(gpu, d_grads);
    free(grads);
    model_free(&m);
    comm_nccl_destroy(nccl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spans_staged_out_and_back_on_the_gpu),
        cmocka_unit_test(test_per_layer_nccl_with_a_world_of_one),
    };
    return cmocka_run_group_tests_name("cuda exchange", tests, cuda_setup, cuda_teardown);
}
