/* nn.h - a model as a list of ops over numbered tensors, with its parameters, gradients and
 * batch-norm statistics each in one flat float buffer (what data parallelism averages and
 * checkpoints save), and forward/backward passes over any backend.
 *
 * Tensor 0 is the input. Every op reads one tensor (two for a residual add) and writes a new one,
 * so the graph is also the order of the forward pass; backward walks it in reverse. */
#ifndef NN_H
#define NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "dt_error.h"

/* The kinds of layer; what each does is its entry in the op table (ops.h). */
enum op_kind {
    OP_LINEAR, OP_CONV, OP_BATCHNORM, OP_RELU, OP_MAXPOOL, OP_AVGPOOL, OP_ADD,
    OP_SOFTMAX_XENT,          /* the loss: mean softmax cross-entropy of the logits against the labels */
    /* the language models' (sequence tensors, below) */
    OP_EMBED,                 /* token + position + segment embeddings of a token batch */
    OP_LAYERNORM,             /* over each token's features */
    OP_DENSE,                 /* a linear layer applied to each token */
    OP_GELU, OP_TANH,
    OP_ATTENTION,             /* multi-head self-attention of [query, key, value] per token */
    OP_FIRST_TOKEN,           /* each sequence's first token ([CLS]) */
    OP_DROPOUT,               /* in training, each element zeroed with probability rate, the rest scaled */
    OP_TIED_DENSE,            /* a dense layer whose weights are another op's (the MLM decoder: the word table) */
    OP_PRETRAIN_LOSS,         /* BERT's pre-training loss: masked LM (in) plus next sentence (in2) */
    OP_KIND_COUNT
};

/* Per sample. A linear layer reads c*h*w features. A sequence tensor is c = T tokens of w = H
 * features (h = 1); the model's input is then a token batch, w = SEQ_TOKEN_FIELDS (backend.h). */
struct tensor_shape {
    int c, h, w;
};

/* What each kind needs beyond its tensors, one struct per kind. */
struct op_conv {
    int c_out, k, stride, pad;   /* square kernels */
    bool bias;
};
struct op_linear {
    int out_features;
};
struct op_pool {
    int k, stride, pad;
};
struct op_batchnorm {
    size_t running_mean, running_var;   /* offsets in buffers */
};
struct op_embed {
    int vocab, positions, segments;
    size_t pos, seg;          /* offsets of the position and segment tables (the word table is at w) */
};
struct op_attention {
    int heads;
    float dropout;             /* of the attention weights, training only (BERT's attention_probs_dropout_prob) */
};
struct op_dropout {
    float rate;
};
struct op_tied {
    size_t table;             /* offset of the weights [out][in] it shares (it owns only its bias, at w) */
    int out_features;
};

struct op {
    enum op_kind kind;
    int in, in2, out;         /* tensors; in2 only for kinds that read two (op_types[kind].inputs) */
    size_t w, b;              /* where the kind owns parameters: offsets of weights and bias (BN gamma, beta) */
    int slot;                 /* the workspace slot of what forward keeps for backward (saved_bytes); -1: none */
    union {                   /* by kind */
        struct op_conv conv;
        struct op_linear linear;
        struct op_pool pool;
        struct op_batchnorm bn;
        struct op_embed embed;
        struct op_attention attention;
        struct op_dropout dropout;
        struct op_tied tied;
    };
};

/* How a parameter range starts out. */
enum init_kind { INIT_UNIFORM, INIT_NORMAL, INIT_CONSTANT };
struct param_init {
    size_t offset, count;
    enum init_kind kind;
    float scale;              /* uniform: bound; normal: std; constant: value */
};

struct model {
    char name[32];
    int classes;
    struct tensor_shape *tensors;
    int num_tensors;
    struct op *ops;
    int num_ops;
    struct param_init *inits;
    int num_inits;
    size_t num_params;        /* trainable: weights, biases, BN gamma and beta */
    size_t num_buffers;       /* BN running mean and variance */
    int num_slots;
    int logits;               /* the tensor holding the class scores (the loss op's input) */
    int *readers;             /* per tensor: how many ops read it (filled by model_build) */
    int caps[3];              /* allocated lengths of tensors, ops, inits */
    bool failed;              /* out of memory while building */
};

/* Builds a model by name: mlp, lenet, cnn (the exact shapes the PyTorch peer uses), resnet18,
 * resnet34, resnet50, resnet101 (torchvision's blocks; inputs under 64x64 get a 3x3 stride-1 stem
 * and no max pool, larger ones the ImageNet stem). Returns 0, or -1 with err. */
int model_build(struct model *m, const char *name, int c, int h, int w, int classes, struct dt_err *err);
/* Builds a language model over token batches of `tokens` tokens with ids below `vocab`:
 * transformer (the seeds' SST-5 classifier: 6 layers, hidden 256, 4 heads), bert-base, bert-large,
 * or any of them with a size, "transformer:LAYERSxHIDDENxHEADS"; a classifier into `classes` over
 * the pooled [CLS] token, or BERT's pre-training heads; `dropout` after the embeddings and each
 * attention and feed-forward block (BERT's hidden dropout; 0: none). Returns 0, or -1 with err. */
