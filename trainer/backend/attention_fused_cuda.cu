/* attention_fused_cuda.cu - bf16 mode's attention: one block a (sample, head), its Q, K and V (and
 * dY backward) read once from the token-major rows into shared memory as bf16, every product on
 * tensor cores (WMMA, 16 x 16 x 16 tiles, fp32 sums), the scores, the masked softmax and the
 * weights' dropout never leaving the block but for the fp32 weights backward reads (backend.h's
 * probs). The unfused path (attention_cuda.cu: head-major copies, cuBLAS GEMMs through memory, a
 * kernel a step) stays for fp32 mode and the shapes this one does not take: a head of 64 values
 * (BERT's, the reference transformer's), T a multiple of 16 up to 128 (the whole T x T block in
 * shared memory). seq_kernels.c's seq_attention_* is the specification; test_cuda holds this
 * against it in bf16 mode. */
#include <mma.h>

#include <cmath>
#include <cstdint>

#include "trainer/backend/cuda_state.h"
#include "trainer/backend/seq_cuda.h"

namespace dtrain_cuda {
namespace {

using namespace nvcuda;
using bf16 = __nv_bfloat16;

constexpr int HEAD = 64;        /* values a head: the one size compiled */
constexpr int TILE = 16;        /* WMMA's m, n and k */
constexpr int MAX_T = 128;
constexpr int WARPS = THREADS / 32;
constexpr int PER_LANE = MAX_T / 32;   /* a row's values a lane holds */
/* Shared rows padded by 16 bytes: WMMA reads 16 rows of a tile at once, and rows 128 or 256 bytes
 * long would all start in the same memory bank (a 16-way conflict; padded, rows start 4 banks apart). */
constexpr int LDH = HEAD + 8;   /* a head's row of bf16 */
__host__ __device__ constexpr int ld_scores(int T) { return T + 4; }   /* fp32 */
__host__ __device__ constexpr int ld_weights(int T) { return T + 8; }  /* bf16 */

using frag_row = wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, bf16, wmma::row_major>;
using frag_col = wmma::fragment<wmma::matrix_a, TILE, TILE, TILE, bf16, wmma::col_major>;
using frag_b_row = wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, bf16, wmma::row_major>;
using frag_b_col = wmma::fragment<wmma::matrix_b, TILE, TILE, TILE, bf16, wmma::col_major>;
using frag_acc = wmma::fragment<wmma::accumulator, TILE, TILE, TILE, float>;

/* Shared memory: forward Q, K, V (T rows of a head, bf16), the scores (T x T fp32), the dropped
 * weights (bf16) and which keys are tokens; backward Q, K, V, dY, dP (fp32), dS and the dropped
 * weights (bf16). */
size_t forward_bytes(int T)
{
    return 3 * (size_t)T * LDH * 2 + (size_t)T * ld_scores(T) * 4 + (size_t)T * ld_weights(T) * 2 + (size_t)T * 4;
}
size_t backward_bytes(int T)
{
    return 4 * (size_t)T * LDH * 2 + (size_t)T * ld_scores(T) * 4 + 2 * (size_t)T * ld_weights(T) * 2;
}

/* T rows of one head's HEAD values, `stride` floats apart, into shared rows of bf16 (LDH apart):
 * four floats a thread at a time (HEAD and every row's start are multiples of 4 floats). */
__device__ void load_head(const float *rows, size_t stride, bf16 *to, int T)
{
    for (int e = threadIdx.x; e < T * HEAD / 4; e += blockDim.x) {
        int t = e / (HEAD / 4), j = e % (HEAD / 4) * 4;
        float4 v = *reinterpret_cast<const float4 *>(rows + (size_t)t * stride + j);
        __nv_bfloat162 *at = reinterpret_cast<__nv_bfloat162 *>(to + t * LDH + j);
        at[0] = __floats2bfloat162_rn(v.x, v.y), at[1] = __floats2bfloat162_rn(v.z, v.w);
    }
}

/* out[16 x 16 at column tile ct] = a (16 x K rows, row-major, lda) b (K x 16): b row-major from
 * b + k ldb + ct 16, or the transpose of its row-major rows (b_of_rows: B(k, c) = b[(ct 16 + c) ldb + k]). */
__device__ void tile_product(frag_acc &acc, const bf16 *a, int lda, bool a_transposed, const bf16 *b, int ldb,
                             bool b_of_rows, int K)
{
    wmma::fill_fragment(acc, 0.0f);
    for (int k = 0; k < K; k += TILE) {
        frag_b_row br;
        frag_b_col bc;
        if (b_of_rows)
            wmma::load_matrix_sync(bc, b + k, ldb);
        else
            wmma::load_matrix_sync(br, b + (size_t)k * ldb, ldb);
        if (a_transposed) {   /* A(m, k) = a[k lda + m] */
            frag_col ac;
            wmma::load_matrix_sync(ac, a + (size_t)k * lda, lda);
            b_of_rows ? wmma::mma_sync(acc, ac, bc, acc) : wmma::mma_sync(acc, ac, br, acc);
        } else {
            frag_row ar;
            wmma::load_matrix_sync(ar, a + k, lda);
            b_of_rows ? wmma::mma_sync(acc, ar, bc, acc) : wmma::mma_sync(acc, ar, br, acc);
        }
    }
}

/* acc into global rows (ld floats apart), or added to what is there. */
__device__ void store_tile(frag_acc &acc, float *to, size_t ld, bool accumulate)
{
    if (accumulate) {
        frag_acc was;
        wmma::load_matrix_sync(was, to, (unsigned)ld, wmma::mem_row_major);
        for (int e = 0; e < acc.num_elements; e++)
            acc.x[e] += was.x[e];
    }
    wmma::store_matrix_sync(to, acc, (unsigned)ld, wmma::mem_row_major);
}

struct draw {
    float rate, factor;
    uint64_t noise;
    long sample;       /* position + i */
    bool dropping;
};

/* D of weight (h, q, k) of the block's sample: 0 or 1 / (1 - rate), as the reference's dropout_kept. */
__device__ __forceinline__ float kept(const draw &dr, int h, int q, int k, int T)
{
    if (!dr.dropping)
        return 1.0f;
    return seq_kept(dr.noise, dr.sample, ((size_t)h * T + q) * T + k, dr.rate) ? dr.factor : 0.0f;
}

/* The block's (sample i, head h): S = Q K^T scale, the masked softmax into probs, P' = D P, Y = P' V;
 * a warp a strip of 16 queries, a row's values in its lanes' registers (PER_LANE each). */
__global__ void k_fused_forward(const float *qkv, const float *tokens, float *probs, float *y, int T, int H, int heads,
                                float scale, draw dr)
{
    extern __shared__ __align__(128) unsigned char shared[];
    int i = blockIdx.x / heads, h = blockIdx.x % heads, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int lds = ld_scores(T), ldw = ld_weights(T);
    bf16 *q = reinterpret_cast<bf16 *>(shared), *k = q + T * LDH, *v = k + T * LDH;
    float *s = reinterpret_cast<float *>(v + T * LDH);
    bf16 *p = reinterpret_cast<bf16 *>(s + T * lds);
    float *key_ok = reinterpret_cast<float *>(p + T * ldw);   /* 1 where key c is a token, 0 padding */
    const float *rows = qkv + (size_t)i * T * 3 * H + (size_t)h * HEAD;
    load_head(rows, 3 * (size_t)H, q, T);
    load_head(rows + H, 3 * (size_t)H, k, T);
    load_head(rows + 2 * H, 3 * (size_t)H, v, T);
    for (int c = threadIdx.x; c < T; c += blockDim.x)
        key_ok[c] = tokens[((size_t)i * T + c) * SEQ_TOKEN_FIELDS] != SEQ_PAD_ID;
    __syncthreads();
    dr.sample += i;
    for (int strip = warp; strip < T / TILE; strip += WARPS) {
        frag_acc acc;
        for (int ct = 0; ct < T / TILE; ct++) {   /* the strip's scores, Q K^T: K's rows are B's columns */
            tile_product(acc, q + strip * TILE * LDH, LDH, false, k + ct * TILE * LDH, LDH, true, HEAD);
            wmma::store_matrix_sync(s + strip * TILE * lds + ct * TILE, acc, lds, wmma::mem_row_major);
        }
        __syncwarp();
        for (int r = strip * TILE; r < strip * TILE + TILE; r++) {
            float e[PER_LANE], most = -INFINITY, sum = 0.0f;
#pragma unroll
            for (int j = 0; j < PER_LANE; j++) {
                int c = lane + 32 * j;
                e[j] = c < T && key_ok[c] != 0.0f ? s[r * lds + c] * scale : -INFINITY;
                most = fmaxf(most, e[j]);
            }
            most = warp_max(most);
#pragma unroll
            for (int j = 0; j < PER_LANE; j++) {
                e[j] = e[j] == -INFINITY ? 0.0f : expf(e[j] - most);
                sum += e[j];
            }
            sum = warp_sum(sum);
            float inverse = sum > 0 ? 1.0f / sum : 0.0f;
            float *weights = probs + (((size_t)i * heads + h) * T + r) * T;
#pragma unroll
            for (int j = 0; j < PER_LANE; j++) {
                int c = lane + 32 * j;
                if (c < T) {
                    weights[c] = e[j] * inverse;
                    p[r * ldw + c] = __float2bfloat16(e[j] * inverse * kept(dr, h, r, c, T));
                }
            }
        }
        __syncwarp();
        for (int ct = 0; ct < HEAD / TILE; ct++) {   /* Y = P' V, straight to the token-major rows */
            tile_product(acc, p + strip * TILE * ldw, ldw, false, v + ct * TILE, LDH, false, T);
            wmma::store_matrix_sync(y + ((size_t)i * T + strip * TILE) * H + (size_t)h * HEAD + ct * TILE, acc, H,
                                    wmma::mem_row_major);
        }
    }
}

/* The block's (sample i, head h) backward: dP' = dY V^T, dP = D dP', dS = P (dP - rowsum(dP P))
 * scale (a warp a strip of queries, the strip's weights read into registers before its product, so
 * that their loads overlap it); then, the whole dS and P' in shared memory, dQ = dS K for a strip of
 * queries, dK = dS^T Q and dV = P'^T dY for a strip of keys. */
__global__ void k_fused_backward(const float *qkv, const float *probs, const float *dy, float *dqkv, int T, int H,
                                 int heads, float scale, draw dr, bool accumulate)
{
    extern __shared__ __align__(128) unsigned char shared[];
    int i = blockIdx.x / heads, h = blockIdx.x % heads, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int lds = ld_scores(T), ldw = ld_weights(T);
    bf16 *q = reinterpret_cast<bf16 *>(shared), *k = q + T * LDH, *v = k + T * LDH, *g = v + T * LDH;
    float *dp = reinterpret_cast<float *>(g + T * LDH);
    bf16 *ds = reinterpret_cast<bf16 *>(dp + T * lds), *pd = ds + T * ldw;
    const float *rows = qkv + (size_t)i * T * 3 * H + (size_t)h * HEAD;
    load_head(rows, 3 * (size_t)H, q, T);
    load_head(rows + H, 3 * (size_t)H, k, T);
    load_head(rows + 2 * H, 3 * (size_t)H, v, T);
    load_head(dy + (size_t)i * T * H + (size_t)h * HEAD, H, g, T);
    __syncthreads();
    dr.sample += i;
    frag_acc acc;
    for (int strip = warp; strip < T / TILE; strip += WARPS) {
        const float *weights = probs + (((size_t)i * heads + h) * T + strip * TILE) * T;
        float w[TILE][PER_LANE];
#pragma unroll
        for (int r = 0; r < TILE; r++)
#pragma unroll
            for (int j = 0; j < PER_LANE; j++)
                w[r][j] = lane + 32 * j < T ? weights[r * T + lane + 32 * j] : 0.0f;
        for (int ct = 0; ct < T / TILE; ct++) {   /* dP' = dY V^T: V's rows are B's columns */
            tile_product(acc, g + strip * TILE * LDH, LDH, false, v + ct * TILE * LDH, LDH, true, HEAD);
            wmma::store_matrix_sync(dp + strip * TILE * lds + ct * TILE, acc, lds, wmma::mem_row_major);
        }
        __syncwarp();
#pragma unroll
        for (int r = 0; r < TILE; r++) {
            int row = strip * TILE + r;
            float d[PER_LANE], dot = 0.0f;
#pragma unroll
            for (int j = 0; j < PER_LANE; j++) {
                int c = lane + 32 * j;
                float keep = c < T ? kept(dr, h, row, c, T) : 0.0f;
                d[j] = c < T ? dp[row * lds + c] * keep : 0.0f;   /* dP = D dP' */
                if (c < T)
                    pd[row * ldw + c] = __float2bfloat16(w[r][j] * keep);
                dot += d[j] * w[r][j];
            }
            dot = warp_sum(dot);
#pragma unroll
            for (int j = 0; j < PER_LANE; j++)
                if (lane + 32 * j < T)
                    ds[row * ldw + lane + 32 * j] = __float2bfloat16(w[r][j] * (d[j] - dot) * scale);
        }
    }
    __syncthreads();
    size_t ld = 3 * (size_t)H;
    float *out = dqkv + (size_t)i * T * ld + (size_t)h * HEAD;
    for (int strip = warp; strip < T / TILE; strip += WARPS)
        for (int ct = 0; ct < HEAD / TILE; ct++) {
            float *at = out + (size_t)strip * TILE * ld + ct * TILE;
            tile_product(acc, ds + strip * TILE * ldw, ldw, false, k + ct * TILE, LDH, false, T);   /* dQ = dS K */
            store_tile(acc, at, ld, accumulate);
            tile_product(acc, ds + strip * TILE, ldw, true, q + ct * TILE, LDH, false, T);   /* dK = dS^T Q */
            store_tile(acc, at + H, ld, accumulate);
            tile_product(acc, pd + strip * TILE, ldw, true, g + ct * TILE, LDH, false, T);   /* dV = P'^T dY */
            store_tile(acc, at + 2 * H, ld, accumulate);
        }
}

/* Whether the fused kernels take this attention, their shared memory granted (once a kernel; on a
 * GPU with less to give a block, never). */
bool fused_fits(cuda_state *st, int T, int H, int heads)
{
    if (!st->bf16 || H != heads * HEAD || T % TILE != 0 || T > MAX_T)
        return false;
    if (st->fused_attention_room == 0) {
        int most = 0;
        cudaDeviceGetAttribute(&most, cudaDevAttrMaxSharedMemoryPerBlockOptin, st->device);
        size_t need = backward_bytes(MAX_T) > forward_bytes(MAX_T) ? backward_bytes(MAX_T) : forward_bytes(MAX_T);
        bool room = (size_t)most >= need &&
                    cudaFuncSetAttribute(k_fused_forward, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)forward_bytes(MAX_T)) == cudaSuccess &&
                    cudaFuncSetAttribute(k_fused_backward, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)backward_bytes(MAX_T)) == cudaSuccess;
        st->fused_attention_room = room ? 1 : -1;
    }
    return st->fused_attention_room > 0;
}

