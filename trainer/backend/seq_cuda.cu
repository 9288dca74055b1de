/* seq_cuda.cu - the language models' kernels of backend.h on the GPU: embeddings, layer norm (a
 * block per token), erf GELU, tanh, self-attention (every head of every sample in one cuBLAS
 * strided-batched GEMM a product, head-major copies of Q, K, V made for it, a
 * masked softmax of our own, BERT's dropout of the weights drawn by the same counter-based hash as
 * the CPU), the first token, dropout and the masked-LM loss. seq_kernels.c is the specification;
 * tests/test_cuda.c holds each of these against it where a GPU exists. Conventions as
 * backend_cuda.cu: device pointers, one stream, the first failure kept. */
#include <cmath>
#include <cstdint>

#include "trainer/backend/cuda_state.h"

namespace dtrain_cuda {
namespace {

/* seq_noise of backend.h, for the device: the same splitmix64, so the GPU drops what the CPU drops. */
__device__ float d_noise(uint64_t noise, long sample, size_t element)
{
    uint64_t z = noise ^ ((uint64_t)sample * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)element * 0xbf58476d1ce4e5b9ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* 1 / sqrt(2) and 2 / sqrt(pi): math.h's M_SQRT1_2 and M_2_SQRTPI, which strict C++17 hides. */
constexpr double SQRT1_2 = 0.70710678118654752440, TWO_OVER_SQRTPI = 1.12837916709551257390;

#define GRID_STRIDE(i, count) \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (count); i += (size_t)gridDim.x * blockDim.x)

__global__ void k_embed_forward(const float *tokens, const float *word, const float *pos, const float *seg, float *y,
                                size_t rows, int T, int H)
{
    GRID_STRIDE(i, rows * H) {
        size_t r = i / H;
        int h = (int)(i % H);
        const float *tok = tokens + r * SEQ_TOKEN_FIELDS;
        y[i] = word[(size_t)tok[0] * H + h] + pos[(r % T) * H + h] + seg[(size_t)tok[1] * H + h];
    }
}

/* Tokens share table rows: atomic adds (the order of the sums is the GPU's, within float rounding). */
__global__ void k_embed_backward(const float *tokens, const float *dy, float *dword, float *dpos, float *dseg,
                                 size_t rows, int T, int H)
{
    GRID_STRIDE(i, rows * H) {
        size_t r = i / H;
        int h = (int)(i % H);
        const float *tok = tokens + r * SEQ_TOKEN_FIELDS;
        atomicAdd(&dword[(size_t)tok[0] * H + h], dy[i]);
        atomicAdd(&dpos[(r % T) * H + h], dy[i]);
        atomicAdd(&dseg[(size_t)tok[1] * H + h], dy[i]);
    }
}

/* The block's reduction of v by `combine` (every thread gets it); blockDim.x a power of two up
 * to THREADS. */
template <typename Combine>
__device__ double block_reduce(double v, double *shared, Combine combine)
{
    shared[threadIdx.x] = v;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half)
            shared[threadIdx.x] = combine(shared[threadIdx.x], shared[threadIdx.x + half]);
        __syncthreads();
    }
    double result = shared[0];
    __syncthreads();
    return result;
}

__device__ double block_sum(double v, double *shared)
{
    return block_reduce(v, shared, [](double a, double b) { return a + b; });
}

__device__ double block_max(double v, double *shared)
{
    return block_reduce(v, shared, [](double a, double b) { return fmax(a, b); });
}

/* The warp's sum and largest value (every lane gets them): all 32 lanes must call. */
__device__ double warp_sum(double v)
{
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, lane_mask);
    return v;
}

__device__ float warp_max(float v)
{
    for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, lane_mask));
    return v;
}

/* A loop over rows with a warp a row: every lane of a warp takes the same rows. */
#define WARP_STRIDE(row, rows)                                                                       \
    for (size_t row = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; row < (rows);           \
         row += (size_t)gridDim.x * blockDim.x / 32)

