/* ops.c - the op table (see ops.h): every kind of layer, forward and backward over a backend. */
#include "trainer/nn/ops.h"

/* BN defaults, as PyTorch's. */
#define BN_MOMENTUM 0.1f
#define BN_EPS 1e-5f

static const float *activation_of(const struct workspace *ws, int t)
{
    return t == 0 ? ws->input : ws->act[t];
}

/* The op's input, its input gradient (NULL for the model's input: nothing needs it), and the
 * element count of its input over the batch. */
static const float *in_of(const struct pass *p, const struct op *op) { return activation_of(p->ws, op->in); }
static float *din_of(const struct pass *p, const struct op *op) { return op->in == 0 ? NULL : p->ws->grad[op->in]; }
static size_t in_count(const struct pass *p, const struct op *op) { return tensor_size(p->m, op->in) * (size_t)p->n; }
static struct tensor_shape in_shape(const struct pass *p, const struct op *op) { return p->m->tensors[op->in]; }

/* ---------- linear ---------- */

static void linear_forward(struct pass *p, const struct op *op)
{
    p->be->linear_forward(p->be->state, in_of(p, op), p->params + op->w, p->params + op->b, p->ws->act[op->out], p->n,
                          (int)tensor_size(p->m, op->in), op->linear.out_features);
}

static void linear_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->linear_backward(p->be->state, in_of(p, op), p->params + op->w, p->ws->grad[op->out], din_of(p, op),
                           p->grads + op->w, p->grads + op->b, p->n, (int)tensor_size(p->m, op->in),
                           op->linear.out_features, acc);
}

static size_t linear_params(const struct model *m, const struct op *op)
{
    return ((size_t)tensor_size(m, op->in) + 1) * op->linear.out_features;
}

static double linear_macs(const struct model *m, const struct op *op)
{
    return (double)tensor_size(m, op->in) * op->linear.out_features;
}

/* ---------- convolution ---------- */

static struct conv_shape conv_shape_of(const struct model *m, const struct op *op, int n)
{
    struct tensor_shape in = m->tensors[op->in], out = m->tensors[op->out];
    const struct op_conv *c = &op->conv;
    return (struct conv_shape){.n = n, .c = in.c, .h = in.h, .w = in.w, .c_out = c->c_out, .kh = c->k, .kw = c->k,
                               .stride = c->stride, .pad = c->pad, .h_out = out.h, .w_out = out.w,
                               .y_for_batchnorm = c->into_batchnorm, .dx_for_batchnorm = c->dx_for_batchnorm};
}

static void conv_forward(struct pass *p, const struct op *op)
{
    struct conv_shape cs = conv_shape_of(p->m, op, p->n);
    cs.cols = p->training ? p->ws->cols[p->index] : NULL;
    p->be->conv_forward(p->be->state, &cs, in_of(p, op), p->params + op->w, op->conv.bias ? p->params + op->b : NULL,
                        p->ws->act[op->out]);
}

static void conv_backward(const struct pass *p, const struct op *op, bool acc)
{
    struct conv_shape cs = conv_shape_of(p->m, op, p->n);
    cs.cols = p->ws->cols[p->index];
    p->be->conv_backward(p->be->state, &cs, in_of(p, op), p->params + op->w, p->ws->grad[op->out], din_of(p, op),
                         p->grads + op->w, op->conv.bias ? p->grads + op->b : NULL, acc);
}

static size_t conv_column_floats(const struct model *m, const struct op *op, int max_batch)
{
    struct conv_shape cs = conv_shape_of(m, op, max_batch);
    return conv_cols_size(&cs);
}

static size_t conv_params(const struct model *m, const struct op *op)
{
    const struct op_conv *c = &op->conv;
    return (size_t)c->c_out * m->tensors[op->in].c * c->k * c->k + (c->bias ? (size_t)c->c_out : 0);
}

static double conv_macs(const struct model *m, const struct op *op)
{
    return (double)m->tensors[op->in].c * op->conv.k * op->conv.k * tensor_size(m, op->out);
}