draw draw_of(const struct seq_draw *drop)
{
    draw dr = {};
    dr.dropping = drop && drop->rate > 0;
    if (dr.dropping)
        dr.rate = drop->rate, dr.factor = 1.0f / (1.0f - drop->rate), dr.noise = drop->noise, dr.sample = drop->position;
    return dr;
}

}  // namespace

bool fused_attention_forward(cuda_state *st, const float *qkv, const float *tokens, float *probs, float *y, int n,
                             int T, int H, int heads, const struct seq_draw *drop)
{
    if (!fused_fits(st, T, H, heads))
        return false;
    k_fused_forward<<<(unsigned)n * heads, THREADS, forward_bytes(T), st->stream>>>(
        qkv, tokens, probs, y, T, H, heads, 1.0f / sqrtf((float)HEAD), draw_of(drop));
    launched(st, "attention forward (fused)");
    return true;
}

bool fused_attention_backward(cuda_state *st, const float *qkv, const float *probs, const float *dy, float *dqkv,
                              int n, int T, int H, int heads, const struct seq_draw *drop, bool accumulate)
{
    if (!fused_fits(st, T, H, heads))
        return false;
    k_fused_backward<<<(unsigned)n * heads, THREADS, backward_bytes(T), st->stream>>>(
        qkv, probs, dy, dqkv, T, H, heads, 1.0f / sqrtf((float)HEAD), draw_of(drop), accumulate);
    launched(st, "attention backward (fused)");
    return true;
}

}  // namespace dtrain_cuda