/* A block per token: mean and biased variance in double, as the reference. */
__global__ void k_layernorm_forward(const float *x, const float *gamma, const float *beta, float *save_mean,
                                    float *save_invstd, float *y, int H, float eps)
{
    __shared__ double shared[THREADS];
    const float *xr = x + (size_t)blockIdx.x * H;
    double sum = 0;
    for (int h = threadIdx.x; h < H; h += blockDim.x)
        sum += xr[h];
    double mean = block_sum(sum, shared) / H, sq = 0;
    for (int h = threadIdx.x; h < H; h += blockDim.x)
        sq += (xr[h] - mean) * (xr[h] - mean);
    double invstd = 1.0 / sqrt(block_sum(sq, shared) / H + eps);
    if (threadIdx.x == 0)
        save_mean[blockIdx.x] = (float)mean, save_invstd[blockIdx.x] = (float)invstd;
    for (int h = threadIdx.x; h < H; h += blockDim.x)
        y[(size_t)blockIdx.x * H + h] = (float)((xr[h] - mean) * invstd * gamma[h] + beta[h]);
}

/* A block per token: dx = invstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma; gamma's and
 * beta's gradients added atomically. */
__global__ void k_layernorm_backward(const float *x, const float *gamma, const float *save_mean,
                                     const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta,
                                     int H, bool accumulate)
{
    __shared__ double shared[THREADS];
    size_t at = (size_t)blockIdx.x * H;
    double mean = save_mean[blockIdx.x], invstd = save_invstd[blockIdx.x], g_sum = 0, gx_sum = 0;
    for (int h = threadIdx.x; h < H; h += blockDim.x) {
        double xhat = (x[at + h] - mean) * invstd, g = (double)dy[at + h] * gamma[h];
        g_sum += g, gx_sum += g * xhat;
        atomicAdd(&dgamma[h], (float)(dy[at + h] * xhat));
        atomicAdd(&dbeta[h], dy[at + h]);
    }
    g_sum = block_sum(g_sum, shared) / H;
    gx_sum = block_sum(gx_sum, shared) / H;
    if (!dx)
        return;
    for (int h = threadIdx.x; h < H; h += blockDim.x) {
        double xhat = (x[at + h] - mean) * invstd, g = (double)dy[at + h] * gamma[h];
        float d = (float)(invstd * (g - g_sum - xhat * gx_sum));
        dx[at + h] = accumulate ? dx[at + h] + d : d;
    }
}

__global__ void k_gelu_forward(const float *x, float *y, size_t count)
{
    GRID_STRIDE(i, count) y[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] * SQRT1_2)));
}

