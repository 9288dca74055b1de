/* backend_cuda.cu - the kernels of backend.h on an NVIDIA GPU: cuBLAS for linear layers, cuDNN for
 * convolutions (algorithms chosen once per shape by cuDNN's heuristics and cached), batch norm,
 * and small kernels of our own for ReLU, pooling, the residual add, the loss and the optimizer.
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
#include "backend.h"
#include "backend_cuda.h"
}
#include "cuda_state.h"

using namespace dtrain_cuda;

namespace {

/* ---------- elementwise kernels (grid-stride loops) ---------- */

__global__ void k_fill_rows(float *y, const float *b, int n, int out)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)n * out; i += (size_t)gridDim.x * blockDim.x)
        y[i] = b[i % out];
}

/* db[j] += sum over rows of dy[row][j] */
__global__ void k_sum_rows(const float *dy, float *db, int n, int out)
{
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= out)
        return;
    double sum = 0;
    for (int i = 0; i < n; i++)
        sum += dy[(size_t)i * out + j];
    db[j] += (float)sum;
}

__global__ void k_relu_forward(const float *x, float *y, size_t count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

__global__ void k_relu_backward(const float *y, const float *dy, float *dx, size_t count, bool accumulate)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float g = y[i] > 0.0f ? dy[i] : 0.0f;
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

__global__ void k_add_forward(const float *a, const float *b, float *y, size_t count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        y[i] = a[i] + b[i];
}

__global__ void k_add_backward(const float *dy, float *da, float *db, size_t count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        da[i] += dy[i];
        db[i] += dy[i];
    }
}

/* One thread per output: the window's largest value and where it was (the reference's order:
 * the first of equal values wins). */
__global__ void k_maxpool_forward(const float *x, float *y, int *argmax, size_t planes, int h, int w, int h_out,
                                  int w_out, int k, int stride, int pad)
{
    size_t total = planes * h_out * w_out;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total; o += (size_t)gridDim.x * blockDim.x) {
        size_t plane = o / ((size_t)h_out * w_out);
        int oy = (int)(o / w_out % h_out), ox = (int)(o % w_out);
        const float *p = x + plane * h * w;
        float best = -FLT_MAX;
        int best_at = -1;
        for (int ky = 0; ky < k; ky++) {
            int iy = oy * stride - pad + ky;
            if (iy < 0 || iy >= h)
                continue;
            for (int kx = 0; kx < k; kx++) {
                int ix = ox * stride - pad + kx;
                if (ix >= 0 && ix < w && (best_at < 0 || p[iy * w + ix] > best)) {
                    best = p[iy * w + ix];
                    best_at = iy * w + ix;
                }
            }
        }
        y[o] = best;
        argmax[o] = best_at;
    }
}

/* Windows may overlap (ResNet's 3x3 stride 2): the scatter adds atomically. */
__global__ void k_maxpool_backward(const int *argmax, const float *dy, float *dx, size_t planes, size_t per_in,
                                   size_t per_out)
{
    size_t total = planes * per_out;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total; o += (size_t)gridDim.x * blockDim.x)
        atomicAdd(&dx[o / per_out * per_in + argmax[o]], dy[o]);
}

/* One thread per (sample, channel). */
__global__ void k_avgpool_forward(const float *x, float *y, size_t planes, int hw)
{
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < planes; p += (size_t)gridDim.x * blockDim.x) {
        double sum = 0;
        for (int i = 0; i < hw; i++)
            sum += x[p * hw + i];
        y[p] = (float)(sum / hw);
    }
}

__global__ void k_avgpool_backward(const float *dy, float *dx, size_t planes, int hw, bool accumulate)
{
    size_t total = planes * hw;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
        float g = dy[i / hw] / hw;
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

/* One thread per row: the reference's arithmetic (double sums), its loss and right answer. */
__global__ void k_softmax_xent(const float *logits, const int *labels, float *dlogits, float *row_loss,
                               int *row_correct, int n, int classes)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float *z = logits + (size_t)i * classes;
    int best = 0;
    float max = z[0];
    for (int k = 1; k < classes; k++)
        if (z[k] > max) {
            max = z[k];
            best = k;
        }
    double sum = 0;
    for (int k = 0; k < classes; k++)
        sum += exp((double)z[k] - max);
    int label = labels[i];
    row_loss[i] = (float)(log(sum) - ((double)z[label] - max));
    row_correct[i] = best == label;
    if (!dlogits)
        return;
    for (int k = 0; k < classes; k++) {
        double p = exp((double)z[k] - max) / sum;
        dlogits[(size_t)i * classes + k] = (float)((p - (k == label)) / n);
    }
}