/* ---------- batch norm ---------- */

static size_t batchnorm_params(const struct model *m, const struct op *op)
{
    return 2 * (size_t)m->tensors[op->in].c;   /* gamma and beta */
}

static size_t batchnorm_saved(const struct model *m, const struct op *op, int max_batch)
{
    (void)max_batch;
    return 2 * (size_t)m->tensors[op->in].c * sizeof(float);   /* the batch's mean and 1/std per channel */
}

static void batchnorm_init_buffers(const struct model *m, const struct op *op, float *buffers)
{
    for (int ch = 0; ch < m->tensors[op->in].c; ch++) {
        buffers[op->bn.running_mean + ch] = 0.0f;
        buffers[op->bn.running_var + ch] = 1.0f;
    }
}

/* The op's batch norm: its input, parameters, statistics and output, and the residual (in2)
 * where the op adds one. */
static struct bn_call bn_call_of(const struct pass *p, const struct op *op)
{
    struct tensor_shape s = in_shape(p, op);
    float *saved = p->ws->saved[op->slot];
    return (struct bn_call){.n = p->n, .c = s.c, .hw = s.h * s.w, .x = in_of(p, op), .gamma = p->params + op->w,
                            .beta = p->params + op->b, .running_mean = p->buffers ? p->buffers + op->bn.running_mean : NULL,
                            .running_var = p->buffers ? p->buffers + op->bn.running_var : NULL, .save_mean = saved,
                            .save_invstd = saved + s.c, .y = p->ws->act[op->out],
                            .residual = op_type_of(op)->inputs == 2 ? activation_of(p->ws, op->in2) : NULL,
                            .relu = op->bn.relu, .y_for_bf16_readers = op->bn.y_for_bf16_readers};
}

static void batchnorm_forward(struct pass *p, const struct op *op)
{
    struct bn_call bn = bn_call_of(p, op);
    p->be->batchnorm_forward(p->be->state, &bn, p->training, BN_MOMENTUM, BN_EPS);
}

/* The residual's gradient is overwritten where this op is its only reader (not zeroed before). */
static void batchnorm_backward(const struct pass *p, const struct op *op, bool acc)
{
    struct bn_call bn = bn_call_of(p, op);
    bool residual = op_type_of(op)->inputs == 2;
    p->be->batchnorm_backward(p->be->state, &bn, p->ws->grad[op->out], din_of(p, op), p->grads + op->w,
                              p->grads + op->b, residual ? p->ws->grad[op->in2] : NULL, acc,
                              residual && p->m->readers[op->in2] != 1);
}

/* ---------- elementwise and pooling ---------- */

static void relu_forward(struct pass *p, const struct op *op)
{
    p->be->relu_forward(p->be->state, in_of(p, op), p->ws->act[op->out], in_count(p, op));
}

static void relu_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->relu_backward(p->be->state, p->ws->act[op->out], p->ws->grad[op->out], din_of(p, op), in_count(p, op), acc);
}

static size_t maxpool_saved(const struct model *m, const struct op *op, int max_batch)
{
    return tensor_size(m, op->out) * (size_t)max_batch * sizeof(int);   /* the winner of each window */
}

static void maxpool_forward(struct pass *p, const struct op *op)
{
    struct tensor_shape s = in_shape(p, op);
    p->be->maxpool_forward(p->be->state, in_of(p, op), p->ws->act[op->out], (int *)p->ws->saved[op->slot], p->n, s.c,
                           s.h, s.w, op->pool.k, op->pool.stride, op->pool.pad);
}

static void maxpool_backward(const struct pass *p, const struct op *op, bool acc)
{
    struct tensor_shape s = in_shape(p, op), o = p->m->tensors[op->out];
    p->be->maxpool_backward(p->be->state, (const int *)p->ws->saved[op->slot], p->ws->grad[op->out], din_of(p, op),
                            p->n, s.c, s.h, s.w, o.h, o.w, op->pool.k, op->pool.stride, op->pool.pad, acc);
}

