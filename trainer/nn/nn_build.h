/* nn_build.h - appending ops to a model (nn.c); used by the model zoo (models.c) and tests. Each
 * call returns the new op's output tensor. */
#ifndef NN_BUILD_H
#define NN_BUILD_H

#include <stdbool.h>

#include "trainer/nn/nn.h"

enum nn_conv_init {
    NN_INIT_PYTORCH_DEFAULT,   /* uniform(+-1/sqrt(fan_in)), as nn.Conv2d */
    NN_INIT_KAIMING_FAN_OUT,   /* normal(0, sqrt(2/fan_out)), as torchvision's ResNets */
};

void nn_begin(struct model *m, const char *name, int c, int h, int w, int classes);
int nn_conv(struct model *m, int in, int c_out, int k, int stride, int pad, bool bias, enum nn_conv_init init);
int nn_batchnorm(struct model *m, int in);
/* nn_relu(m, nn_batchnorm(m, in)) as one op: the same numbers, one pass over the activations
 * fewer each way, and no tensor between them. */
int nn_batchnorm_relu(struct model *m, int in);
/* nn_relu(m, nn_add(m, nn_batchnorm(m, in), residual)) as one op: a ResNet block's end. */
int nn_batchnorm_add_relu(struct model *m, int in, int residual);
int nn_relu(struct model *m, int in);
int nn_maxpool(struct model *m, int in, int k, int stride, int pad);
int nn_avgpool(struct model *m, int in);
int nn_linear(struct model *m, int in, int out_features);
int nn_add(struct model *m, int a, int b);
/* The language models' layers (sequence tensors: c tokens of w features). Weights start as BERT's
 * (normal, std 0.02; biases 0; layer norm 1 and 0). */
int nn_embed(struct model *m, int tokens, int vocab, int positions, int segments, int hidden);
int nn_layernorm(struct model *m, int in);
int nn_dense(struct model *m, int in, int out_features);
int nn_gelu(struct model *m, int in);
int nn_tanh(struct model *m, int in);
/* Self-attention over a tensor of [query, key, value] (3H features a token); reads the model's
 * input for the padding mask; dropout: of the attention weights, in training (0: none). */
int nn_attention(struct model *m, int qkv, int heads, float dropout);
int nn_first_token(struct model *m, int in);
/* Training only; rate 0 returns `in` itself (no op). */
int nn_dropout(struct model *m, int in, float rate);
/* A dense layer over each token with the weights [out][in] at `table` (another op's: BERT's MLM
 * decoder shares the word embeddings) and a bias of its own. */
int nn_tied_dense(struct model *m, int in, size_t table, int out_features);
/* BERT's pre-training loss: masked-LM logits [T][vocab] (labels in the token batch) and
 * next-sentence logits [2] (the batch's labels); ends the graph. */
int nn_pretrain_loss(struct model *m, int mlm_logits, int nsp_logits);

/* The loss over the class scores in tensor logits (sets m->logits); every model ends with one. */
int nn_softmax_xent(struct model *m, int logits);

/* Ends building: counts each tensor's readers. Returns 0, or -1 when out of memory or when the
 * graph does not end in a loss op. */
int nn_finish(struct model *m);

#endif
