/* nn.c - the model graph: building it, initial values, workspace, forward and backward passes. */
#include "trainer/nn/nn.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/nn/nn_build.h"
#include "trainer/nn/ops.h"
#include "trainer/base/rng.h"

/* ---------- building ---------- */

static void *grow_array(struct model *m, void *array, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return array;
    int new_cap = *cap ? *cap * 2 : 32;
    while (new_cap < need)
        new_cap *= 2;
    void *bigger = realloc(array, (size_t)new_cap * elem);
    if (!bigger) {
        m->failed = true;
        return array;
    }
    *cap = new_cap;
    return bigger;
}

static int new_tensor(struct model *m, int c, int h, int w)
{
    m->tensors = grow_array(m, m->tensors, &m->caps[0], m->num_tensors + 1, sizeof *m->tensors);
    if (m->failed)
        return 0;
    m->tensors[m->num_tensors] = (struct tensor_shape){c, h, w};
    return m->num_tensors++;
}

static struct op *new_op(struct model *m, enum op_kind kind, int in)
{
    m->ops = grow_array(m, m->ops, &m->caps[1], m->num_ops + 1, sizeof *m->ops);
    if (m->failed)
        return NULL;
    struct op *op = &m->ops[m->num_ops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->in = in;
    op->slot = -1;
    return op;
}

/* Gives the op just added (the last) its output tensor, of shape c x h x w; returns it. */
static int output_of_last_op(struct model *m, int c, int h, int w)
{
    int out = new_tensor(m, c, h, w);
    m->ops[m->num_ops - 1].out = out;
    return out;
}

static size_t new_params(struct model *m, size_t count, enum init_kind kind, float scale)
{
    m->inits = grow_array(m, m->inits, &m->caps[2], m->num_inits + 1, sizeof *m->inits);
    if (m->failed)
        return 0;
    m->inits[m->num_inits++] = (struct param_init){m->num_params, count, kind, scale};
    m->num_params += count;
    return m->num_params - count;
}

void nn_begin(struct model *m, const char *name, int c, int h, int w, int classes)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->classes = classes;
    new_tensor(m, c, h, w);
}

int nn_conv(struct model *m, int in, int c_out, int k, int stride, int pad, bool bias, enum nn_conv_init init)
{
    struct tensor_shape s = m->tensors[in];
    struct op *op = new_op(m, OP_CONV, in);
    if (!op)
        return 0;
    op->conv = (struct op_conv){.c_out = c_out, .k = k, .stride = stride, .pad = pad, .bias = bias};
    int fan_in = s.c * k * k, fan_out = c_out * k * k;
    if (init == NN_INIT_KAIMING_FAN_OUT)   /* torchvision ResNets: kaiming_normal_(fan_out, relu) */
        op->w = new_params(m, (size_t)c_out * fan_in, INIT_NORMAL, sqrtf(2.0f / fan_out));
    else                                   /* PyTorch's default: kaiming_uniform_(a=sqrt(5)) */
        op->w = new_params(m, (size_t)c_out * fan_in, INIT_UNIFORM, 1.0f / sqrtf((float)fan_in));
    if (bias)
        op->b = new_params(m, (size_t)c_out, INIT_UNIFORM, 1.0f / sqrtf((float)fan_in));
    return output_of_last_op(m, c_out, conv_out_size(s.h, k, stride, pad), conv_out_size(s.w, k, stride, pad));
}

static int batchnorm_op(struct model *m, enum op_kind kind, int in, int residual, bool relu)
{
    struct tensor_shape s = m->tensors[in];
    struct op *op = new_op(m, kind, in);
    if (!op)
        return 0;
    op->w = new_params(m, (size_t)s.c, INIT_CONSTANT, 1.0f);
    m->ops[m->num_ops - 1].b = new_params(m, (size_t)s.c, INIT_CONSTANT, 0.0f);
    op = &m->ops[m->num_ops - 1];
    op->bn.running_mean = m->num_buffers;
    op->bn.running_var = m->num_buffers + (size_t)s.c;
    op->bn.relu = relu;
    op->in2 = residual;
    m->num_buffers += 2 * (size_t)s.c;
    op->slot = m->num_slots++;
    return output_of_last_op(m, s.c, s.h, s.w);
}