/* The optimizers of optim.c, elementwise, the same float arithmetic. */
__global__ void k_sgd(float *p, const float *g, float *m, size_t count, float lr, float momentum, float weight_decay,
                      bool first)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float d = g[i] + weight_decay * p[i];
        if (momentum != 0.0f) {
            m[i] = first ? d : momentum * m[i] + d;
            d = m[i];
        }
        p[i] -= lr * d;
    }
}

__global__ void k_adam(float *p, const float *g, float *m, float *v, size_t count, float b1, float b2, float eps,
                       float weight_decay, const float *scalars)
{
    float step_size = scalars[0], root2 = scalars[1];
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float d = g[i] + weight_decay * p[i];
        m[i] = b1 * m[i] + (1.0f - b1) * d;
        v[i] = b2 * v[i] + (1.0f - b2) * d * d;
        p[i] -= step_size * m[i] / (sqrtf(v[i]) / root2 + eps);
    }
}

/* bf16 mode: the casts around GEMMs and convolutions (round to nearest even, as PyTorch). */
__global__ void k_to_bf16(const float *x, __nv_bfloat16 *y, size_t count)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        y[i] = __float2bfloat16(x[i]);
}

__global__ void k_from_bf16(const __nv_bfloat16 *x, float *y, size_t count, bool accumulate)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x)
        y[i] = accumulate ? y[i] + __bfloat162float(x[i]) : __bfloat162float(x[i]);
}


/* ---------- bf16 mode: operands cast into scratch, results cast back ---------- */

/* A buffer is about to move: captured steps point into it, so they go (and are captured again). */
void drop_graphs(cuda_state *st)
{
    for (cudaGraphExec_t &g : st->graphs)
        if (g) {
            cudaGraphExecDestroy(g);
            g = nullptr;
        }
}

__nv_bfloat16 *half_buffer(cuda_state *st, int slot, size_t count)
{
    if (count > st->half_cap[slot]) {
        if (growing_in_capture(st, "the bf16 scratch"))
            return nullptr;
        cudaStreamSynchronize(st->stream);   /* the old buffer may still be read */
        drop_graphs(st);
        cudaFree(st->half[slot]);
        st->half[slot] = nullptr, st->half_cap[slot] = 0;
        if (!cuda_ok(st, cudaMalloc(&st->half[slot], count * sizeof(__nv_bfloat16)), "cudaMalloc (bf16 scratch)"))
            return nullptr;
        st->half_cap[slot] = count;
    }
    return st->half[slot];
}

/* What a GEMM or convolution reads for x: x itself in fp32 mode, its bf16 copy in bf16 mode. */
const void *operand(cuda_state *st, int slot, const float *x, size_t count)
{
    if (!st->bf16)
        return x;
    __nv_bfloat16 *h = half_buffer(st, slot, count);
    if (!h)
        return nullptr;
    k_to_bf16<<<blocks_for(count), THREADS, 0, st->stream>>>(x, h, count);
    launched(st, "cast to bf16");
    return h;
}

/* Where a convolution writes its result: out itself in fp32 mode, bf16 scratch (then land) in
 * bf16 mode, where cuDNN writes the compute type. */
void *result(cuda_state *st, float *out, size_t count)
{
    return st->bf16 ? static_cast<void *>(half_buffer(st, HALF_OUT, count)) : out;
}

/* The scale of what is already in out: 1 to accumulate in fp32 mode; in bf16 mode the scratch
 * starts from zero and land adds. */
const float *prior(cuda_state *st, bool accumulate)
{
    static const float one = 1.0f, zero = 0.0f;
    return accumulate && !st->bf16 ? &one : &zero;
}

/* bf16 mode: the result from scratch into out (added when accumulating). */
void land(cuda_state *st, float *out, size_t count, bool accumulate)
{
    if (!st->bf16)
        return;
    k_from_bf16<<<blocks_for(count), THREADS, 0, st->stream>>>(st->half[HALF_OUT], out, count, accumulate);
    launched(st, "cast from bf16");
}

/* ---------- linear: cuBLAS, row-major arrays read as column-major transposes ---------- */

/* C (m x n, col-major, fp32) = A . B + beta C, A and B fp32 (TF32 math) or their bf16 copies. */
void gemm(cuda_state *st, cublasOperation_t op_a, cublasOperation_t op_b, int m, int n, int k, const void *a, int lda,
          const void *b, int ldb, bool accumulate, float *c, int ldc, const char *what)
{
    if (!a || !b)
        return;   /* a failed cast, already reported */
    float one = 1.0f, zero = 0.0f;
    cudaDataType_t type = st->bf16 ? CUDA_R_16BF : CUDA_R_32F;
    cublasComputeType_t compute = st->bf16 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32;
    blas_ok(st, cublasGemmEx(st->blas, op_a, op_b, m, n, k, &one, a, type, lda, b, type, ldb, accumulate ? &one : &zero,
                             c, CUDA_R_32F, ldc, compute, CUBLAS_GEMM_DEFAULT), what);
}

