/* test_seq.c - the language models' layers and models: BERT's parameter counts, every gradient of a
 * small encoder against central differences of an independent double-precision forward pass (with
 * padding, so the attention mask counts), the fast CPU backend against the reference, and a model
 * against PyTorch's loss and gradients for the same weights and batch (tests/seq_torch.py, where
 * python3-torch is installed; skipped otherwise). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nn.h"
#include "nn_build.h"
#include "rng.h"
#include "testutil.h"

static void build_as(struct model *m, const char *name, int T, int vocab, int classes, float dropout, bool pretraining)
{
    struct dt_err err;
    struct seq_model_input in = {.tokens = T, .vocab = vocab, .classes = classes, .dropout = dropout,
                                 .pretraining = pretraining};
    if (model_build_seq(m, name, &in, &err) < 0) {
        print_error("%s: %s\n", name, err.msg);
        fail();
    }
}

static void build(struct model *m, const char *name, int T, int vocab, int classes)
{
    build_as(m, name, T, vocab, classes, 0, false);
}

/* HuggingFace's BertModel (encoder and pooler) has exactly these; the classifier adds (H + 1) x classes. */
static void test_bert_parameter_counts(void **state)
{
    (void)state;
    struct model m;
    build(&m, "bert-base", 128, 30522, 2);
    assert_int_equal(m.num_params, 109482240 + 769 * 2);
    assert_true(model_params_in_op_order(&m));
    model_free(&m);
    build(&m, "bert-large", 64, 30522, 2);
    assert_int_equal(m.num_params, 335141888 + 1025 * 2);
    model_free(&m);
    /* BertForPreTraining: + the MLM transform (dense, layer norm), the decoder's bias (its weights
     * are the word table), next sentence: HuggingFace's 110,106,428 */
    build_as(&m, "bert-base", 64, 30522, 2, 0.1f, true);
    assert_int_equal(m.num_params, 110106428);
    assert_true(model_params_in_op_order(&m));
    model_free(&m);
    /* the seeds' transformer: 6 layers of 789,760, embeddings for 256 positions, 5 classes */
    build(&m, "transformer", 256, 1000, 5);
    assert_int_equal(m.num_params, (1000 + 256 + 2) * 256 + 512 + 6 * 789760 + 65792 + 257 * 5);
    model_free(&m);
    struct dt_err err;
    assert_int_equal(model_build_seq(&m, "transformer:2x10x3", &(struct seq_model_input){.tokens = 8, .vocab = 50, .classes = 2}, &err), -1);   /* 10 % 3 */
    assert_non_null(strstr(err.msg, "LAYERSxHIDDENxHEADS"));
    assert_int_equal(model_build_seq(&m, "bert-base", &(struct seq_model_input){.tokens = 600, .vocab = 30522, .classes = 2}, &err), -1);
    assert_non_null(strstr(err.msg, "512 positions"));
    assert_int_equal(model_build_seq(&m, "gpt", &(struct seq_model_input){.tokens = 8, .vocab = 50, .classes = 2}, &err), -1);
    assert_non_null(strstr(err.msg, "unknown language model"));
}

struct run {
    float *params, *buffers, *grads, *x;
    int *labels;
    struct workspace ws;
};

/* Random tokens 1..vocab-1 and segments, the last `pad[i]` tokens of sequence i padding. */
static void setup_run(const struct model *m, const struct backend *be, struct run *r, int n, int vocab, uint64_t seed)
{
    int T = m->tensors[0].c;
    r->params = calloc(m->num_params, sizeof(float));
    r->grads = calloc(m->num_params, sizeof(float));
    r->buffers = calloc(m->num_buffers + 1, sizeof(float));
    r->x = calloc((size_t)n * T * SEQ_TOKEN_FIELDS, sizeof(float));
    r->labels = calloc((size_t)n, sizeof(int));
    model_init_params(m, r->params, r->buffers, seed);
    struct rng rng;
    rng_seed(&rng, seed + 1);
    for (int i = 0; i < n; i++) {
        int pad = i % 3;   /* 0, 1 or 2 padding tokens */
        for (int t = 0; t < T; t++) {
            float *tok = r->x + ((size_t)i * T + t) * SEQ_TOKEN_FIELDS;
            tok[0] = t >= T - pad ? SEQ_PAD_ID : (float)(1 + rng_below(&rng, (uint64_t)vocab - 1));
            tok[1] = (float)(t >= T / 2);
            tok[2] = t % 3 == 1 && tok[0] != SEQ_PAD_ID ? (float)rng_below(&rng, (uint64_t)vocab) : SEQ_NO_LABEL;
        }
        r->labels[i] = (int)rng_below(&rng, (uint64_t)m->classes);
    }
    assert_int_equal(workspace_create(&r->ws, m, be, n, NULL), 0);
}