int nn_batchnorm(struct model *m, int in) { return batchnorm_op(m, OP_BATCHNORM, in, 0, false); }

int nn_batchnorm_relu(struct model *m, int in) { return batchnorm_op(m, OP_BATCHNORM, in, 0, true); }

int nn_batchnorm_add_relu(struct model *m, int in, int residual)
{
    return batchnorm_op(m, OP_BATCHNORM_ADD_RELU, in, residual, true);
}

int nn_relu(struct model *m, int in)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, OP_RELU, in))
        return 0;
    return output_of_last_op(m, s.c, s.h, s.w);
}

int nn_maxpool(struct model *m, int in, int k, int stride, int pad)
{
    struct tensor_shape s = m->tensors[in];
    struct op *op = new_op(m, OP_MAXPOOL, in);
    if (!op)
        return 0;
    op->pool = (struct op_pool){.k = k, .stride = stride, .pad = pad};
    op->slot = m->num_slots++;
    return output_of_last_op(m, s.c, conv_out_size(s.h, k, stride, pad), conv_out_size(s.w, k, stride, pad));
}

int nn_avgpool(struct model *m, int in)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, OP_AVGPOOL, in))
        return 0;
    return output_of_last_op(m, s.c, 1, 1);
}

int nn_linear(struct model *m, int in, int out_features)
{
    int in_features = (int)tensor_size(m, in);
    struct op *op = new_op(m, OP_LINEAR, in);
    if (!op)
        return 0;
    op->linear.out_features = out_features;
    float bound = 1.0f / sqrtf((float)in_features);
    op->w = new_params(m, (size_t)out_features * in_features, INIT_UNIFORM, bound);
    m->ops[m->num_ops - 1].b = new_params(m, (size_t)out_features, INIT_UNIFORM, bound);
    return output_of_last_op(m, out_features, 1, 1);
}

int nn_add(struct model *m, int a, int b)
{
    struct tensor_shape s = m->tensors[a];
    struct op *op = new_op(m, OP_ADD, a);
    if (!op)
        return 0;
    op->in2 = b;
    return output_of_last_op(m, s.c, s.h, s.w);
}

/* ---------- the language models' layers ---------- */

#define BERT_INIT_STD 0.02f

int nn_embed(struct model *m, int tokens, int vocab, int positions, int segments, int hidden)
{
    int T = m->tensors[tokens].c;
    struct op *op = new_op(m, OP_EMBED, tokens);
    if (!op)
        return 0;
    op->embed = (struct op_embed){.vocab = vocab, .positions = positions, .segments = segments};
    size_t word = new_params(m, (size_t)vocab * hidden, INIT_NORMAL, BERT_INIT_STD);
    size_t pos = new_params(m, (size_t)positions * hidden, INIT_NORMAL, BERT_INIT_STD);
    size_t seg = new_params(m, (size_t)segments * hidden, INIT_NORMAL, BERT_INIT_STD);
    op->w = word, op->embed.pos = pos, op->embed.seg = seg;
    return output_of_last_op(m, T, 1, hidden);
}

int nn_layernorm(struct model *m, int in)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, OP_LAYERNORM, in))
        return 0;
    size_t gamma = new_params(m, (size_t)s.w, INIT_CONSTANT, 1.0f);
    size_t beta = new_params(m, (size_t)s.w, INIT_CONSTANT, 0.0f);
    struct op *op = &m->ops[m->num_ops - 1];
    op->w = gamma, op->b = beta;
    op->slot = m->num_slots++;
    return output_of_last_op(m, s.c, s.h, s.w);
}

