/* cuda_state.h - what the CUDA backend's files share (backend_cuda.cu: the table and the
 * optimizer; dnn_cuda.cu: convolutions; bn_cuda.cu: batch norm; layout_cuda.cu: channels-last;
 * seq_cuda.cu: the language models' kernels): the backend's state and the way a
 * failure is kept. C++ for nvcc; the C side sees only backend_cuda.h. */
#ifndef CUDA_STATE_H
#define CUDA_STATE_H

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cfloat>
#include <cstdio>
#include <cstdlib>

extern "C" {
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
}

namespace dtrain_cuda {

enum { CONV_FWD, CONV_DATA, CONV_FILTER };

/* One convolution shape's descriptors and algorithms, found once. */
struct conv_plan {
    int n, c, h, w, c_out, k, stride, pad;
    cudnnTensorDescriptor_t x, y, bias;   /* x and y in the compute type (fp32 or bf16) */
    cudnnTensorDescriptor_t y32;          /* y as the fp32 tensor it is stored in: for the bias */
    cudnnFilterDescriptor_t filter;
    /* One per direction (CONV_FWD, CONV_DATA, CONV_FILTER): each carries the math type its chosen
     * algorithm was ranked or timed with, as cuDNN requires (cudnnFind* tries tensor-op and
     * default-math variants; the kernel that runs is the descriptor's). */
    cudnnConvolutionDescriptor_t conv[3];
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t bwd_data;
    cudnnConvolutionBwdFilterAlgo_t bwd_filter;
};

/* cuBLAS's workspace, fixed (a captured GEMM must not allocate): what it asks for on Hopper. */
constexpr size_t BLAS_WORKSPACE_BYTES = 32u << 20;

struct linear_plans;   /* blas_cuda.cu's cuBLASLt plans of the linear layers' forward */

/* bf16 mode's scratch: the cast copies of a GEMM's or convolution's operands and its bf16 result. */
enum { HALF_X, HALF_W, HALF_DY, HALF_OUT, HALF_SLOTS };

/* bf16 mode: the bf16 copy of an fp32 tensor, written beside it by the kernel that wrote it (batch
 * norm's: its output forward, its input gradient backward), so that the convolutions that read the
 * tensor take the copy instead of casting it again, forward and backward (bf16_cuda.cu). */
struct bf16_shadow {
    const float *of;           /* the fp32 tensor (a backend_alloc'd buffer) */
    __nv_bfloat16 *copy;
    size_t count, cap;         /* what the last write wrote, and the copy's room (elements) */
    bool valid;                /* the copy is the tensor's as it is now */
    bool alone;                /* and the fp32 tensor was not written: the copy is all there is */
};

/* Channels-last: a convolution's filter w as cuDNN's NHWC filter in the compute type, made by the
 * forward and kept for the backward of the same step (layout_cuda.cu's filter_operand). */
struct filter_copy {
    const float *w;
    int k, c, rs;
    float *copy;               /* floats' room holds the bf16 copy too */
    size_t cap;                /* floats */
    bool for_backward;         /* made by a forward whose backward has not yet read it */
};

struct cuda_state {
    struct backend table;
    int device;
    bool bf16;
    bool channels_last;        /* images NHWC (layout_cuda.cu) */
    enum conv_algo conv_algo;
    cudaStream_t stream;
    cudaStream_t copy_stream;  /* batches' uploads (backend_cuda_stage) */
    cudaEvent_t slot_free[2];  /* compute work that read slot i is done */
    cudaEvent_t slot_ready[2]; /* slot i's upload is done */
    bool slot_free_marked[2];
    int last_slot;             /* the last staged, -1 before any */
    __nv_bfloat16 *half[HALF_SLOTS];
    size_t half_cap[HALF_SLOTS];
    bf16_shadow *shadows;
    int num_shadows, cap_shadows;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    conv_plan *plans;
    int num_plans, cap_plans;
    void *workspace;           /* cuDNN's scratch, grown to the largest a chosen algorithm needs */
    size_t workspace_size;
    float *row_loss;           /* softmax_xent: per row, on the device */
    int *row_correct;
    float *host_loss;          /* and their pinned host copies */
    int *host_correct;
    int rows_cap;
    float *adam_scalars;       /* step size and sqrt(bias correction 2): set on the host each step, */
    float *host_adam_scalars;  /* copied up by the step itself, so a captured step reads new ones */
    void *blas_workspace;      /* cuBLAS's and cuBLASLt's, BLAS_WORKSPACE_BYTES */
    linear_plans *linear;      /* made on the first linear forward */
    /* CUDA graphs: one captured training step per batch slot */
    bool capturing;            /* softmax_xent then queues the loss and returns 0 */
    int deferred_rows;         /* rows of the loss the captured step copies to host_loss */
    cudaGraphExec_t graphs[2];
    float *seq_scratch;        /* the language models' attention: every head's Q, K, V, their gradients and */
    size_t seq_scratch_cap;    /* weights, head-major (attention_cuda.cu), floats, grown on demand */
    int fused_attention_room;  /* bf16's fused attention's shared memory: 0 not asked, 1 granted, -1 not */
    int *seq_count;            /* token_xent: the labelled rows, counted on the device */
    int multiprocessors;       /* the device's, for batch norm's grid (bn_cuda.cu); 0 until asked */
    double *bn_partial;        /* batch norm's per-split sums, and its per-channel coefficients */
    size_t bn_partial_cap;     /* (doubles) */
    float *bn_coeff;
    size_t bn_coeff_cap;       /* (floats) */
    filter_copy *filter_copies;   /* channels-last: each convolution's filter as cuDNN reads it */
    int num_filter_copies, cap_filter_copies;
    float *cl_dfilter;         /* and the filter gradient's scratch (layout_cuda.cu; floats) */
    size_t cl_dfilter_cap;
    char error[512];           /* the first failure; "" while all is well */
};

inline cuda_state *state_of(void *s) { return static_cast<cuda_state *>(s); }

inline bool failed(cuda_state *st) { return st->error[0] != '\0'; }

inline void fail(cuda_state *st, const char *what, const char *why)
{
    if (!failed(st))
        snprintf(st->error, sizeof st->error, "%s: %s", what, why);
}

/* Whether a buffer about to grow (synchronise, free, allocate) is being captured into a CUDA graph:
 * none of that may happen in a capture, and the graph would keep the freed address. The eager
 * steps before capture grow every buffer; one that grows later fails the state, named. */
inline bool growing_in_capture(cuda_state *st, const char *what)
{
    if (st->capturing)
        fail(st, what, "would grow while a CUDA graph is being captured (the eager steps before should have grown it)");
    return st->capturing;
}

inline bool cuda_ok(cuda_state *st, cudaError_t rc, const char *what)
{
    if (rc != cudaSuccess)
        fail(st, what, cudaGetErrorString(rc));
    return rc == cudaSuccess;
}

inline bool dnn_ok(cuda_state *st, cudnnStatus_t rc, const char *what)
{
    if (rc != CUDNN_STATUS_SUCCESS)
        fail(st, what, cudnnGetErrorString(rc));
    return rc == CUDNN_STATUS_SUCCESS;
}

inline bool blas_ok(cuda_state *st, cublasStatus_t rc, const char *what)
{
    if (rc != CUBLAS_STATUS_SUCCESS)
        fail(st, what, cublasGetStatusString(rc));
    return rc == CUBLAS_STATUS_SUCCESS;
}

constexpr int THREADS = 256;

/* A tensor element as a float, whether the tensor is fp32 or a bf16 copy. */
__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(__nv_bfloat16 v) { return __bfloat162float(v); }

/* The k x k max-pooling window at output (oy, ox) of one image whose positions lie `step` elements
 * apart (1: an NCHW plane; c: one channel of an NHWC image; X float, or bf16 where the image was
 * kept in bf16 alone): its largest value, and in *at where it was, iy * w + ix (the reference's
 * order: the first of equal values wins). */
template <typename X>
__device__ __forceinline__ float window_max(const X *image, size_t step, int h, int w, int oy, int ox, int k,
                                            int stride, int pad, int *at)
{
    float best = -FLT_MAX;
    int best_at = -1;
    for (int ky = 0; ky < k; ky++) {
        int iy = oy * stride - pad + ky;
        if (iy < 0 || iy >= h)
            continue;
        for (int kx = 0; kx < k; kx++) {
            int ix = ox * stride - pad + kx;
            if (ix < 0 || ix >= w)
                continue;
            float v = as_float(image[(size_t)(iy * w + ix) * step]);
            if (best_at < 0 || v > best)
                best = v, best_at = iy * w + ix;
        }
    }
    *at = best_at;
    return best;
}

/* The warp's sum (in v's type: double where a sum must match the reference's, float in the fused
 * attention) and largest value (every lane gets them): all 32 lanes must call. */
template <typename T>
__device__ __forceinline__ T warp_sum(T v)
{
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, lane_mask));
    return v;
}

