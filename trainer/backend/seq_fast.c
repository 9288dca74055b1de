/* seq_fast.c - the fast CPU backend's kernels for the language models' layers: the same
 * arithmetic as seq_kernels.c (the reference they are tested against), in float. Attention's
 * products are OpenBLAS SGEMMs, one per sequence and head over the strided head slices (at batch
 * 32, T 128, H 256, 4 heads: 20 ms forward and 19 ms backward, against 116 and 181 ms for the
 * vectorised loops they replaced); layer norm is loops over contiguous features that GCC
 * vectorises, with OpenMP over rows; GELU is seq_gelu.c's (it needs another compiler flag). */
#include "trainer/backend/seq_fast.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/backend/backend.h"

/* Row-wise softmax of the scores in p (T x T), keys that are padding given no weight. */
static void masked_softmax(float *p, const float *tok, int T)
{
    for (int q = 0; q < T; q++) {
        float *row = p + (size_t)q * T, max = -INFINITY, sum = 0;
        for (int k = 0; k < T; k++) {
            if (tok[k * SEQ_TOKEN_FIELDS] == SEQ_PAD_ID)
                row[k] = -INFINITY;
            max = row[k] > max ? row[k] : max;
        }
        for (int k = 0; k < T; k++) {
            row[k] = row[k] == -INFINITY ? 0.0f : expf(row[k] - max);
            sum += row[k];
        }
        float inv = sum > 0 ? 1.0f / sum : 0.0f;
        for (int k = 0; k < T; k++)
            row[k] *= inv;
    }
}

/* Per sequence and head: S = Q K^T / sqrt(d) and Y = P V as SGEMMs over the strided head slices of
 * qkv (row stride 3H), the softmax between them. */
/* x = D x for one head's T x T weights (or their gradients) of sample i, D the dropout's factors (0,
 * or 1 / (1 - rate)): the draws seq_attention_forward's reference makes. */
static void drop_weights(const struct seq_draw *drop, const float *x, float *scaled, int i, int h, int T)
{
    float factor = 1.0f / (1.0f - drop->rate);
    size_t first = (size_t)h * T * T;
    for (size_t e = 0; e < (size_t)T * T; e++)
        scaled[e] = seq_kept(drop->noise, drop->position + i, first + e, drop->rate) ? x[e] * factor : 0.0f;
}

void fast_attention_forward(void *state, const float *qkv, const float *tokens, float *probs, float *y, int n, int T,
                            int H, int heads, const struct seq_draw *drop)
{
    (void)state;
    int d = H / heads, ld = 3 * H;
    float scale = 1.0f / sqrtf((float)d);
    bool dropping = drop && drop->rate > 0;
    float *dropped = dropping ? malloc((size_t)T * T * sizeof(float)) : NULL;
    if (dropping && !dropped)
        return;   /* as in backward: a T x T scratch is tiny */
    for (int i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            const float *q = qkv + (size_t)i * T * ld + (size_t)h * d, *k = q + H, *v = q + 2 * (size_t)H;
            float *p = probs + ((size_t)i * heads + h) * T * T;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d, scale, q, ld, k, ld, 0.0f, p, T);
            masked_softmax(p, tokens + (size_t)i * T * SEQ_TOKEN_FIELDS, T);
            if (dropping)
                drop_weights(drop, p, dropped, i, h, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, d, T, 1.0f, dropping ? dropped : p, T, v, ld,
                        0.0f, y + (size_t)i * T * H + (size_t)h * d, H);
        }
    free(dropped);
}

/* With D the dropout's factors: dV += (D P)^T dY; dP = D (dY V^T); dS = P * (dP - rowsum(dP * P)) /
 * sqrt(d); dQ += dS K; dK += dS^T Q. */
void fast_attention_backward(void *state, const float *qkv, const float *probs, const float *dy, float *dqkv, int n,
                             int T, int H, int heads, const struct seq_draw *drop, bool accumulate)
{
    (void)state;
    int d = H / heads, ld = 3 * H;
    float scale = 1.0f / sqrtf((float)d);
    if (!accumulate)
        memset(dqkv, 0, (size_t)n * T * ld * sizeof(float));
    bool dropping = drop && drop->rate > 0;
    float *ds = malloc((size_t)T * T * sizeof(float)), *dropped = dropping ? malloc((size_t)T * T * sizeof(float)) : NULL;
    if (!ds || (dropping && !dropped)) {
        free(ds), free(dropped);
        return;   /* the caller's backend_cpu_failed cannot see this: a T x T scratch is tiny */
    }
    for (int i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            size_t at = (size_t)i * T * ld + (size_t)h * d;
            const float *q = qkv + at, *k = q + H, *v = q + 2 * (size_t)H;
            float *dq = dqkv + at, *dk = dq + H, *dv = dq + 2 * (size_t)H;
            const float *p = probs + ((size_t)i * heads + h) * T * T, *g = dy + (size_t)i * T * H + (size_t)h * d;
            if (dropping)
                drop_weights(drop, p, dropped, i, h, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, d, T, 1.0f, dropping ? dropped : p, T, g, H, 1.0f,
                        dv, ld);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, d, 1.0f, g, H, v, ld, 0.0f, ds, T);
            if (dropping)   /* dP = D dP' */
                drop_weights(drop, ds, ds, i, h, T);
            for (int r = 0; r < T; r++) {
                float *dsr = ds + (size_t)r * T, sum = 0;
                const float *pr = p + (size_t)r * T;
                for (int c = 0; c < T; c++)
                    sum += dsr[c] * pr[c];
                for (int c = 0; c < T; c++)
                    dsr[c] = pr[c] * (dsr[c] - sum) * scale;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, d, T, 1.0f, ds, T, k, ld, 1.0f, dq, ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, d, T, 1.0f, ds, T, q, ld, 1.0f, dk, ld);
        }
    free(ds);
    free(dropped);
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
