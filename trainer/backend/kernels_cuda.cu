/* kernels_cuda.cu - the CUDA backend's own kernels (grid-stride loops): ReLU, pooling, the residual
 * add, softmax cross-entropy with the loss read back, SGD and Adam, and the memory hooks. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

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

namespace {

/* ---------- elementwise kernels (grid-stride loops) ---------- */

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

/* One thread per output: the window's largest value and where it was (window_max). X: x's
 * element type, float or bf16 where its writer kept it in bf16 alone (as the poolings below). */
template <typename X>
__global__ void k_maxpool_forward(const X *x, float *y, int *argmax, size_t planes, int h, int w, int h_out,
                                  int w_out, int k, int stride, int pad)
{
    size_t total = planes * h_out * w_out;
    for (size_t o = blockIdx.x * (size_t)blockDim.x + threadIdx.x; o < total; o += (size_t)gridDim.x * blockDim.x) {
        size_t plane = o / ((size_t)h_out * w_out);
        int oy = (int)(o / w_out % h_out), ox = (int)(o % w_out);
        y[o] = window_max(x + plane * h * w, 1, h, w, oy, ox, k, stride, pad, &argmax[o]);
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
template <typename X>
__global__ void k_avgpool_forward(const X *x, float *y, size_t planes, int hw)
{
    for (size_t p = blockIdx.x * (size_t)blockDim.x + threadIdx.x; p < planes; p += (size_t)gridDim.x * blockDim.x) {
        double sum = 0;
        for (int i = 0; i < hw; i++)
            sum += as_float(x[p * hw + i]);
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
    unsigned blocks = blocks_for(planes * h_out * w_out);
    if (const __nv_bfloat16 *x16 = bf16_alone(st, x, planes * h * w))
        k_maxpool_forward<<<blocks, THREADS, 0, st->stream>>>(x16, y, argmax, planes, h, w, h_out, w_out, k, stride, pad);
    else
        k_maxpool_forward<<<blocks, THREADS, 0, st->stream>>>(x, y, argmax, planes, h, w, h_out, w_out, k, stride, pad);
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
    if (const __nv_bfloat16 *x16 = bf16_alone(st, x, (size_t)n * c * hw))
        k_avgpool_forward<<<blocks_for((size_t)n * c), THREADS, 0, st->stream>>>(x16, y, (size_t)n * c, hw);
    else
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
    bf16_shadow_release(state_of(s), p);
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

void dtrain_cuda::install_own_kernels(struct backend *table)
{
    table->alloc = cuda_alloc;
    table->release = cuda_release;
    table->zero = cuda_zero;
    table->relu_forward = cuda_relu_forward;
    table->relu_backward = cuda_relu_backward;
    table->maxpool_forward = cuda_maxpool_forward;
    table->maxpool_backward = cuda_maxpool_backward;
    table->avgpool_forward = cuda_avgpool_forward;
    table->avgpool_backward = cuda_avgpool_backward;
    table->add_forward = cuda_add_forward;
    table->add_backward = cuda_add_backward;
    table->softmax_xent = cuda_softmax_xent;
}

/* ---------- the optimizer and the deferred loss (backend_cuda.h) ---------- */

extern "C" {

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

double backend_cuda_deferred_loss(struct backend *be)
{
    cuda_state *st = state_of(be->state);
    int correct;
    return collect_loss(st, st->deferred_rows, &correct);
}

}  // extern "C"