/* Room for one more item in the host array *items (count used of *cap), doubled when full (to
 * `first` the first time); false when out of memory, the array kept. The backend's tables (plans,
 * bf16 copies, filter copies) grow so. */
template <typename T>
bool room_for_one_more(T **items, int count, int *cap, int first)
{
    if (count < *cap)
        return true;
    int grown_cap = *cap ? 2 * *cap : first;
    T *grown = static_cast<T *>(realloc(*items, grown_cap * sizeof(T)));
    if (!grown)
        return false;
    *items = grown, *cap = grown_cap;
    return true;
}

inline unsigned blocks_for(size_t count)
{
    size_t blocks = (count + THREADS - 1) / THREADS;
    return (unsigned)(blocks < 65535 * 16 ? (blocks ? blocks : 1) : 65535 * 16);
}

/* A kernel's loop over `count` elements, a thread an element, strided past the grid's end (a grid
 * of blocks_for(count) blocks). */
#define GRID_STRIDE(i, count) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (count); i += (size_t)gridDim.x * blockDim.x)

/* A launch's own failure (a bad configuration) is kept as the first error. */
inline void launched(cuda_state *st, const char *what)
{
    cuda_ok(st, cudaGetLastError(), what);
}

/* Room for n rows of the loss's per-row buffers (row_loss, host_loss): kernels_cuda.cu's. */
bool grow_loss_rows(cuda_state *st, int n);

