/* backend_cuda.cu - the kernels of backend.h on an NVIDIA GPU: the backend's creation, its streams,
 * copies, batch staging and CUDA graphs. The kernels live beside it: cuBLAS for linear layers
 * (blas_cuda.cu), cuDNN for convolutions and batch norm (dnn_cuda.cu), bf16 casts (bf16_cuda.cu),
 * our own for ReLU, pooling, the residual add, the loss and the optimizer (kernels_cuda.cu), the
 * language models' (seq_cuda.cu, attention_cuda.cu).
 *
 * Every pointer the table receives is device memory (the backend's alloc); all work goes on one
 * stream, in order, so the table's functions return at once and only the loss waits for the GPU.
 * Math: fp32 with TF32 tensor cores allowed (cuBLAS TF32 mode, cuDNN's default math), as PyTorch
 * allows for convolutions; or, with cuda_options.bf16, PyTorch autocast's bf16: GEMMs and
 * convolutions read bf16 copies of their operands (cast into scratch buffers just before) and
 * accumulate in fp32, everything else stays fp32. Batches arrive on a copy stream of their own
 * (backend_cuda_stage). The CPU reference (backend_ref.c) is the specification;
 * tests/test_cuda.c holds every kernel against it. A CUDA, cuBLAS or cuDNN failure is kept (the
 * first one) and reported by backend_cuda_error: the functions of the table return nothing. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <dlfcn.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
}
#include "trainer/backend/cuda_state.h"

using namespace dtrain_cuda;

/* ---------- copies, staging, the stream and its graphs (backend_cuda.h) ---------- */

extern "C" {

int backend_cuda_upload(struct backend *be, void *device, const void *host, size_t bytes)
{
    cuda_state *st = state_of(be->state);
    return cuda_ok(st, cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, st->stream), "cudaMemcpyAsync (up)")
               ? 0 : -1;
}

int backend_cuda_download(struct backend *be, void *host, const void *device, size_t bytes)
{
    cuda_state *st = state_of(be->state);
    bool ok = cuda_ok(st, cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, st->stream),
                      "cudaMemcpyAsync (down)") &&
              cuda_ok(st, cudaStreamSynchronize(st->stream), "cudaStreamSynchronize");
    return ok ? 0 : -1;
}

int backend_cuda_pin(struct backend *be, void *host, size_t bytes, char *why, size_t why_size)
{
    (void)be;
    cudaError_t rc = cudaHostRegister(host, bytes, cudaHostRegisterDefault);
    if (rc == cudaSuccess)
        return 0;
    cudaGetLastError();   /* not sticky: the caller goes on with pageable copies */
    snprintf(why, why_size, "cudaHostRegister of %zu bytes: %s", bytes, cudaGetErrorString(rc));
    return -1;
}

void backend_cuda_unpin(struct backend *be, void *host)
{
    (void)be;
    cudaHostUnregister(host);
}

int backend_cuda_stage(struct backend *be, int slot, const struct cuda_copy *copies, int count)
{
    cuda_state *st = state_of(be->state);
    int other = 1 - slot;
    /* The compute work queued since the previous stage call read the other slot: mark its end. */
    bool ok = cuda_ok(st, cudaEventRecord(st->slot_free[other], st->stream), "cudaEventRecord (slot free)");
    if (ok && st->slot_free_marked[slot])
        ok = cuda_ok(st, cudaStreamWaitEvent(st->copy_stream, st->slot_free[slot], 0), "cudaStreamWaitEvent (copy)");
    st->slot_free_marked[other] = true;
    for (int i = 0; i < count && ok; i++)
        ok = cuda_ok(st, cudaMemcpyAsync(copies[i].device, copies[i].host, copies[i].bytes, cudaMemcpyHostToDevice,
                                         st->copy_stream), "cudaMemcpyAsync (batch)");
    ok = ok && cuda_ok(st, cudaEventRecord(st->slot_ready[slot], st->copy_stream), "cudaEventRecord (batch)") &&
         cuda_ok(st, cudaStreamWaitEvent(st->stream, st->slot_ready[slot], 0), "cudaStreamWaitEvent (batch)");
    st->last_slot = slot;
    return ok ? 0 : -1;
}

int backend_cuda_staged(struct backend *be)
{
    cuda_state *st = state_of(be->state);
    if (st->last_slot < 0)
        return 0;
    return cuda_ok(st, cudaEventSynchronize(st->slot_ready[st->last_slot]), "cudaEventSynchronize (batch)") ? 0 : -1;
}