void cuda_linear_forward(void *s, const float *x, const float *w, const float *b, float *y, int n, int in, int out)
{
    cuda_state *st = state_of(s);
    k_fill_rows<<<blocks_for((size_t)n * out), THREADS, 0, st->stream>>>(y, b, n, out);
    launched(st, "linear bias");
    /* y^T (out x n) = w (in x out, col-major)^T . x^T (in x n) */
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, operand(st, HALF_W, w, (size_t)out * in), in,
         operand(st, HALF_X, x, (size_t)n * in), in, true, y, out, "cublasGemmEx (linear forward)");
}

void cuda_linear_backward(void *s, const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                          int n, int in, int out, bool accumulate)
{
    cuda_state *st = state_of(s);
    const void *dy_op = operand(st, HALF_DY, dy, (size_t)n * out);
    /* dw (in x out, col-major) += x^T (in x n) . dy (n x out) */
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, operand(st, HALF_X, x, (size_t)n * in), in, dy_op, out, true, dw, in,
         "cublasGemmEx (linear weight gradient)");
    k_sum_rows<<<blocks_for((size_t)out), THREADS, 0, st->stream>>>(dy, db, n, out);
    launched(st, "linear bias gradient");
    if (dx)   /* dx^T (in x n) = w^T (in x out) . dy^T (out x n) */
        gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, operand(st, HALF_W, w, (size_t)out * in), in, dy_op, out,
             accumulate, dx, in, "cublasGemmEx (linear input gradient)");
}

/* ---------- convolution: cuDNN ---------- */

/* Grows cuDNN's scratch to `bytes`. An algorithm whose scratch does not fit is not an error, only
 * not a choice: the old scratch stays (plans made before need its size) and false comes back.
 * Nor is one that asks for more than a quarter of the device's free memory: an FFT or Winograd
 * algorithm may want gigabytes that the activations and bf16 copies allocated after the choice
 * would then lack (cuda-review.md 4); the next algorithm in cuDNN's ranking is taken instead. */
bool grow_workspace(cuda_state *st, size_t bytes)
{
    if (bytes <= st->workspace_size)
        return true;
    if (growing_in_capture(st, "cuDNN's workspace"))
        return false;
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess && bytes > free_bytes / 4)
        return false;
    void *bigger = nullptr;
    if (cudaMalloc(&bigger, bytes) != cudaSuccess) {
        cudaGetLastError();   /* clears it: the next candidate may fit */
        return false;
    }
    cudaStreamSynchronize(st->stream);   /* the old scratch may still be in use */
    drop_graphs(st);
    cudaFree(st->workspace);
    st->workspace = bigger, st->workspace_size = bytes;
    return true;
}

/* The fastest algorithm, as cuDNN's heuristics expect or its timing found, whose scratch we can
 * allocate (both lists come sorted fastest first). */
template <typename Perf, typename Getter>
bool pick(cuda_state *st, Getter get, cudnnConvolutionDescriptor_t conv, decltype(Perf::algo) *algo, const char *what)
{
    Perf perf[16];
    int found = 0;
    if (!dnn_ok(st, get(perf, 16, &found), what))
        return false;
    for (int i = 0; i < found; i++)
        if (perf[i].status == CUDNN_STATUS_SUCCESS && grow_workspace(st, perf[i].memory)) {
            *algo = perf[i].algo;
            /* the math type the algorithm was ranked with, or another kernel runs */
            return dnn_ok(st, cudnnSetConvolutionMathType(conv, perf[i].mathType), "cudnnSetConvolutionMathType");
        }
    fail(st, what, "no usable algorithm");
    return false;
}

/* The plan's three algorithms: ranked by cuDNN's heuristics, or (find_algorithms) timed on
 * scratch tensors cuDNN allocates itself, which blocks, once per shape. */
