/* backend.h - the kernels a model runs on, as a table a backend fills in.
 *
 * Tensors are float32, NCHW, contiguous. Weights are laid out as PyTorch's: linear [out][in],
 * conv [c_out][c_in][kh][kw]. Backward kernels ADD into the weight gradients (dw, db; the caller
 * zeroes them once per step). The input gradient dx is added to when `accumulate` is true (a
 * tensor read by two ops, such as a residual block's input, gets both contributions) and
 * overwritten when false, which spares zeroing the gradient of every tensor read by one op only.
 * dx may be NULL where the input needs no gradient (the model's input): the first layer then
 * skips that work.
 *
 * backend_ref.c is the specification: plain loops, double accumulators where it matters. The fast
 * CPU backend (backend_cpu.c) replaces the GEMM-shaped kernels and keeps the rest. */
#ifndef BACKEND_H
#define BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conv_shape {
    int n, c, h, w;          /* input */
    int c_out, kh, kw;
    int stride, pad;
    int h_out, w_out;
    /* y's one reader is a batch norm's input (the model knows): a bf16 backend, whose convolutions
     * compute y in bf16, may keep it in its bf16 copy alone, for the batch norm to read, and leave
     * the fp32 tensor unwritten. */
    bool y_for_batchnorm;
    /* x is a batch norm's output and this convolution its one reader: dx's one reader is that batch
     * norm's backward, and a bf16 backend may likewise keep dx in bf16 alone. */
    bool dx_for_batchnorm;
    /* Optional, for backends that lower convolutions to GEMM: a buffer of c*kh*kw x n*h_out*w_out
     * floats where forward leaves its im2col columns and backward reuses them; NULL: rebuilt. */
    float *cols;
};

/* Elements of the im2col matrix of a convolution over n images. */
static inline size_t conv_cols_size(const struct conv_shape *s)
{
    return (size_t)s->c * s->kh * s->kw * s->n * s->h_out * s->w_out;
}

/* Output size of a convolution or pooling window along one axis. */
static inline int conv_out_size(int in, int k, int stride, int pad)
{
    return (in + 2 * pad - k) / stride + 1;
}

/* What a dropout draws from: the rate, the step's noise (mixed with the op's place) and the batch's
 * first sample's position, so a sample's draws are its own wherever it is computed. */
struct seq_draw {
    float rate;                /* 0: keep everything (evaluation) */
    uint64_t noise;
    long position;
};

/* One batch norm over (n, h, w) for each of c channels, with what a ResNet fuses after it:
 * y = max(0, batch norm(x) + residual), the sum where residual is given, the max where relu. One
 * pass over the activations where conv-BN-add-ReLU as separate ops took three more each way. */
struct bn_call {
    int n, c, hw;
    const float *x, *gamma, *beta;
    float *running_mean, *running_var;   /* training forward updates them, eval reads them */
    float *save_mean, *save_invstd;      /* the batch's: training forward writes them, backward reads */
    float *y;
    const float *residual;               /* NULL: none */
    bool relu;
    /* y's readers are convolutions' and poolings' inputs and batch norms' residuals (and this
     * batch norm's backward, for the ReLU's mask), each of which a bf16 backend can read in bf16: it
     * may write y's bf16 copy alone, the fp32 tensor unwritten (conv_shape's y_for_batchnorm the
     * other way) */
    bool y_for_bf16_readers;
};

struct backend {
    const char *name;
    void *state;             /* backend-private: scratch buffers, thread counts */
    /* Every pointer the kernels take is the GPU's memory (backend_cuda.h allocates and copies it);
     * false: host memory, as malloc gives. */
    bool device_memory;
    /* Images are [n][h][w][c] (NHWC, PyTorch's channels_last) in the kernels that see their layout:
     * convolutions (x, y and their gradients; the weights and their gradients stay [c_out][c_in][kh]
     * [kw]), batch norm, both poolings (global average pooling's output [n][c] either way). The
     * model's input comes NCHW (the loader's), and to_channels_last makes the first layer's copy;
     * a model that flattens an image into a linear layer cannot run so (its features would come
     * in another order). Set by the CUDA backend on request (--channels-last); false elsewhere. */
    bool channels_last;
    /* Where tensors live: NULL means malloc, free and memset (the CPU backends). */
    void *(*alloc)(void *state, size_t bytes);
    void (*release)(void *state, void *p);
    void (*zero)(void *state, void *p, size_t bytes);