int nn_dense(struct model *m, int in, int out_features)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, OP_DENSE, in))
        return 0;
    size_t w = new_params(m, (size_t)out_features * s.w, INIT_NORMAL, BERT_INIT_STD);
    size_t b = new_params(m, (size_t)out_features, INIT_CONSTANT, 0.0f);
    struct op *op = &m->ops[m->num_ops - 1];
    op->w = w, op->b = b;
    op->linear.out_features = out_features;
    return output_of_last_op(m, s.c, s.h, out_features);
}

static int add_elementwise_op(struct model *m, enum op_kind kind, int in)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, kind, in))
        return 0;
    return output_of_last_op(m, s.c, s.h, s.w);
}

int nn_gelu(struct model *m, int in) { return add_elementwise_op(m, OP_GELU, in); }
int nn_tanh(struct model *m, int in) { return add_elementwise_op(m, OP_TANH, in); }

int nn_attention(struct model *m, int qkv, int heads, float dropout)
{
    struct tensor_shape s = m->tensors[qkv];
    struct op *op = new_op(m, OP_ATTENTION, qkv);
    if (!op)
        return 0;
    op->attention.heads = heads;
    op->attention.dropout = dropout;
    op->slot = m->num_slots++;
    return output_of_last_op(m, s.c, s.h, s.w / 3);
}

int nn_first_token(struct model *m, int in)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, OP_FIRST_TOKEN, in))
        return 0;
    return output_of_last_op(m, 1, 1, s.w);
}

int nn_dropout(struct model *m, int in, float rate)
{
    if (rate <= 0)
        return in;
    struct tensor_shape s = m->tensors[in];
    struct op *op = new_op(m, OP_DROPOUT, in);
    if (!op)
        return 0;
    op->dropout.rate = rate;
    op->slot = m->num_slots++;
    return output_of_last_op(m, s.c, s.h, s.w);
}

int nn_tied_dense(struct model *m, int in, size_t table, int out_features)
{
    struct tensor_shape s = m->tensors[in];
    if (!new_op(m, OP_TIED_DENSE, in))
        return 0;
    size_t b = new_params(m, (size_t)out_features, INIT_CONSTANT, 0.0f);
    struct op *op = &m->ops[m->num_ops - 1];
    op->w = op->b = b;
    op->tied = (struct op_tied){.table = table, .out_features = out_features};
    return output_of_last_op(m, s.c, s.h, out_features);
}

int nn_pretrain_loss(struct model *m, int mlm_logits, int nsp_logits)
{
    struct op *op = new_op(m, OP_PRETRAIN_LOSS, mlm_logits);
    if (!op)
        return 0;
    op->in2 = nsp_logits;
    m->logits = nsp_logits;   /* what evaluations count right answers of */
    return output_of_last_op(m, 1, 1, 1);
}

int nn_softmax_xent(struct model *m, int logits)
{
    if (!new_op(m, OP_SOFTMAX_XENT, logits))
        return 0;
    m->logits = logits;
    return output_of_last_op(m, 1, 1, 1);   /* unused: the loss is the pass's mean */
}

static bool is_batchnorm(const struct op *op)
{
    return op->kind == OP_BATCHNORM || op->kind == OP_BATCHNORM_ADD_RELU;
}

/* Whether op reads tensor t in a way a bf16 backend can read bf16: as a convolution's or a
 * pooling's input, or as a batch norm's residual; and as a batch norm's input. */
static bool bf16_reader(const struct op *op, int t)
{
    bool input = op->kind == OP_CONV || op->kind == OP_MAXPOOL || op->kind == OP_AVGPOOL;
    return (input && op->in == t) || (is_batchnorm(op) && op_type_of(op)->inputs == 2 && op->in2 == t);
}
static bool batchnorm_input(const struct op *op, int t) { return is_batchnorm(op) && op->in == t; }

/* The op whose output tensor t is (NULL for the model's input). */
static const struct op *writer_of(const struct model *m, int t)
{
    for (int i = 0; i < m->num_ops; i++)
        if (m->ops[i].out == t)
            return &m->ops[i];
    return NULL;
}

