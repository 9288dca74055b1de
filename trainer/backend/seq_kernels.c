/* seq_kernels.c - the reference kernels of the language models' layers (see backend.h): token,
 * position and segment embeddings, layer norm over each token's features, the erf GELU, tanh,
 * multi-head self-attention with a padding mask, and picking each sequence's first token ([CLS]).
 * Plain loops with double accumulators where sums are long: the specification the fast and GPU
 * kernels are tested against, as backend_ref.c is for the convolutional layers.
 *
 * A sequence tensor is [n][T][H]: n sequences of T tokens of H features. A token batch (the model's
 * input) is [n][T][SEQ_TOKEN_FIELDS] floats: each token's id and its segment (0 or 1). Id
 * SEQ_PAD_ID is padding: attention gives no weight to such keys. */
#include "trainer/backend/backend.h"

#include <math.h>
#include <string.h>

#include "trainer/backend/kernels.h"

void seq_embedding_forward(void *state, const float *tokens, const float *word, const float *pos, const float *seg,
                           float *y, int n, int T, int H)
{
    (void)state;
    for (int i = 0; i < n; i++)
        for (int t = 0; t < T; t++) {
            const float *tok = tokens + ((size_t)i * T + t) * SEQ_TOKEN_FIELDS;
            const float *we = word + (size_t)tok[0] * H, *pe = pos + (size_t)t * H, *se = seg + (size_t)tok[1] * H;
            float *out = y + ((size_t)i * T + t) * H;
            for (int h = 0; h < H; h++)
                out[h] = we[h] + pe[h] + se[h];
        }
}

/* Each table row gets the gradients of the tokens that used it (the padding id's row too, as
 * PyTorch's nn.Embedding without padding_idx). */
void seq_embedding_backward(void *state, const float *tokens, const float *dy, float *dword, float *dpos, float *dseg,
                            int n, int T, int H)
{
    (void)state;
    for (int i = 0; i < n; i++)
        for (int t = 0; t < T; t++) {
            const float *tok = tokens + ((size_t)i * T + t) * SEQ_TOKEN_FIELDS;
            const float *g = dy + ((size_t)i * T + t) * H;
            float *dw = dword + (size_t)tok[0] * H, *dp = dpos + (size_t)t * H, *ds = dseg + (size_t)tok[1] * H;
            for (int h = 0; h < H; h++) {
                dw[h] += g[h];
                dp[h] += g[h];
                ds[h] += g[h];
            }
        }
}

void seq_layernorm_forward(void *state, const float *x, const float *gamma, const float *beta, float *save_mean,
                           float *save_invstd, float *y, int rows, int H, float eps)
{
    (void)state;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * H;
        double sum = 0, sq = 0;
        for (int h = 0; h < H; h++)
            sum += xr[h];
        double mean = sum / H;
        for (int h = 0; h < H; h++)
            sq += (xr[h] - mean) * (xr[h] - mean);
        double invstd = 1.0 / sqrt(sq / H + eps);   /* biased variance, as nn.LayerNorm */
        save_mean[r] = (float)mean;
        save_invstd[r] = (float)invstd;
        for (int h = 0; h < H; h++)
            y[(size_t)r * H + h] = (float)((xr[h] - mean) * invstd * gamma[h] + beta[h]);
    }
}

/* dx = invstd * (g - mean(g) - xhat * mean(g * xhat)), with g = dy * gamma. */
void seq_layernorm_backward(void *state, const float *x, const float *gamma, const float *save_mean,
                            const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta, int rows,
                            int H, bool accumulate)
{
    (void)state;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * H, *dyr = dy + (size_t)r * H;
        double mean = save_mean[r], invstd = save_invstd[r], g_sum = 0, gx_sum = 0;
        for (int h = 0; h < H; h++) {
            double xhat = (xr[h] - mean) * invstd, g = (double)dyr[h] * gamma[h];
            g_sum += g;
            gx_sum += g * xhat;
            dgamma[h] += (float)(dyr[h] * xhat);
            dbeta[h] += dyr[h];
        }
        if (!dx)
            continue;
        for (int h = 0; h < H; h++) {
            double xhat = (xr[h] - mean) * invstd, g = (double)dyr[h] * gamma[h];
            double d = invstd * (g - g_sum / H - xhat * gx_sum / H);
            dx[(size_t)r * H + h] = (float)(accumulate ? dx[(size_t)r * H + h] + d : d);
        }
    }
}

/* GELU in BERT's and PyTorch's default (erf) form: x * Phi(x). */
void seq_gelu_forward(void *state, const float *x, float *y, size_t count)
{
    (void)state;
    for (size_t i = 0; i < count; i++)
        y[i] = (float)(0.5 * x[i] * (1.0 + erf(x[i] * M_SQRT1_2)));
}

