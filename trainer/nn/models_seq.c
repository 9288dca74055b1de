/* models_seq.c - the language models: BERT's encoder (post-LN, as HuggingFace's BertModel) with its
 * pooler and a classifier over the [CLS] token, or BertForPreTraining's heads where the data are
 * for pre-training (masked tokens). `transformer` is the reference SST-5 classifier (6
 * layers, hidden 256, 4 heads); `bert-base` and `bert-large` are BERT's sizes. Parameters lie in
 * op order (embeddings first, the classifier last), as WFBP needs; each attention block's query,
 * key and value weights are one [3H][H] matrix (HuggingFace's three, stacked in that order). */
#include <stdio.h>
#include <string.h>

#include "trainer/nn/nn.h"
#include "trainer/nn/nn_build.h"

struct encoder_size {
    int layers, hidden, heads, ffn;
    float dropout;
};

/* One post-LN encoder layer: x + attention, normalised; then x + feed-forward, normalised. */
static int encoder_layer(struct model *m, int x, const struct encoder_size *e)
{
    int a = nn_attention(m, nn_dense(m, x, 3 * e->hidden), e->heads, e->dropout);   /* BERT drops both at 0.1 */
    x = nn_layernorm(m, nn_add(m, nn_dropout(m, nn_dense(m, a, e->hidden), e->dropout), x));
    int f = nn_dense(m, nn_gelu(m, nn_dense(m, x, e->ffn)), e->hidden);
    return nn_layernorm(m, nn_add(m, nn_dropout(m, f, e->dropout), x));
}

/* Embeddings, the encoder and the pooler (dense + tanh over [CLS]); then the classifier, or
 * BertForPreTraining's heads: the masked-LM transform (dense, GELU, layer norm) and decoder (the
 * word table's weights, a bias of its own) over every token, next sentence over the pooled [CLS]. */
static void build_encoder(struct model *m, const struct encoder_size *e, int vocab, int positions, bool pretraining)
{
    int x = nn_dropout(m, nn_layernorm(m, nn_embed(m, 0, vocab, positions, 2, e->hidden)), e->dropout);
    size_t word_table = m->ops[0].w;
    for (int l = 0; l < e->layers; l++)
        x = encoder_layer(m, x, e);
    int pooled = nn_tanh(m, nn_dense(m, nn_first_token(m, x), e->hidden));
    if (!pretraining) {
        nn_softmax_xent(m, nn_dense(m, pooled, m->classes));
        return;
    }
    int t = nn_layernorm(m, nn_gelu(m, nn_dense(m, x, e->hidden)));
    int mlm = nn_tied_dense(m, t, word_table, vocab);   /* one op a statement: C leaves the order of */
    int nsp = nn_dense(m, pooled, 2);                   /* arguments open, and parameters lie in op order */
    nn_pretrain_loss(m, mlm, nsp);
}

/* "NAME" or "NAME:LAYERSxHIDDENxHEADS" (the feed-forward is 4 x hidden, as BERT's). */
static int parse_size(const char *name, const char *base, struct encoder_size *e, struct dt_err *err)
{
    size_t len = strlen(base);
    if (name[len] == '\0')
        return 0;
    char extra;
    if (name[len] != ':' || sscanf(name + len + 1, "%dx%dx%d%c", &e->layers, &e->hidden, &e->heads, &extra) != 3 ||
        e->layers < 1 || e->layers > 128 || e->hidden < 1 || e->hidden > 16384 || e->heads < 1 ||
        e->hidden % e->heads != 0)
        return dt_fail(err, "model \"%s\": expected %s or %s:LAYERSxHIDDENxHEADS (hidden a multiple of heads), "
                       "e.g. %s:2x64x2", name, base, base, base);
    e->ffn = 4 * e->hidden;
    return 0;
}

int model_build_seq(struct model *m, const char *name, const struct seq_model_input *in, struct dt_err *err)
{
    static const struct {
        const char *name;
        struct encoder_size size;
        int positions;          /* 0: the sequence length */
    } models[] = {
        {"transformer", {6, 256, 4, 1024, 0}, 0},
        {"bert-base", {12, 768, 12, 3072, 0}, 512},
        {"bert-large", {24, 1024, 16, 4096, 0}, 512},
    };
    size_t i = 0;
    for (; i < sizeof models / sizeof models[0]; i++) {
        size_t len = strlen(models[i].name);
        if (strncmp(name, models[i].name, len) == 0 && (name[len] == '\0' || name[len] == ':'))
            break;
    }
    if (i == sizeof models / sizeof models[0])
        return dt_fail(err, "unknown language model \"%s\" (transformer, bert-base, bert-large; a size as "
                       "transformer:LAYERSxHIDDENxHEADS)", name);
    struct encoder_size e = models[i].size;
    if (parse_size(name, models[i].name, &e, err) < 0)
        return -1;
    if (!(in->dropout >= 0 && in->dropout < 1))
        return dt_fail(err, "dropout %g: expected a probability from 0 to below 1", in->dropout);
    e.dropout = in->dropout;
    int positions = models[i].positions ? models[i].positions : in->tokens;
    if (in->tokens > positions)
        return dt_fail(err, "model %s has %d positions, fewer than the %d tokens of a sequence", name, positions,
                       in->tokens);
    nn_begin(m, name, in->tokens, 1, SEQ_TOKEN_FIELDS, in->pretraining ? 2 : in->classes);
    build_encoder(m, &e, in->vocab, positions, in->pretraining);
    if (m->failed || nn_finish(m) < 0) {
        model_free(m);
        return dt_fail(err, "out of memory building %s", name);
    }
    return 0;
}

bool model_is_seq(const char *name)
{
    static const char *const names[] = {"transformer", "bert-base", "bert-large"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len = strlen(names[i]);
        if (strncmp(name, names[i], len) == 0 && (name[len] == '\0' || name[len] == ':'))
            return true;
    }
    return false;
}