bool choose_algorithms(cuda_state *st, conv_plan *p)
{
    bool timed = st->find_algorithms;
    if (timed && !cuda_ok(st, cudaStreamSynchronize(st->stream), "cudaStreamSynchronize (before cudnnFind)"))
        return false;
    cudnnConvolutionDescriptor_t fwd = p->conv[CONV_FWD], data = p->conv[CONV_DATA], filter = p->conv[CONV_FILTER];
    return pick<cudnnConvolutionFwdAlgoPerf_t>(st, [&](cudnnConvolutionFwdAlgoPerf_t *perf, int max, int *found) {
               return timed ? cudnnFindConvolutionForwardAlgorithm(st->dnn, p->x, p->filter, fwd, p->y, max, found,
                                                                   perf)
                            : cudnnGetConvolutionForwardAlgorithm_v7(st->dnn, p->x, p->filter, fwd, p->y, max, found,
                                                                     perf);
           }, fwd, &p->fwd, "choosing the forward convolution algorithm") &&
           pick<cudnnConvolutionBwdDataAlgoPerf_t>(st, [&](cudnnConvolutionBwdDataAlgoPerf_t *perf, int max, int *found) {
               return timed ? cudnnFindConvolutionBackwardDataAlgorithm(st->dnn, p->filter, p->y, data, p->x, max,
                                                                        found, perf)
                            : cudnnGetConvolutionBackwardDataAlgorithm_v7(st->dnn, p->filter, p->y, data, p->x, max,
                                                                          found, perf);
           }, data, &p->bwd_data, "choosing the backward-data convolution algorithm") &&
           pick<cudnnConvolutionBwdFilterAlgoPerf_t>(st, [&](cudnnConvolutionBwdFilterAlgoPerf_t *perf, int max,
                                                           int *found) {
               return timed ? cudnnFindConvolutionBackwardFilterAlgorithm(st->dnn, p->x, p->y, filter, p->filter, max,
                                                                          found, perf)
                            : cudnnGetConvolutionBackwardFilterAlgorithm_v7(st->dnn, p->x, p->y, filter, p->filter,
                                                                            max, found, perf);
           }, filter, &p->bwd_filter, "choosing the backward-filter convolution algorithm");
}

void plan_release(conv_plan *p)
{
    cudnnTensorDescriptor_t tensors[] = {p->x, p->y, p->y32, p->bias};
    for (cudnnTensorDescriptor_t t : tensors)
        if (t)
            cudnnDestroyTensorDescriptor(t);
    if (p->filter)
        cudnnDestroyFilterDescriptor(p->filter);
    for (cudnnConvolutionDescriptor_t c : p->conv)
        if (c)
            cudnnDestroyConvolutionDescriptor(c);
}

conv_plan *plan_for(cuda_state *st, const struct conv_shape *s)
{
    for (int i = 0; i < st->num_plans; i++) {
        conv_plan *p = &st->plans[i];
        if (p->n == s->n && p->c == s->c && p->h == s->h && p->w == s->w && p->c_out == s->c_out && p->k == s->kh &&
            p->stride == s->stride && p->pad == s->pad)
            return p;
    }
    if (st->num_plans == st->cap_plans) {
        int cap = st->cap_plans ? 2 * st->cap_plans : 32;
        conv_plan *grown = static_cast<conv_plan *>(realloc(st->plans, cap * sizeof *grown));
        if (!grown) {
            fail(st, "convolution plans", "out of memory");
            return nullptr;
        }
        st->plans = grown, st->cap_plans = cap;
    }
    conv_plan *p = &st->plans[st->num_plans];
    *p = conv_plan{};
    p->n = s->n, p->c = s->c, p->h = s->h, p->w = s->w, p->c_out = s->c_out, p->k = s->kh, p->stride = s->stride;
    p->pad = s->pad;
    cudnnDataType_t type = st->bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
    bool ok = dnn_ok(st, cudnnCreateTensorDescriptor(&p->x), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateTensorDescriptor(&p->y), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateTensorDescriptor(&p->y32), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateTensorDescriptor(&p->bias), "cudnnCreateTensorDescriptor") &&
              dnn_ok(st, cudnnCreateFilterDescriptor(&p->filter), "cudnnCreateFilterDescriptor");
    for (cudnnConvolutionDescriptor_t &c : p->conv)
        ok = ok && dnn_ok(st, cudnnCreateConvolutionDescriptor(&c), "cudnnCreateConvolutionDescriptor");
    ok = ok && dnn_ok(st, cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, type, s->n, s->c, s->h, s->w),
                      "cudnnSetTensor4dDescriptor (x)") &&
         dnn_ok(st, cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, type, s->n, s->c_out, s->h_out, s->w_out),
                "cudnnSetTensor4dDescriptor (y)") &&
         dnn_ok(st, cudnnSetTensor4dDescriptor(p->y32, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s->n, s->c_out, s->h_out,
                                               s->w_out), "cudnnSetTensor4dDescriptor (y, fp32)") &&
         dnn_ok(st, cudnnSetTensor4dDescriptor(p->bias, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, s->c_out, 1, 1),
                "cudnnSetTensor4dDescriptor (bias)") &&
         dnn_ok(st, cudnnSetFilter4dDescriptor(p->filter, type, CUDNN_TENSOR_NCHW, s->c_out, s->c, s->kh, s->kw),
                "cudnnSetFilter4dDescriptor");
    for (cudnnConvolutionDescriptor_t c : p->conv)
        ok = ok && dnn_ok(st, cudnnSetConvolution2dDescriptor(c, s->pad, s->pad, s->stride, s->stride, 1, 1,
                                                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                          "cudnnSetConvolution2dDescriptor") &&
             dnn_ok(st, cudnnSetConvolutionMathType(c, st->bf16 ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH),
                    "cudnnSetConvolutionMathType");
    ok = ok && choose_algorithms(st, p);
    if (!ok) {
        plan_release(p);
        return nullptr;
    }
    st->num_plans++;
    return p;
}

