/* backend_cuda.h - the GPU backend (backend_cuda.cu): the kernel table of backend.h over device
 * memory, plus what a device backend needs besides kernels: memory, copies, the optimizer's
 * update and a stream to order other libraries (NCCL) against. Built when nvcc is found
 * (DTRAIN_CUDA); without it backend_cuda_create says so and the rest is never called. */
#ifndef BACKEND_CUDA_H
#define BACKEND_CUDA_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/backend/backend.h"

/* GPUs this process can use (0 without a driver or device, or without CUDA built in). */
int backend_cuda_devices(void);

/* The same, telling a machine without a GPU (0, why says which: no driver, no device, CUDA not
 * built in) from one whose GPU cannot be used (-1, why says what failed: a driver too old for
 * this CUDA, a broken install). Tests skip on 0 and fail on -1. */
int backend_cuda_probe(char *why, size_t why_size);

/* The libraries this process loaded, as they report themselves (cuDNN and cuBLAS may come from
 * other installs than the ones built against, and cuDNN loads its parts at first use): "CUDA
 * runtime 13000, driver 13000 (0: none), cuDNN 91300 (built with 91300), cuBLAS 13.0.0, NCCL
 * 22809" into out. */
void backend_cuda_versions(char *out, size_t size);

/* The device a rank drives, an index among those it sees: dtrain's (DTRAIN_GPU) when given, else
 * the launcher's local rank modulo the devices seen (so ranks that each see one GPU all take
 * theirs), else 0. Either string may be NULL; devices is backend_cuda_devices(). */
int cuda_device_for_rank(const char *dtrain_gpu, const char *local_rank, int devices);

/* How convolution algorithms are chosen (--conv-algo; conv_algo_names). */
enum conv_algo {
    CONV_ALGO_HEURISTIC,       /* cuDNN's heuristics rank them (the default) */
    /* timing every candidate once per shape (cudnnFind*, as torch.backends.cudnn.benchmark) */
    CONV_ALGO_FIND,
    /* only those cuDNN marks deterministic (as torch.backends.cudnn.deterministic): two runs of the
     * same job give the same bits, which a comparison between runs needs. The atomics of ResNet's
     * overlapping max pool and of the language models' embedding and layer-norm gradients still
     * sum in any order. */
    CONV_ALGO_DETERMINISTIC,
    CONV_ALGO_COUNT
};
/* Their --conv-algo names: "heuristic", "find", "deterministic". */
extern const char *const conv_algo_names[CONV_ALGO_COUNT];

/* How the backend computes. The zero value is the default: fp32 with TF32 tensor cores, cuDNN's
 * heuristics choosing each convolution's algorithms. */
struct cuda_options {
    /* bf16 compute (as PyTorch's autocast): linear layers and convolutions read bf16 copies of
     * their inputs and weights and accumulate in fp32; tensors, master weights, batch norm, the
     * loss and the optimizer stay fp32. */
    bool bf16;
    /* Images NHWC from the first convolution to the global average pool (backend.h's
     * channels_last; PyTorch's torch.channels_last), where cuDNN's tensor-core convolutions need
     * no transposes. */
    bool channels_last;
    enum conv_algo conv_algo;
};

/* The backend on GPU `device` (an index among the visible devices); options may be NULL (the
 * defaults). NULL with why filled. */
struct backend *backend_cuda_create(int device, const struct cuda_options *options, char *why, size_t why_size);
void backend_cuda_destroy(struct backend *be);

/* The first CUDA, cuBLAS or cuDNN failure since creation, or NULL. The kernels of the table return
 * nothing: callers check this (training does after every step). */
const char *backend_cuda_error(const struct backend *be);

/* Memory: backend_alloc, backend_release, backend_zero (backend.h). */
/* Host to device, in stream order (asynchronous from pinned host memory). */
int backend_cuda_upload(struct backend *be, void *device, const void *host, size_t bytes);
/* Device to host; returns when the bytes are there. */
int backend_cuda_download(struct backend *be, void *host, const void *device, size_t bytes);
/* Page-locks host memory the backend will copy from (cudaHostRegister), so that uploads from it
 * run asynchronously; unpin before freeing it. -1 with why when the memory cannot be locked (the
 * backend stays usable: copies from pageable memory still work, synchronously). */
