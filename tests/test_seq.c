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

#include "trainer/nn/nn.h"
#include "trainer/nn/nn_build.h"
#include "tests/gradcheck.h"
#include "trainer/base/rng.h"
#include "tests/testutil.h"

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

static void build_seq_model(struct model *m, const char *name, int T, int vocab, int classes)
{
    build_as(m, name, T, vocab, classes, 0, false);
}

/* HuggingFace's BertModel (encoder and pooler) has exactly these; the classifier adds (H + 1) x classes. */
static void test_bert_parameter_counts(void **state)
{
    (void)state;
    struct model m;
    build_seq_model(&m, "bert-base", 128, 30522, 2);
    assert_int_equal(m.num_params, 109482240 + 769 * 2);
    assert_true(model_params_in_op_order(&m));
    model_free(&m);
    build_seq_model(&m, "bert-large", 64, 30522, 2);
    assert_int_equal(m.num_params, 335141888 + 1025 * 2);
    model_free(&m);
    /* BertForPreTraining: + the MLM transform (dense, layer norm), the decoder's bias (its weights
     * are the word table), next sentence: HuggingFace's 110,106,428 */
    build_as(&m, "bert-base", 64, 30522, 2, 0.1f, true);
    assert_int_equal(m.num_params, 110106428);
    assert_true(model_params_in_op_order(&m));
    model_free(&m);
    /* the reference experiments' transformer: 6 layers of 789,760, embeddings for 256 positions, 5 classes */
    build_seq_model(&m, "transformer", 256, 1000, 5);
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

/* The batch's dropout randomness, as model_forward is given it. */
static const uint64_t test_noise = 0x1234567;
static const long test_position = 40;

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
    double forward_error, worst = gradcheck_worst(&m, r.params, r.grads, &b, float_loss, 1e-5, 1e-3, &forward_error);
    assert_true(forward_error <= 1e-5);   /* the two forward passes agree */
    assert_true(worst <= 1e-3);
    print_message("%s%s, dropout %.1f: %zu parameters, worst relative difference %.2e\n", m.name,
                  pretraining ? " (pre-training heads)" : "", dropout, m.num_params, worst);
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