size_t input_count(const struct conv_shape *s) { return (size_t)s->n * s->c * s->h * s->w; }
size_t filter_count(const struct conv_shape *s) { return (size_t)s->c_out * s->c * s->kh * s->kw; }
size_t output_count(const struct conv_shape *s) { return (size_t)s->n * s->c_out * s->h_out * s->w_out; }

void cuda_conv_forward(void *s, const struct conv_shape *shape, const float *x, const float *w, const float *b, float *y)
{
    cuda_state *st = state_of(s);
    conv_plan *p = plan_for(st, shape);
    if (!p)
        return;
    float one = 1.0f;
    size_t nx = input_count(shape), nw = filter_count(shape), ny = output_count(shape);
    const void *x_op = operand(st, HALF_X, x, nx), *w_op = operand(st, HALF_W, w, nw);
    void *y_out = result(st, y, ny);
    if (!x_op || !w_op || !y_out)
        return;
    dnn_ok(st, cudnnConvolutionForward(st->dnn, &one, p->x, x_op, p->filter, w_op, p->conv[CONV_FWD], p->fwd, st->workspace,
                                       st->workspace_size, prior(st, false), p->y, y_out), "cudnnConvolutionForward");
    land(st, y, ny, false);
    if (b)
        dnn_ok(st, cudnnAddTensor(st->dnn, &one, p->bias, b, &one, p->y32, y), "cudnnAddTensor (conv bias)");
}

void cuda_conv_backward(void *s, const struct conv_shape *shape, const float *x, const float *w, const float *dy,
                        float *dx, float *dw, float *db, bool accumulate)
{
    cuda_state *st = state_of(s);
    conv_plan *p = plan_for(st, shape);
    if (!p)
        return;
    float one = 1.0f;
    size_t nx = input_count(shape), nw = filter_count(shape), ny = output_count(shape);
    const void *x_op = operand(st, HALF_X, x, nx), *dy_op = operand(st, HALF_DY, dy, ny);
    void *dw_out = result(st, dw, nw);
    if (!x_op || !dy_op || !dw_out)
        return;
    dnn_ok(st, cudnnConvolutionBackwardFilter(st->dnn, &one, p->x, x_op, p->y, dy_op, p->conv[CONV_FILTER], p->bwd_filter,
                                              st->workspace, st->workspace_size, prior(st, true), p->filter, dw_out),
           "cudnnConvolutionBackwardFilter");
    land(st, dw, nw, true);
    if (db)
        dnn_ok(st, cudnnConvolutionBackwardBias(st->dnn, &one, p->y32, dy, &one, p->bias, db),
               "cudnnConvolutionBackwardBias");
    if (!dx)
        return;
    const void *w_op = operand(st, HALF_W, w, nw);
    void *dx_out = result(st, dx, nx);   /* the same scratch as dw's: in stream order, after its landing */
    if (!w_op || !dx_out)
        return;
    dnn_ok(st, cudnnConvolutionBackwardData(st->dnn, &one, p->filter, w_op, p->y, dy_op, p->conv[CONV_DATA], p->bwd_data,
                                            st->workspace, st->workspace_size, prior(st, accumulate), p->x, dx_out),
           "cudnnConvolutionBackwardData");
    land(st, dx, nx, accumulate);
}

/* ---------- batch norm: cuDNN's spatial mode, PyTorch's semantics ---------- */

/* x as (n, c, hw, 1), and the per-channel descriptor derived from it. */
bool bn_descriptors(cuda_state *st, int n, int c, int hw, cudnnTensorDescriptor_t *x, cudnnTensorDescriptor_t *param)
{
    *x = nullptr, *param = nullptr;
    return dnn_ok(st, cudnnCreateTensorDescriptor(x), "cudnnCreateTensorDescriptor") &&
           dnn_ok(st, cudnnCreateTensorDescriptor(param), "cudnnCreateTensorDescriptor") &&
           dnn_ok(st, cudnnSetTensor4dDescriptor(*x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, hw, 1),
                  "cudnnSetTensor4dDescriptor (batch norm)") &&
           dnn_ok(st, cudnnDeriveBNTensorDescriptor(*param, *x, CUDNN_BATCHNORM_SPATIAL), "cudnnDeriveBNTensorDescriptor");
}