struct seq_model_input {
    int tokens, vocab, classes;
    float dropout;
    bool pretraining;         /* BertForPreTraining's heads (masked LM tied to the word table, next
                                 sentence over [CLS]) instead of the classifier; classes is then 2 */
};
int model_build_seq(struct model *m, const char *name, const struct seq_model_input *in, struct dt_err *err);

/* Is `name` one of model_build_seq's? */
bool model_is_seq(const char *name);

void model_free(struct model *m);

/* Fills params with the initial values (PyTorch's defaults; torchvision's for ResNets) from a
 * seeded generator, and buffers with BN's initial running statistics. */
void model_init_params(const struct model *m, float *params, float *buffers, uint64_t seed);

/* Activations, their gradients and per-op scratch for batches of up to max_batch samples. */
struct workspace {
    int max_batch;
    const float *input;       /* the batch being processed (not owned) */
    float **act, **grad;      /* per tensor; act[0] and grad[0] unused */
    float **saved;            /* per slot: BN mean and invstd (2c floats), or maxpool argmax */
    float **cols;             /* per op: a convolution's im2col columns kept from forward to backward
                                 (NULL where they would not fit NN_COLS_BUDGET) */
    uint64_t noise;           /* the last forward's batch randomness: attention's dropout draws its */
    long position;            /* masks again in backward instead of keeping them */
};

/* Floats of im2col columns a workspace keeps between forward and backward: 64 Mi (256 MiB). Small
 * networks (LeNet, the CNN) fit whole; ResNets' large layers rebuild theirs. */
#define NN_COLS_BUDGET ((size_t)64 << 20)
/* One convolution's columns are kept only up to this size (the fast backend's chunk). */
#define NN_COLS_MAX_ONE ((size_t)8 << 20)

/* In the backend's memory (the GPU's for a device backend, which keeps no im2col columns). */
int workspace_create(struct workspace *ws, const struct model *m, const struct backend *be, int max_batch,
                     struct dt_err *err);
void workspace_free(struct workspace *ws, const struct model *m, const struct backend *be);

/* A batch as the model reads it: n samples of float features (n x the input tensor) and one label
 * (a class) per sample. Text models will add token ids and per-token labels here. */
struct batch {
    int n;
    const float *x;
    const int *labels;
    /* Dropout's randomness: a value drawn for the step (the same on every rank), and the place
     * of this batch's first sample among the step's samples of all ranks (rank x batch). A mask
     * is a function of both and of the sample's place, so 2 ranks x 8 samples drop exactly what
     * 1 rank x 16 drops. */
    uint64_t noise;
    long position;
};

/* Told before the forward pass of each op that owns parameters, params[first, first + count):
 * a layer-wise exchange (ByteScheduler) waits there until those hold this step's update. */
struct params_needed {
    void (*call)(void *ctx, size_t first, size_t count);   /* an error is ctx's to keep: forward goes on */
    void *ctx;
};

/* Forward pass over b->n <= max_batch samples, through the loss op. Returns the loss; *correct
 * (may be NULL) counts right answers. training: batch statistics (updating the running ones in
 * buffers), and the loss gradient kept for backward. need (may be NULL) is told before each op
 * with parameters. */
double model_forward(const struct model *m, const struct backend *be, struct workspace *ws, const float *params,
                     float *buffers, const struct batch *b, bool training, const struct params_needed *need,
                     int *correct);

/* Backward pass of the last training forward: ADDS the parameter gradients into grads (zero it
 * first). */
void model_backward(const struct model *m, const struct backend *be, struct workspace *ws, const float *params,
                    float *grads, int n);

/* Told during a backward pass that the gradients from parameter `first` to the end of the buffer
 * are final. Parameters lie in the order of the ops that own them, so backward completes them from
 * the end towards the start; WFBP sends each layer's piece while the layers before it still
 * compute. On a CPU backend "final" means computed; a GPU backend has only queued the work. */
struct grads_ready {
    void (*call)(void *ctx, size_t first);   /* an error is ctx's to keep: backward goes on */
    void *ctx;
};

/* model_backward, calling ready after every op that owns parameters. */
void model_backward_notify(const struct model *m, const struct backend *be, struct workspace *ws,
                           const float *params, float *grads, int n, const struct grads_ready *ready);

/* Whether each op's parameters lie after those of the ops before it, as grads_ready's "from
 * first to the end" needs (model_build lays them out so). */
bool model_params_in_op_order(const struct model *m);

/* The parameters of each op that owns some, in op order (the order they lie in the buffer):
 * first[k], count[k] for the k-th such op ("layer"). Either array may be NULL (to count them).
 * Returns the number of layers. */
int model_layer_spans(const struct model *m, size_t *first, size_t *count);

/* The kind of each layer ("conv", "linear", "batchnorm"), in the same order. Returns their number. */
int model_layer_kinds(const struct model *m, const char **kinds);

/* Floating-point operations of one training step per sample: each convolution and linear layer
 * counts 2 x multiply-adds forward, the same for the weight gradient and for the input gradient
 * (none for the model's input). Elementwise layers are left out: this is the arithmetic a GEMM
 * or convolution kernel must do, the figure to set against the machine's SGEMM peak. */
double model_train_flops(const struct model *m);

/* Elements one sample of tensor t holds. */
size_t tensor_size(const struct model *m, int t);

#endif
