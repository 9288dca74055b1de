/* gradcheck.c - the tests' one gradient checker (gradcheck.h): every op kind's forward pass
 * written again in double precision, plainly, and central differences of its loss. */
#include "tests/gradcheck.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/backend/backend.h"

static void d_layernorm(const double *x, const double *p, const struct op *op, double *y, int rows, int H)
{
    for (int r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (int h = 0; h < H; h++)
            mean += x[r * H + h] / H;
        for (int h = 0; h < H; h++)
            var += pow(x[r * H + h] - mean, 2) / H;
        for (int h = 0; h < H; h++)
            y[r * H + h] = (x[r * H + h] - mean) / sqrt(var + 1e-12) * p[op->w + h] + p[op->b + h];
    }
}

/* rate, noise, position: the attention weights' dropout, drawn as the kernels draw it. */
static void d_attention(const double *qkv, const double *tokens, double *y, int n, int T, int H, int heads, double rate,
                        uint64_t noise, long position)
{
    int d = H / heads;
    for (int i = 0; i < n; i++)
        for (int a = 0; a < heads; a++)
            for (int q = 0; q < T; q++) {
                double w[512], max = -INFINITY, sum = 0;
                for (int k = 0; k < T; k++) {
                    w[k] = -INFINITY;
                    if (tokens[(i * T + k) * SEQ_TOKEN_FIELDS] == SEQ_PAD_ID)
                        continue;
                    double s = 0;
                    for (int c = 0; c < d; c++)
                        s += qkv[(i * T + q) * 3 * H + a * d + c] * qkv[(i * T + k) * 3 * H + H + a * d + c];
                    w[k] = s / sqrt(d);
                    max = fmax(max, w[k]);
                }
                for (int k = 0; k < T; k++)
                    sum += w[k] == -INFINITY ? 0 : exp(w[k] - max);
                for (int c = 0; c < d; c++) {
                    double acc = 0;
                    for (int k = 0; k < T; k++)
                        if (w[k] != -INFINITY && (rate == 0 || seq_noise(noise, position + i, ((size_t)a * T + q) * T + k) >= rate))
                            acc += exp(w[k] - max) / sum / (1 - rate) * qkv[(i * T + k) * 3 * H + 2 * H + a * d + c];
                    y[(i * T + q) * H + a * d + c] = acc;
                }
            }
}

/* One sample's convolution (x: c x h x w; y: c_out x h_out x w_out). */
static void d_conv(const struct op *op, struct tensor_shape s, struct tensor_shape o, const double *p, const double *x,
                   double *y)
{
    for (int co = 0; co < op->conv.c_out; co++)
        for (int oy = 0; oy < o.h; oy++)
            for (int ox = 0; ox < o.w; ox++) {
                double sum = op->conv.bias ? p[op->b + co] : 0;
                for (int ci = 0; ci < s.c; ci++)
                    for (int ky = 0; ky < op->conv.k; ky++)
                        for (int kx = 0; kx < op->conv.k; kx++) {
                            int iy = oy * op->conv.stride - op->conv.pad + ky, ix = ox * op->conv.stride - op->conv.pad + kx;
                            if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
                                sum += p[op->w + ((co * s.c + ci) * op->conv.k + ky) * op->conv.k + kx] *
                                       x[(ci * s.h + iy) * s.w + ix];
                        }
                y[(co * o.h + oy) * o.w + ox] = sum;
            }
}

/* One sample's max pooling. */
static void d_maxpool(const struct op *op, struct tensor_shape s, struct tensor_shape o, const double *x, double *y)
{
    for (int c = 0; c < s.c; c++)
        for (int oy = 0; oy < o.h; oy++)
            for (int ox = 0; ox < o.w; ox++) {
                double best = -INFINITY;
                for (int ky = 0; ky < op->pool.k; ky++)
                    for (int kx = 0; kx < op->pool.k; kx++) {
                        int iy = oy * op->pool.stride - op->pool.pad + ky, ix = ox * op->pool.stride - op->pool.pad + kx;
                        if (iy >= 0 && iy < s.h && ix >= 0 && ix < s.w)
                            best = fmax(best, x[(c * s.h + iy) * s.w + ix]);
                    }
                y[(c * o.h + oy) * o.w + ox] = best;
            }
}

/* Batch norm in training mode: each channel's statistics over the batch; then the residual added
 * and the ReLU where the op fuses them. */