int backend_cuda_sync(struct backend *be)
{
    cuda_state *st = state_of(be->state);
    return cuda_ok(st, cudaStreamSynchronize(st->stream), "cudaStreamSynchronize") && !failed(st) ? 0 : -1;
}

void backend_cuda_device_name(struct backend *be, char *name, size_t size)
{
    cuda_state *st = state_of(be->state);
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, st->device) == cudaSuccess)
        snprintf(name, size, "%s (device %d)", prop.name, st->device);
    else
        snprintf(name, size, "CUDA device %d", st->device);
}

int backend_cuda_capture_begin(struct backend *be)
{
    cuda_state *st = state_of(be->state);
    if (!cuda_ok(st, cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture"))
        return -1;
    st->capturing = true;
    return 0;
}

int backend_cuda_capture_end(struct backend *be, int slot)
{
    cuda_state *st = state_of(be->state);
    cudaGraph_t graph = nullptr;
    st->capturing = false;
    bool ok = cuda_ok(st, cudaStreamEndCapture(st->stream, &graph), "capturing a training step (cudaStreamEndCapture)");
    if (ok) {
        if (st->graphs[slot])
            cudaGraphExecDestroy(st->graphs[slot]);
        st->graphs[slot] = nullptr;
        ok = cuda_ok(st, cudaGraphInstantiate(&st->graphs[slot], graph, 0), "cudaGraphInstantiate");
    }
    if (graph)
        cudaGraphDestroy(graph);
    return ok && !failed(st) ? 0 : -1;
}

bool backend_cuda_graph_ready(const struct backend *be, int slot)
{
    return static_cast<const cuda_state *>(be->state)->graphs[slot] != nullptr;
}

int backend_cuda_graph_launch(struct backend *be, int slot)
{
    cuda_state *st = state_of(be->state);
    return cuda_ok(st, cudaGraphLaunch(st->graphs[slot], st->stream), "cudaGraphLaunch") ? 0 : -1;
}

void *backend_cuda_stream(struct backend *be)
{
    return state_of(be->state)->stream;
}

const char *backend_cuda_error(const struct backend *be)
{
    const cuda_state *st = static_cast<const cuda_state *>(be->state);
    return st->error[0] ? st->error : nullptr;
}

int backend_cuda_probe(char *why, size_t why_size)
{
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc == cudaSuccess)
        return count;
    cudaGetLastError();   /* the probe's error is not the next call's */
    if (rc == cudaErrorNoDevice) {
        snprintf(why, why_size, "no CUDA device (%s)", cudaGetErrorString(rc));
        return 0;
    }
    /* No driver library at all is a machine without a GPU; a driver that is there but fails (too
     * old for this runtime, a broken install) is a GPU machine that must not pass as one without. */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
        snprintf(why, why_size, "no NVIDIA driver (libcuda.so.1 not found)");
        return 0;
    }
    dlclose(driver);
    snprintf(why, why_size, "the NVIDIA driver is there but CUDA cannot use it: %s (%s)", cudaGetErrorString(rc),
             cudaGetErrorName(rc));
    return -1;
}

void backend_cuda_versions(char *out, size_t size)
{
    int runtime = 0, driver = 0, major = 0, minor = 0, patch = 0, nccl = 0;
    cudaRuntimeGetVersion(&runtime);
    if (cudaDriverGetVersion(&driver) != cudaSuccess)
        driver = 0;
    cudaGetLastError();
    cublasGetProperty(MAJOR_VERSION, &major), cublasGetProperty(MINOR_VERSION, &minor);
    cublasGetProperty(PATCH_LEVEL, &patch);
    ncclGetVersion(&nccl);
    snprintf(out, size, "CUDA runtime %d, driver %d, cuDNN %zu (built with %d), cuBLAS %d.%d.%d, NCCL %d", runtime,
             driver, cudnnGetVersion(), CUDNN_VERSION, major, minor, patch, nccl);
}

int backend_cuda_devices(void)
{
    char why[256];
    int count = backend_cuda_probe(why, sizeof why);
    return count > 0 ? count : 0;
}

