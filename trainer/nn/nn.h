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

#include "trainer/backend/backend.h"
#include "common/dt_error.h"
#include "trainer/nn/model.h"

/* Builds a model by name: mlp, lenet, cnn (the exact shapes the PyTorch peer uses), resnet18,
 * resnet34, resnet50, resnet101 (torchvision's blocks; inputs under 64x64 get a 3x3 stride-1 stem
 * and no max pool, larger ones the ImageNet stem). Returns 0, or -1 with err. */
int model_build(struct model *m, const char *name, int c, int h, int w, int classes, struct dt_err *err);
/* Builds a language model over token batches of `tokens` tokens with ids below `vocab`:
 * transformer (the reference SST-5 classifier: 6 layers, hidden 256, 4 heads), bert-base, bert-large,
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


/* In the backend's memory (the GPU's for a device backend, which keeps no im2col columns). */
int workspace_create(struct workspace *ws, const struct model *m, const struct backend *be, int max_batch,
                     struct dt_err *err);
void workspace_free(struct workspace *ws, const struct model *m, const struct backend *be);


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


#endif