static void free_run(const struct model *m, const struct backend *be, struct run *r)
{
    workspace_free(&r->ws, m, be);
    free(r->params), free(r->grads), free(r->buffers), free(r->x), free(r->labels);
}

/* ---------- an independent forward pass in double precision ---------- */

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

/* The batch's dropout randomness, as model_forward is given it. */
static const uint64_t test_noise = 0x1234567;
static const long test_position = 40;

static void d_op(const struct model *m, int index, const double *p, double **act, int n)
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
    case OP_ATTENTION:
        d_attention(x, act[0], y, n, s.c, o.w, op->attention.heads, op->attention.dropout,
                    test_noise ^ ((uint64_t)index * 0xd1342543de82ef95ULL), test_position);
        break;
    case OP_FIRST_TOKEN:
        for (int i = 0; i < n; i++)
            memcpy(y + (size_t)i * s.w, x + (size_t)i * s.c * s.w, (size_t)s.w * sizeof(double));
        break;
    case OP_DROPOUT: {   /* the draw the kernels make, written out again */
        size_t per = tensor_size(m, op->in);
        uint64_t noise = test_noise ^ ((uint64_t)index * 0xd1342543de82ef95ULL);
        for (int i = 0; i < n; i++)
            for (size_t e = 0; e < per; e++)
                y[i * per + e] = seq_noise(noise, test_position + i, e) >= op->dropout.rate
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

static double double_loss(const struct model *m, const double *p, const double *x, const int *labels, int n)
{
    double **act = calloc((size_t)m->num_tensors, sizeof *act);
    act[0] = (double *)x;
    for (int t = 1; t < m->num_tensors; t++)
        act[t] = calloc(tensor_size(m, t) * (size_t)n, sizeof(double));
    for (int i = 0; i < m->num_ops; i++)
        d_op(m, i, p, act, n);
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

/* Every parameter's gradient (embeddings, layer norms, the fused query/key/value weights, the
 * feed-forward, pooler and classifier) against (L(p + h) - L(p - h)) / 2h in double precision;
 * once without dropout and once with it (the double pass draws the same masks). */
static void check_central_differences(const char *name, float dropout, bool pretraining)
{
    const int n = 3, vocab = 11;
    struct model m;
    build_as(&m, name, 5, vocab, 3, dropout, pretraining);
    struct run r;
    setup_run(&m, backend_reference(), &r, n, vocab, 5);
    struct batch b = {n, r.x, r.labels, test_noise, test_position};
    double float_loss = model_forward(&m, backend_reference(), &r.ws, r.params, r.buffers, &b, true, NULL, NULL);
    model_backward(&m, backend_reference(), &r.ws, r.params, r.grads, n);
    size_t in = tensor_size(&m, 0) * n;
    double *p = malloc(m.num_params * sizeof(double)), *x = malloc(in * sizeof(double));
    for (size_t i = 0; i < m.num_params; i++)
        p[i] = r.params[i];
    for (size_t i = 0; i < in; i++)
        x[i] = r.x[i];
    double loss = double_loss(&m, p, x, r.labels, n);
    assert_true(fabs(loss - float_loss) <= 1e-5 * fabs(loss));
    double worst = 0;
    for (size_t i = 0; i < m.num_params; i++) {
        const double h = 1e-5;
        double saved = p[i];
        p[i] = saved + h;
        double up = double_loss(&m, p, x, r.labels, n);
        p[i] = saved - h;
        double down = double_loss(&m, p, x, r.labels, n);
        p[i] = saved;
        double numeric = (up - down) / (2 * h), analytic = r.grads[i];
        double error = fabs(numeric - analytic) / fmax(fabs(numeric), 1e-3);
        worst = fmax(worst, error);
        if (error > 1e-3)
            print_error("parameter %zu: analytic %.8g, central difference %.8g\n", i, analytic, numeric);
        assert_true(error <= 1e-3);
    }
    print_message("%s%s, dropout %.1f: %zu parameters, worst relative difference %.2e\n", m.name,
                  pretraining ? " (pre-training heads)" : "", dropout, m.num_params, worst);
    free(p), free(x);
    free_run(&m, backend_reference(), &r);
    model_free(&m);
}

static void test_backward_matches_central_differences(void **state)
{
    (void)state;
    check_central_differences("transformer:2x8x2", 0, false);
    check_central_differences("transformer:2x8x2", 0.3f, false);
    check_central_differences("transformer:2x8x2", 0, true);   /* the decoder shares the word table */
}

/* Dropout keeps about 1 - rate of the elements, scaled; evaluation keeps them all; the masks are
 * the sample's, wherever in a batch it is. */
static void test_dropout_draws(void **state)
{
    (void)state;
    enum { PER = 4000 };
    float *x = malloc(2 * PER * sizeof(float)), *y = malloc(2 * PER * sizeof(float)), *again = malloc(PER * sizeof(float));
    uint8_t *mask = malloc(2 * PER), *mask1 = malloc(PER);
    for (int i = 0; i < 2 * PER; i++)
        x[i] = 1.0f + (float)i / PER;
    const struct backend *be = backend_reference();
    be->dropout_forward(be->state, x, y, mask, 2, PER, 0.25f, 99, 10);
    int kept = 0;
    for (int i = 0; i < 2 * PER; i++) {
        kept += mask[i];
        assert_true(mask[i] ? fabsf(y[i] - x[i] / 0.75f) < 1e-6f : y[i] == 0.0f);
    }
    assert_true(abs(kept - 6000) < 150);   /* 0.75 of 8000, within 4 standard deviations */
    be->dropout_forward(be->state, x + PER, again, mask1, 1, PER, 0.25f, 99, 11);   /* sample 11 alone */
    assert_memory_equal(again, y + PER, PER * sizeof(float));
    be->dropout_forward(be->state, x, y, mask, 2, PER, 0.0f, 99, 10);   /* rate 0: evaluation */
    assert_memory_equal(x, y, 2 * PER * sizeof(float));
    free(x), free(y), free(again), free(mask), free(mask1);
}

static double relative_difference(const float *a, const float *b, size_t count)
{
    double diff = 0, scale = 1e-12;
    for (size_t i = 0; i < count; i++) {
        diff = fmax(diff, fabs((double)a[i] - b[i]));
        scale = fmax(scale, fabs((double)b[i]));
    }
    return diff / scale;
}

/* Worst relative difference over the model's parameter tensors (each against its own scale). */
static double worst_tensor_difference(const struct model *m, const float *a, const float *b)
{
    double worst = 0;
    for (int i = 0; i < m->num_inits; i++)
        worst = fmax(worst, relative_difference(a + m->inits[i].offset, b + m->inits[i].offset, m->inits[i].count));
    return worst;
}

/* The fast backend against the reference on one model and batch, with the given dropout (both draw
 * the same masks: of the hidden states and of the attention weights). */
static void check_fast_against_reference(float dropout)
{
    const int n = 4, vocab = 40;
    struct model m;
    build_as(&m, "transformer:2x32x4", 12, vocab, 5, dropout, false);
    struct backend *fast = backend_cpu_create(2);
    assert_non_null(fast);
    struct run ref, cpu;
    setup_run(&m, backend_reference(), &ref, n, vocab, 9);
    setup_run(&m, fast, &cpu, n, vocab, 9);
    double ref_loss = model_forward(&m, backend_reference(), &ref.ws, ref.params, ref.buffers,
                                    &(struct batch){n, ref.x, ref.labels, test_noise, test_position}, true, NULL, NULL);
    double cpu_loss = model_forward(&m, fast, &cpu.ws, cpu.params, cpu.buffers,
                                    &(struct batch){n, cpu.x, cpu.labels, test_noise, test_position}, true, NULL, NULL);
    model_backward(&m, backend_reference(), &ref.ws, ref.params, ref.grads, n);
    model_backward(&m, fast, &cpu.ws, cpu.params, cpu.grads, n);
    double worst = worst_tensor_difference(&m, cpu.grads, ref.grads);
    print_message("fast vs reference, dropout %.1f: loss %.6f vs %.6f, gradients %.1e (relative)\n", dropout, cpu_loss,
                  ref_loss, worst);
    assert_true(fabs(cpu_loss - ref_loss) <= 1e-5 * fabs(ref_loss));
    assert_true(worst <= 1e-4);
    free_run(&m, backend_reference(), &ref);
    free_run(&m, fast, &cpu);
    backend_cpu_destroy(fast);
    model_free(&m);
}

static void test_fast_backend_matches_reference(void **state)
{
    (void)state;
    check_fast_against_reference(0);
    check_fast_against_reference(0.2f);
}

static int write_floats(const char *path, const float *v, size_t count)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(v, sizeof *v, count, f) == count;
    return (f && fclose(f) == 0 && ok) ? 0 : -1;
}

/* The same weights and batch through PyTorch (tests/seq_torch.py builds the model from the flat
 * parameters in dtrain's order): the loss, and every parameter tensor's gradient, within 1e-4
 * relative in float32. */
static void compare_with_pytorch(bool pretraining)
{
    const int n = 4, T = 16, vocab = 50, classes = 5, layers = 2, hidden = 32, heads = 4;
    char name[64], dir[] = "/tmp/dtrain-test-seq-XXXXXX", path[256], cmd[8192];
    snprintf(name, sizeof name, "transformer:%dx%dx%d", layers, hidden, heads);
    assert_non_null(mkdtemp(dir));
    struct model m;
    build_as(&m, name, T, vocab, classes, 0, pretraining);
    struct run r;
    setup_run(&m, backend_reference(), &r, n, vocab, 21);
    double loss = model_forward(&m, backend_reference(), &r.ws, r.params, r.buffers, &(struct batch){.n = n, .x = r.x, .labels = r.labels},
                                true, NULL, NULL);
    model_backward(&m, backend_reference(), &r.ws, r.params, r.grads, n);
    float *labels = malloc((size_t)n * sizeof(float));
    for (int i = 0; i < n; i++)
        labels[i] = (float)r.labels[i];
    snprintf(path, sizeof path, "%s/params.f32", dir);
    assert_int_equal(write_floats(path, r.params, m.num_params), 0);
    snprintf(path, sizeof path, "%s/tokens.f32", dir);
    assert_int_equal(write_floats(path, r.x, (size_t)n * T * SEQ_TOKEN_FIELDS), 0);
    snprintf(path, sizeof path, "%s/labels.f32", dir);
    assert_int_equal(write_floats(path, labels, (size_t)n), 0);
    char script[4096];
    tu_fixture(script, sizeof script, "../seq_torch.py");
    snprintf(cmd, sizeof cmd, "OMP_NUM_THREADS=1 /usr/bin/python3 %s %s %d %d %d %d %d %d %d %d %s", script, dir, n, T,
             vocab, classes, layers, hidden, heads, 4 * hidden, pretraining ? "pretraining" : "");
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof path, "%s/grads.f32", dir);
    float *torch_grads = malloc(m.num_params * sizeof(float)), torch_loss = 0;
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fread(&torch_loss, sizeof torch_loss, 1, f), 1);
    assert_int_equal(fread(torch_grads, sizeof(float), m.num_params, f), m.num_params);
    assert_int_equal(fgetc(f), EOF);
    fclose(f);
    double worst = worst_tensor_difference(&m, r.grads, torch_grads);
    print_message("PyTorch %s%s: loss %.7f vs %.7f, gradients %.1e (worst tensor, relative)\n", name,
                  pretraining ? " with the pre-training heads" : "", loss, torch_loss, worst);
    assert_true(fabs(loss - torch_loss) <= 1e-5 * fabs(loss));
    assert_true(worst <= 1e-4);
    free(torch_grads), free(labels);
    free_run(&m, backend_reference(), &r);
    model_free(&m);
    assert_int_equal(tu_remove_tree(dir), 0);
}

static void test_matches_pytorch(void **state)
{
    (void)state;
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        tu_skip("PyTorch comparison of the language models (python3-torch is not installed)");
    }
    compare_with_pytorch(false);
    compare_with_pytorch(true);   /* masked LM through the tied decoder, and next sentence */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bert_parameter_counts),
        cmocka_unit_test(test_backward_matches_central_differences),
        cmocka_unit_test(test_dropout_draws),
        cmocka_unit_test(test_fast_backend_matches_reference),
        cmocka_unit_test(test_matches_pytorch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