struct backend *backend_cuda_create(int device, const struct cuda_options *options, char *why, size_t why_size)
{
    cuda_state *st = static_cast<cuda_state *>(calloc(1, sizeof *st));
    if (!st) {
        snprintf(why, why_size, "out of memory");
        return nullptr;
    }
    st->device = device;
    st->bf16 = options && options->bf16;
    st->channels_last = options && options->channels_last;
    st->conv_algo = options ? options->conv_algo : CONV_ALGO_HEURISTIC;
    st->last_slot = -1;
    bool ok = cuda_ok(st, cudaSetDevice(device), "cudaSetDevice") &&
              cuda_ok(st, cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking), "cudaStreamCreate") &&
              cuda_ok(st, cudaStreamCreateWithFlags(&st->copy_stream, cudaStreamNonBlocking), "cudaStreamCreate") &&
              blas_ok(st, cublasCreate(&st->blas), "cublasCreate") &&
              blas_ok(st, cublasSetStream(st->blas, st->stream), "cublasSetStream") &&
              dnn_ok(st, cudnnCreate(&st->dnn), "cudnnCreate") &&
              dnn_ok(st, cudnnSetStream(st->dnn, st->stream), "cudnnSetStream");
    size_t blas_bytes = BLAS_WORKSPACE_BYTES;
    ok = ok && cuda_ok(st, cudaMalloc(&st->blas_workspace, blas_bytes), "cudaMalloc (cuBLAS workspace)") &&
         blas_ok(st, cublasSetWorkspace(st->blas, st->blas_workspace, blas_bytes), "cublasSetWorkspace") &&
         cuda_ok(st, cudaMalloc(&st->adam_scalars, 2 * sizeof(float)), "cudaMalloc (adam scalars)") &&
         cuda_ok(st, cudaMallocHost(&st->host_adam_scalars, 2 * sizeof(float)), "cudaMallocHost (adam scalars)");
    for (int i = 0; i < 2 && ok; i++)
        ok = cuda_ok(st, cudaEventCreateWithFlags(&st->slot_free[i], cudaEventDisableTiming), "cudaEventCreate") &&
             cuda_ok(st, cudaEventCreateWithFlags(&st->slot_ready[i], cudaEventDisableTiming), "cudaEventCreate");
    if (!ok) {
        snprintf(why, why_size, "GPU %d: %s", device, st->error);
        backend_cuda_destroy(&st->table);
        return nullptr;
    }
    st->table = backend{};
    static const char *const names[2][2] = {{"cuda", "cuda-channels-last"}, {"cuda-bf16", "cuda-bf16-channels-last"}};
    st->table.name = names[st->bf16][st->channels_last];
    st->table.state = st;
    st->table.device_memory = true;
    install_own_kernels(&st->table);
    install_blas(&st->table);
    install_dnn(&st->table);
    install_batchnorm(&st->table);
    install_seq_kernels(&st->table);
    install_attention(&st->table);
    install_layout(&st->table, st->channels_last);
    return &st->table;
}

void backend_cuda_destroy(struct backend *be)
{
    if (!be)
        return;
    /* a half-made backend has no state pointer yet: its table is the state's first member */
    cuda_state *st = be->state ? state_of(be->state) : reinterpret_cast<cuda_state *>(be);
    if (st->stream)
        cudaStreamSynchronize(st->stream);
    if (st->copy_stream)
        cudaStreamSynchronize(st->copy_stream);
    release_dnn(st);
    release_batchnorm(st);
    release_layout(st);
    for (int i = 0; i < HALF_SLOTS; i++)
        cudaFree(st->half[i]);
    bf16_shadows_free(st);
    for (int i = 0; i < 2; i++) {
        if (st->slot_free[i])
            cudaEventDestroy(st->slot_free[i]);
        if (st->slot_ready[i])
            cudaEventDestroy(st->slot_ready[i]);
    }
    if (st->copy_stream)
        cudaStreamDestroy(st->copy_stream);
    drop_graphs(st);
    cudaFree(st->row_loss), cudaFree(st->row_correct), cudaFreeHost(st->host_loss), cudaFreeHost(st->host_correct);
    cudaFree(st->adam_scalars), cudaFreeHost(st->host_adam_scalars), cudaFree(st->blas_workspace);
    release_seq_kernels(st);
    release_attention(st);
    release_blas(st);
    if (st->dnn)
        cudnnDestroy(st->dnn);
    if (st->blas)
        cublasDestroy(st->blas);
    if (st->stream)
        cudaStreamDestroy(st->stream);
    free(st);
}

}  // extern "C"

