/* bn_cuda.cu - the CUDA backend's batch norm (NCHW, PyTorch's semantics, the CPU reference's
 * arithmetic in backend_ref.c), with what follows it in a ResNet fused in: the residual add and
 * the ReLU (struct bn_call).
 *
 * Why our own kernels and not cuDNN's: cuDNN's NCHW fp32 batch norm cannot add or apply a ReLU
 * (its fused modes need NHWC half precision), so conv-BN-add-ReLU read and wrote the activations in
 * three more passes each way, and batch norm with its elementwise ops was half a ResNet-50 step
 * (docs/PERFORMANCE.md). Here a training forward is two passes (the statistics; normalise, add, ReLU), a
 * backward two (the sums of dy; dx and the residual's gradient). Without a residual the backward
 * recomputes the ReLU's mask from x instead of reading y: the same float function of the same
 * saved values as the forward's (bn_value), so it is forward's mask to the bit; with one it reads
 * y (y > 0 exactly where the sum was). In bf16 mode the forward also writes y's bf16 copy and
 * the backward dx's, which the convolutions read instead of casting (bf16_cuda.cu's shadows).
 *
 * Each channel's sums run over n x hw values: a block per (channel, split of the batch), enough
 * splits to fill the GPU when channels are few, its partial sums in double (var = E[x^2] - mean^2
 * keeps its digits), then one thread per channel adds the splits. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>

extern "C" {
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
}
#include "trainer/backend/cuda_state.h"

using namespace dtrain_cuda;

namespace {

constexpr int SUM_THREADS = 256;   /* the statistics' blocks: whole warps, for the shuffles */

/* Batch norm's output before the residual and the ReLU, written once for both passes that need it. */
__device__ __forceinline__ float bn_value(float x, float mean, float scale, float beta)
{
    return __fmaf_rn(__fsub_rn(x, mean), scale, beta);
}

/* How backward finds where the ReLU passed dy. */
enum mask_kind { MASK_NONE, MASK_RECOMPUTED, MASK_FROM_Y };

/* dy as the batch norm saw it: zero where the fused ReLU's output was. */
__device__ __forceinline__ float bn_seen_dy(mask_kind mask, float dy, float y, float x, float mean, float scale,
                                            float beta)
{
    bool passed = mask == MASK_NONE || (mask == MASK_FROM_Y ? y > 0.0f : bn_value(x, mean, scale, beta) > 0.0f);
    return passed ? dy : 0.0f;
}

/* Both sums over the block, the result in thread 0. */
__device__ void block_sum2(double &a, double &b)
{
    __shared__ double part_a[32], part_b[32];
    for (int offset = 16; offset > 0; offset >>= 1) {
        a += __shfl_down_sync(0xffffffffu, a, offset);
        b += __shfl_down_sync(0xffffffffu, b, offset);
    }
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    if (lane == 0)
        part_a[warp] = a, part_b[warp] = b;
    __syncthreads();
    if (warp == 0) {
        a = lane < warps ? part_a[lane] : 0.0;
        b = lane < warps ? part_b[lane] : 0.0;
        for (int offset = 16; offset > 0; offset >>= 1) {
            a += __shfl_down_sync(0xffffffffu, a, offset);
            b += __shfl_down_sync(0xffffffffu, b, offset);
        }
    }
}

/* The samples [first, end) of split `split` of n. */
__device__ __forceinline__ void split_range(int n, int splits, int split, int *first, int *end)
{
    *first = (int)((long long)split * n / splits);
    *end = (int)((long long)(split + 1) * n / splits);
}

/* partial[(ch * splits + split) * 2 + {0, 1}]: the sums over the split's samples of channel ch
 * (a block per channel and split) of the two terms `terms(at, &a, &b)` gives for element at. */
