/* backend_ref.c - the reference kernels: plain C loops, the specification the other backends are
 * tested against (see backend.h for the conventions). */
#include "trainer/backend/backend.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/backend/kernels.h"

static void ref_linear_forward(void *state, const float *x, const float *w, const float *b, float *y, int n, int in,
                               int out)
{
    (void)state;
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            double sum = b ? b[o] : 0.0;
            for (int k = 0; k < in; k++)
                sum += (double)x[(size_t)i * in + k] * w[(size_t)o * in + k];
            y[(size_t)i * out + o] = (float)sum;
        }
}

static void ref_linear_backward(void *state, const float *x, const float *w, const float *dy, float *dx, float *dw,
                                float *db, int n, int in, int out, bool accumulate)
{
    (void)state;
    for (int i = 0; i < n && dx; i++)
        for (int k = 0; k < in; k++) {
            double sum = accumulate ? dx[(size_t)i * in + k] : 0.0;
            for (int o = 0; o < out; o++)
                sum += (double)dy[(size_t)i * out + o] * w[(size_t)o * in + k];
            dx[(size_t)i * in + k] = (float)sum;
        }
    for (int o = 0; o < out; o++) {
        for (int k = 0; k < in; k++) {
            double sum = 0;
            for (int i = 0; i < n; i++)
                sum += (double)dy[(size_t)i * out + o] * x[(size_t)i * in + k];
            dw[(size_t)o * in + k] += (float)sum;
        }
        if (db) {
            double sum = 0;
            for (int i = 0; i < n; i++)
                sum += dy[(size_t)i * out + o];
            db[o] += (float)sum;
        }
    }
}

/* The input position a kernel tap reads, or -1 in the padding. */
static inline int input_tap(int out, int k, int stride, int pad, int size)
{
    int at = out * stride - pad + k;
    return at >= 0 && at < size ? at : -1;
}

static void ref_conv_forward(void *state, const struct conv_shape *s, const float *x, const float *w, const float *b,
                             float *y)
{
    (void)state;
    for (int i = 0; i < s->n; i++)
        for (int co = 0; co < s->c_out; co++)
            for (int oy = 0; oy < s->h_out; oy++)
                for (int ox = 0; ox < s->w_out; ox++) {
                    double sum = b ? b[co] : 0.0;
                    for (int ci = 0; ci < s->c; ci++)
                        for (int ky = 0; ky < s->kh; ky++) {
                            int iy = input_tap(oy, ky, s->stride, s->pad, s->h);
                            for (int kx = 0; kx < s->kw && iy >= 0; kx++) {
                                int ix = input_tap(ox, kx, s->stride, s->pad, s->w);
                                if (ix >= 0)
                                    sum += (double)x[(((size_t)i * s->c + ci) * s->h + iy) * s->w + ix] *
                                           w[(((size_t)co * s->c + ci) * s->kh + ky) * s->kw + kx];
                            }
                        }
                    y[(((size_t)i * s->c_out + co) * s->h_out + oy) * s->w_out + ox] = (float)sum;
                }
}

static void ref_conv_backward(void *state, const struct conv_shape *s, const float *x, const float *w, const float *dy,
                              float *dx, float *dw, float *db, bool accumulate)
{
    (void)state;
    if (dx && !accumulate)
        memset(dx, 0, (size_t)s->n * s->c * s->h * s->w * sizeof(float));
    for (int i = 0; i < s->n; i++)
        for (int co = 0; co < s->c_out; co++)
            for (int oy = 0; oy < s->h_out; oy++)
                for (int ox = 0; ox < s->w_out; ox++) {
                    float g = dy[(((size_t)i * s->c_out + co) * s->h_out + oy) * s->w_out + ox];
                    if (db)
                        db[co] += g;
                    for (int ci = 0; ci < s->c; ci++)
                        for (int ky = 0; ky < s->kh; ky++) {
                            int iy = input_tap(oy, ky, s->stride, s->pad, s->h);
                            for (int kx = 0; kx < s->kw && iy >= 0; kx++) {
                                int ix = input_tap(ox, kx, s->stride, s->pad, s->w);
                                if (ix < 0)
                                    continue;
                                size_t xi = (((size_t)i * s->c + ci) * s->h + iy) * s->w + ix;
                                size_t wi = (((size_t)co * s->c + ci) * s->kh + ky) * s->kw + kx;
                                dw[wi] += g * x[xi];
                                if (dx)
                                    dx[xi] += g * w[wi];
                            }
                        }
                }
}