    /* y[n][out] = x[n][in] . w[out][in]^T + b */
    void (*linear_forward)(void *state, const float *x, const float *w, const float *b, float *y, int n, int in, int out);
    void (*linear_backward)(void *state, const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                            int n, int in, int out, bool accumulate);

    /* b may be NULL (ResNet convolutions have none); then db is NULL too. */
    void (*conv_forward)(void *state, const struct conv_shape *s, const float *x, const float *w, const float *b, float *y);
    void (*conv_backward)(void *state, const struct conv_shape *s, const float *x, const float *w, const float *dy,
                          float *dx, float *dw, float *db, bool accumulate);

    /* Batch norm (struct bn_call). Training: batch statistics, saved in save_mean/save_invstd for
     * backward, and running statistics updated with `momentum` (unbiased variance, as PyTorch).
     * Eval: running statistics. */
    void (*batchnorm_forward)(void *state, const struct bn_call *bn, bool training, float momentum, float eps);
    /* dy is y's gradient; where bn->relu, y's zeros mask it (a backend may instead recompute that
     * mask from x with forward's own arithmetic when there is no residual: one tensor less to read).
     * dx, gamma's and beta's gradients (the last two added to); dresidual (NULL without a residual)
     * gets the residual's, added to where accumulate_residual. */
    void (*batchnorm_backward)(void *state, const struct bn_call *bn, const float *dy, float *dx, float *dgamma,
                               float *dbeta, float *dresidual, bool accumulate, bool accumulate_residual);

    void (*relu_forward)(void *state, const float *x, float *y, size_t count);
    void (*relu_backward)(void *state, const float *y, const float *dy, float *dx, size_t count, bool accumulate);

    /* Max pooling k x k with stride and no padding; argmax remembers the winner per output. */
    void (*maxpool_forward)(void *state, const float *x, float *y, int *argmax, int n, int c, int h, int w, int k,
                            int stride, int pad);
    void (*maxpool_backward)(void *state, const int *argmax, const float *dy, float *dx, int n, int c, int h, int w,
                             int h_out, int w_out, int k, int stride, int pad, bool accumulate);

    /* [n][c][hw] -> [n][hw][c] (channels_last backends only; NULL elsewhere). */
    void (*to_channels_last)(void *state, const float *x, float *y, int n, int c, int hw);

    /* Global average pooling: [n][c][hw] -> [n][c]. */
    void (*avgpool_forward)(void *state, const float *x, float *y, int n, int c, int hw);
    void (*avgpool_backward)(void *state, const float *dy, float *dx, int n, int c, int hw, bool accumulate);

    /* y = a + b (residual); backward ADDS dy to both (always accumulating). */
    void (*add_forward)(void *state, const float *a, const float *b, float *y, size_t count);
    void (*add_backward)(void *state, const float *dy, float *da, float *db, size_t count);

    /* Mean softmax cross-entropy over n rows of `classes` logits; writes dlogits (already divided
     * by n) and returns the loss; *correct counts rows whose argmax is the label. */
    double (*softmax_xent)(void *state, const float *logits, const int *labels, float *dlogits, int n, int classes,
                           int *correct);