static void avgpool_forward(struct pass *p, const struct op *op)
{
    struct tensor_shape s = in_shape(p, op);
    p->be->avgpool_forward(p->be->state, in_of(p, op), p->ws->act[op->out], p->n, s.c, s.h * s.w);
}

static void avgpool_backward(const struct pass *p, const struct op *op, bool acc)
{
    struct tensor_shape s = in_shape(p, op);
    p->be->avgpool_backward(p->be->state, p->ws->grad[op->out], din_of(p, op), p->n, s.c, s.h * s.w, acc);
}

static void add_forward(struct pass *p, const struct op *op)
{
    p->be->add_forward(p->be->state, in_of(p, op), activation_of(p->ws, op->in2), p->ws->act[op->out], in_count(p, op));
}

/* The backend's add only accumulates: an input read by this op alone was not zeroed, so it is here. */
static void add_backward(const struct pass *p, const struct op *op, bool acc)
{
    size_t count = in_count(p, op);
    float *da = din_of(p, op), *db = p->ws->grad[op->in2];
    if (!acc)
        backend_zero(p->be, da, count * sizeof(float));
    if (p->m->readers[op->in2] == 1)
        backend_zero(p->be, db, count * sizeof(float));
    p->be->add_backward(p->be->state, p->ws->grad[op->out], da, db, count);
}

/* ---------- the loss ---------- */

/* Mean softmax cross-entropy; in training the logits' gradient is written here too (the loss and
 * its gradient come from one pass over the logits), so backward has nothing left to do. */
static void softmax_xent_forward(struct pass *p, const struct op *op)
{
    p->loss = p->be->softmax_xent(p->be->state, p->ws->act[op->in], p->labels,
                                  p->training ? p->ws->grad[op->in] : NULL, p->n, p->m->classes, &p->correct);
}

static void softmax_xent_backward(const struct pass *p, const struct op *op, bool acc)
{
    (void)p, (void)op, (void)acc;
}

/* ---------- the language models' layers ---------- */

/* Rows of a sequence tensor over the batch (tokens), and each row's features. */
static int rows_of(const struct pass *p, int t) { return p->n * p->m->tensors[t].c * p->m->tensors[t].h; }
static int features_of(const struct model *m, int t) { return m->tensors[t].w; }

static bool has_seq_kernels(const struct backend *be)
{
    return be->embedding_forward && be->layernorm_forward && be->gelu_forward && be->tanh_forward &&
           be->attention_forward && be->first_token_forward;
}

static void embed_forward(struct pass *p, const struct op *op)
{
    struct tensor_shape s = p->m->tensors[op->out];
    p->be->embedding_forward(p->be->state, in_of(p, op), p->params + op->w, p->params + op->embed.pos,
                             p->params + op->embed.seg, p->ws->act[op->out], p->n, s.c, s.w);
}

static void embed_backward(const struct pass *p, const struct op *op, bool acc)
{
    (void)acc;   /* token ids have no gradient */
    struct tensor_shape s = p->m->tensors[op->out];
    p->be->embedding_backward(p->be->state, in_of(p, op), p->ws->grad[op->out], p->grads + op->w,
                              p->grads + op->embed.pos, p->grads + op->embed.seg, p->n, s.c, s.w);
}

static size_t embed_params(const struct model *m, const struct op *op)
{
    const struct op_embed *e = &op->embed;
    return (size_t)(e->vocab + e->positions + e->segments) * features_of(m, op->out);
}

#define LN_EPS 1e-12f   /* BERT's (PyTorch's nn.LayerNorm default is 1e-5) */

static size_t layernorm_params(const struct model *m, const struct op *op)
{
    return 2 * (size_t)features_of(m, op->in);
}

static size_t layernorm_saved(const struct model *m, const struct op *op, int max_batch)
{
    return 2 * (size_t)max_batch * m->tensors[op->in].c * m->tensors[op->in].h * sizeof(float);   /* mean, 1/std a row */
}