__global__ void k_gelu_backward(const float *x, const float *dy, float *dx, size_t count, bool accumulate)
{
    GRID_STRIDE(i, count) {
        double v = x[i];
        double d = 0.5 * (1.0 + erf(v * SQRT1_2)) + v * exp(-0.5 * v * v) * (0.5 * TWO_OVER_SQRTPI * SQRT1_2);
        float g = (float)(dy[i] * d);
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

__global__ void k_tanh_forward(const float *x, float *y, size_t count)
{
    GRID_STRIDE(i, count) y[i] = tanhf(x[i]);
}

__global__ void k_tanh_backward(const float *y, const float *dy, float *dx, size_t count, bool accumulate)
{
    GRID_STRIDE(i, count) {
        float d = dy[i] * (1.0f - y[i] * y[i]);
        dx[i] = accumulate ? dx[i] + d : d;
    }
}

/* A warp per row of the scores, every head of every sample at once (n x heads x T rows of T, one
 * after another), its lanes on neighbouring keys: the softmax along the valid keys of the row's
 * sample, in place; a row with no valid key is all zero. (A thread a row, as the reference loops,
 * read T values strided from its neighbours' and filled 4 blocks at BERT-Base's batch 8, on a GPU
 * of 132 multiprocessors.) */
__global__ void k_masked_softmax(float *probs, const float *tokens, size_t rows, int T, int heads)
{
    int lane = threadIdx.x % 32;
    WARP_STRIDE(row, rows) {
        size_t i = row / ((size_t)heads * T);
        float *p = probs + row * T;
        const float *tok = tokens + i * T * SEQ_TOKEN_FIELDS;
        float max = -INFINITY;
        for (int k = lane; k < T; k += 32)
            if (tok[(size_t)k * SEQ_TOKEN_FIELDS] != SEQ_PAD_ID)
                max = fmaxf(max, p[k]);
        max = warp_max(max);
        double sum = 0;
        for (int k = lane; k < T; k += 32) {
            bool valid = tok[(size_t)k * SEQ_TOKEN_FIELDS] != SEQ_PAD_ID;
            double e = valid ? exp((double)p[k] - max) : 0.0;
            p[k] = (float)e;
            sum += e;
        }
        sum = warp_sum(sum);
        for (int k = lane; k < T; k += 32)
            p[k] = sum > 0 ? (float)(p[k] / sum) : 0.0f;
    }
}

/* A sample's elements as a grid: blockIdx.y (strided) the sample, the rest of the grid strided over
 * its elements, so that no thread divides an element's index to find its sample (a division an
 * element, in kernels that otherwise only move memory). */
#define SAMPLE_STRIDE(i, n, e, per_sample)                                                          \
    for (size_t i = blockIdx.y; i < (size_t)(n); i += gridDim.y)                                    \
        for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < (per_sample);            \
             e += (size_t)gridDim.x * blockDim.x)

/* out = D x over every head's T x T weights of each of n samples (per_sample = heads T T of
 * them, in backend.h's order), D 0 or 1 / (1 - rate) by the draw; out may be x. */
__global__ void k_drop_weights(const float *x, float *out, int n, size_t per_sample, float rate, uint64_t noise,
                               long position)
{
    float factor = 1.0f / (1.0f - rate);
    SAMPLE_STRIDE(i, n, e, per_sample) {
        size_t at = i * per_sample + e;
        bool keep = d_noise(noise, position + (long)i, e) >= rate;
        out[at] = keep ? x[at] * factor : 0.0f;
    }
}

/* Token-major rows [n][T][parts H] (a token's query, key and value side by side, or one part) to
 * head-major blocks: part p of head h of token t of sample i at
 * head[p n T H + ((i heads + h) T + t) d], so that every head of every sample is one T x d matrix a
 * stride apart and one strided-batched GEMM takes them all. A block a token row at a time, its
 * rows of threads a (part, head) stretch of d values each, its lanes along the stretch. */
__global__ void k_to_heads(const float *token, float *head, int n, int T, int H, int heads, int parts)
{
    int d = H / heads;
    size_t part_size = (size_t)n * T * H;
    for (size_t row = blockIdx.x; row < (size_t)n * T; row += gridDim.x) {
        size_t i = row / T, t = row % T;
        for (int stretch = threadIdx.y; stretch < parts * heads; stretch += blockDim.y) {
            int part = stretch / heads, h = stretch % heads;
            const float *from = token + (row * parts * heads + stretch) * d;
            float *to = head + part * part_size + ((i * heads + h) * T + t) * d;
            for (int j = threadIdx.x; j < d; j += blockDim.x)
                to[j] = from[j];
        }
    }
}

/* The other way: head-major blocks back into token-major rows, added to them when accumulating. */
__global__ void k_from_heads(const float *head, float *token, int n, int T, int H, int heads, int parts,
                             bool accumulate)
{
    int d = H / heads;
    size_t part_size = (size_t)n * T * H;
    for (size_t row = blockIdx.x; row < (size_t)n * T; row += gridDim.x) {
        size_t i = row / T, t = row % T;
        for (int stretch = threadIdx.y; stretch < parts * heads; stretch += blockDim.y) {
            int part = stretch / heads, h = stretch % heads;
            const float *from = head + part * part_size + ((i * heads + h) * T + t) * d;
            float *to = token + (row * parts * heads + stretch) * d;
            for (int j = threadIdx.x; j < d; j += blockDim.x)
                to[j] = accumulate ? to[j] + from[j] : from[j];
        }
    }
}

/* dS = P (dP - rowsum(dP P)) scale, in place over dp, P the softmax's weights (rows of T, one after
 * another, as dp's); a warp a row, as the softmax. */
__global__ void k_softmax_backward(const float *probs, float *dp, size_t rows, int T, float scale)
{
    int lane = threadIdx.x % 32;
    WARP_STRIDE(row, rows) {
        const float *p = probs + row * T;
        float *d = dp + row * T;
        double dot = 0;
        for (int k = lane; k < T; k += 32)
            dot += (double)d[k] * p[k];
        dot = warp_sum(dot);
        for (int k = lane; k < T; k += 32)
            d[k] = (float)(p[k] * (d[k] - dot) * scale);
    }
}

__global__ void k_first_token_forward(const float *x, float *y, int n, int T, int H)
{
    GRID_STRIDE(i, (size_t)n * H) y[i] = x[(i / H) * T * H + i % H];
}

__global__ void k_first_token_backward(const float *dy, float *dx, int n, int T, int H, bool accumulate)
{
    GRID_STRIDE(i, (size_t)n * T * H) {
        size_t seq = i / ((size_t)T * H), within = i % ((size_t)T * H);
        float g = within < (size_t)H ? dy[seq * H + within] : 0.0f;
        dx[i] = accumulate ? dx[i] + g : g;
    }
}

__global__ void k_dropout_forward(const float *x, float *y, uint8_t *mask, int n, size_t per_sample, float rate,
                                  uint64_t noise, long position)
{
    float scale = 1.0f / (1.0f - rate);
    SAMPLE_STRIDE(i, n, e, per_sample) {
        size_t at = i * per_sample + e;
        mask[at] = rate <= 0 || d_noise(noise, position + (long)i, e) >= rate;
        y[at] = mask[at] ? (rate > 0 ? x[at] * scale : x[at]) : 0.0f;
    }
}

__global__ void k_dropout_backward(const uint8_t *mask, const float *dy, float *dx, size_t count, float rate,
                                   bool accumulate)
{
    float scale = rate > 0 ? 1.0f / (1.0f - rate) : 1.0f;
    GRID_STRIDE(i, count) {
        float d = mask[i] ? dy[i] * scale : 0.0f;
        dx[i] = accumulate ? dx[i] + d : d;
    }
}

__global__ void k_count_labels(const float *tokens, int rows, int *count)
{
    GRID_STRIDE(r, (size_t)rows) if ((int)tokens[r * SEQ_TOKEN_FIELDS + 2] != SEQ_NO_LABEL) atomicAdd(count, 1);
}

/* A block per token row (the grid: one block a row), its threads on neighbouring classes: the row's
 * loss (0 without a label) and, over `count` labelled rows, its gradient. (A thread a row walked
 * BERT's 30522 classes alone, strided from its neighbours: the loss layer took 21 ms of a 70 ms
 * BERT-Base step on an H100.) */
__global__ void k_token_xent(const float *logits, const float *tokens, float *dlogits, float *row_loss, int classes,
                             int count)
{
    __shared__ double shared[THREADS];
    size_t r = blockIdx.x;
    const float *z = logits + r * classes;
    float *dz = dlogits ? dlogits + r * classes : nullptr;
    int label = (int)tokens[r * SEQ_TOKEN_FIELDS + 2];
    if (label == SEQ_NO_LABEL) {   /* the whole block takes this branch: no barrier is split */
        if (threadIdx.x == 0)
            row_loss[r] = 0;
        for (int k = threadIdx.x; dz && k < classes; k += blockDim.x)
            dz[k] = 0;
        return;
    }
    double max = -INFINITY, sum = 0;
    for (int k = threadIdx.x; k < classes; k += blockDim.x)
        max = fmax(max, (double)z[k]);
    max = block_max(max, shared);
    for (int k = threadIdx.x; k < classes; k += blockDim.x)
        sum += exp(z[k] - max);
    sum = block_sum(sum, shared);
    if (threadIdx.x == 0)
        row_loss[r] = (float)(log(sum) - (z[label] - max));
    for (int k = threadIdx.x; dz && k < classes; k += blockDim.x)
        dz[k] = (float)((exp(z[k] - max) / sum - (k == label)) / count);
}

/* ---------- the table's functions ---------- */

#define LAUNCH(st, count) blocks_for(count), THREADS, 0, (st)->stream

/* SAMPLE_STRIDE's grid: a row of blocks a sample (at most 65535 rows, strided past), each row
 * covering the sample's elements. */
dim3 sample_grid(int n, size_t per_sample)
{
    unsigned rows = n < 1 ? 1 : n < 65535 ? (unsigned)n : 65535;
    size_t across = (per_sample + THREADS - 1) / THREADS, most = 65535 * 16 / rows;
    return dim3((unsigned)(across < 1 ? 1 : across < most ? across : most), rows);
}
#define LAUNCH_SAMPLES(st, n, per_sample) sample_grid(n, per_sample), THREADS, 0, (st)->stream

/* k_to_heads's and k_from_heads's grid: a block a token row (strided past the grid's end), 8
 * (part, head) stretches at a time of 32 lanes. */
#define LAUNCH_ROWS(st, rows) blocks_for((rows) * THREADS), dim3(32, THREADS / 32), 0, (st)->stream

void cuda_embedding_forward(void *s, const float *tokens, const float *word, const float *pos, const float *seg,
                            float *y, int n, int T, int H)
{
    cuda_state *st = state_of(s);
    size_t rows = (size_t)n * T;
    k_embed_forward<<<LAUNCH(st, rows * H)>>>(tokens, word, pos, seg, y, rows, T, H);
    launched(st, "embedding forward");
}

void cuda_embedding_backward(void *s, const float *tokens, const float *dy, float *dword, float *dpos, float *dseg,
                             int n, int T, int H)
{
    cuda_state *st = state_of(s);
    size_t rows = (size_t)n * T;
    k_embed_backward<<<LAUNCH(st, rows * H)>>>(tokens, dy, dword, dpos, dseg, rows, T, H);
    launched(st, "embedding backward");
}

/* Threads a block for a row of H features: a power of two, at most THREADS. */
unsigned row_threads(int H)
{
    unsigned t = 32;
    while (t < (unsigned)H && t < (unsigned)THREADS)
        t *= 2;
    return t;
}

void cuda_layernorm_forward(void *s, const float *x, const float *gamma, const float *beta, float *save_mean,
                            float *save_invstd, float *y, int rows, int H, float eps)
{
    cuda_state *st = state_of(s);
    if (rows > 0)
        k_layernorm_forward<<<rows, row_threads(H), 0, st->stream>>>(x, gamma, beta, save_mean, save_invstd, y, H, eps);
    launched(st, "layer norm forward");
}

void cuda_layernorm_backward(void *s, const float *x, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta,
                             int rows, int H, bool accumulate)
{
    cuda_state *st = state_of(s);
    if (rows > 0)
        k_layernorm_backward<<<rows, row_threads(H), 0, st->stream>>>(x, gamma, save_mean, save_invstd, dy, dx, dgamma,
                                                                        dbeta, H, accumulate);
    launched(st, "layer norm backward");
}

void cuda_gelu_forward(void *s, const float *x, float *y, size_t count)
{
    cuda_state *st = state_of(s);
    k_gelu_forward<<<LAUNCH(st, count)>>>(x, y, count);
    launched(st, "GELU forward");
}

void cuda_gelu_backward(void *s, const float *x, const float *dy, float *dx, size_t count, bool accumulate)
{
    cuda_state *st = state_of(s);
    k_gelu_backward<<<LAUNCH(st, count)>>>(x, dy, dx, count, accumulate);
    launched(st, "GELU backward");
}

void cuda_tanh_forward(void *s, const float *x, float *y, size_t count)
{
    cuda_state *st = state_of(s);
    k_tanh_forward<<<LAUNCH(st, count)>>>(x, y, count);
    launched(st, "tanh forward");
}

void cuda_tanh_backward(void *s, const float *y, const float *dy, float *dx, size_t count, bool accumulate)
{
    cuda_state *st = state_of(s);
    k_tanh_backward<<<LAUNCH(st, count)>>>(y, dy, dx, count, accumulate);
    launched(st, "tanh backward");
}

/* Room for `floats` in the attention's scratch. */
bool scratch(cuda_state *st, size_t floats)
{
    return grow_device(st, &st->seq_scratch, &st->seq_scratch_cap, floats, "the attention scratch");
}

/* Row-major C[m x n] (ldc) = alpha op(A) op(B) + beta C for each of `batch` samples, in cuBLAS's
 * column-major terms (C^T = op(B)^T op(A)^T): the caller passes the operands already swapped.
 * fp32 operands on TF32 tensor cores, as the linear layers' fp32 GEMMs (plain fp32 math ran these
 * on the CUDA cores, about 8 times slower on a Hopper GPU). */
bool gemm(cuda_state *st, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha, const float *a,
          int lda, long long stride_a, const float *b, int ldb, long long stride_b, float beta, float *c, int ldc,
          long long stride_c, int batch)
{
    return blas_ok(st,
                   cublasGemmStridedBatchedEx(st->blas, ta, tb, m, n, k, &alpha, a, CUDA_R_32F, lda, stride_a, b,
                                              CUDA_R_32F, ldb, stride_b, &beta, c, CUDA_R_32F, ldc, stride_c, batch,
                                              CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
                   "cublasGemmStridedBatchedEx (attention)");
}

/* The attention's scratch, head-major (k_to_heads): `blocks` T x d blocks of every head of every
 * sample (n T H floats each) and `weights` sets of every head's T x T weights (n heads T T each). */
float *attention_scratch(cuda_state *st, int n, int T, int H, int heads, int blocks, int weights)
{
    size_t block = (size_t)n * T * H, weight = (size_t)n * heads * T * T;
    return scratch(st, blocks * block + weights * weight) ? st->seq_scratch : nullptr;
}

/* Every head of every sample at once, each step one launch (a loop over the heads launched 36 to
 * 48 kernels and GEMMs of a few microseconds each a layer, most of BERT-Base's step): Q, K, V to
 * head-major, S = Q K^T / sqrt(d) (column-major: S^T = K Q^T), the masked softmax, the dropout of
 * the weights, Y = P' V (Y^T = V^T P'^T), Y back to token-major. */
void cuda_attention_forward(void *s, const float *qkv, const float *tokens, float *probs, float *y, int n, int T, int H,
                            int heads, const struct seq_draw *drop)
{
    cuda_state *st = state_of(s);
    int d = H / heads, batch = n * heads;
    bool dropping = drop && drop->rate > 0;
    size_t block = (size_t)n * T * H, per_sample = (size_t)heads * T * T;
    long long hd = (long long)T * d, tt = (long long)T * T;
    float *qh = failed(st) ? nullptr : attention_scratch(st, n, T, H, heads, 4, dropping);
    if (!qh)
        return;
    float *kh = qh + block, *vh = kh + block, *yh = vh + block, *dropped = yh + block;
    k_to_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(qkv, qh, n, T, H, heads, 3);
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, T, T, d, 1.0f / sqrtf((float)d), kh, d, hd, qh, d, hd, 0.0f, probs, T, tt, batch);
    k_masked_softmax<<<LAUNCH(st, (size_t)batch * T * 32)>>>(probs, tokens, (size_t)batch * T, T, heads);
    const float *weights = probs;
    if (dropping) {
        k_drop_weights<<<LAUNCH_SAMPLES(st, n, per_sample)>>>(probs, dropped, n, per_sample, drop->rate, drop->noise,
                                                              drop->position);
        weights = dropped;
    }
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, d, T, T, 1.0f, vh, d, hd, weights, T, tt, 0.0f, yh, d, hd, batch);
    k_from_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(yh, y, n, T, H, heads, 1, false);
    launched(st, "attention forward");
}

