/* seq_fast.c - the fast CPU backend's kernels for the language models' layers: the same
 * arithmetic as seq_kernels.c (the reference they are tested against), in float, with inner loops
 * over contiguous features that GCC vectorises, and OpenMP over sequences, heads and rows. The
 * attention's products are small (T x T x H/heads per head), so they are loops here rather than
 * SGEMM calls: one per head would cost more in calls than they compute at BERT's lengths. */
#include "seq_fast.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"

static inline float dot(const float *restrict a, const float *restrict b, int count)
{
    float sum = 0;
    for (int c = 0; c < count; c++)
        sum += a[c] * b[c];
    return sum;
}

static inline void axpy(float alpha, const float *restrict x, float *restrict y, int count)
{
    for (int c = 0; c < count; c++)
        y[c] += alpha * x[c];
}

void fast_attention_forward(void *state, const float *qkv, const float *tokens, float *probs, float *y, int n, int T,
                            int H, int heads)
{
    (void)state;
    int d = H / heads;
    float scale = 1.0f / sqrtf((float)d);
    size_t row = 3 * (size_t)H;
#pragma omp parallel for collapse(2) schedule(static)
    for (int i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            const float *base = qkv + (size_t)i * T * row + (size_t)h * d;
            const float *tok = tokens + (size_t)i * T * SEQ_TOKEN_FIELDS;
            for (int q = 0; q < T; q++) {
                float *p = probs + (((size_t)i * heads + h) * T + q) * T, max = -INFINITY, sum = 0;
                for (int k = 0; k < T; k++) {
                    p[k] = tok[k * SEQ_TOKEN_FIELDS] == SEQ_PAD_ID ? -INFINITY
                                                                    : dot(base + q * row, base + k * row + H, d) * scale;
                    max = p[k] > max ? p[k] : max;
                }
                for (int k = 0; k < T; k++) {
                    p[k] = p[k] == -INFINITY ? 0.0f : expf(p[k] - max);
                    sum += p[k];
                }
                float inv = sum > 0 ? 1.0f / sum : 0.0f;
                float *out = y + ((size_t)i * T + q) * H + (size_t)h * d;
                memset(out, 0, (size_t)d * sizeof(float));
                for (int k = 0; k < T; k++) {
                    p[k] *= inv;
                    if (p[k] != 0)
                        axpy(p[k], base + k * row + 2 * (size_t)H, out, d);
                }
            }
        }
}

void fast_attention_backward(void *state, const float *qkv, const float *probs, const float *dy, float *dqkv, int n,
                             int T, int H, int heads, bool accumulate)
{
    (void)state;
    int d = H / heads;
    float scale = 1.0f / sqrtf((float)d);
    size_t row = 3 * (size_t)H;
    if (!accumulate)
        memset(dqkv, 0, (size_t)n * T * row * sizeof(float));
    /* heads write disjoint feature ranges of dqkv, sequences disjoint rows: no two threads meet */
#pragma omp parallel
    {
        float *dp = malloc((size_t)T * sizeof(float));
#pragma omp for collapse(2) schedule(static)
        for (int i = 0; i < n; i++)
            for (int h = 0; h < heads; h++) {
                if (!dp)
                    continue;
                const float *base = qkv + (size_t)i * T * row + (size_t)h * d;
                float *dbase = dqkv + (size_t)i * T * row + (size_t)h * d;
                for (int q = 0; q < T; q++) {
                    const float *p = probs + (((size_t)i * heads + h) * T + q) * T;
                    const float *g = dy + ((size_t)i * T + q) * H + (size_t)h * d;
                    float sum = 0;
                    for (int k = 0; k < T; k++) {
                        dp[k] = p[k] != 0 ? dot(g, base + k * row + 2 * (size_t)H, d) : 0.0f;
                        sum += dp[k] * p[k];
                    }
                    for (int k = 0; k < T; k++) {
                        if (p[k] == 0)
                            continue;
                        float ds = p[k] * (dp[k] - sum) * scale;
                        axpy(ds, base + k * row + H, dbase + q * row, d);          /* dQ += dS K */
                        axpy(ds, base + q * row, dbase + k * row + H, d);          /* dK += dS^T Q */
                        axpy(p[k], g, dbase + k * row + 2 * (size_t)H, d);         /* dV += P^T dY */
                    }
                }
            }
        free(dp);
    }
}

void fast_layernorm_forward(void *state, const float *x, const float *gamma, const float *beta, float *save_mean,
                            float *save_invstd, float *y, int rows, int H, float eps)
{
    (void)state;
#pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * H;
        float sum = 0, sq = 0;
        for (int h = 0; h < H; h++)
            sum += xr[h];
        float mean = sum / H;
        for (int h = 0; h < H; h++)
            sq += (xr[h] - mean) * (xr[h] - mean);
        float invstd = 1.0f / sqrtf(sq / H + eps);
        save_mean[r] = mean, save_invstd[r] = invstd;
        float *yr = y + (size_t)r * H;
        for (int h = 0; h < H; h++)
            yr[h] = (xr[h] - mean) * invstd * gamma[h] + beta[h];
    }
}

/* The input gradient by rows in parallel; gamma's and beta's summed over rows by feature blocks,
 * so that no two threads add into one. */
void fast_layernorm_backward(void *state, const float *x, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta, int rows,
                             int H, bool accumulate)
{
    (void)state;
    if (dx) {
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * H, *dyr = dy + (size_t)r * H;
            float mean = save_mean[r], invstd = save_invstd[r], g_sum = 0, gx_sum = 0;
            for (int h = 0; h < H; h++) {
                float g = dyr[h] * gamma[h];
                g_sum += g;
                gx_sum += g * (xr[h] - mean) * invstd;
            }
            g_sum /= H, gx_sum /= H;
            float *dxr = dx + (size_t)r * H;
            for (int h = 0; h < H; h++) {
                float d = invstd * (dyr[h] * gamma[h] - g_sum - (xr[h] - mean) * invstd * gx_sum);
                dxr[h] = accumulate ? dxr[h] + d : d;
            }
        }
    }
    enum { BLOCK = 64 };
#pragma omp parallel for schedule(static)
    for (int h0 = 0; h0 < H; h0 += BLOCK) {
        int end = h0 + BLOCK < H ? h0 + BLOCK : H;
        for (int r = 0; r < rows; r++) {
            const float *xr = x + (size_t)r * H, *dyr = dy + (size_t)r * H;
            float mean = save_mean[r], invstd = save_invstd[r];
            for (int h = h0; h < end; h++) {
                dgamma[h] += dyr[h] * (xr[h] - mean) * invstd;
                dbeta[h] += dyr[h];
            }
        }
    }
}

void fast_gelu_forward(void *state, const float *x, float *y, size_t count)
{
    (void)state;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++)
        y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float)M_SQRT1_2));
}

void fast_gelu_backward(void *state, const float *x, const float *dy, float *dx, size_t count, bool accumulate)
{
    (void)state;
    const float k = (float)(0.5 * M_2_SQRTPI * M_SQRT1_2);   /* 1 / sqrt(2 pi) */
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < count; i++) {
        float v = x[i];
        float d = dy[i] * (0.5f * (1.0f + erff(v * (float)M_SQRT1_2)) + v * expf(-0.5f * v * v) * k);
        dx[i] = accumulate ? dx[i] + d : d;
    }
}