static void layernorm_forward(struct pass *p, const struct op *op)
{
    int rows = rows_of(p, op->in);
    float *saved = p->ws->saved[op->slot];
    p->be->layernorm_forward(p->be->state, in_of(p, op), p->params + op->w, p->params + op->b, saved, saved + rows,
                             p->ws->act[op->out], rows, features_of(p->m, op->in), LN_EPS);
}

static void layernorm_backward(const struct pass *p, const struct op *op, bool acc)
{
    int rows = rows_of(p, op->in);
    const float *saved = p->ws->saved[op->slot];
    p->be->layernorm_backward(p->be->state, in_of(p, op), p->params + op->w, saved, saved + rows, p->ws->grad[op->out],
                              din_of(p, op), p->grads + op->w, p->grads + op->b, rows, features_of(p->m, op->in), acc);
}

/* A linear layer over each token: the backend's linear kernels with one row per token. */
static void dense_forward(struct pass *p, const struct op *op)
{
    p->be->linear_forward(p->be->state, in_of(p, op), p->params + op->w, p->params + op->b, p->ws->act[op->out],
                          rows_of(p, op->in), features_of(p->m, op->in), op->linear.out_features);
}

static void dense_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->linear_backward(p->be->state, in_of(p, op), p->params + op->w, p->ws->grad[op->out], din_of(p, op),
                           p->grads + op->w, p->grads + op->b, rows_of(p, op->in), features_of(p->m, op->in),
                           op->linear.out_features, acc);
}

static size_t dense_params(const struct model *m, const struct op *op)
{
    return ((size_t)features_of(m, op->in) + 1) * op->linear.out_features;
}

static double dense_macs(const struct model *m, const struct op *op)
{
    return (double)m->tensors[op->in].c * m->tensors[op->in].h * features_of(m, op->in) * op->linear.out_features;
}

static void gelu_forward(struct pass *p, const struct op *op)
{
    p->be->gelu_forward(p->be->state, in_of(p, op), p->ws->act[op->out], in_count(p, op));
}

static void gelu_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->gelu_backward(p->be->state, in_of(p, op), p->ws->grad[op->out], din_of(p, op), in_count(p, op), acc);
}

static void tanh_forward(struct pass *p, const struct op *op)
{
    p->be->tanh_forward(p->be->state, in_of(p, op), p->ws->act[op->out], in_count(p, op));
}

static void tanh_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->tanh_backward(p->be->state, p->ws->act[op->out], p->ws->grad[op->out], din_of(p, op), in_count(p, op), acc);
}

static size_t attention_saved(const struct model *m, const struct op *op, int max_batch)
{
    size_t T = (size_t)m->tensors[op->in].c;
    return (size_t)max_batch * op->attention.heads * T * T * sizeof(float);   /* the softmax weights */
}

/* Each dropout draws its own masks: the step's noise mixed with the op's place in the graph. */
static struct seq_draw draw_of(const struct pass *p, float rate)
{
    return (struct seq_draw){.rate = p->training ? rate : 0.0f,
                             .noise = p->noise ^ ((uint64_t)p->index * 0xd1342543de82ef95ULL),
                             .position = p->position};
}

/* The padding mask comes from the model's input, the token batch. */
static void attention_forward(struct pass *p, const struct op *op)
{
    struct tensor_shape s = p->m->tensors[op->out];
    struct seq_draw drop = draw_of(p, op->attention.dropout);
    p->be->attention_forward(p->be->state, in_of(p, op), p->ws->input, p->ws->saved[op->slot], p->ws->act[op->out],
                             p->n, s.c, s.w, op->attention.heads, &drop);
}

static void attention_backward(const struct pass *p, const struct op *op, bool acc)
{
    struct tensor_shape s = p->m->tensors[op->out];
    struct seq_draw drop = draw_of(p, op->attention.dropout);
    p->be->attention_backward(p->be->state, in_of(p, op), p->ws->saved[op->slot], p->ws->grad[op->out], din_of(p, op),
                              p->n, s.c, s.w, op->attention.heads, &drop, acc);
}

