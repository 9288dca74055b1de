/* kernels.h - the plain-C kernels every CPU backend shares (defined in backend_ref.c): the ones
 * that are memory-bound and gain nothing from BLAS. */
#ifndef KERNELS_H
#define KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct seq_draw;   /* backend.h */
struct bn_call;

void cpu_batchnorm_forward(void *state, const struct bn_call *bn, bool training, float momentum, float eps);
void cpu_batchnorm_backward(void *state, const struct bn_call *bn, const float *dy, float *dx, float *dgamma,
                            float *dbeta, float *dresidual, bool accumulate, bool accumulate_residual);
void cpu_relu_forward(void *state, const float *restrict x, float *restrict y, size_t count);
void cpu_relu_backward(void *state, const float *restrict y, const float *restrict dy, float *restrict dx, size_t count,
                       bool accumulate);
void cpu_maxpool_forward(void *state, const float *x, float *y, int *argmax, int n, int c, int h, int w, int k,
                         int stride, int pad);
void cpu_maxpool_backward(void *state, const int *argmax, const float *dy, float *dx, int n, int c, int h, int w,
                          int h_out, int w_out, int k, int stride, int pad, bool accumulate);
void cpu_avgpool_forward(void *state, const float *x, float *y, int n, int c, int hw);
void cpu_avgpool_backward(void *state, const float *dy, float *dx, int n, int c, int hw, bool accumulate);
void cpu_add_forward(void *state, const float *restrict a, const float *restrict b, float *restrict y, size_t count);
void cpu_add_backward(void *state, const float *restrict dy, float *restrict da, float *restrict db, size_t count);
/* One row of softmax cross-entropy over `classes` logits z: returns its loss; dz (NULL: none)
 * gets (softmax - one-hot) / divisor; *best (NULL: not wanted) the argmax (the first of ties).
 * The classifier's loss and the masked LM's share it. */
double xent_row(const float *z, int label, int classes, float *dz, int divisor, int *best);
double cpu_softmax_xent(void *state, const float *logits, const int *labels, float *dlogits, int n, int classes,
                        int *correct);

/* seq_kernels.c: the language models' layers (backend.h). */
void seq_embedding_forward(void *state, const float *tokens, const float *word, const float *pos, const float *seg,
                           float *y, int n, int T, int H);
void seq_embedding_backward(void *state, const float *tokens, const float *dy, float *dword, float *dpos, float *dseg,
                            int n, int T, int H);
void seq_layernorm_forward(void *state, const float *x, const float *gamma, const float *beta, float *save_mean,
                           float *save_invstd, float *y, int rows, int H, float eps);
void seq_layernorm_backward(void *state, const float *x, const float *gamma, const float *save_mean,
                            const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta, int rows,
                            int H, bool accumulate);
void seq_gelu_forward(void *state, const float *x, float *y, size_t count);
void seq_gelu_backward(void *state, const float *x, const float *dy, float *dx, size_t count, bool accumulate);
void seq_tanh_forward(void *state, const float *x, float *y, size_t count);
void seq_tanh_backward(void *state, const float *y, const float *dy, float *dx, size_t count, bool accumulate);
void seq_attention_forward(void *state, const float *qkv, const float *tokens, float *probs, float *y, int n, int T,
                           int H, int heads, const struct seq_draw *drop);
void seq_attention_backward(void *state, const float *qkv, const float *probs, const float *dy, float *dqkv, int n,
                            int T, int H, int heads, const struct seq_draw *drop, bool accumulate);
void seq_dropout_forward(void *state, const float *x, float *y, uint8_t *mask, int n, size_t per_sample, float rate,
                         uint64_t noise, long position);
void seq_dropout_backward(void *state, const uint8_t *mask, const float *dy, float *dx, size_t count, float rate,
                          bool accumulate);
double seq_token_xent(void *state, const float *logits, const float *tokens, float *dlogits, int rows, int classes,
                      int *counted);
void seq_first_token_forward(void *state, const float *x, float *y, int n, int T, int H);
void seq_first_token_backward(void *state, const float *dy, float *dx, int n, int T, int H, bool accumulate);

#endif