int backend_cuda_pin(struct backend *be, void *host, size_t bytes, char *why, size_t why_size);
void backend_cuda_unpin(struct backend *be, void *host);

/* A batch's copies into one of two device buffer sets, `slot` 0 or 1, alternating. They run on a
 * copy stream of their own, so the upload of step k+1 overlaps step k's backward pass; kernels
 * queued after the call wait for them; and they wait for the kernels queued before the previous
 * stage call, the last ones that read this slot. The host memory must stay as it is until
 * backend_cuda_staged returns. */
struct cuda_copy {
    void *device;
    const void *host;
    size_t bytes;
};
int backend_cuda_stage(struct backend *be, int slot, const struct cuda_copy *copies, int count);
/* Waits until the last staged copies have read their host memory. */
int backend_cuda_staged(struct backend *be);

/* Waits for everything queued. -1 when something failed (backend_cuda_error says what). */
int backend_cuda_sync(struct backend *be);
/* "NVIDIA H100 80GB HBM3 (device 0)": the GPU's name, into name. */
void backend_cuda_device_name(struct backend *be, char *name, size_t size);
/* The stream the backend's work runs on (a cudaStream_t). */
void *backend_cuda_stream(struct backend *be);

/* optim.c's updates on device buffers, the same arithmetic. */
void backend_cuda_sgd(struct backend *be, float *params, const float *grads, float *momentum_buf, size_t count, float lr,
                      float momentum, float weight_decay, bool first);
/* Adam's step size and sqrt(1 - beta2^t) for the next update (optim_adam_scalars); the update
 * copies them to the device itself, so a captured step replays with the values set last. */
void backend_cuda_adam_scalars(struct backend *be, float step_size, float root2);
void backend_cuda_adam(struct backend *be, float *params, const float *grads, float *m, float *v, size_t count,
                       float beta1, float beta2, float eps, float weight_decay);

/* CUDA graphs (--cuda-graphs): a whole training step captured once per batch slot (the slot's
 * device buffers are baked in) and replayed, one launch instead of hundreds. Between begin and
 * end the table's calls are recorded, not run, and softmax_xent returns 0: the loss is read with
 * backend_cuda_deferred_loss after a launch. A graph is dropped when a buffer it points into is
 * reallocated (graph_ready then says false, and the caller captures again). */
int backend_cuda_capture_begin(struct backend *be);
int backend_cuda_capture_end(struct backend *be, int slot);
bool backend_cuda_graph_ready(const struct backend *be, int slot);
int backend_cuda_graph_launch(struct backend *be, int slot);
/* Waits for the launched step; its mean loss (NAN after a failure). */
double backend_cuda_deferred_loss(struct backend *be);

/* Host-staged gradient exchange (exchange/staging.h), the device's half: a copy stream of its own
 * and an event per span. out: copies device[0, count) to host once the compute enqueued so far has
 * made it (returns at once); wait: until slot's copy has landed, with the seconds the copy took
 * on the GPU (its timing events; the staging thread's; call thread first there, which makes the
 * rank's GPU current); in: copies host to device, and the
 * compute stream's next work waits for that copy. Each 0, or -1 (staging_error says why). */
struct cuda_staging;
struct cuda_staging *backend_cuda_staging_create(struct backend *be, int slots, char *why, size_t why_size);
void backend_cuda_staging_destroy(struct cuda_staging *s);
void backend_cuda_staging_thread(struct cuda_staging *s);
int backend_cuda_staging_out(struct cuda_staging *s, int slot, float *host, const float *device, size_t count);
int backend_cuda_staging_wait(struct cuda_staging *s, int slot, double *seconds);
int backend_cuda_staging_in(struct cuda_staging *s, float *device, const float *host, size_t count);
const char *backend_cuda_staging_error(const struct cuda_staging *s);

#endif