static void d_batchnorm(const struct op *op, struct tensor_shape s, const double *p, const double *in,
                        const double *residual, double *out, int n)
{
    int hw = s.h * s.w;
    size_t in_size = (size_t)s.c * hw;
    for (int c = 0; c < s.c; c++) {
        double mean = 0, var = 0;
        for (int b = 0; b < n; b++)
            for (int j = 0; j < hw; j++)
                mean += in[b * in_size + c * hw + j];
        mean /= (double)n * hw;
        for (int b = 0; b < n; b++)
            for (int j = 0; j < hw; j++)
                var += pow(in[b * in_size + c * hw + j] - mean, 2);
        var /= (double)n * hw;
        for (int b = 0; b < n; b++)
            for (int j = 0; j < hw; j++)
                out[b * in_size + c * hw + j] = p[op->w + c] * (in[b * in_size + c * hw + j] - mean) /
                                                    sqrt(var + 1e-5) + p[op->b + c];
        for (int b = 0; b < n; b++)
            for (int j = 0; j < hw; j++) {
                double *v = &out[b * in_size + c * hw + j];
                if (residual)
                    *v += residual[b * in_size + c * hw + j];
                if (op->bn.relu)
                    *v = fmax(*v, 0.0);
            }
    }
}

/* The image models' ops, one sample at a time (batch norm over the batch). */
static void d_image_op(const struct model *m, const struct op *op, const double *p, double **act, int n)
{
    struct tensor_shape s = m->tensors[op->in], o = m->tensors[op->out];
    size_t in_size = tensor_size(m, op->in), out_size = tensor_size(m, op->out);
    if (op->kind == OP_BATCHNORM || op->kind == OP_BATCHNORM_ADD_RELU)
        return d_batchnorm(op, s, p, act[op->in], op->kind == OP_BATCHNORM_ADD_RELU ? act[op->in2] : NULL,
                           act[op->out], n);
    for (int b = 0; b < n; b++) {
        const double *x = act[op->in] + b * in_size;
        double *y = act[op->out] + b * out_size;
        if (op->kind == OP_LINEAR) {
            for (int k = 0; k < op->linear.out_features; k++) {
                y[k] = p[op->b + k];
                for (size_t j = 0; j < in_size; j++)
                    y[k] += p[op->w + k * in_size + j] * x[j];
            }
        } else if (op->kind == OP_CONV) {
            d_conv(op, s, o, p, x, y);
        } else if (op->kind == OP_RELU) {
            for (size_t j = 0; j < in_size; j++)
                y[j] = x[j] > 0 ? x[j] : 0;
        } else if (op->kind == OP_MAXPOOL) {
            d_maxpool(op, s, o, x, y);
        } else if (op->kind == OP_AVGPOOL) {
            for (int c = 0; c < s.c; c++) {
                for (int j = 0; j < s.h * s.w; j++)
                    y[c] += x[c * s.h * s.w + j];
                y[c] /= s.h * s.w;
            }
        }
    }
}

static void d_op(const struct model *m, int index, const double *p, double **act, int n, uint64_t batch_noise,
                 long position)
{
    const struct op *op = &m->ops[index];
    struct tensor_shape s = m->tensors[op->in], o = m->tensors[op->out];
    const double *x = act[op->in];
    double *y = act[op->out];
    int rows = n * s.c * s.h;
    size_t count = tensor_size(m, op->in) * (size_t)n;
    switch (op->kind) {
    case OP_EMBED:
        for (int r = 0; r < rows; r++)
            for (int h = 0; h < o.w; h++)
                y[r * o.w + h] = p[op->w + (size_t)x[r * SEQ_TOKEN_FIELDS] * o.w + h] +
                                 p[op->embed.pos + (r % s.c) * o.w + h] +
                                 p[op->embed.seg + (size_t)x[r * SEQ_TOKEN_FIELDS + 1] * o.w + h];
        break;
    case OP_LAYERNORM: d_layernorm(x, p, op, y, rows, s.w); break;
    case OP_DENSE:
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < o.w; k++) {
                double sum = p[op->b + k];
                for (int j = 0; j < s.w; j++)
                    sum += p[op->w + (size_t)k * s.w + j] * x[r * s.w + j];
                y[r * o.w + k] = sum;
            }
        break;
    case OP_GELU:
        for (size_t j = 0; j < count; j++)
            y[j] = 0.5 * x[j] * (1 + erf(x[j] / sqrt(2.0)));
        break;
    case OP_TANH:
        for (size_t j = 0; j < count; j++)
            y[j] = tanh(x[j]);
        break;
    case OP_ADD:
        for (size_t j = 0; j < count; j++)
            y[j] = x[j] + act[op->in2][j];
        break;
    case OP_LINEAR: case OP_CONV: case OP_RELU: case OP_MAXPOOL: case OP_AVGPOOL: case OP_BATCHNORM:
    case OP_BATCHNORM_ADD_RELU:
        d_image_op(m, op, p, act, n);
        break;
    case OP_ATTENTION:
        d_attention(x, act[0], y, n, s.c, o.w, op->attention.heads, op->attention.dropout,
                    batch_noise ^ ((uint64_t)index * 0xd1342543de82ef95ULL), position);
        break;
    case OP_FIRST_TOKEN:
        for (int i = 0; i < n; i++)
            memcpy(y + (size_t)i * s.w, x + (size_t)i * s.c * s.w, (size_t)s.w * sizeof(double));
        break;
    case OP_DROPOUT: {   /* the draw the kernels make, written out again */
        size_t per = tensor_size(m, op->in);
        uint64_t noise = batch_noise ^ ((uint64_t)index * 0xd1342543de82ef95ULL);
        for (int i = 0; i < n; i++)
            for (size_t e = 0; e < per; e++)
                y[i * per + e] = seq_noise(noise, position + i, e) >= op->dropout.rate
                                     ? x[i * per + e] / (1.0 - (double)op->dropout.rate) : 0.0;
        break;
    }
    case OP_TIED_DENSE:
        for (int r = 0; r < rows; r++)
            for (int k = 0; k < o.w; k++) {
                double sum = p[op->b + k];
                for (int j = 0; j < s.w; j++)
                    sum += p[op->tied.table + (size_t)k * s.w + j] * x[r * s.w + j];
                y[r * o.w + k] = sum;
            }
        break;
    default: break;   /* the losses: below */
    }
}