void bn_release(cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t param)
{
    if (x)
        cudnnDestroyTensorDescriptor(x);
    if (param)
        cudnnDestroyTensorDescriptor(param);
}

void cuda_batchnorm_forward(void *s, const float *x, const float *gamma, const float *beta, float *running_mean,
                            float *running_var, float *save_mean, float *save_invstd, float *y, int n, int c, int hw,
                            bool training, float momentum, float eps)
{
    cuda_state *st = state_of(s);
    cudnnTensorDescriptor_t xd, pd;
    float one = 1.0f, zero = 0.0f;
    if (bn_descriptors(st, n, c, hw, &xd, &pd)) {
        /* cuDNN's running variance is the unbiased one and its average factor is PyTorch's momentum */
        if (training)
            dnn_ok(st, cudnnBatchNormalizationForwardTraining(st->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, x, xd,
                                                              y, pd, gamma, beta, momentum, running_mean, running_var,
                                                              eps, save_mean, save_invstd),
                   "cudnnBatchNormalizationForwardTraining");
        else
            dnn_ok(st, cudnnBatchNormalizationForwardInference(st->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, xd, x, xd,
                                                               y, pd, gamma, beta, running_mean, running_var, eps),
                   "cudnnBatchNormalizationForwardInference");
    }
    bn_release(xd, pd);
}

void cuda_batchnorm_backward(void *s, const float *x, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta, int n,
                             int c, int hw, bool accumulate)
{
    cuda_state *st = state_of(s);
    cudnnTensorDescriptor_t xd, pd;
    float one = 1.0f, zero = 0.0f;
    if (bn_descriptors(st, n, c, hw, &xd, &pd))
        dnn_ok(st, cudnnBatchNormalizationBackward(st->dnn, CUDNN_BATCHNORM_SPATIAL, &one, accumulate ? &one : &zero,
                                                   &one, &one, xd, x, xd, dy, xd, dx, pd, gamma, dgamma, dbeta,
                                                   1e-5 /* unused: the saved statistics are given */, save_mean,
                                                   save_invstd),
               "cudnnBatchNormalizationBackward");
    bn_release(xd, pd);
}

/* ---------- the rest: our kernels ---------- */

void cuda_relu_forward(void *s, const float *x, float *y, size_t count)
{
    cuda_state *st = state_of(s);
    k_relu_forward<<<blocks_for(count), THREADS, 0, st->stream>>>(x, y, count);
    launched(st, "relu forward");
}

void cuda_relu_backward(void *s, const float *y, const float *dy, float *dx, size_t count, bool accumulate)
{
    cuda_state *st = state_of(s);
    k_relu_backward<<<blocks_for(count), THREADS, 0, st->stream>>>(y, dy, dx, count, accumulate);
    launched(st, "relu backward");
}

void cuda_maxpool_forward(void *s, const float *x, float *y, int *argmax, int n, int c, int h, int w, int k, int stride,
                          int pad)
{
    cuda_state *st = state_of(s);
    int h_out = conv_out_size(h, k, stride, pad), w_out = conv_out_size(w, k, stride, pad);
    size_t planes = (size_t)n * c;
    k_maxpool_forward<<<blocks_for(planes * h_out * w_out), THREADS, 0, st->stream>>>(x, y, argmax, planes, h, w, h_out,
                                                                                      w_out, k, stride, pad);
    launched(st, "maxpool forward");
}

void cuda_maxpool_backward(void *s, const int *argmax, const float *dy, float *dx, int n, int c, int h, int w,
                           int h_out, int w_out, int k, int stride, int pad, bool accumulate)
{
    (void)k, (void)stride, (void)pad;
    cuda_state *st = state_of(s);
    size_t planes = (size_t)n * c, per_in = (size_t)h * w, per_out = (size_t)h_out * w_out;
    if (!accumulate)
        cuda_ok(st, cudaMemsetAsync(dx, 0, planes * per_in * sizeof(float), st->stream), "cudaMemsetAsync (maxpool)");
    k_maxpool_backward<<<blocks_for(planes * per_out), THREADS, 0, st->stream>>>(argmax, dy, dx, planes, per_in,
                                                                                 per_out);
    launched(st, "maxpool backward");
}

void cuda_avgpool_forward(void *s, const float *x, float *y, int n, int c, int hw)
{
    cuda_state *st = state_of(s);
    k_avgpool_forward<<<blocks_for((size_t)n * c), THREADS, 0, st->stream>>>(x, y, (size_t)n * c, hw);
    launched(st, "avgpool forward");
}

void cuda_avgpool_backward(void *s, const float *dy, float *dx, int n, int c, int hw, bool accumulate)
{
    cuda_state *st = state_of(s);
    k_avgpool_backward<<<blocks_for((size_t)n * c * hw), THREADS, 0, st->stream>>>(dy, dx, (size_t)n * c, hw,
                                                                                   accumulate);
    launched(st, "avgpool backward");
}

