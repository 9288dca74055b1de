/* model.h - what a model is made of, as data: ops over numbered tensors, their parameters'
 * places in one flat buffer, and the workspace and batch a pass runs over. nn.h builds and runs
 * models; ops.h defines each kind of op; both read these types.
 *
 * Tensor 0 is the input. Every op reads one tensor (two for a residual add) and writes a new one,
 * so the graph is also the order of the forward pass; backward walks it in reverse. */
#ifndef MODEL_H
#define MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The kinds of layer; what each does is its entry in the op table (ops.h). */
enum op_kind {
    OP_LINEAR, OP_CONV, OP_BATCHNORM, OP_RELU, OP_MAXPOOL, OP_AVGPOOL, OP_ADD,
    OP_BATCHNORM_ADD_RELU,    /* max(0, batch norm(in) + in2): a ResNet block's end in one op */
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
    bool into_batchnorm;         /* its output's one reader is a batch norm's input (nn_finish) */
    bool dx_for_batchnorm;       /* its input is a batch norm's output, read by it alone (nn_finish) */
};
struct op_linear {
    int out_features;
};
struct op_pool {
    int k, stride, pad;
};
struct op_batchnorm {
    size_t running_mean, running_var;   /* offsets in buffers */
    bool relu;                          /* ReLU fused in: the output is max(0, batch norm [+ in2]) */
    bool y_for_bf16_readers;            /* its output's readers all take bf16 (nn_finish's mark_bf16_outputs) */
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

/* The floats of tensor t (one sample's). */
static inline size_t tensor_size(const struct model *m, int t)
{
    return (size_t)m->tensors[t].c * m->tensors[t].h * m->tensors[t].w;
}

/* Activations, their gradients and per-op scratch for batches of up to max_batch samples. */
struct workspace {
    int max_batch;
    const float *input;       /* the batch being processed (not owned; input_nhwc when there is one) */
    float *input_nhwc;        /* a channels-last backend's copy of an image batch (backend.h) */
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

#endif