    /* The language models' layers (seq_kernels.c has the reference and the conventions: sequence
     * tensors [n][T][H], token batches [n][T][SEQ_TOKEN_FIELDS]). A backend without them (NULL)
     * cannot run those models; the model's set-up says so. Embedding and layer-norm backward ADD
     * into their parameter gradients, as every backward does. */
    void (*embedding_forward)(void *state, const float *tokens, const float *word, const float *pos, const float *seg,
                              float *y, int n, int T, int H);
    void (*embedding_backward)(void *state, const float *tokens, const float *dy, float *dword, float *dpos,
                               float *dseg, int n, int T, int H);
    void (*layernorm_forward)(void *state, const float *x, const float *gamma, const float *beta, float *save_mean,
                              float *save_invstd, float *y, int rows, int H, float eps);
    void (*layernorm_backward)(void *state, const float *x, const float *gamma, const float *save_mean,
                               const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta,
                               int rows, int H, bool accumulate);
    void (*gelu_forward)(void *state, const float *x, float *y, size_t count);
    void (*gelu_backward)(void *state, const float *x, const float *dy, float *dx, size_t count, bool accumulate);
    void (*tanh_forward)(void *state, const float *x, float *y, size_t count);
    void (*tanh_backward)(void *state, const float *y, const float *dy, float *dx, size_t count, bool accumulate);
    /* qkv [n][T][3H] (each token's query, key, value); probs [n][heads][T][T] kept for backward
     * (the softmax before dropout). drop: BERT's dropout of the attention weights, weight (h, q, k)
     * of sample i kept where seq_kept(noise, position + i, (h T + q) T + k, rate); backward draws
     * the same again, so nothing more is kept. */
    void (*attention_forward)(void *state, const float *qkv, const float *tokens, float *probs, float *y, int n, int T,
                              int H, int heads, const struct seq_draw *drop);
    void (*attention_backward)(void *state, const float *qkv, const float *probs, const float *dy, float *dqkv, int n,
                               int T, int H, int heads, const struct seq_draw *drop, bool accumulate);
    void (*first_token_forward)(void *state, const float *x, float *y, int n, int T, int H);
    void (*first_token_backward)(void *state, const float *dy, float *dx, int n, int T, int H, bool accumulate);
    /* Keeps each of n x per_sample elements with probability 1 - rate, scaled by 1 / (1 - rate);
     * mask records which (1 byte each). Element e of sample i is kept where seq_kept(noise,
     * position + i, e, rate): the same wherever the sample is computed. rate 0: y = x, mask all kept. */
    void (*dropout_forward)(void *state, const float *x, float *y, uint8_t *mask, int n, size_t per_sample,
                            float rate, uint64_t noise, long position);
    void (*dropout_backward)(void *state, const uint8_t *mask, const float *dy, float *dx, size_t count, float rate,
                             bool accumulate);
    /* Masked LM: mean softmax cross-entropy of the rows (tokens) whose label in the token batch is
     * not SEQ_NO_LABEL, over `classes` (the vocabulary); dlogits (may be NULL) gets its gradient,
     * zero on the other rows. *counted says how many rows had a label. */
    double (*token_xent)(void *state, const float *logits, const float *tokens, float *dlogits, int rows, int classes,
                         int *counted);
};


/* Where seq_noise runs: the host, and in CUDA files the GPU too (one definition, so the GPU drops
 * what the CPU drops). */
#ifdef __CUDACC__
#define SEQ_NOISE_WHERE __host__ __device__
#else
#define SEQ_NOISE_WHERE
#endif

/* A uniform number in [0, 1) for element `element` of sample `sample` under `noise` (splitmix64 of
 * the three: counter-based, so any backend, any order and any rank draws the same). */
static inline SEQ_NOISE_WHERE float seq_noise(uint64_t noise, long sample, size_t element)
{
    uint64_t z = noise ^ ((uint64_t)sample * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)element * 0xbf58476d1ce4e5b9ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f);
}

/* Dropout's one rule, wherever it is applied: element `element` of sample `sample` is kept (and
 * scaled by 1 / (1 - rate)) when its draw is at least rate. */
static inline SEQ_NOISE_WHERE bool seq_kept(uint64_t noise, long sample, size_t element, float rate)
{
    return seq_noise(noise, sample, element) >= rate;
}

/* A token batch: per token its id, its segment and its masked-LM label (the id to predict there,
 * or SEQ_NO_LABEL), as floats (exact for ids below 2^24). */
#define SEQ_TOKEN_FIELDS 3
#define SEQ_NO_LABEL (-1)
/* The padding id ([PAD] in BERT's vocabulary and in the vocabularies dtrain builds). */
#define SEQ_PAD_ID 0

/* The memory a backend's kernels read and write (malloc, free, memset for CPU backends). */
void *backend_alloc(const struct backend *be, size_t bytes);
void backend_release(const struct backend *be, void *p);
void backend_zero(const struct backend *be, void *p, size_t bytes);

/* The reference backend: plain C, one thread. */
const struct backend *backend_reference(void);

/* The fast CPU backend (OpenBLAS GEMM, im2col) with `threads` threads; NULL with err on failure. */
struct backend *backend_cpu_create(int threads);
void backend_cpu_destroy(struct backend *backend);

/* How the fast CPU backend computes convolutions: by shape (the default), or always im2col + GEMM,
 * directly (wherever the stride is 1), or with oneDNN. The last three are for tests and
 * bench/conv_layers. */
enum cpu_conv_mode { CPU_CONV_AUTO, CPU_CONV_GEMM, CPU_CONV_DIRECT, CPU_CONV_DNNL };
void backend_cpu_set_conv_mode(struct backend *backend, enum cpu_conv_mode mode);

/* Did the fast CPU backend fail to allocate scratch memory since it was created? */
bool backend_cpu_failed(const struct backend *backend);

#endif