/* Whether tensor t has readers and every one of them reads it as `reads` says. */
static bool read_only_as(const struct model *m, int t, bool (*reads)(const struct op *, int))
{
    for (int i = 0; i < m->num_ops; i++) {
        const struct op *op = &m->ops[i];
        bool reader = op->in == t || (op_type_of(op)->inputs == 2 && op->in2 == t);
        if (reader && !reads(op, t))
            return false;
    }
    return m->readers[t] > 0;
}

/* The tensors a bf16 backend may keep in bf16 alone, their fp32 copies unwritten: a convolution's
 * output read by one batch norm (conv_shape's y_for_batchnorm), a batch norm's read by
 * convolutions, poolings and batch norms' residuals alone (bn_call's y_for_bf16_readers; its own backward
 * reads it for the ReLU's mask where it adds a residual, in bf16 too), and the gradient of a batch
 * norm's output read by one convolution (conv_shape's dx_for_batchnorm: that gradient's one
 * reader is the batch norm's backward). In a ResNet, every batch norm's output and every
 * convolution's. */
static void mark_bf16_outputs(struct model *m)
{
    for (int i = 0; i < m->num_ops; i++) {
        struct op *op = &m->ops[i];
        if (op->kind == OP_CONV) {
            const struct op *input_writer = writer_of(m, op->in);
            op->conv.into_batchnorm = m->readers[op->out] == 1 && read_only_as(m, op->out, batchnorm_input);
            op->conv.dx_for_batchnorm = m->readers[op->in] == 1 && input_writer && is_batchnorm(input_writer);
        } else if (is_batchnorm(op)) {
            op->bn.y_for_bf16_readers = read_only_as(m, op->out, bf16_reader);
        }
    }
}

/* Counts each tensor's readers: backward overwrites the gradient of a tensor read once (no zeroing)
 * and accumulates into those read twice. */
int nn_finish(struct model *m)
{
    if (m->num_ops == 0 || !op_type_of(&m->ops[m->num_ops - 1])->is_loss)
        return -1;
    m->readers = calloc((size_t)m->num_tensors, sizeof *m->readers);
    if (!m->readers)
        return -1;
    for (int i = 0; i < m->num_ops; i++) {
        m->readers[m->ops[i].in]++;
        if (op_type_of(&m->ops[i])->inputs == 2)
            m->readers[m->ops[i].in2]++;
    }
    mark_bf16_outputs(m);
    return 0;
}

void model_free(struct model *m)
{
    free(m->readers);
    free(m->tensors);
    free(m->ops);
    free(m->inits);
    memset(m, 0, sizeof *m);
}

void model_init_params(const struct model *m, float *params, float *buffers, uint64_t seed)
{
    struct rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < m->num_inits; i++) {
        const struct param_init *init = &m->inits[i];
        for (size_t j = 0; j < init->count; j++) {
            float *p = &params[init->offset + j];
            if (init->kind == INIT_UNIFORM)
                *p = (float)((2.0 * rng_uniform(&rng) - 1.0) * init->scale);
            else if (init->kind == INIT_NORMAL)
                *p = (float)(rng_normal(&rng) * init->scale);
            else
                *p = init->scale;
        }
    }
    for (int i = 0; i < m->num_ops; i++)
        if (op_type_of(&m->ops[i])->init_buffers)
            op_type_of(&m->ops[i])->init_buffers(m, &m->ops[i], buffers);
}

/* ---------- workspace ---------- */

static bool model_has_conv(const struct model *m)
{
    for (int i = 0; i < m->num_ops; i++)
        if (m->ops[i].kind == OP_CONV)
            return true;
    return false;
}

/* A channels-last backend keeps images NHWC (backend.h): a model that flattens one into a linear
 * layer would feed it its features in another order than its weights were made for. */