/* ---------- the kernels every CPU backend shares (kernels.h) ---------- */

/* A channel's batch statistics over the batch: the mean and the biased variance. */
static void channel_stats(const struct bn_call *bn, int ch, double *mean, double *var)
{
    double sum = 0, sumsq = 0;
    for (int i = 0; i < bn->n; i++) {
        const float *p = bn->x + ((size_t)i * bn->c + ch) * bn->hw;
        for (int j = 0; j < bn->hw; j++) {
            sum += p[j];
            sumsq += (double)p[j] * p[j];
        }
    }
    size_t count = (size_t)bn->n * bn->hw;
    *mean = sum / count;
    *var = sumsq / count - *mean * *mean;
    if (*var < 0)
        *var = 0;
}

/* One row (a sample's plane of one channel) forward: batch norm, the residual added, the ReLU,
 * each a loop over restrict pointers that GCC vectorises (the struct's pointers may alias). */
static void bn_row_forward(const float *restrict x, const float *restrict residual, float *restrict y, int hw,
                           float scale, float shift, bool relu)
{
    if (residual)
        for (int j = 0; j < hw; j++)
            y[j] = x[j] * scale + shift + residual[j];
    else
        for (int j = 0; j < hw; j++)
            y[j] = x[j] * scale + shift;
    if (relu)
        for (int j = 0; j < hw; j++)
            y[j] = y[j] > 0 ? y[j] : 0.0f;
}

void cpu_batchnorm_forward(void *state, const struct bn_call *bn, bool training, float momentum, float eps)
{
    (void)state;
    size_t count = (size_t)bn->n * bn->hw;
    for (int ch = 0; ch < bn->c; ch++) {
        double mean, var;
        if (training) {
            channel_stats(bn, ch, &mean, &var);
            bn->save_mean[ch] = (float)mean;
            bn->save_invstd[ch] = (float)(1.0 / sqrt(var + eps));
            double unbiased = count > 1 ? var * count / (count - 1) : var;
            bn->running_mean[ch] = (float)((1 - momentum) * bn->running_mean[ch] + momentum * mean);
            bn->running_var[ch] = (float)((1 - momentum) * bn->running_var[ch] + momentum * unbiased);
        } else {
            mean = bn->running_mean[ch];
            var = bn->running_var[ch];
        }
        float scale = (float)(bn->gamma[ch] / sqrt(var + eps)), shift = (float)(bn->beta[ch] - mean * scale);
        for (int i = 0; i < bn->n; i++) {
            size_t row = ((size_t)i * bn->c + ch) * bn->hw;
            bn_row_forward(bn->x + row, bn->residual ? bn->residual + row : NULL, bn->y + row, bn->hw, scale, shift,
                           bn->relu);
        }
    }
}

/* Backward works through each row in chunks: dy as the batch norm saw it lands in a chunk on the
 * stack, which the sums, dx and the residual's gradient then read. */
enum { BN_CHUNK = 1024 };

/* dy masked where the fused ReLU's output y is zero (y NULL: no ReLU). */
static void seen_dy(float *restrict g, const float *restrict dy, const float *restrict y, int len)
{
    if (y)
        for (int j = 0; j < len; j++) {
            float v = dy[j];   /* loaded unconditionally: GCC if-converts and vectorises */
            g[j] = y[j] > 0 ? v : 0.0f;
        }
    else
        memcpy(g, dy, (size_t)len * sizeof *g);
}

