/* seq_cuda.cu - the language models' kernels of backend.h on the GPU but attention
 * (attention_cuda.cu): embeddings, layer norm (a block per token), erf GELU, tanh, the first
 * token, dropout drawn by the same counter-based hash as the CPU and the masked-LM loss.
 * seq_kernels.c is the specification;
 * tests/test_cuda.c holds each of these against it where a GPU exists. Conventions as
 * backend_cuda.cu: device pointers, one stream, the first failure kept. */
#include <cmath>
#include <cstdint>

#include "trainer/backend/cuda_state.h"
#include "trainer/backend/seq_cuda.h"

namespace dtrain_cuda {
namespace {

/* 1 / sqrt(2) and 2 / sqrt(pi): math.h's M_SQRT1_2 and M_2_SQRTPI, which strict C++17 hides. */
constexpr double SQRT1_2 = 0.70710678118654752440, TWO_OVER_SQRTPI = 1.12837916709551257390;

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

/* The block's reduction of `parts` values a thread (v[0..parts)) by `combine`, every thread
 * getting them; blockDim.x whole warps, at most THREADS; shared holds parts x 32 doubles. Within a
 * warp by shuffles, then across the warps' results in shared memory: two barriers (a tree in
 * shared memory took nine, and a layer norm's token waited on them, not on memory). */
template <int parts, typename Combine>
__device__ void block_reduce(double *v, double *shared, Combine combine)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int p = 0; p < parts; p++) {
        for (int lane_mask = 16; lane_mask > 0; lane_mask /= 2)
            v[p] = combine(v[p], __shfl_xor_sync(0xffffffffu, v[p], lane_mask));
        if (lane == 0)
            shared[p * 32 + warp] = v[p];
    }
    __syncthreads();
    for (int p = 0; p < parts; p++) {
        v[p] = shared[p * 32];
        for (int w = 1; w < warps; w++)
            v[p] = combine(v[p], shared[p * 32 + w]);
    }
    __syncthreads();   /* shared is free for the next reduction */
}

__device__ double block_sum(double v, double *shared)
{
    block_reduce<1>(&v, shared, [](double a, double b) { return a + b; });
    return v;
}

__device__ double block_max(double v, double *shared)
{
    block_reduce<1>(&v, shared, [](double a, double b) { return fmax(a, b); });
    return v;
}

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

/* A block per `per_block` tokens: dx = invstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma.
 * gamma's and beta's gradients are summed over the block's tokens in shared memory (each thread
 * keeps its own features) and added atomically once a block (a token's atomics put 4096 adds a
 * layer on each of BERT-Base's 768 addresses; ncu found the kernel no faster without them: its
 * two reductions a token, nine barriers each before block_reduce's shuffles, are the next
 * suspect). Past LN_SHARED_MOST features (the shared memory a block has without asking) they are
 * added a token at a time. */
constexpr int LN_SHARED_MOST = 5120, LN_ROWS_A_BLOCK = 8;

__global__ void k_layernorm_backward(const float *x, const float *gamma, const float *save_mean,
                                     const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta,
                                     int rows, int H, int per_block, bool accumulate)
{
    __shared__ double shared[THREADS];
    extern __shared__ float param_grad[];   /* H of gamma's, then H of beta's, where H fits */
    bool in_shared = H <= LN_SHARED_MOST;
    for (int h = threadIdx.x; in_shared && h < H; h += blockDim.x)
        param_grad[h] = 0, param_grad[H + h] = 0;
    int first = blockIdx.x * per_block, last = min(rows, first + per_block);
    for (int row = first; row < last; row++) {
        size_t at = (size_t)row * H;
        double mean = save_mean[row], invstd = save_invstd[row], g_sum = 0, gx_sum = 0;
        for (int h = threadIdx.x; h < H; h += blockDim.x) {
            double xhat = (x[at + h] - mean) * invstd, g = (double)dy[at + h] * gamma[h];
            g_sum += g, gx_sum += g * xhat;
            if (in_shared)
                param_grad[h] += (float)(dy[at + h] * xhat), param_grad[H + h] += dy[at + h];
            else
                atomicAdd(&dgamma[h], (float)(dy[at + h] * xhat)), atomicAdd(&dbeta[h], dy[at + h]);
        }
        double sums[2] = {g_sum, gx_sum};   /* both in one reduction */
        block_reduce<2>(sums, shared, [](double a, double b) { return a + b; });
        g_sum = sums[0] / H, gx_sum = sums[1] / H;
        for (int h = threadIdx.x; dx && h < H; h += blockDim.x) {
            double xhat = (x[at + h] - mean) * invstd, g = (double)dy[at + h] * gamma[h];
            float d = (float)(invstd * (g - g_sum - xhat * gx_sum));
            dx[at + h] = accumulate ? dx[at + h] + d : d;
        }
    }
    for (int h = threadIdx.x; in_shared && h < H; h += blockDim.x)
        atomicAdd(&dgamma[h], param_grad[h]), atomicAdd(&dbeta[h], param_grad[H + h]);
}

/* GELU and its derivative in fp32 (erff, expf: within a few ulp, where the reference's double
 * adds nothing a bf16 or fp32 step keeps). */
__global__ void k_gelu_forward(const float *x, float *y, size_t count)
{
    GRID_STRIDE(i, count) y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)SQRT1_2));
}

__global__ void k_gelu_backward(const float *x, const float *dy, float *dx, size_t count, bool accumulate)
{
    GRID_STRIDE(i, count) {
        float v = x[i];
        float d = 0.5f * (1.0f + erff(v * (float)SQRT1_2)) +
                  v * expf(-0.5f * v * v) * (float)(0.5 * TWO_OVER_SQRTPI * SQRT1_2);
        float g = dy[i] * d;
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
        mask[at] = rate <= 0 || seq_kept(noise, position + (long)i, e, rate);
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
    unsigned blocks = (unsigned)((rows + LN_ROWS_A_BLOCK - 1) / LN_ROWS_A_BLOCK);
    size_t param_bytes = H <= LN_SHARED_MOST ? 2 * (size_t)H * sizeof(float) : 0;
    if (rows > 0)
        k_layernorm_backward<<<blocks, row_threads(H), param_bytes, st->stream>>>(
            x, gamma, save_mean, save_invstd, dy, dx, dgamma, dbeta, rows, H, LN_ROWS_A_BLOCK, accumulate);
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
    t->first_token_forward = cuda_first_token_forward;
    t->first_token_backward = cuda_first_token_backward;
    t->dropout_forward = cuda_dropout_forward;
    t->dropout_backward = cuda_dropout_backward;
    t->token_xent = cuda_token_xent;
}

void release_seq_kernels(cuda_state *st)
{
    cudaFree(st->seq_count);
    st->seq_count = nullptr;
}

}  // namespace dtrain_cuda