template <typename Terms>
__device__ void partial_sums(int n, int c, int hw, int splits, double *partial, Terms terms)
{
    int ch = blockIdx.x, split = blockIdx.y, first, end;
    split_range(n, splits, split, &first, &end);
    unsigned span = (unsigned)(end - first) * (unsigned)hw;
    double sum_a = 0.0, sum_b = 0.0;
    /* flattened over (sample, position), so a 7x7 plane still keeps every thread busy */
    for (unsigned e = threadIdx.x; e < span; e += blockDim.x) {
        unsigned s = e / (unsigned)hw, j = e - s * (unsigned)hw;
        double a, b;
        terms(((size_t)(first + s) * c + ch) * hw + j, &a, &b);
        sum_a += a, sum_b += b;
    }
    block_sum2(sum_a, sum_b);
    if (threadIdx.x == 0)
        partial[(ch * splits + split) * 2] = sum_a, partial[(ch * splits + split) * 2 + 1] = sum_b;
}

/* The sums of x and of x^2. */
__global__ void k_partial_stats(const float *x, int n, int c, int hw, int splits, double *partial)
{
    partial_sums(n, c, hw, splits, partial, [=](size_t at, double *a, double *b) {
        *a = x[at], *b = (double)x[at] * x[at];
    });
}

/* Channel ch's two sums over its splits (partial_sums' layout). */
__device__ void sum_splits(const double *partial, int ch, int splits, double *a, double *b)
{
    *a = 0.0, *b = 0.0;
    for (int s = 0; s < splits; s++)
        *a += partial[(ch * splits + s) * 2], *b += partial[(ch * splits + s) * 2 + 1];
}

/* One thread a channel: the batch's mean and 1/std (saved for backward) and the running
 * statistics, as cpu_batchnorm_forward computes them. */
__global__ void k_finish_stats(const double *partial, int c, int splits, double count, float momentum, float eps,
                               float *running_mean, float *running_var, float *save_mean, float *save_invstd)
{
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c)
        return;
    double sum, sumsq;
    sum_splits(partial, ch, splits, &sum, &sumsq);
    double mean = sum / count, var = fmax(sumsq / count - mean * mean, 0.0);
    save_mean[ch] = (float)mean;
    save_invstd[ch] = (float)(1.0 / sqrt(var + eps));
    double unbiased = count > 1 ? var * count / (count - 1) : var;
    running_mean[ch] = (float)((1 - momentum) * running_mean[ch] + momentum * mean);
    running_var[ch] = (float)((1 - momentum) * running_var[ch] + momentum * unbiased);
}

/* Eval: the running statistics as a mean and 1/std. */
__global__ void k_running_stats(const float *running_mean, const float *running_var, int c, float eps, float *mean,
                                float *invstd)
{
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch < c)
        mean[ch] = running_mean[ch], invstd[ch] = (float)(1.0 / sqrt((double)running_var[ch] + eps));
}

/* A block a row (one sample's channel plane, row = sample x c + channel); y16 (bf16 mode, else
 * NULL): y's bf16 copy for the convolutions that read it. */
__global__ void k_normalise(const float *x, const float *residual, float *y, __nv_bfloat16 *y16, const float *mean,
                            const float *invstd, const float *gamma, const float *beta, int c, int hw, bool relu)
{
    size_t row = blockIdx.x;
    int ch = (int)(row % c);
    float m = mean[ch], scale = __fmul_rn(invstd[ch], gamma[ch]), b = beta[ch];
    size_t base = row * hw;
    for (int j = threadIdx.x; j < hw; j += blockDim.x) {
        float v = bn_value(x[base + j], m, scale, b);
        if (residual)
            v = __fadd_rn(v, residual[base + j]);
        v = relu && !(v > 0.0f) ? 0.0f : v;
        y[base + j] = v;
        if (y16)
            y16[base + j] = __float2bfloat16(v);
    }
}

/* The sums of dy and of dy (x - mean), dy masked by the ReLU. */
__global__ void k_partial_grads(const float *x, const float *y, const float *dy, const float *mean,
                                const float *invstd, const float *gamma, const float *beta, mask_kind mask, int n,
                                int c, int hw, int splits, double *partial)
{
    int ch = blockIdx.x;
    float m = mean[ch], scale = __fmul_rn(invstd[ch], gamma[ch]), b = beta[ch];
    partial_sums(n, c, hw, splits, partial, [=](size_t at, double *sum_dy, double *sum_dy_xmu) {
        float v = x[at], g = bn_seen_dy(mask, dy[at], mask == MASK_FROM_Y ? y[at] : 0.0f, v, m, scale, b);
        *sum_dy = g, *sum_dy_xmu = (double)g * (v - m);
    });
}