/* The parts of the backend's table, each file's own: install puts its functions in the table,
 * release frees what they keep in the state. */
void install_own_kernels(struct backend *table);   /* kernels_cuda.cu */
void install_blas(struct backend *table);          /* blas_cuda.cu */
void release_blas(cuda_state *st);
void install_dnn(struct backend *table);           /* dnn_cuda.cu */
void release_dnn(cuda_state *st);
void install_batchnorm(struct backend *table);     /* bn_cuda.cu */
void release_batchnorm(cuda_state *st);
void install_seq_kernels(struct backend *table);   /* seq_cuda.cu */
void release_seq_kernels(cuda_state *st);
void install_attention(struct backend *table);     /* attention_cuda.cu */
void release_attention(cuda_state *st);
/* layout_cuda.cu: channels-last's own kernels in the table (the poolings, the input's transpose)
 * where channels_last, else nothing */
void install_layout(struct backend *table, bool channels_last);
void release_layout(cuda_state *st);

/* A convolution's filter w ([k][c][rs], PyTorch's) as cuDNN reads it: w or its bf16 copy; in
 * channels-last mode its [k][rs][c] transpose in the compute type, made by the forward and read
 * again by that step's backward (in_backward), the weights being the same (NULL: failed). */
const void *filter_operand(cuda_state *st, const float *w, int k, int c, int rs, bool in_backward);
/* Where cuDNN writes the filter gradient (count elements), the scale of what is there already,
 * and the landing that adds it into dw ([k][c][rs], fp32) where it was not written in place. */