/* dx = gamma * invstd * (dy - mean(dy) - xhat * mean(dy * xhat)), added to or over 0. */
static void bn_dx(float *restrict dx, const float *restrict g, const float *restrict x, int len, const float coeff[5],
                  bool accumulate)
{
    float k = coeff[0], mean_dy = coeff[1], mean = coeff[2], invstd = coeff[3], mean_dy_xhat = coeff[4];
    if (accumulate)
        for (int j = 0; j < len; j++)
            dx[j] += k * (g[j] - mean_dy - (x[j] - mean) * invstd * mean_dy_xhat);
    else
        for (int j = 0; j < len; j++)
            dx[j] = 0.0f + k * (g[j] - mean_dy - (x[j] - mean) * invstd * mean_dy_xhat);
}

static void add_to(float *restrict out, const float *restrict g, int len, bool accumulate)
{
    for (int j = 0; j < len; j++)
        out[j] = (accumulate ? out[j] : 0.0f) + g[j];
}

void cpu_batchnorm_backward(void *state, const struct bn_call *bn, const float *dy, float *dx, float *dgamma,
                            float *dbeta, float *dresidual, bool accumulate, bool accumulate_residual)
{
    (void)state;
    size_t count = (size_t)bn->n * bn->hw;
    float g[BN_CHUNK];
    for (int ch = 0; ch < bn->c; ch++) {
        double sum_dy = 0, sum_dy_xhat = 0;
        float mean = bn->save_mean[ch], invstd = bn->save_invstd[ch];
        for (int i = 0; i < bn->n; i++)
            for (int j0 = 0; j0 < bn->hw; j0 += BN_CHUNK) {
                size_t at = ((size_t)i * bn->c + ch) * bn->hw + j0;
                int len = bn->hw - j0 < BN_CHUNK ? bn->hw - j0 : BN_CHUNK;
                seen_dy(g, dy + at, bn->relu ? bn->y + at : NULL, len);
                for (int j = 0; j < len; j++) {
                    sum_dy += g[j];
                    sum_dy_xhat += (double)g[j] * (bn->x[at + j] - mean) * invstd;
                }
            }
        dgamma[ch] += (float)sum_dy_xhat;
        dbeta[ch] += (float)sum_dy;
        float coeff[5] = {bn->gamma[ch] * invstd, (float)(sum_dy / count), mean, invstd, (float)(sum_dy_xhat / count)};
        for (int i = 0; i < bn->n; i++)
            for (int j0 = 0; j0 < bn->hw; j0 += BN_CHUNK) {
                size_t at = ((size_t)i * bn->c + ch) * bn->hw + j0;
                int len = bn->hw - j0 < BN_CHUNK ? bn->hw - j0 : BN_CHUNK;
                seen_dy(g, dy + at, bn->relu ? bn->y + at : NULL, len);
                bn_dx(dx + at, g, bn->x + at, len, coeff, accumulate);
                if (dresidual)
                    add_to(dresidual + at, g, len, accumulate_residual);
            }
    }
}

void cpu_relu_forward(void *state, const float *restrict x, float *restrict y, size_t count)
{
    (void)state;
    for (size_t i = 0; i < count; i++)
        y[i] = x[i] > 0 ? x[i] : 0;
}

void cpu_relu_backward(void *state, const float *restrict y, const float *restrict dy, float *restrict dx, size_t count,
                       bool accumulate)
{
    (void)state;
    /* dy loaded unconditionally, so GCC if-converts and vectorises both loops */
    if (accumulate)
        for (size_t i = 0; i < count; i++) {
            float g = dy[i];
            dx[i] += y[i] > 0 ? g : 0.0f;
        }
    else
        for (size_t i = 0; i < count; i++) {
            float g = dy[i];
            dx[i] = y[i] > 0 ? g : 0.0f;
        }
}