/* Every head at once, head-major as the forward: dV = P'^T dY (dV^T = dY^T P'), dP' = dY V^T
 * (dP'^T = V dY^T), dP = D dP', dS by the softmax's backward, dQ = dS K (dQ^T = K^T dS^T),
 * dK = dS^T Q (dK^T = Q^T dS), then dQ, dK, dV into (or added to) dqkv's token-major rows. */
void cuda_attention_backward(void *s, const float *qkv, const float *probs, const float *dy, float *dqkv, int n, int T,
                             int H, int heads, const struct seq_draw *drop, bool accumulate)
{
    cuda_state *st = state_of(s);
    int d = H / heads, batch = n * heads;
    bool dropping = drop && drop->rate > 0;
    size_t block = (size_t)n * T * H, per_sample = (size_t)heads * T * T;
    long long hd = (long long)T * d, tt = (long long)T * T;
    float *qh = failed(st) ? nullptr : attention_scratch(st, n, T, H, heads, 7, 1 + dropping);
    if (!qh)
        return;
    float *kh = qh + block, *vh = kh + block, *dyh = vh + block, *dqh = dyh + block, *dkh = dqh + block;
    float *dvh = dkh + block, *ds = dvh + block, *dropped = ds + n * per_sample;
    k_to_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(qkv, qh, n, T, H, heads, 3);
    k_to_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(dy, dyh, n, T, H, heads, 1);
    const float *weights = probs;
    if (dropping) {
        k_drop_weights<<<LAUNCH_SAMPLES(st, n, per_sample)>>>(probs, dropped, n, per_sample, drop->rate, drop->noise,
                                                              drop->position);
        weights = dropped;
    }
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, d, T, T, 1.0f, dyh, d, hd, weights, T, tt, 0.0f, dvh, d, hd, batch);
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, T, T, d, 1.0f, vh, d, hd, dyh, d, hd, 0.0f, ds, T, tt, batch);
    if (dropping)   /* dP = D dP', in place */
        k_drop_weights<<<LAUNCH_SAMPLES(st, n, per_sample)>>>(ds, ds, n, per_sample, drop->rate, drop->noise,
                                                              drop->position);
    k_softmax_backward<<<LAUNCH(st, (size_t)batch * T * 32)>>>(probs, ds, (size_t)batch * T, T, 1.0f / sqrtf((float)d));
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, d, T, T, 1.0f, kh, d, hd, ds, T, tt, 0.0f, dqh, d, hd, batch);
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, d, T, T, 1.0f, qh, d, hd, ds, T, tt, 0.0f, dkh, d, hd, batch);
    k_from_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(dqh, dqkv, n, T, H, heads, 3, accumulate);
    launched(st, "attention backward");
}

