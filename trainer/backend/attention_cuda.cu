/* attention_cuda.cu - multi-head self-attention of backend.h on the GPU: every head of every
 * sample in one cuBLAS strided-batched GEMM a product (TF32), on head-major copies of Q, K and V
 * made for it, a masked softmax of our own, and BERT's dropout of the weights drawn by the same
 * counter-based hash as the CPU. seq_kernels.c's seq_attention_* is the specification;
 * tests/test_cuda.c holds these against it where a GPU exists. bf16 mode's attention of BERT's
 * shapes (heads of 64, T a multiple of 16 up to 128) runs fused instead (attention_fused_cuda.cu);
 * this path is fp32 mode's and every other shape's. Conventions as backend_cuda.cu: device
 * pointers, one stream, the first failure kept. */
#include <cmath>
#include <cstdint>

#include "trainer/backend/cuda_state.h"
#include "trainer/backend/seq_cuda.h"

namespace dtrain_cuda {
namespace {

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

/* out = D x over every head's T x T weights of each of n samples (per_sample = heads T T of
 * them, in backend.h's order), D 0 or 1 / (1 - rate) by the draw; out may be x. */
__global__ void k_drop_weights(const float *x, float *out, int n, size_t per_sample, float rate, uint64_t noise,
                               long position)
{
    float factor = 1.0f / (1.0f - rate);
    SAMPLE_STRIDE(i, n, e, per_sample) {
        size_t at = i * per_sample + e;
        bool keep = seq_kept(noise, position + (long)i, e, rate);
        out[at] = keep ? x[at] * factor : 0.0f;
    }
}

/* Token-major rows [n][T][parts H] (a token's query, key and value side by side, or one part) to
 * head-major blocks (into_heads), or back, added to what is there when accumulating: part p of
 * head h of token t of sample i at head[p n T H + ((i heads + h) T + t) d], so that every head of
 * every sample is one T x d matrix a stride apart and one strided-batched GEMM takes them all. A
 * block a token row at a time, its rows of threads a (part, head) stretch of d values each, its
 * lanes along the stretch. */
__global__ void k_heads(const float *from, float *to, int n, int T, int H, int heads, int parts, bool into_heads,
                        bool accumulate)
{
    int d = H / heads;
    size_t part_size = (size_t)n * T * H;
    for (size_t row = blockIdx.x; row < (size_t)n * T; row += gridDim.x) {
        size_t i = row / T, t = row % T;
        for (int stretch = threadIdx.y; stretch < parts * heads; stretch += blockDim.y) {
            int part = stretch / heads, h = stretch % heads;
            size_t token_at = (row * parts * heads + stretch) * d;
            size_t head_at = part * part_size + ((i * heads + h) * T + t) * d;
            const float *src = from + (into_heads ? token_at : head_at);
            float *dst = to + (into_heads ? head_at : token_at);
            for (int j = threadIdx.x; j < d; j += blockDim.x)
                dst[j] = accumulate ? dst[j] + src[j] : src[j];
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

/* ---------- the table's functions ---------- */

/* k_heads's grid: a block a token row (strided past the grid's end), 8
 * (part, head) stretches at a time of 32 lanes. */
#define LAUNCH_ROWS(st, rows) blocks_for((rows) * THREADS), dim3(32, THREADS / 32), 0, (st)->stream

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

/* The attention's scratch, head-major (k_heads): `blocks` T x d blocks of every head of every
 * sample (n T H floats each) and `weights` sets of every head's T x T weights (n heads T T each). */
float *attention_scratch(cuda_state *st, int n, int T, int H, int heads, int blocks, int weights)
{
    size_t block = (size_t)n * T * H, weight = (size_t)n * heads * T * T;
    return grow_device(st, &st->seq_scratch, &st->seq_scratch_cap, blocks * block + weights * weight,
                       "the attention scratch") ? st->seq_scratch : nullptr;
}

/* k_drop_weights from `from` into `to` (which may be `from`) with `drop`'s draws: `to`. */
float *drop_weights(cuda_state *st, const float *from, float *to, int n, size_t per_sample, const struct seq_draw *drop)
{
    k_drop_weights<<<LAUNCH_SAMPLES(st, n, per_sample)>>>(from, to, n, per_sample, drop->rate, drop->noise,
                                                          drop->position);
    return to;
}

/* Every head of every sample at once, each step one launch (a loop over the heads launched 36 to
 * 48 kernels and GEMMs of a few microseconds each a layer, most of BERT-Base's step): Q, K, V to
 * head-major, S = Q K^T / sqrt(d) (column-major: S^T = K Q^T), the masked softmax, the dropout of
 * the weights, Y = P' V (Y^T = V^T P'^T), Y back to token-major. */
void cuda_attention_forward(void *s, const float *qkv, const float *tokens, float *probs, float *y, int n, int T, int H,
                            int heads, const struct seq_draw *drop)
{
    cuda_state *st = state_of(s);
    if (failed(st) || fused_attention_forward(st, qkv, tokens, probs, y, n, T, H, heads, drop))
        return;
    int d = H / heads, batch = n * heads;
    bool dropping = drop && drop->rate > 0;
    size_t block = (size_t)n * T * H, per_sample = (size_t)heads * T * T;
    long long hd = (long long)T * d, tt = (long long)T * T;
    float *qh = attention_scratch(st, n, T, H, heads, 4, dropping);
    if (!qh)
        return;
    float *kh = qh + block, *vh = kh + block, *yh = vh + block, *dropped = yh + block;
    k_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(qkv, qh, n, T, H, heads, 3, true, false);
    float scale = 1.0f / sqrtf((float)d);
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, T, T, d, scale, kh, d, hd, qh, d, hd, 0.0f, probs, T, tt, batch);
    k_masked_softmax<<<LAUNCH(st, (size_t)batch * T * 32)>>>(probs, tokens, (size_t)batch * T, T, heads);
    const float *weights = dropping ? drop_weights(st, probs, dropped, n, per_sample, drop) : probs;
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, d, T, T, 1.0f, vh, d, hd, weights, T, tt, 0.0f, yh, d, hd, batch);
    k_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(yh, y, n, T, H, heads, 1, false, false);
    launched(st, "attention forward");
}

/* Every head at once, head-major as the forward: dV = P'^T dY (dV^T = dY^T P'), dP' = dY V^T
 * (dP'^T = V dY^T), dP = D dP', dS by the softmax's backward, dQ = dS K (dQ^T = K^T dS^T),
 * dK = dS^T Q (dK^T = Q^T dS), then dQ, dK, dV into (or added to) dqkv's token-major rows. */
void cuda_attention_backward(void *s, const float *qkv, const float *probs, const float *dy, float *dqkv, int n, int T,
                             int H, int heads, const struct seq_draw *drop, bool accumulate)
{
    cuda_state *st = state_of(s);
    if (failed(st) || fused_attention_backward(st, qkv, probs, dy, dqkv, n, T, H, heads, drop, accumulate))
        return;
    int d = H / heads, batch = n * heads;
    bool dropping = drop && drop->rate > 0;
    size_t block = (size_t)n * T * H, per_sample = (size_t)heads * T * T;
    long long hd = (long long)T * d, tt = (long long)T * T;
    float *qh = attention_scratch(st, n, T, H, heads, 7, 1 + dropping);
    if (!qh)
        return;
    float *kh = qh + block, *vh = kh + block, *dyh = vh + block, *dqh = dyh + block, *dkh = dqh + block;
    float *dvh = dkh + block, *ds = dvh + block, *dropped = ds + n * per_sample;
    k_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(qkv, qh, n, T, H, heads, 3, true, false);
    k_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(dy, dyh, n, T, H, heads, 1, true, false);
    const float *weights = dropping ? drop_weights(st, probs, dropped, n, per_sample, drop) : probs;
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, d, T, T, 1.0f, dyh, d, hd, weights, T, tt, 0.0f, dvh, d, hd, batch);
    gemm(st, CUBLAS_OP_T, CUBLAS_OP_N, T, T, d, 1.0f, vh, d, hd, dyh, d, hd, 0.0f, ds, T, tt, batch);
    if (dropping)   /* dP = D dP', in place */
        drop_weights(st, ds, ds, n, per_sample, drop);
    k_softmax_backward<<<LAUNCH(st, (size_t)batch * T * 32)>>>(probs, ds, (size_t)batch * T, T, 1.0f / sqrtf((float)d));
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_N, d, T, T, 1.0f, kh, d, hd, ds, T, tt, 0.0f, dqh, d, hd, batch);
    gemm(st, CUBLAS_OP_N, CUBLAS_OP_T, d, T, T, 1.0f, qh, d, hd, ds, T, tt, 0.0f, dkh, d, hd, batch);
    k_heads<<<LAUNCH_ROWS(st, (size_t)n * T)>>>(dqh, dqkv, n, T, H, heads, 3, false, accumulate);
    launched(st, "attention backward");
}

}  // namespace

void install_attention(struct backend *t)
{
    t->attention_forward = cuda_attention_forward;
    t->attention_backward = cuda_attention_backward;
}

void release_attention(cuda_state *st)
{
    cudaFree(st->seq_scratch);
    st->seq_scratch = nullptr, st->seq_scratch_cap = 0;
}

}  // namespace dtrain_cuda
