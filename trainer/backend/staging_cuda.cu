/* staging_cuda.cu - the GPU's half of host-staged gradient exchange (exchange/staging.h): a copy
 * stream of its own (not the batches'), an event per span of a step marking its last backward
 * kernel and another its copy to the host, and one event the compute stream waits on for a copy
 * back. Nothing here blocks the rank's thread but backend_cuda_staging_wait, which the staging
 * thread calls. */
#include "trainer/backend/cuda_state.h"

extern "C" {
#include "trainer/backend/backend_cuda.h"
}

using namespace dtrain_cuda;

struct cuda_staging {
    int device, slots;
    cudaStream_t compute, copy;
    cudaEvent_t *computed, *copied;   /* per slot: backward's kernels for it done; its copy done */
    cudaEvent_t *copying;             /* per slot: its copy begins (timed, with copied: the copy's own time) */
    cudaEvent_t back;                 /* a copy back to the device done (the compute stream waits) */
    char error[256];
};

static int staging_fail(cuda_staging *s, const char *what, cudaError_t rc)
{
    if (!s->error[0])
        snprintf(s->error, sizeof s->error, "%s: %s", what, cudaGetErrorString(rc));
    return -1;
}

extern "C" struct cuda_staging *backend_cuda_staging_create(struct backend *be, int slots, char *why, size_t why_size)
{
    cuda_state *st = state_of(be->state);
    cuda_staging *s = static_cast<cuda_staging *>(calloc(1, sizeof *s));
    cudaEvent_t *events = static_cast<cudaEvent_t *>(calloc(3 * (size_t)slots, sizeof *events));
    if (!s || !events) {
        free(s), free(events);
        snprintf(why, why_size, "out of memory");
        return nullptr;
    }
    s->device = st->device, s->slots = slots, s->compute = st->stream;
    s->computed = events, s->copied = events + slots, s->copying = events + 2 * slots;
    cudaError_t rc = cudaStreamCreateWithFlags(&s->copy, cudaStreamNonBlocking);
    for (int i = 0; rc == cudaSuccess && i < 3 * slots; i++)   /* the copies' two timed, the compute's not */
        rc = i < slots ? cudaEventCreateWithFlags(&events[i], cudaEventDisableTiming) : cudaEventCreate(&events[i]);
    if (rc == cudaSuccess)
        rc = cudaEventCreateWithFlags(&s->back, cudaEventDisableTiming);
    if (rc != cudaSuccess) {
        snprintf(why, why_size, "gradient staging's stream and events: %s", cudaGetErrorString(rc));
        backend_cuda_staging_destroy(s);
        return nullptr;
    }
    return s;
}

extern "C" void backend_cuda_staging_destroy(struct cuda_staging *s)
{
    if (!s)
        return;
    if (s->copy)
        cudaStreamSynchronize(s->copy);
    for (int i = 0; s->computed && i < 3 * s->slots; i++)
        if (s->computed[i])
            cudaEventDestroy(s->computed[i]);
    if (s->back)
        cudaEventDestroy(s->back);
    if (s->copy)
        cudaStreamDestroy(s->copy);
    free(s->computed);
    free(s);
}

extern "C" void backend_cuda_staging_thread(struct cuda_staging *s)
{
    cudaSetDevice(s->device);   /* the staging thread's calls go to the rank's GPU */
}

extern "C" int backend_cuda_staging_out(struct cuda_staging *s, int slot, float *host, const float *device,
                                        size_t count)
{
    cudaError_t rc;
    if ((rc = cudaEventRecord(s->computed[slot], s->compute)) != cudaSuccess ||
        (rc = cudaStreamWaitEvent(s->copy, s->computed[slot], 0)) != cudaSuccess ||
        (rc = cudaEventRecord(s->copying[slot], s->copy)) != cudaSuccess ||
        (rc = cudaMemcpyAsync(host, device, count * sizeof(float), cudaMemcpyDeviceToHost, s->copy)) != cudaSuccess ||
        (rc = cudaEventRecord(s->copied[slot], s->copy)) != cudaSuccess)
        return staging_fail(s, "copying gradients to the host", rc);
    return 0;
}

extern "C" int backend_cuda_staging_wait(struct cuda_staging *s, int slot, double *seconds)
{
    float ms = -1;
    cudaError_t rc = cudaEventSynchronize(s->copied[slot]);
    if (rc != cudaSuccess)
        return staging_fail(s, "waiting for gradients copied to the host", rc);
    *seconds = cudaEventElapsedTime(&ms, s->copying[slot], s->copied[slot]) == cudaSuccess ? ms * 1e-3 : -1;
    return 0;
}

extern "C" int backend_cuda_staging_in(struct cuda_staging *s, float *device, const float *host, size_t count)
{
    cudaError_t rc;
    if ((rc = cudaMemcpyAsync(device, host, count * sizeof(float), cudaMemcpyHostToDevice, s->copy)) != cudaSuccess ||
        (rc = cudaEventRecord(s->back, s->copy)) != cudaSuccess ||
        (rc = cudaStreamWaitEvent(s->compute, s->back, 0)) != cudaSuccess)
        return staging_fail(s, "copying mean gradients back to the GPU", rc);
    return 0;
}

extern "C" const char *backend_cuda_staging_error(const struct cuda_staging *s)
{
    return s->error[0] ? s->error : "failed";
}