void *filter_result(cuda_state *st, float *dw, size_t count);
const float *filter_prior(cuda_state *st);
void filter_land(cuda_state *st, float *dw, int k, int c, int rs);

/* bf16 mode (bf16_cuda.cu). What a GEMM or convolution reads for x (count floats): x itself in
 * fp32 mode, its bf16 copy in scratch `slot` in bf16 mode (NULL when that copy failed, reported). */
const void *bf16_operand(cuda_state *st, int slot, const float *x, size_t count);
/* Where a convolution writes its result: out itself in fp32 mode, bf16 scratch (then bf16_land)
 * in bf16 mode, where cuDNN writes the compute type. */
void *bf16_result(cuda_state *st, float *out, size_t count);
/* The scale of what is already in out: 1 to accumulate in fp32 mode; in bf16 mode the scratch
 * starts from zero and bf16_land adds. */
const float *bf16_prior(cuda_state *st, bool accumulate);
/* bf16 mode: the result from scratch into out (added when accumulating). */
void bf16_land(cuda_state *st, float *out, size_t count, bool accumulate);
/* A buffer is about to move: captured steps point into it, so they go (and are captured again). */
void drop_graphs(cuda_state *st);

/* Room for `count` elements in the device buffer *buf (*cap of them now), its contents not kept:
 * grown only outside a capture (growing_in_capture names `what`); the old buffer may still be read,
 * so the stream is waited for, and the captured steps that point into it go. false: failed, kept. */
template <typename T>
bool grow_device(cuda_state *st, T **buf, size_t *cap, size_t count, const char *what)
{
    if (count <= *cap)
        return true;
    if (growing_in_capture(st, what))
        return false;
    if (*buf && !cuda_ok(st, cudaStreamSynchronize(st->stream), "cudaStreamSynchronize"))
        return false;
    drop_graphs(st);
    cudaFree(*buf);
    *buf = nullptr, *cap = 0;
    char allocating[96];
    snprintf(allocating, sizeof allocating, "cudaMalloc (%s)", what);
    if (!cuda_ok(st, cudaMalloc(reinterpret_cast<void **>(buf), count * sizeof(T)), allocating))
        return false;
    *cap = count;
    return true;
}
/* bf16 mode: where a kernel writing `of` (count floats) writes its bf16 copy too, the copy then
 * valid; NULL in fp32 mode (or when it cannot be had: then no copy is valid). */
__nv_bfloat16 *bf16_shadow_to_write(cuda_state *st, const float *of, size_t count);
/* bf16 mode: of's copy where it holds of's values as they are now (count elements), else NULL. */
const __nv_bfloat16 *bf16_shadow_valid(cuda_state *st, const float *of, size_t count);
/* bf16 mode: where a kernel writes of's values in bf16 alone, the fp32 tensor left unwritten (a
 * convolution's output for a batch norm, conv_shape's y_for_batchnorm); NULL as bf16_shadow_to_write. */
__nv_bfloat16 *bf16_alone_to_write(cuda_state *st, const float *of, size_t count);
/* That copy, while it is valid and all there is of `of`; else NULL (read the fp32 tensor). */
const __nv_bfloat16 *bf16_alone(cuda_state *st, const float *of, size_t count);
/* `of` was written without its copy: the copy is no longer its. */
void bf16_shadow_forget(cuda_state *st, const float *of);
/* `p` is freed: its copy goes with it (another buffer may get its address). */
void bf16_shadow_release(cuda_state *st, const void *p);
void bf16_shadows_free(cuda_state *st);

}  // namespace dtrain_cuda

#endif