/* Mean softmax cross-entropy of `rows` rows of `classes` logits against labels (a label below 0:
 * the row does not count); 0 when no row counts. */
static double d_xent(const double *logits, const int *labels, int rows, int classes)
{
    double loss = 0;
    int counted = 0;
    for (int b = 0; b < rows; b++) {
        if (labels[b] < 0)
            continue;
        const double *z = logits + (size_t)b * classes;
        double max = z[0], sum = 0;
        for (int k = 1; k < classes; k++)
            max = fmax(max, z[k]);
        for (int k = 0; k < classes; k++)
            sum += exp(z[k] - max);
        loss += log(sum) - (z[labels[b]] - max);
        counted++;
    }
    return counted ? loss / counted : 0;
}

double gradcheck_loss(const struct model *m, const double *p, const double *x, const int *labels, int n, uint64_t noise,
                      long position)
{
    double **act = calloc((size_t)m->num_tensors, sizeof *act);
    act[0] = (double *)x;
    for (int t = 1; t < m->num_tensors; t++)
        act[t] = calloc(tensor_size(m, t) * (size_t)n, sizeof(double));
    for (int i = 0; i < m->num_ops; i++)
        d_op(m, i, p, act, n, noise, position);
    double loss = d_xent(act[m->logits], labels, n, m->classes);
    const struct op *last = &m->ops[m->num_ops - 1];
    if (last->kind == OP_PRETRAIN_LOSS) {   /* plus the masked LM over the labelled tokens */
        int T = m->tensors[0].c, *mlm = malloc((size_t)n * T * sizeof(int));
        for (int r = 0; r < n * T; r++)
            mlm[r] = (int)x[r * SEQ_TOKEN_FIELDS + 2];
        loss += d_xent(act[last->in], mlm, n * T, m->tensors[last->in].w);
        free(mlm);
    }
    for (int t = 1; t < m->num_tensors; t++)
        free(act[t]);
    free(act);
    return loss;
}


double gradcheck_worst(const struct model *m, const float *params, const float *grads, const struct batch *b,
                       double float_loss, double h, double tolerance, double *forward_error)
{
    size_t in = tensor_size(m, 0) * (size_t)b->n;
    double *p = malloc(m->num_params * sizeof(double)), *x = malloc(in * sizeof(double));
    if (!p || !x) {
        free(p), free(x);
        return INFINITY;
    }
    for (size_t i = 0; i < m->num_params; i++)
        p[i] = params[i];
    for (size_t i = 0; i < in; i++)
        x[i] = b->x[i];
    double loss = gradcheck_loss(m, p, x, b->labels, b->n, b->noise, b->position);
    *forward_error = fabs(loss - float_loss) / fabs(loss);
    double worst = 0;
    for (size_t i = 0; i < m->num_params; i++) {
        double saved = p[i];
        p[i] = saved + h;
        double up = gradcheck_loss(m, p, x, b->labels, b->n, b->noise, b->position);
        p[i] = saved - h;
        double down = gradcheck_loss(m, p, x, b->labels, b->n, b->noise, b->position);
        p[i] = saved;
        double numeric = (up - down) / (2 * h), analytic = grads[i];
        double error = fabs(numeric - analytic) / fmax(fabs(numeric), 1e-3);
        worst = fmax(worst, error);
        if (error > tolerance)
            fprintf(stderr, "%s: parameter %zu: analytic %.8g, central difference %.8g\n", m->name, i, analytic, numeric);
    }
    free(p), free(x);
    return worst;
}