static double attention_macs(const struct model *m, const struct op *op)
{
    double T = m->tensors[op->in].c;
    return 2 * T * T * features_of(m, op->out);   /* Q K^T and P V */
}

static void first_token_forward(struct pass *p, const struct op *op)
{
    struct tensor_shape s = in_shape(p, op);
    p->be->first_token_forward(p->be->state, in_of(p, op), p->ws->act[op->out], p->n, s.c, s.w);
}

static void first_token_backward(const struct pass *p, const struct op *op, bool acc)
{
    struct tensor_shape s = in_shape(p, op);
    p->be->first_token_backward(p->be->state, p->ws->grad[op->out], din_of(p, op), p->n, s.c, s.w, acc);
}

static size_t dropout_saved(const struct model *m, const struct op *op, int max_batch)
{
    return tensor_size(m, op->in) * (size_t)max_batch;   /* one byte a element: kept or dropped */
}

static void dropout_forward(struct pass *p, const struct op *op)
{
    struct seq_draw drop = draw_of(p, op->dropout.rate);
    p->be->dropout_forward(p->be->state, in_of(p, op), p->ws->act[op->out], (uint8_t *)p->ws->saved[op->slot], p->n,
                           tensor_size(p->m, op->in), drop.rate, drop.noise, drop.position);
}

static void dropout_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->dropout_backward(p->be->state, (const uint8_t *)p->ws->saved[op->slot], p->ws->grad[op->out], din_of(p, op),
                            in_count(p, op),
                            op->dropout.rate, acc);
}

/* The MLM decoder: the backend's linear kernels with the shared table as weights. */
static void tied_forward(struct pass *p, const struct op *op)
{
    p->be->linear_forward(p->be->state, in_of(p, op), p->params + op->tied.table, p->params + op->b,
                          p->ws->act[op->out], rows_of(p, op->in), features_of(p->m, op->in), op->tied.out_features);
}

static void tied_backward(const struct pass *p, const struct op *op, bool acc)
{
    p->be->linear_backward(p->be->state, in_of(p, op), p->params + op->tied.table, p->ws->grad[op->out], din_of(p, op),
                           p->grads + op->tied.table, p->grads + op->b, rows_of(p, op->in), features_of(p->m, op->in),
                           op->tied.out_features, acc);
}

static size_t tied_params(const struct model *m, const struct op *op)
{
    (void)m;
    return (size_t)op->tied.out_features;   /* its bias: the weights are the table's owner's */
}

static double tied_macs(const struct model *m, const struct op *op)
{
    return (double)m->tensors[op->in].c * m->tensors[op->in].h * features_of(m, op->in) * op->tied.out_features;
}

/* Masked LM plus next sentence, as BertForPreTraining's total loss; both gradients written here. */
static void pretrain_loss_forward(struct pass *p, const struct op *op)
{
    int counted;
    double mlm = p->be->token_xent(p->be->state, p->ws->act[op->in], p->ws->input,
                                   p->training ? p->ws->grad[op->in] : NULL, rows_of(p, op->in),
                                   features_of(p->m, op->in), &counted);
    double nsp = p->be->softmax_xent(p->be->state, p->ws->act[op->in2], p->labels,
                                     p->training ? p->ws->grad[op->in2] : NULL, p->n, p->m->classes, &p->correct);
    p->loss = mlm + nsp;
}

static bool has_token_xent(const struct backend *be)
{
    return be->token_xent != NULL;
}

static bool has_dropout(const struct backend *be)
{
    return be->dropout_forward && be->dropout_backward;
}