static void maxpool_2x2(const float *restrict x, float *restrict y, int *restrict argmax, size_t planes, int h, int w,
                        int h_out, int w_out)
{
    for (size_t plane = 0; plane < planes; plane++) {
        const float *p = x + plane * h * w;
        float *q = y + plane * h_out * w_out;
        int *a = argmax + plane * h_out * w_out;
        for (int oy = 0; oy < h_out; oy++) {
            const float *r0 = p + 2 * oy * w, *r1 = r0 + w;
            for (int ox = 0; ox < w_out; ox++) {
                int at = 2 * oy * w + 2 * ox;
                float best = r0[2 * ox];
                if (r0[2 * ox + 1] > best)
                    best = r0[2 * ox + 1], at = 2 * oy * w + 2 * ox + 1;
                if (r1[2 * ox] > best)
                    best = r1[2 * ox], at = (2 * oy + 1) * w + 2 * ox;
                if (r1[2 * ox + 1] > best)
                    best = r1[2 * ox + 1], at = (2 * oy + 1) * w + 2 * ox + 1;
                q[oy * w_out + ox] = best;
                a[oy * w_out + ox] = at;
            }
        }
    }
}

void cpu_maxpool_forward(void *state, const float *x, float *y, int *argmax, int n, int c, int h, int w, int k,
                         int stride, int pad)
{
    (void)state;
    int h_out = conv_out_size(h, k, stride, pad), w_out = conv_out_size(w, k, stride, pad);
    if (k == 2 && stride == 2 && pad == 0) {   /* LeNet's and the CNN's pools: no bounds to check */
        maxpool_2x2(x, y, argmax, (size_t)n * c, h, w, h_out, w_out);
        return;
    }
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        const float *p = x + plane * h * w;
        for (int oy = 0; oy < h_out; oy++)
            for (int ox = 0; ox < w_out; ox++) {
                float best = -FLT_MAX;
                int best_at = -1;
                for (int ky = 0; ky < k; ky++) {
                    int iy = input_tap(oy, ky, stride, pad, h);
                    for (int kx = 0; kx < k && iy >= 0; kx++) {
                        int ix = input_tap(ox, kx, stride, pad, w);
                        if (ix >= 0 && (best_at < 0 || p[iy * w + ix] > best)) {
                            best = p[iy * w + ix];
                            best_at = iy * w + ix;
                        }
                    }
                }
                size_t o = plane * h_out * w_out + (size_t)oy * w_out + ox;
                y[o] = best;
                argmax[o] = best_at;
            }
    }
}

void cpu_maxpool_backward(void *state, const int *argmax, const float *dy, float *dx, int n, int c, int h, int w,
                          int h_out, int w_out, int k, int stride, int pad, bool accumulate)
{
    (void)state;
    size_t per_out = (size_t)h_out * w_out, per_in = (size_t)h * w;
    (void)k, (void)stride, (void)pad;   /* windows may overlap: a memset then the scatter (measured
                                           faster than writing every position of 2x2 windows) */
    if (!accumulate)
        memset(dx, 0, (size_t)n * c * per_in * sizeof(float));
    for (size_t plane = 0; plane < (size_t)n * c; plane++)
        for (size_t o = 0; o < per_out; o++)
            dx[plane * per_in + argmax[plane * per_out + o]] += dy[plane * per_out + o];
}

void cpu_avgpool_forward(void *state, const float *x, float *y, int n, int c, int hw)
{
    (void)state;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        double sum = 0;
        for (int j = 0; j < hw; j++)
            sum += x[plane * hw + j];
        y[plane] = (float)(sum / hw);
    }
}

void cpu_avgpool_backward(void *state, const float *dy, float *dx, int n, int c, int hw, bool accumulate)
{
    (void)state;
    for (size_t plane = 0; plane < (size_t)n * c; plane++) {
        float g = dy[plane] / hw;
        for (int j = 0; j < hw; j++)
            dx[plane * hw + j] = (accumulate ? dx[plane * hw + j] : 0.0f) + g;
    }
}