/* One thread a channel: gamma's and beta's gradients (added to) and dx's coefficients,
 * dx = k (dy - mean(dy) - (x - mean) invstd mean(dy xhat)): coeff[ch * 3 + {0, 1, 2}] = k,
 * mean(dy), invstd mean(dy xhat). */
__global__ void k_finish_grads(const double *partial, int c, int splits, double count, const float *gamma,
                               const float *invstd, float *dgamma, float *dbeta, float *coeff)
{
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c)
        return;
    double sum_dy, sum_dy_xmu;
    sum_splits(partial, ch, splits, &sum_dy, &sum_dy_xmu);
    double sum_dy_xhat = sum_dy_xmu * invstd[ch];
    dgamma[ch] += (float)sum_dy_xhat;
    dbeta[ch] += (float)sum_dy;
    coeff[ch * 3] = gamma[ch] * invstd[ch];
    coeff[ch * 3 + 1] = (float)(sum_dy / count);
    coeff[ch * 3 + 2] = invstd[ch] * (float)(sum_dy_xhat / count);
}

/* dx (and the residual's gradient, the masked dy, where dresidual is given), a block a row; dx16
 * (bf16 mode, dx overwritten, else NULL): dx's bf16 copy for the convolution that made x. */
__global__ void k_input_grads(const float *x, const float *y, const float *dy, float *dx, __nv_bfloat16 *dx16,
                              float *dresidual, const float *mean, const float *invstd, const float *gamma, const float *beta,
                              const float *coeff, mask_kind mask, int c, int hw, bool accumulate,
                              bool accumulate_residual)
{
    size_t row = blockIdx.x;
    int ch = (int)(row % c);
    float m = mean[ch], scale = __fmul_rn(invstd[ch], gamma[ch]), b = beta[ch];
    float k = coeff[ch * 3], mean_dy = coeff[ch * 3 + 1], xmu_scale = coeff[ch * 3 + 2];
    size_t base = row * hw;
    for (int j = threadIdx.x; j < hw; j += blockDim.x) {
        size_t at = base + j;
        float v = x[at], g = bn_seen_dy(mask, dy[at], mask == MASK_FROM_Y ? y[at] : 0.0f, v, m, scale, b);
        float d = k * (g - mean_dy - (v - m) * xmu_scale);
        if (dx)
            dx[at] = accumulate ? dx[at] + d : d;
        if (dx16)
            dx16[at] = __float2bfloat16(d);
        if (dresidual)
            dresidual[at] = accumulate_residual ? dresidual[at] + g : g;
    }
}

/* ---------- launching them ---------- */

/* Threads for a block a row: whole warps, up to 256, no more than the plane needs (64 for 7x7). */
unsigned row_threads(int hw)
{
    int warps = (hw + 31) / 32;
    return 32u * (unsigned)(warps < 8 ? warps : 8);
}

/* Splits of the batch per channel: about eight blocks per multiprocessor in all. */
int splits_for(cuda_state *st, int n, int c)
{
    if (st->multiprocessors == 0 &&
        cudaDeviceGetAttribute(&st->multiprocessors, cudaDevAttrMultiProcessorCount, st->device) != cudaSuccess) {
        cudaGetLastError();
        st->multiprocessors = 1;
    }
    int splits = (8 * st->multiprocessors + c - 1) / c;
    return splits < 1 ? 1 : splits > n ? n : splits;
}

/* Room for the partial sums of c channels in `splits` and 3 coefficients a channel. */
bool grow_bn_scratch(cuda_state *st, int c, int splits)
{
    return grow_device(st, &st->bn_partial, &st->bn_partial_cap, (size_t)c * splits * 2, "batch norm's sums") &&
           grow_device(st, &st->bn_coeff, &st->bn_coeff_cap, (size_t)c * 3, "batch norm's coefficients");
}