const struct op_type op_types[OP_KIND_COUNT] = {
    [OP_LINEAR] = {.name = "linear", .inputs = 1, .owns_params = true, .param_count = linear_params,
                   .forward = linear_forward,
                   .backward = linear_backward, .forward_macs = linear_macs},
    [OP_CONV] = {.name = "conv", .inputs = 1, .owns_params = true, .param_count = conv_params,
                 .column_floats = conv_column_floats,
                 .forward = conv_forward, .backward = conv_backward, .forward_macs = conv_macs},
    [OP_BATCHNORM] = {.name = "batchnorm", .inputs = 1, .owns_params = true, .param_count = batchnorm_params,
                      .saved_bytes = batchnorm_saved,
                      .init_buffers = batchnorm_init_buffers, .forward = batchnorm_forward,
                      .backward = batchnorm_backward},
    /* named as its parameters are (a profile's layer names): a batch norm layer's */
    [OP_BATCHNORM_ADD_RELU] = {.name = "batchnorm", .inputs = 2, .owns_params = true, .param_count = batchnorm_params,
                               .saved_bytes = batchnorm_saved, .init_buffers = batchnorm_init_buffers,
                               .forward = batchnorm_forward, .backward = batchnorm_backward},
    [OP_RELU] = {.name = "relu", .inputs = 1, .forward = relu_forward, .backward = relu_backward},
    [OP_MAXPOOL] = {.name = "maxpool", .inputs = 1, .saved_bytes = maxpool_saved, .forward = maxpool_forward,
                    .backward = maxpool_backward},
    [OP_AVGPOOL] = {.name = "avgpool", .inputs = 1, .forward = avgpool_forward, .backward = avgpool_backward},
    [OP_ADD] = {.name = "add", .inputs = 2, .forward = add_forward, .backward = add_backward},
    [OP_SOFTMAX_XENT] = {.name = "softmax_xent", .inputs = 1, .is_loss = true, .forward = softmax_xent_forward,
                         .backward = softmax_xent_backward},
    [OP_EMBED] = {.name = "embedding", .inputs = 1, .owns_params = true, .param_count = embed_params,
                  .forward = embed_forward, .backward = embed_backward, .runs_on = has_seq_kernels},
    [OP_LAYERNORM] = {.name = "layernorm", .inputs = 1, .owns_params = true, .param_count = layernorm_params,
                      .saved_bytes = layernorm_saved, .forward = layernorm_forward, .backward = layernorm_backward,
                      .runs_on = has_seq_kernels},
    [OP_DENSE] = {.name = "dense", .inputs = 1, .owns_params = true, .param_count = dense_params,
                  .forward = dense_forward, .backward = dense_backward, .forward_macs = dense_macs},
    [OP_GELU] = {.name = "gelu", .inputs = 1, .forward = gelu_forward, .backward = gelu_backward,
                 .runs_on = has_seq_kernels},
    [OP_TANH] = {.name = "tanh", .inputs = 1, .forward = tanh_forward, .backward = tanh_backward,
                 .runs_on = has_seq_kernels},
    [OP_ATTENTION] = {.name = "attention", .inputs = 1, .saved_bytes = attention_saved, .forward = attention_forward,
                      .backward = attention_backward, .forward_macs = attention_macs, .runs_on = has_seq_kernels},
    [OP_FIRST_TOKEN] = {.name = "first_token", .inputs = 1, .forward = first_token_forward,
                        .backward = first_token_backward, .runs_on = has_seq_kernels},
    [OP_DROPOUT] = {.name = "dropout", .inputs = 1, .saved_bytes = dropout_saved, .forward = dropout_forward,
                    .backward = dropout_backward, .runs_on = has_dropout},
    [OP_TIED_DENSE] = {.name = "tied_dense", .inputs = 1, .owns_params = true, .param_count = tied_params,
                       .forward = tied_forward, .backward = tied_backward, .forward_macs = tied_macs},
    [OP_PRETRAIN_LOSS] = {.name = "pretrain_loss", .inputs = 2, .is_loss = true, .forward = pretrain_loss_forward,
                          .backward = softmax_xent_backward, .runs_on = has_token_xent},
};