void cpu_add_forward(void *state, const float *restrict a, const float *restrict b, float *restrict y, size_t count)
{
    (void)state;
    for (size_t i = 0; i < count; i++)
        y[i] = a[i] + b[i];
}

void cpu_add_backward(void *state, const float *restrict dy, float *restrict da, float *restrict db, size_t count)
{
    (void)state;
    for (size_t i = 0; i < count; i++) {
        da[i] += dy[i];
        db[i] += dy[i];
    }
}

double xent_row(const float *z, int label, int classes, float *dz, int divisor, int *best)
{
    int top = 0;
    float max = z[0];
    for (int k = 1; k < classes; k++)
        if (z[k] > max) {
            max = z[k];
            top = k;
        }
    if (best)
        *best = top;
    double sum = 0;
    for (int k = 0; k < classes; k++)
        sum += exp((double)z[k] - max);
    for (int k = 0; dz && k < classes; k++) {
        double p = exp((double)z[k] - max) / sum;
        dz[k] = (float)((p - (k == label)) / divisor);
    }
    return log(sum) - ((double)z[label] - max);
}

double cpu_softmax_xent(void *state, const float *logits, const int *labels, float *dlogits, int n, int classes,
                        int *correct)
{
    (void)state;
    double loss = 0;
    *correct = 0;
    for (int i = 0; i < n; i++) {
        int best;
        loss += xent_row(logits + (size_t)i * classes, labels[i], classes,
                         dlogits ? dlogits + (size_t)i * classes : NULL, n, &best);
        *correct += best == labels[i];
    }
    return loss / n;
}

static const struct backend reference = {
    .name = "reference",
    .linear_forward = ref_linear_forward,
    .linear_backward = ref_linear_backward,
    .conv_forward = ref_conv_forward,
    .conv_backward = ref_conv_backward,
    .batchnorm_forward = cpu_batchnorm_forward,
    .batchnorm_backward = cpu_batchnorm_backward,
    .relu_forward = cpu_relu_forward,
    .relu_backward = cpu_relu_backward,
    .maxpool_forward = cpu_maxpool_forward,
    .maxpool_backward = cpu_maxpool_backward,
    .avgpool_forward = cpu_avgpool_forward,
    .avgpool_backward = cpu_avgpool_backward,
    .add_forward = cpu_add_forward,
    .add_backward = cpu_add_backward,
    .softmax_xent = cpu_softmax_xent,
    .embedding_forward = seq_embedding_forward,
    .embedding_backward = seq_embedding_backward,
    .layernorm_forward = seq_layernorm_forward,
    .layernorm_backward = seq_layernorm_backward,
    .gelu_forward = seq_gelu_forward,
    .gelu_backward = seq_gelu_backward,
    .tanh_forward = seq_tanh_forward,
    .tanh_backward = seq_tanh_backward,
    .attention_forward = seq_attention_forward,
    .attention_backward = seq_attention_backward,
    .first_token_forward = seq_first_token_forward,
    .first_token_backward = seq_first_token_backward,
    .dropout_forward = seq_dropout_forward,
    .dropout_backward = seq_dropout_backward,
    .token_xent = seq_token_xent,
};

void *backend_alloc(const struct backend *be, size_t bytes)
{
    return be->alloc ? be->alloc(be->state, bytes) : malloc(bytes ? bytes : 1);
}

void backend_release(const struct backend *be, void *p)
{
    if (be->release)
        be->release(be->state, p);
    else
        free(p);
}

void backend_zero(const struct backend *be, void *p, size_t bytes)
{
    if (be->zero)
        be->zero(be->state, p, bytes);
    else
        memset(p, 0, bytes);
}

const struct backend *backend_reference(void)
{
    return &reference;
}