void cuda_first_token_forward(void *s, const float *x, float *y, int n, int T, int H)
{
    cuda_state *st = state_of(s);
    k_first_token_forward<<<LAUNCH(st, (size_t)n * H)>>>(x, y, n, T, H);
    launched(st, "first token forward");
}

void cuda_first_token_backward(void *s, const float *dy, float *dx, int n, int T, int H, bool accumulate)
{
    cuda_state *st = state_of(s);
    k_first_token_backward<<<LAUNCH(st, (size_t)n * T * H)>>>(dy, dx, n, T, H, accumulate);
    launched(st, "first token backward");
}

void cuda_dropout_forward(void *s, const float *x, float *y, uint8_t *mask, int n, size_t per_sample, float rate,
                          uint64_t noise, long position)
{
    cuda_state *st = state_of(s);
    k_dropout_forward<<<LAUNCH_SAMPLES(st, n, per_sample)>>>(x, y, mask, n, per_sample, rate, noise, position);
    launched(st, "dropout forward");
}

void cuda_dropout_backward(void *s, const uint8_t *mask, const float *dy, float *dx, size_t count, float rate,
                           bool accumulate)
{
    cuda_state *st = state_of(s);
    k_dropout_backward<<<LAUNCH(st, count)>>>(mask, dy, dx, count, rate, accumulate);
    launched(st, "dropout backward");
}