void cuda_add_forward(void *s, const float *a, const float *b, float *y, size_t count)
{
    cuda_state *st = state_of(s);
    k_add_forward<<<blocks_for(count), THREADS, 0, st->stream>>>(a, b, y, count);
    launched(st, "add forward");
}

void cuda_add_backward(void *s, const float *dy, float *da, float *db, size_t count)
{
    cuda_state *st = state_of(s);
    k_add_backward<<<blocks_for(count), THREADS, 0, st->stream>>>(dy, da, db, count);
    launched(st, "add backward");
}

bool grow_rows(cuda_state *st, int n)
{
    if (n <= st->rows_cap)
        return true;
    if (growing_in_capture(st, "the loss rows"))
        return false;
    cudaStreamSynchronize(st->stream);
    drop_graphs(st);
    cudaFree(st->row_loss), cudaFree(st->row_correct), cudaFreeHost(st->host_loss), cudaFreeHost(st->host_correct);
    st->row_loss = nullptr, st->row_correct = nullptr, st->host_loss = nullptr, st->host_correct = nullptr;
    st->rows_cap = 0;
    if (!cuda_ok(st, cudaMalloc(&st->row_loss, n * sizeof(float)), "cudaMalloc (loss rows)") ||
        !cuda_ok(st, cudaMalloc(&st->row_correct, n * sizeof(int)), "cudaMalloc (loss rows)") ||
        !cuda_ok(st, cudaMallocHost(&st->host_loss, n * sizeof(float)), "cudaMallocHost (loss rows)") ||
        !cuda_ok(st, cudaMallocHost(&st->host_correct, n * sizeof(int)), "cudaMallocHost (loss rows)"))
        return false;
    st->rows_cap = n;
    return true;
}

/* The per-row loss and right answers, computed and copied to pinned host memory, in stream order. */
bool queue_loss(cuda_state *st, const float *logits, const int *labels, float *dlogits, int n, int classes)
{
    if (failed(st) || !grow_rows(st, n))
        return false;
    k_softmax_xent<<<blocks_for((size_t)n), THREADS, 0, st->stream>>>(logits, labels, dlogits, st->row_loss,
                                                                      st->row_correct, n, classes);
    launched(st, "softmax cross-entropy");
    return cuda_ok(st, cudaMemcpyAsync(st->host_loss, st->row_loss, n * sizeof(float), cudaMemcpyDeviceToHost,
                                       st->stream), "cudaMemcpyAsync (loss)") &&
           cuda_ok(st, cudaMemcpyAsync(st->host_correct, st->row_correct, n * sizeof(int), cudaMemcpyDeviceToHost,
                                       st->stream), "cudaMemcpyAsync (loss)");
}

/* Waits for the queued loss and sums it: the one place the host waits for the GPU each step. */
double collect_loss(cuda_state *st, int n, int *correct)
{
    *correct = 0;
    if (!cuda_ok(st, cudaStreamSynchronize(st->stream), "the step's kernels") || failed(st))
        return NAN;
    double loss = 0;
    for (int i = 0; i < n; i++) {
        loss += st->host_loss[i];
        *correct += st->host_correct[i];
    }
    return loss / n;
}

/* Eager: the loss now. Captured: queued, and 0 (backend_cuda_deferred_loss reads it after a launch). */
double cuda_softmax_xent(void *s, const float *logits, const int *labels, float *dlogits, int n, int classes,
                         int *correct)
{
    cuda_state *st = state_of(s);
    *correct = 0;
    if (!queue_loss(st, logits, labels, dlogits, n, classes))
        return NAN;
    if (st->capturing) {
        st->deferred_rows = n;
        return 0;
    }
    return collect_loss(st, n, correct);
}

/* backend.h's memory hooks: tensors live in the GPU's memory, zeroed in stream order. */
void *cuda_alloc(void *s, size_t bytes)
{
    void *p = nullptr;
    return cuda_ok(state_of(s), cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc") ? p : nullptr;
}

void cuda_release(void *s, void *p)
{
    (void)s;
    cudaFree(p);
}

void cuda_zero(void *s, void *p, size_t bytes)
{
    cuda_state *st = state_of(s);
    cuda_ok(st, cudaMemsetAsync(p, 0, bytes, st->stream), "cudaMemsetAsync");
}

}  // namespace

bool dtrain_cuda::grow_loss_rows(cuda_state *st, int n)
{
    return grow_rows(st, n);
}

/* ---------- copies, the optimizer, the stream (backend_cuda.h) ---------- */

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