void seq_gelu_backward(void *state, const float *x, const float *dy, float *dx, size_t count, bool accumulate)
{
    (void)state;
    for (size_t i = 0; i < count; i++) {
        double v = x[i];
        double d = 0.5 * (1.0 + erf(v * M_SQRT1_2)) + v * exp(-0.5 * v * v) * (0.5 * M_2_SQRTPI * M_SQRT1_2);
        dx[i] = (float)(accumulate ? dx[i] + dy[i] * d : dy[i] * d);
    }
}

void seq_tanh_forward(void *state, const float *x, float *y, size_t count)
{
    (void)state;
    for (size_t i = 0; i < count; i++)
        y[i] = tanhf(x[i]);
}

void seq_tanh_backward(void *state, const float *y, const float *dy, float *dx, size_t count, bool accumulate)
{
    (void)state;
    for (size_t i = 0; i < count; i++) {
        float d = dy[i] * (1.0f - y[i] * y[i]);
        dx[i] = accumulate ? dx[i] + d : d;
    }
}

/* Is key j of sequence i a real token (not padding)? */
static bool key_valid(const float *tokens, int i, int j, int T)
{
    return tokens[((size_t)i * T + j) * SEQ_TOKEN_FIELDS] != SEQ_PAD_ID;
}

/* Weight (h, q, k) of sample i after dropout, as a factor of the softmax's: 0, or 1 / (1 - rate). */
static double dropout_kept(const struct seq_draw *drop, int i, int h, int q, int k, int T)
{
    if (!drop || drop->rate <= 0)
        return 1;
    size_t element = ((size_t)h * T + q) * T + k;
    return seq_kept(drop->noise, drop->position + i, element, drop->rate) ? 1.0 / (1.0 - drop->rate) : 0;
}

/* For each sequence and head: S = Q K^T / sqrt(d) over the valid keys, P = softmax(S) along the
 * keys (kept in probs for backward), Y = dropout(P) V. qkv is [n][T][3H]: each token's query, key
 * and value, head h's slice the features [h d, (h + 1) d) of each. A sequence of padding only
 * attends to nothing: its P is all zero. */
void seq_attention_forward(void *state, const float *qkv, const float *tokens, float *probs, float *y, int n, int T,
                           int H, int heads, const struct seq_draw *drop)
{
    (void)state;
    int d = H / heads;
    double scale = 1.0 / sqrt((double)d);
    size_t row = 3 * (size_t)H;
    for (int i = 0; i < n; i++)
        for (int h = 0; h < heads; h++)
            for (int q = 0; q < T; q++) {
                const float *qv = qkv + ((size_t)i * T + q) * row + (size_t)h * d;
                float *p = probs + (((size_t)i * heads + h) * T + q) * T;
                double max = -INFINITY, sum = 0;
                for (int k = 0; k < T; k++) {
                    if (!key_valid(tokens, i, k, T)) {
                        p[k] = 0;
                        continue;
                    }
                    const float *kv = qkv + ((size_t)i * T + k) * row + H + (size_t)h * d;
                    double s = 0;
                    for (int c = 0; c < d; c++)
                        s += (double)qv[c] * kv[c];
                    p[k] = (float)(s * scale);
                    max = p[k] > max ? p[k] : max;
                }
                for (int k = 0; k < T; k++)
                    if (key_valid(tokens, i, k, T)) {
                        double e = exp(p[k] - max);
                        p[k] = (float)e;
                        sum += e;
                    }
                for (int k = 0; k < T; k++)
                    p[k] = sum > 0 ? (float)(p[k] / sum) : 0.0f;
                float *out = y + ((size_t)i * T + q) * H + (size_t)h * d;
                for (int c = 0; c < d; c++) {
                    double acc = 0;
                    for (int k = 0; k < T; k++)
                        acc += (double)p[k] * dropout_kept(drop, i, h, q, k, T) *
                               qkv[((size_t)i * T + k) * row + 2 * (size_t)H + (size_t)h * d + c];
                    out[c] = (float)acc;
                }
            }
}

/* With D the dropout's factors: dV = (D P)^T dY; dP = D (dY V^T); dS = P * (dP - sum_k(dP * P));
 * dQ = dS K / sqrt(d); dK = dS^T Q / sqrt(d). */