/* The labelled rows are counted first (the gradient divides by them), then each row's loss is
 * computed and summed on the host: the step waits here, as it does for the classifier's loss. */
double cuda_token_xent(void *s, const float *logits, const float *tokens, float *dlogits, int rows, int classes,
                       int *counted)
{
    cuda_state *st = state_of(s);
    *counted = 0;
    if (st->capturing) {
        fail(st, "token_xent", "the masked-LM loss waits for its count: a CUDA graph cannot capture it");
        return NAN;
    }
    int count = 0;
    if (failed(st) || (!st->seq_count && !cuda_ok(st, cudaMalloc(&st->seq_count, sizeof(int)), "cudaMalloc (count)")) ||
        !cuda_ok(st, cudaMemsetAsync(st->seq_count, 0, sizeof(int), st->stream), "cudaMemsetAsync (count)"))
        return NAN;
    k_count_labels<<<LAUNCH(st, (size_t)rows)>>>(tokens, rows, st->seq_count);
    launched(st, "masked-LM count");
    if (!cuda_ok(st, cudaMemcpyAsync(&count, st->seq_count, sizeof(int), cudaMemcpyDeviceToHost, st->stream),
                 "cudaMemcpyAsync (count)") ||
        !cuda_ok(st, cudaStreamSynchronize(st->stream), "the masked-LM count") || !grow_loss_rows(st, rows))
        return NAN;
    *counted = count;
    if (rows > 0)
        k_token_xent<<<rows, THREADS, 0, st->stream>>>(logits, tokens, dlogits, st->row_loss, classes,
                                                       count ? count : 1);
    launched(st, "masked-LM loss");
    if (!cuda_ok(st, cudaMemcpyAsync(st->host_loss, st->row_loss, rows * sizeof(float), cudaMemcpyDeviceToHost,
                                     st->stream), "cudaMemcpyAsync (loss)") ||
        !cuda_ok(st, cudaStreamSynchronize(st->stream), "the masked-LM loss") || failed(st))
        return NAN;
    double loss = 0;
    for (int r = 0; r < rows; r++)
        loss += st->host_loss[r];
    return count ? loss / count : 0.0;
}

}  // namespace

void install_seq_kernels(struct backend *t)
{
    t->embedding_forward = cuda_embedding_forward;
    t->embedding_backward = cuda_embedding_backward;
    t->layernorm_forward = cuda_layernorm_forward;
    t->layernorm_backward = cuda_layernorm_backward;
    t->gelu_forward = cuda_gelu_forward;
    t->gelu_backward = cuda_gelu_backward;
    t->tanh_forward = cuda_tanh_forward;
    t->tanh_backward = cuda_tanh_backward;
    t->attention_forward = cuda_attention_forward;
    t->attention_backward = cuda_attention_backward;
    t->first_token_forward = cuda_first_token_forward;
    t->first_token_backward = cuda_first_token_backward;
    t->dropout_forward = cuda_dropout_forward;
    t->dropout_backward = cuda_dropout_backward;
    t->token_xent = cuda_token_xent;
}

void release_seq_kernels(cuda_state *st)
{
    cudaFree(st->seq_scratch), cudaFree(st->seq_count);
    st->seq_scratch = nullptr, st->seq_count = nullptr, st->seq_scratch_cap = 0;
}

}  // namespace dtrain_cuda