unsigned channel_blocks(int c) { return (unsigned)((c + THREADS - 1) / THREADS); }

void cuda_batchnorm_forward(void *s, const struct bn_call *bn, bool training, float momentum, float eps)
{
    cuda_state *st = state_of(s);
    int n = bn->n, c = bn->c, hw = bn->hw, splits = splits_for(st, n, c);
    if (!grow_bn_scratch(st, c, splits))
        return;
    const float *mean = bn->save_mean, *invstd = bn->save_invstd;
    if (training) {
        k_partial_stats<<<dim3((unsigned)c, (unsigned)splits), SUM_THREADS, 0, st->stream>>>(bn->x, n, c, hw, splits,
                                                                                               st->bn_partial);
        k_finish_stats<<<channel_blocks(c), THREADS, 0, st->stream>>>(st->bn_partial, c, splits, (double)n * hw,
                                                                      momentum, eps, bn->running_mean,
                                                                      bn->running_var, bn->save_mean, bn->save_invstd);
    } else {   /* the saved statistics belong to the last training forward: eval's go in scratch */
        float *eval_mean = st->bn_coeff, *eval_invstd = st->bn_coeff + c;
        k_running_stats<<<channel_blocks(c), THREADS, 0, st->stream>>>(bn->running_mean, bn->running_var, c, eps,
                                                                       eval_mean, eval_invstd);
        mean = eval_mean, invstd = eval_invstd;
    }
    __nv_bfloat16 *y16 = bf16_shadow_to_write(st, bn->y, (size_t)n * c * hw);
    k_normalise<<<(unsigned)((size_t)n * c), row_threads(hw), 0, st->stream>>>(
        bn->x, bn->residual, bn->y, y16, mean, invstd, bn->gamma, bn->beta, c, hw, bn->relu);
    launched(st, "batch norm forward");
}

void cuda_batchnorm_backward(void *s, const struct bn_call *bn, const float *dy, float *dx, float *dgamma,
                             float *dbeta, float *dresidual, bool accumulate, bool accumulate_residual)
{
    cuda_state *st = state_of(s);
    int n = bn->n, c = bn->c, hw = bn->hw, splits = splits_for(st, n, c);
    if (!grow_bn_scratch(st, c, splits))
        return;
    /* see the top of the file: recomputed where it can be, else read from y */
    mask_kind mask = !bn->relu ? MASK_NONE : bn->residual ? MASK_FROM_Y : MASK_RECOMPUTED;
    k_partial_grads<<<dim3((unsigned)c, (unsigned)splits), SUM_THREADS, 0, st->stream>>>(
        bn->x, bn->y, dy, bn->save_mean, bn->save_invstd, bn->gamma, bn->beta, mask, n, c, hw, splits, st->bn_partial);
    k_finish_grads<<<channel_blocks(c), THREADS, 0, st->stream>>>(st->bn_partial, c, splits, (double)n * hw, bn->gamma,
                                                                  bn->save_invstd, dgamma, dbeta, st->bn_coeff);
    /* dx's copy only where this writes all of dx: added to, it holds other readers' sums too */
    __nv_bfloat16 *dx16 = nullptr;
    if (dx && !accumulate)
        dx16 = bf16_shadow_to_write(st, dx, (size_t)n * c * hw);
    else if (dx)
        bf16_shadow_forget(st, dx);
    if (dx || dresidual)
        k_input_grads<<<(unsigned)((size_t)n * c), row_threads(hw), 0, st->stream>>>(
            bn->x, bn->y, dy, dx, dx16, dresidual, bn->save_mean, bn->save_invstd, bn->gamma, bn->beta, st->bn_coeff, mask, c,
            hw, accumulate, accumulate_residual);
    launched(st, "batch norm backward");
}

}  // namespace

void dtrain_cuda::install_batchnorm(struct backend *table)
{
    table->batchnorm_forward = cuda_batchnorm_forward;
    table->batchnorm_backward = cuda_batchnorm_backward;
}

void dtrain_cuda::release_batchnorm(cuda_state *st)
{
    cudaFree(st->bn_partial);
    cudaFree(st->bn_coeff);
}