void seq_attention_backward(void *state, const float *qkv, const float *probs, const float *dy, float *dqkv, int n,
                            int T, int H, int heads, const struct seq_draw *drop, bool accumulate)
{
    (void)state;
    int d = H / heads;
    double scale = 1.0 / sqrt((double)d);
    size_t row = 3 * (size_t)H;
    if (!accumulate)
        memset(dqkv, 0, (size_t)n * T * row * sizeof(float));
    for (int i = 0; i < n; i++)
        for (int h = 0; h < heads; h++) {
            const float *P = probs + ((size_t)i * heads + h) * T * T;
            size_t off = (size_t)h * d;
            for (int q = 0; q < T; q++) {
                const float *p = P + (size_t)q * T, *g = dy + ((size_t)i * T + q) * H + off;
                double dot = 0;   /* sum_k dP[k] P[k] */
                double dp[T > 0 ? T : 1];
                for (int k = 0; k < T; k++) {
                    const float *v = qkv + ((size_t)i * T + k) * row + 2 * (size_t)H + off;
                    double s = 0;
                    for (int c = 0; c < d; c++)
                        s += (double)g[c] * v[c];
                    dp[k] = s * dropout_kept(drop, i, h, q, k, T);
                    dot += dp[k] * p[k];
                }
                float *dq = dqkv + ((size_t)i * T + q) * row + off;
                const float *qv = qkv + ((size_t)i * T + q) * row + off;
                for (int k = 0; k < T; k++) {
                    if (p[k] == 0)
                        continue;
                    double ds = p[k] * (dp[k] - dot) * scale, dropped = p[k] * dropout_kept(drop, i, h, q, k, T);
                    const float *kv = qkv + ((size_t)i * T + k) * row + H + off;
                    float *dk = dqkv + ((size_t)i * T + k) * row + H + off;
                    float *dv = dqkv + ((size_t)i * T + k) * row + 2 * (size_t)H + off;
                    for (int c = 0; c < d; c++) {
                        dq[c] += (float)(ds * kv[c]);
                        dk[c] += (float)(ds * qv[c]);
                        dv[c] += (float)(dropped * g[c]);
                    }
                }
            }
        }
}

void seq_dropout_forward(void *state, const float *x, float *y, uint8_t *mask, int n, size_t per_sample, float rate,
                         uint64_t noise, long position)
{
    (void)state;
    float scale = 1.0f / (1.0f - rate);
    for (int i = 0; i < n; i++)
        for (size_t e = 0; e < per_sample; e++) {
            size_t at = (size_t)i * per_sample + e;
            mask[at] = rate <= 0 || seq_kept(noise, position + i, e, rate);
            y[at] = mask[at] ? (rate > 0 ? x[at] * scale : x[at]) : 0.0f;
        }
}

void seq_dropout_backward(void *state, const uint8_t *mask, const float *dy, float *dx, size_t count, float rate,
                          bool accumulate)
{
    (void)state;
    float scale = rate > 0 ? 1.0f / (1.0f - rate) : 1.0f;
    for (size_t i = 0; i < count; i++) {
        float d = mask[i] ? dy[i] * scale : 0.0f;
        dx[i] = accumulate ? dx[i] + d : d;
    }
}

double seq_token_xent(void *state, const float *logits, const float *tokens, float *dlogits, int rows, int classes,
                      int *counted)
{
    (void)state;
    int count = 0;
    for (int r = 0; r < rows; r++)
        count += (int)tokens[(size_t)r * SEQ_TOKEN_FIELDS + 2] != SEQ_NO_LABEL;
    *counted = count;
    double loss = 0;
    for (int r = 0; r < rows; r++) {
        const float *z = logits + (size_t)r * classes;
        float *dz = dlogits ? dlogits + (size_t)r * classes : NULL;
        int label = (int)tokens[(size_t)r * SEQ_TOKEN_FIELDS + 2];
        if (label == SEQ_NO_LABEL) {
            if (dz)
                memset(dz, 0, (size_t)classes * sizeof(float));
            continue;
        }
        loss += xent_row(z, label, classes, dz, count, NULL);
    }
    return count ? loss / count : 0.0;
}

/* [n][T][H] -> [n][H]: each sequence's first token. */
void seq_first_token_forward(void *state, const float *x, float *y, int n, int T, int H)
{
    (void)state;
    for (int i = 0; i < n; i++)
        memcpy(y + (size_t)i * H, x + (size_t)i * T * H, (size_t)H * sizeof(float));
}

void seq_first_token_backward(void *state, const float *dy, float *dx, int n, int T, int H, bool accumulate)
{
    (void)state;
    for (int i = 0; i < n; i++) {
        float *d = dx + (size_t)i * T * H;
        if (!accumulate)
            memset(d, 0, (size_t)T * H * sizeof(float));
        for (int h = 0; h < H; h++)
            d[h] += dy[(size_t)i * H + h];
    }
}