static int channels_last_refused(const struct model *m, struct dt_err *err)
{
    if (!model_has_conv(m))
        return 0;   /* its input stays as the loader made it */
    for (int i = 0; i < m->num_ops; i++) {
        const struct tensor_shape *in = &m->tensors[m->ops[i].in];
        if (m->ops[i].kind == OP_LINEAR && in->h * in->w > 1)
            return dt_fail(err, "--channels-last: model %s flattens a %dx%dx%d image into a linear layer, which "
                           "channels-last would feed in another order (the ResNets pool to one value a channel "
                           "first); leave --channels-last out for %s", m->name, in->h, in->w, in->c, m->name);
    }
    return 0;
}

int workspace_create(struct workspace *ws, const struct model *m, const struct backend *be, int max_batch,
                     struct dt_err *err)
{
    memset(ws, 0, sizeof *ws);
    for (int i = 0; i < m->num_ops; i++) {
        const struct op_type *type = op_type_of(&m->ops[i]);
        if (type->runs_on && !type->runs_on(be))
            return dt_fail(err, "model %s needs the %s layer, which the %s backend does not have yet", m->name,
                           type->name, be->name);
    }
    if (be->channels_last && channels_last_refused(m, err) < 0)
        return -1;
    ws->max_batch = max_batch;
    ws->act = calloc((size_t)m->num_tensors, sizeof *ws->act);
    ws->grad = calloc((size_t)m->num_tensors, sizeof *ws->grad);
    ws->saved = calloc((size_t)(m->num_slots ? m->num_slots : 1), sizeof *ws->saved);
    ws->cols = calloc((size_t)(m->num_ops ? m->num_ops : 1), sizeof *ws->cols);
    bool ok = ws->act && ws->grad && ws->saved && ws->cols;
    size_t kept = 0;
    for (int i = 0; i < m->num_ops && ok && !be->device_memory; i++) {
        if (!op_type_of(&m->ops[i])->column_floats)
            continue;
        size_t size = op_type_of(&m->ops[i])->column_floats(m, &m->ops[i], max_batch);
        if (size > NN_COLS_MAX_ONE || kept + size > NN_COLS_BUDGET)
            continue;
        ok = (ws->cols[i] = malloc(size * sizeof(float))) != NULL;
        kept += size;
    }
    for (int t = 1; t < m->num_tensors && ok; t++) {
        size_t count = tensor_size(m, t) * (size_t)max_batch;
        ws->act[t] = backend_alloc(be, count * sizeof(float));
        ws->grad[t] = backend_alloc(be, count * sizeof(float));
        ok = ws->act[t] && ws->grad[t];
    }
    if (ok && be->channels_last && model_has_conv(m))
        ok = (ws->input_nhwc = backend_alloc(be, tensor_size(m, 0) * (size_t)max_batch * sizeof(float))) != NULL;
    for (int i = 0; i < m->num_ops && ok; i++) {
        const struct op *op = &m->ops[i];
        if (op_type_of(op)->saved_bytes)
            ok = (ws->saved[op->slot] = backend_alloc(be, op_type_of(op)->saved_bytes(m, op, max_batch))) != NULL;
    }
    if (!ok) {
        workspace_free(ws, m, be);
        return dt_fail(err, "out of memory for the activations of %s at batch %d", m->name, max_batch);
    }
    return 0;
}

void workspace_free(struct workspace *ws, const struct model *m, const struct backend *be)
{
    for (int t = 0; ws->act && t < m->num_tensors; t++) {
        if (ws->act[t])
            backend_release(be, ws->act[t]);
        if (ws->grad[t])
            backend_release(be, ws->grad[t]);
    }
    for (int s = 0; ws->saved && s < m->num_slots; s++)
        if (ws->saved[s])
            backend_release(be, ws->saved[s]);
    if (ws->input_nhwc)
        backend_release(be, ws->input_nhwc);
    for (int i = 0; ws->cols && i < m->num_ops; i++)
        free(ws->cols[i]);
    free(ws->cols);
    free(ws->act);
    free(ws->grad);
    free(ws->saved);
    memset(ws, 0, sizeof *ws);
}