void backend_cuda_sgd(struct backend *be, float *params, const float *grads, float *momentum_buf, size_t count, float lr,
                      float momentum, float weight_decay, bool first)
{
    cuda_state *st = state_of(be->state);
    k_sgd<<<blocks_for(count), THREADS, 0, st->stream>>>(params, grads, momentum_buf, count, lr, momentum, weight_decay,
                                                         first);
    launched(st, "sgd step");
}

void backend_cuda_adam_scalars(struct backend *be, float step_size, float root2)
{
    cuda_state *st = state_of(be->state);
    st->host_adam_scalars[0] = step_size, st->host_adam_scalars[1] = root2;
}

void backend_cuda_adam(struct backend *be, float *params, const float *grads, float *m, float *v, size_t count,
                       float beta1, float beta2, float eps, float weight_decay)
{
    cuda_state *st = state_of(be->state);
    /* copied in stream order, so the host may set the next step's once this step's loss is read */
    cuda_ok(st, cudaMemcpyAsync(st->adam_scalars, st->host_adam_scalars, 2 * sizeof(float), cudaMemcpyHostToDevice,
                                st->stream), "cudaMemcpyAsync (adam scalars)");
    k_adam<<<blocks_for(count), THREADS, 0, st->stream>>>(params, grads, m, v, count, beta1, beta2, eps, weight_decay,
                                                          st->adam_scalars);
    launched(st, "adam step");
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

double backend_cuda_deferred_loss(struct backend *be)
{
    cuda_state *st = state_of(be->state);
    int correct;
    return collect_loss(st, st->deferred_rows, &correct);
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
    st->find_algorithms = options && options->find_algorithms;
    st->last_slot = -1;
    bool ok = cuda_ok(st, cudaSetDevice(device), "cudaSetDevice") &&
              cuda_ok(st, cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking), "cudaStreamCreate") &&
              cuda_ok(st, cudaStreamCreateWithFlags(&st->copy_stream, cudaStreamNonBlocking), "cudaStreamCreate") &&
              blas_ok(st, cublasCreate(&st->blas), "cublasCreate") &&
              blas_ok(st, cublasSetStream(st->blas, st->stream), "cublasSetStream") &&
              dnn_ok(st, cudnnCreate(&st->dnn), "cudnnCreate") &&
              dnn_ok(st, cudnnSetStream(st->dnn, st->stream), "cudnnSetStream");
    /* 32 MiB: what cuBLAS asks for on Hopper; set once, so that no GEMM allocates (or may not, captured) */
    size_t blas_bytes = 32u << 20;
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
    st->table.name = st->bf16 ? "cuda-bf16" : "cuda";
    st->table.state = st;
    st->table.device_memory = true;
    st->table.alloc = cuda_alloc;
    st->table.release = cuda_release;
    st->table.zero = cuda_zero;
    st->table.linear_forward = cuda_linear_forward;
    st->table.linear_backward = cuda_linear_backward;
    st->table.conv_forward = cuda_conv_forward;
    st->table.conv_backward = cuda_conv_backward;
    st->table.batchnorm_forward = cuda_batchnorm_forward;
    st->table.batchnorm_backward = cuda_batchnorm_backward;
    st->table.relu_forward = cuda_relu_forward;
    st->table.relu_backward = cuda_relu_backward;
    st->table.maxpool_forward = cuda_maxpool_forward;
    st->table.maxpool_backward = cuda_maxpool_backward;
    st->table.avgpool_forward = cuda_avgpool_forward;
    st->table.avgpool_backward = cuda_avgpool_backward;
    st->table.add_forward = cuda_add_forward;
    st->table.add_backward = cuda_add_backward;
    st->table.softmax_xent = cuda_softmax_xent;
    install_seq_kernels(&st->table);
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
    for (int i = 0; i < st->num_plans; i++)
        plan_release(&st->plans[i]);
    free(st->plans);
    for (int i = 0; i < HALF_SLOTS; i++)
        cudaFree(st->half[i]);
    for (int i = 0; i < 2; i++) {
        if (st->slot_free[i])
            cudaEventDestroy(st->slot_free[i]);
        if (st->slot_ready[i])
            cudaEventDestroy(st->slot_ready[i]);
    }
    if (st->copy_stream)
        cudaStreamDestroy(st->copy_stream);
    drop_graphs(st);
    cudaFree(st->workspace);
    cudaFree(st->row_loss), cudaFree(st->row_correct), cudaFreeHost(st->host_loss), cudaFreeHost(st->host_correct);
    cudaFree(st->adam_scalars), cudaFreeHost(st->host_adam_scalars), cudaFree(st->blas_workspace);
    release_seq_kernels(st);
    if (st->dnn)
        cudnnDestroy(st->dnn);
    if (st->blas)
        cublasDestroy(st->blas);
    if (st->stream)
        cudaStreamDestroy(st->stream);
    free(st);
}

}  // extern "C"
