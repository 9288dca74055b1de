/* bn_cuda.cu - the CUDA backend's batch norm (NCHW or channels-last NHWC, PyTorch's semantics, the CPU reference's
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
 * the backward dx's, which the convolutions read instead of casting (bf16_cuda.cu's shadows), and
 * x, a convolution's output, is read from the bf16 copy the convolution left alone (the fp32
 * tensor unwritten: conv_shape's y_for_batchnorm). Where every reader of y takes bf16 (bn_call's
 * y_for_bf16_readers: convolutions, a later batch norm's residual, this one's mask), y is written
 * as that copy alone, and so is dx where x came alone, and dy comes alone from a convolution
 * that is y's one reader (conv_shape's dx_for_batchnorm): the elementwise passes are memory-bound,
 * and each fp32 tensor not written or read is 4 bytes an element. Which form x, y and the
 * residual are in is asked of the shadows (bf16_alone) at each call: the kernels are templates
 * over their element types.
 *
 * Each channel's sums run over n x hw values: a block per (channel, split of the batch), enough
 * splits to fill the GPU when channels are few, its partial sums in double (var = E[x^2] - mean^2
 * keeps its digits), then one thread per channel adds the splits. Channels-last (NHWC): a block
 * per (32 channels, split of the n x hw rows), a warp reading 32 neighbouring channels of a row,
 * the same partial sums after; the elementwise passes the same tiles, a thread a channel. */
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
 * (a block per channel and split) of the two terms `terms_of(ch)(at, &a, &b)` gives for element
 * at (terms_of reads the channel's coefficients once). */
template <typename TermsOf>
__device__ void partial_sums(int n, int c, int hw, int splits, double *partial, TermsOf terms_of)
{
    int ch = blockIdx.x, split = blockIdx.y, first, end;
    split_range(n, splits, split, &first, &end);
    auto terms = terms_of(ch);
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

/* Channels-last tiles: CL_CHANNELS neighbouring channels (a warp) x CL_ROWS rows a block. */
constexpr int CL_CHANNELS = 32, CL_ROWS = SUM_THREADS / CL_CHANNELS;

/* The same sums over NHWC: a block per (tile of channels, split of the rows), a thread a channel
 * and every CL_ROWS-th row of the split, then the block's rows added in shared memory. */
template <typename TermsOf>
__device__ void partial_sums_cl(int rows, int c, int splits, double *partial, TermsOf terms_of)
{
    __shared__ double part[CL_ROWS][CL_CHANNELS][2];
    int lane = threadIdx.x % CL_CHANNELS, group = threadIdx.x / CL_CHANNELS;
    int ch = blockIdx.x * CL_CHANNELS + lane, split = blockIdx.y, first, end;
    split_range(rows, splits, split, &first, &end);
    double sum_a = 0.0, sum_b = 0.0;
    if (ch < c) {
        auto terms = terms_of(ch);
        for (int r = first + group; r < end; r += CL_ROWS) {
            double a, b;
            terms((size_t)r * c + ch, &a, &b);
            sum_a += a, sum_b += b;
        }
    }
    part[group][lane][0] = sum_a, part[group][lane][1] = sum_b;
    __syncthreads();
    if (group == 0 && ch < c) {
        for (int g = 1; g < CL_ROWS; g++)
            sum_a += part[g][lane][0], sum_b += part[g][lane][1];
        partial[(ch * splits + split) * 2] = sum_a, partial[(ch * splits + split) * 2 + 1] = sum_b;
    }
}

/* The sums of x and of x^2. X: float, or __nv_bfloat16 where x is a convolution's bf16 output. */
template <bool CL, typename X>
__global__ void k_partial_stats(const X *x, int n, int c, int hw, int splits, double *partial)
{
    auto terms_of = [=](int) {
        return [=](size_t at, double *a, double *b) {
            float v = as_float(x[at]);
            *a = v, *b = (double)v * v;
        };
    };
    if (CL)
        partial_sums_cl(n * hw, c, splits, partial, terms_of);
    else
        partial_sums(n, c, hw, splits, partial, terms_of);
}

/* Channel ch's two sums over its splits (partial_sums' layout), by the 32 lanes of a warp, every
 * lane getting them: a thread alone walked up to 528 splits one after another (channels-last with
 * 64 channels), 38 us for what is a per-channel finish. */
__device__ void sum_splits(const double *partial, int ch, int splits, double *a, double *b)
{
    double sum_a = 0.0, sum_b = 0.0;
    for (int s = (int)threadIdx.x % 32; s < splits; s += 32)
        sum_a += partial[(ch * splits + s) * 2], sum_b += partial[(ch * splits + s) * 2 + 1];
    *a = warp_sum(sum_a), *b = warp_sum(sum_b);
}

/* A warp a channel (its first lane writes): the batch's mean and 1/std (saved for backward) and
 * the running statistics, as cpu_batchnorm_forward computes them. */
__global__ void k_finish_stats(const double *partial, int c, int splits, double count, float momentum, float eps,
                               float *running_mean, float *running_var, float *save_mean, float *save_invstd)
{
    int ch = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    if (ch >= c)
        return;   /* the whole warp */
    double sum, sumsq;
    sum_splits(partial, ch, splits, &sum, &sumsq);
    if (threadIdx.x % 32 != 0)
        return;
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

/* What the forward writes at element at of channel ch (coefficients m, scale, b): y (NULL where
 * y is kept in bf16 alone), and y16 (bf16 mode, else NULL), y's bf16 copy for the convolutions that
 * read it. X and R, x's and the residual's element types: float, or bf16 where their writers left
 * them in bf16 alone. */
template <typename X, typename R>
struct bn_output {
    const X *x;
    const R *residual;
    float *y;
    __nv_bfloat16 *y16;
    bool relu;
    __device__ __forceinline__ void at(size_t i, float m, float scale, float b) const
    {
        float v = bn_value(as_float(x[i]), m, scale, b);
        if (residual)
            v = __fadd_rn(v, as_float(residual[i]));
        v = relu && !(v > 0.0f) ? 0.0f : v;
        if (y)
            y[i] = v;
        if (y16)
            y16[i] = __float2bfloat16(v);
    }
};

/* A block a row (one sample's channel plane, row = sample x c + channel). */
template <typename X, typename R>
__global__ void k_normalise(bn_output<X, R> out, const float *mean, const float *invstd, const float *gamma,
                            const float *beta, int c, int hw)
{
    size_t row = blockIdx.x;
    int ch = (int)(row % c);
    float m = mean[ch], scale = __fmul_rn(invstd[ch], gamma[ch]), b = beta[ch];
    for (int j = threadIdx.x; j < hw; j += blockDim.x)
        out.at(row * hw + j, m, scale, b);
}

/* Channels-last: a thread a channel of every (gridDim.y x CL_ROWS)-th row. */
template <typename X, typename R>
__global__ void k_normalise_cl(bn_output<X, R> out, const float *mean, const float *invstd, const float *gamma,
                               const float *beta, int c, int rows)
{
    int ch = blockIdx.x * CL_CHANNELS + (int)threadIdx.x % CL_CHANNELS;
    if (ch >= c)
        return;
    float m = mean[ch], scale = __fmul_rn(invstd[ch], gamma[ch]), b = beta[ch];
    for (int r = blockIdx.y * CL_ROWS + (int)threadIdx.x / CL_CHANNELS; r < rows; r += gridDim.y * CL_ROWS)
        out.at((size_t)r * c + ch, m, scale, b);
}

/* The sums of dy and of dy (x - mean), dy masked by the ReLU. Y and D, y's and dy's element types:
 * float, or bf16 where they were written in bf16 alone (then bf16(v) > 0 where v > 0, but for v
 * below bf16's smallest subnormal, which y's readers saw as 0 too). */
template <bool CL, typename X, typename Y, typename D>
__global__ void k_partial_grads(const X *x, const Y *y, const D *dy, const float *mean,
                                const float *invstd, const float *gamma, const float *beta, mask_kind mask, int n,
                                int c, int hw, int splits, double *partial)
{
    auto terms_of = [=](int ch) {
        float m = mean[ch], scale = __fmul_rn(invstd[ch], gamma[ch]), b = beta[ch];
        return [=](size_t at, double *sum_dy, double *sum_dy_xmu) {
            float v = as_float(x[at]);
            float g = bn_seen_dy(mask, as_float(dy[at]), mask == MASK_FROM_Y ? as_float(y[at]) : 0.0f, v, m, scale, b);
            *sum_dy = g, *sum_dy_xmu = (double)g * (v - m);
        };
    };
    if (CL)
        partial_sums_cl(n * hw, c, splits, partial, terms_of);
    else
        partial_sums(n, c, hw, splits, partial, terms_of);
}

/* A warp a channel (its first lane writes): gamma's and beta's gradients (added to) and dx's coefficients,
 * dx = k (dy - mean(dy) - (x - mean) invstd mean(dy xhat)): coeff[ch * 3 + {0, 1, 2}] = k,
 * mean(dy), invstd mean(dy xhat). */
__global__ void k_finish_grads(const double *partial, int c, int splits, double count, const float *gamma,
                               const float *invstd, float *dgamma, float *dbeta, float *coeff)
{
    int ch = (int)((blockIdx.x * blockDim.x + threadIdx.x) / 32);
    if (ch >= c)
        return;   /* the whole warp */
    double sum_dy, sum_dy_xmu;
    sum_splits(partial, ch, splits, &sum_dy, &sum_dy_xmu);
    if (threadIdx.x % 32 != 0)
        return;
    double sum_dy_xhat = sum_dy_xmu * invstd[ch];
    dgamma[ch] += (float)sum_dy_xhat;
    dbeta[ch] += (float)sum_dy;
    coeff[ch * 3] = gamma[ch] * invstd[ch];
    coeff[ch * 3 + 1] = (float)(sum_dy / count);
    coeff[ch * 3 + 2] = invstd[ch] * (float)(sum_dy_xhat / count);
}

/* What the backward writes at element at of channel ch: dx (NULL where dx is kept in bf16 alone)
 * and dx16 (dx's bf16 copy for the convolution that made x, in bf16 mode where dx is overwritten,
 * else NULL), and the residual's gradient, the masked dy, where dresidual is given. */
template <typename X, typename Y, typename D>
struct bn_input_grads {
    const X *x;
    const Y *y;
    const D *dy;
    float *dx;
    __nv_bfloat16 *dx16;
    float *dresidual;
    const float *mean, *invstd, *gamma, *beta, *coeff;
    mask_kind mask;
    bool accumulate, accumulate_residual;
    struct channel {   /* channel ch's coefficients, read once for all its elements */
        float m, scale, b, k, mean_dy, xmu_scale;
    };
    __device__ __forceinline__ channel of(int ch) const
    {
        return channel{mean[ch], __fmul_rn(invstd[ch], gamma[ch]), beta[ch], coeff[ch * 3], coeff[ch * 3 + 1],
                       coeff[ch * 3 + 2]};
    }
    __device__ __forceinline__ void at(size_t i, const channel &k) const
    {
        float v = as_float(x[i]);
        float g = bn_seen_dy(mask, as_float(dy[i]), mask == MASK_FROM_Y ? as_float(y[i]) : 0.0f, v, k.m, k.scale, k.b);
        float d = k.k * (g - k.mean_dy - (v - k.m) * k.xmu_scale);
        if (dx)
            dx[i] = accumulate ? dx[i] + d : d;
        if (dx16)
            dx16[i] = __float2bfloat16(d);
        if (dresidual)
            dresidual[i] = accumulate_residual ? dresidual[i] + g : g;
    }
};

/* A block a row. */
template <typename X, typename Y, typename D>
__global__ void k_input_grads(bn_input_grads<X, Y, D> grads, int c, int hw)
{
    size_t row = blockIdx.x;
    typename bn_input_grads<X, Y, D>::channel k = grads.of((int)(row % c));
    for (int j = threadIdx.x; j < hw; j += blockDim.x)
        grads.at(row * hw + j, k);
}

/* Channels-last: as k_normalise_cl. */
template <typename X, typename Y, typename D>
__global__ void k_input_grads_cl(bn_input_grads<X, Y, D> grads, int c, int rows)
{
    int ch = blockIdx.x * CL_CHANNELS + (int)threadIdx.x % CL_CHANNELS;
    if (ch >= c)
        return;
    typename bn_input_grads<X, Y, D>::channel k = grads.of(ch);
    for (int r = blockIdx.y * CL_ROWS + (int)threadIdx.x / CL_CHANNELS; r < rows; r += gridDim.y * CL_ROWS)
        grads.at((size_t)r * c + ch, k);
}

/* ---------- launching them ---------- */

/* Threads for a block a row: whole warps, up to 256, no more than the plane needs (64 for 7x7). */
unsigned row_threads(int hw)
{
    int warps = (hw + 31) / 32;
    return 32u * (unsigned)(warps < 8 ? warps : 8);
}

/* How a batch norm's passes spread over the GPU: the sums' grid (channels or channel tiles x
 * splits, about eight blocks per multiprocessor in all) and the elementwise passes' grid and
 * block. */
struct bn_grid {
    dim3 sums;
    int splits;
    dim3 elementwise;
    unsigned threads;
};

bn_grid grid_for(cuda_state *st, int n, int c, int hw)
{
    if (st->multiprocessors == 0 &&
        cudaDeviceGetAttribute(&st->multiprocessors, cudaDevAttrMultiProcessorCount, st->device) != cudaSuccess) {
        cudaGetLastError();
        st->multiprocessors = 1;
    }
    long blocks = 8L * st->multiprocessors;
    if (!st->channels_last) {   /* a block per (channel, split of the samples); a block a plane */
        long splits = (blocks + c - 1) / c;
        splits = splits < 1 ? 1 : splits > n ? n : splits;
        return bn_grid{dim3((unsigned)c, (unsigned)splits), (int)splits, dim3((unsigned)((size_t)n * c)), row_threads(hw)};
    }
    long tiles = (c + CL_CHANNELS - 1) / CL_CHANNELS, row_groups = ((long)n * hw + CL_ROWS - 1) / CL_ROWS;
    long splits = (blocks + tiles - 1) / tiles;
    splits = splits < 1 ? 1 : splits > row_groups ? row_groups : splits;
    long spread = row_groups < 65535 ? row_groups : 65535;
    return bn_grid{dim3((unsigned)tiles, (unsigned)splits), (int)splits, dim3((unsigned)tiles, (unsigned)spread),
                   (unsigned)SUM_THREADS};
}

/* Room for the partial sums of c channels in `splits` and 3 coefficients a channel. */
bool grow_bn_scratch(cuda_state *st, int c, int splits)
{
    return grow_device(st, &st->bn_partial, &st->bn_partial_cap, (size_t)c * splits * 2, "batch norm's sums") &&
           grow_device(st, &st->bn_coeff, &st->bn_coeff_cap, (size_t)c * 3, "batch norm's coefficients");
}

unsigned channel_blocks(int c) { return (unsigned)((c + THREADS - 1) / THREADS); }   /* a thread a channel */
unsigned warp_blocks(int c) { return (unsigned)(((size_t)c * 32 + THREADS - 1) / THREADS); }   /* a warp a channel */

/* The elementwise pass: y (in bf16 alone where every reader takes bf16: bn_call's
 * y_for_bf16_readers) from x and the residual as their writers left them (X, R). */
template <typename X, typename R>
void normalise(cuda_state *st, const struct bn_call *bn, const X *x, const R *residual, const float *mean,
               const float *invstd, const bn_grid &grid)
{
    int c = bn->c;
    size_t count = (size_t)bn->n * c * bn->hw;
    __nv_bfloat16 *y_alone = bn->y_for_bf16_readers ? bf16_alone_to_write(st, bn->y, count) : nullptr;
    bn_output<X, R> out{x, residual, y_alone ? nullptr : bn->y,
                        y_alone ? y_alone : bf16_shadow_to_write(st, bn->y, count), bn->relu};
    if (st->channels_last)
        k_normalise_cl<<<grid.elementwise, grid.threads, 0, st->stream>>>(out, mean, invstd, bn->gamma, bn->beta, c,
                                                                          bn->n * bn->hw);
    else
        k_normalise<<<grid.elementwise, grid.threads, 0, st->stream>>>(out, mean, invstd, bn->gamma, bn->beta, c,
                                                                       bn->hw);
}

/* The forward's passes over x of element type X (fp32, or a convolution's bf16 output). */
template <typename X>
void forward_passes(cuda_state *st, const struct bn_call *bn, const X *x, bool training, float momentum, float eps)
{
    int n = bn->n, c = bn->c, hw = bn->hw;
    bn_grid grid = grid_for(st, n, c, hw);
    if (!grow_bn_scratch(st, c, grid.splits))
        return;
    const float *mean = bn->save_mean, *invstd = bn->save_invstd;
    if (training) {
        (st->channels_last ? k_partial_stats<true, X> : k_partial_stats<false, X>)<<<grid.sums, SUM_THREADS, 0,
                                                                                     st->stream>>>(
            x, n, c, hw, grid.splits, st->bn_partial);
        k_finish_stats<<<warp_blocks(c), THREADS, 0, st->stream>>>(st->bn_partial, c, grid.splits, (double)n * hw,
                                                                      momentum, eps, bn->running_mean,
                                                                      bn->running_var, bn->save_mean, bn->save_invstd);
    } else {   /* the saved statistics belong to the last training forward: eval's go in scratch */
        float *eval_mean = st->bn_coeff, *eval_invstd = st->bn_coeff + c;
        k_running_stats<<<channel_blocks(c), THREADS, 0, st->stream>>>(bn->running_mean, bn->running_var, c, eps,
                                                                       eval_mean, eval_invstd);
        mean = eval_mean, invstd = eval_invstd;
    }
    const __nv_bfloat16 *residual16 = bn->residual ? bf16_alone(st, bn->residual, (size_t)n * c * hw) : nullptr;
    if (residual16)
        normalise(st, bn, x, residual16, mean, invstd, grid);
    else
        normalise(st, bn, x, bn->residual, mean, invstd, grid);
    launched(st, "batch norm forward");
}

/* x as the convolution that made it left it: its bf16 copy alone (conv_shape's y_for_batchnorm),
 * or fp32. */
void cuda_batchnorm_forward(void *s, const struct bn_call *bn, bool training, float momentum, float eps)
{
    cuda_state *st = state_of(s);
    if (const __nv_bfloat16 *x16 = bf16_alone(st, bn->x, (size_t)bn->n * bn->c * bn->hw))
        forward_passes(st, bn, x16, training, momentum, eps);
    else
        forward_passes(st, bn, bn->x, training, momentum, eps);
}

/* What backward is given to write (the table's batchnorm_backward's arguments but dy). */
struct bn_grads_call {
    float *dx, *dgamma, *dbeta, *dresidual;
    bool accumulate, accumulate_residual;
};

/* The backward's passes over x, y and dy of element types X, Y and D (fp32, or bf16 alone). */
template <typename X, typename Y, typename D>
void backward_passes(cuda_state *st, const struct bn_call *bn, const X *x, const Y *y, const D *dy,
                     const bn_grads_call &g)
{
    int n = bn->n, c = bn->c, hw = bn->hw;
    bool cl = st->channels_last;
    bn_grid grid = grid_for(st, n, c, hw);
    if (!grow_bn_scratch(st, c, grid.splits))
        return;
    /* see the top of the file: recomputed where it can be, else read from y */
    mask_kind mask = !bn->relu ? MASK_NONE : bn->residual ? MASK_FROM_Y : MASK_RECOMPUTED;
    (cl ? k_partial_grads<true, X, Y, D> : k_partial_grads<false, X, Y, D>)<<<grid.sums, SUM_THREADS, 0, st->stream>>>(
        x, y, dy, bn->save_mean, bn->save_invstd, bn->gamma, bn->beta, mask, n, c, hw, grid.splits,
        st->bn_partial);
    k_finish_grads<<<warp_blocks(c), THREADS, 0, st->stream>>>(st->bn_partial, c, grid.splits, (double)n * hw,
                                                                  bn->gamma, bn->save_invstd, g.dgamma, g.dbeta,
                                                                  st->bn_coeff);
    /* dx's copy only where this writes all of dx: added to, it holds other readers' sums too. And
     * dx in that copy alone where x was a convolution's output in bf16 alone: dx's one reader is
     * then that convolution's backward, which reads the copy (a convolution with a bias, whose
     * gradient reads dy in fp32, writes its output in fp32) */
    size_t count = (size_t)n * c * hw;
    float *dx = g.dx;
    __nv_bfloat16 *dx16 = nullptr, *dx_alone = nullptr;
    if (dx && !g.accumulate && bf16_alone(st, bn->x, count))
        dx_alone = bf16_alone_to_write(st, dx, count);
    if (dx && !g.accumulate && !dx_alone)
        dx16 = bf16_shadow_to_write(st, dx, count);
    else if (dx && !dx_alone)
        bf16_shadow_forget(st, dx);
    bn_input_grads<X, Y, D> grads{x, y, dy, dx_alone ? nullptr : dx, dx_alone ? dx_alone : dx16, g.dresidual,
                                  bn->save_mean, bn->save_invstd, bn->gamma, bn->beta, st->bn_coeff, mask,
                                  g.accumulate, g.accumulate_residual};
    if (dx || g.dresidual) {
        if (cl)
            k_input_grads_cl<<<grid.elementwise, grid.threads, 0, st->stream>>>(grads, c, n * hw);
        else
            k_input_grads<<<grid.elementwise, grid.threads, 0, st->stream>>>(grads, c, hw);
    }
    launched(st, "batch norm backward");
}

/* x, y and dy as their writers left them: fp32, or bf16 alone (x a convolution's output; y this
 * batch norm's own where all its readers take bf16, read for the ReLU's mask; dy the input
 * gradient of a convolution that reads y alone). */
void cuda_batchnorm_backward(void *s, const struct bn_call *bn, const float *dy, float *dx, float *dgamma,
                             float *dbeta, float *dresidual, bool accumulate, bool accumulate_residual)
{
    cuda_state *st = state_of(s);
    size_t count = (size_t)bn->n * bn->c * bn->hw;
    bn_grads_call g{dx, dgamma, dbeta, dresidual, accumulate, accumulate_residual};
    const __nv_bfloat16 *x16 = bf16_alone(st, bn->x, count), *y16 = bf16_alone(st, bn->y, count);
    const __nv_bfloat16 *dy16 = bf16_alone(st, dy, count);
    auto with_x_y = [&](auto x, auto y) {
        if (dy16)
            backward_passes(st, bn, x, y, dy16, g);
        else
            backward_passes(st, bn, x, y, dy, g);
    };
    auto with_x = [&](auto x) {
        if (y16)
            with_x_y(x, y16);
        else
            with_x_y(x, static_cast<const float *>(bn->y));
    };
    if (x16)
        with_x(x16);
    else
        with_x(bn->x);
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