/* ---------- passes ---------- */

double model_forward(const struct model *m, const struct backend *be, struct workspace *ws, const float *params,
                     float *buffers, const struct batch *b, bool training, const struct params_needed *need,
                     int *correct)
{
    ws->input = b->x;
    if (ws->input_nhwc) {   /* the channels-last copy the first layer reads */
        const struct tensor_shape *in = &m->tensors[0];
        be->to_channels_last(be->state, b->x, ws->input_nhwc, b->n, in->c, in->h * in->w);
        ws->input = ws->input_nhwc;
    }
    ws->noise = b->noise, ws->position = b->position;
    struct pass p = {.m = m, .be = be, .ws = ws, .params = params, .buffers = buffers, .n = b->n,
                     .training = training, .labels = b->labels, .noise = b->noise, .position = b->position};
    for (p.index = 0; p.index < m->num_ops; p.index++) {
        const struct op *op = &m->ops[p.index];
        if (need && op_type_of(op)->owns_params)
            need->call(need->ctx, op->w, op_type_of(op)->param_count(m, op));
        op_type_of(op)->forward(&p, op);
    }
    if (correct)
        *correct = p.correct;
    return p.loss;
}

bool model_params_in_op_order(const struct model *m)
{
    size_t last = 0;
    for (int i = 0; i < m->num_ops; i++) {
        if (!op_type_of(&m->ops[i])->owns_params)
            continue;
        if (m->ops[i].w < last)
            return false;
        last = m->ops[i].w;
    }
    return true;
}

void model_backward(const struct model *m, const struct backend *be, struct workspace *ws, const float *params,
                    float *grads, int n)
{
    model_backward_notify(m, be, ws, params, grads, n, NULL);
}

void model_backward_notify(const struct model *m, const struct backend *be, struct workspace *ws,
                           const float *params, float *grads, int n, const struct grads_ready *ready)
{
    /* Tensors read once get their gradient written by that reader (the logits': by the loss op's
     * forward); those read several times start from zero and are added to (a residual add zeroes
     * its lone-read inputs itself); the loss's own output is read by nobody. */
    for (int t = 1; t < m->num_tensors; t++)
        if (m->readers[t] > 1)
            backend_zero(be, ws->grad[t], tensor_size(m, t) * (size_t)n * sizeof(float));
    struct pass p = {.m = m, .be = be, .ws = ws, .params = params, .grads = grads, .n = n, .training = true,
                     .noise = ws->noise, .position = ws->position};
    for (p.index = m->num_ops - 1; p.index >= 0; p.index--) {
        const struct op *op = &m->ops[p.index];
        op_type_of(op)->backward(&p, op, m->readers[op->in] != 1);
        if (ready && op_type_of(op)->owns_params)
            ready->call(ready->ctx, op->w);
    }
}

int model_layer_spans(const struct model *m, size_t *first, size_t *count)
{
    int layers = 0;
    for (int i = 0; i < m->num_ops; i++) {
        const struct op *op = &m->ops[i];
        if (!op_type_of(op)->owns_params)
            continue;
        if (first)
            first[layers] = op->w;
        if (count)
            count[layers] = op_type_of(op)->param_count(m, op);
        layers++;
    }
    return layers;
}

int model_layer_kinds(const struct model *m, const char **kinds)
{
    int layers = 0;
    for (int i = 0; i < m->num_ops; i++)
        if (op_type_of(&m->ops[i])->owns_params)
            kinds[layers++] = op_type_of(&m->ops[i])->name;
    return layers;
}

double model_train_flops(const struct model *m)
{
    double flops = 0;
    for (int i = 0; i < m->num_ops; i++) {
        const struct op *op = &m->ops[i];
        if (op_type_of(op)->forward_macs)   /* forward, weight gradient, input gradient (none for the input) */
            flops += 2 * op_type_of(op)->forward_macs(m, op) * (op->in == 0 ? 2 : 3);
    }
    return flops;
}
