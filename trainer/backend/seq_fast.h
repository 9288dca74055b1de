/* seq_fast.h - the fast CPU backend's language-model kernels (seq_fast.c); backend.h has their
 * conventions, seq_kernels.c their reference. */
#ifndef SEQ_FAST_H
#define SEQ_FAST_H

#include <stdbool.h>
#include <stddef.h>

struct seq_draw;
void fast_attention_forward(void *state, const float *qkv, const float *tokens, float *probs, float *y, int n, int T,
                            int H, int heads, const struct seq_draw *drop);
void fast_attention_backward(void *state, const float *qkv, const float *probs, const float *dy, float *dqkv, int n,
                             int T, int H, int heads, const struct seq_draw *drop, bool accumulate);
void fast_layernorm_forward(void *state, const float *x, const float *gamma, const float *beta, float *save_mean,
                            float *save_invstd, float *y, int rows, int H, float eps);
void fast_layernorm_backward(void *state, const float *x, const float *gamma, const float *save_mean,
                             const float *save_invstd, const float *dy, float *dx, float *dgamma, float *dbeta, int rows,
                             int H, bool accumulate);
void fast_gelu_forward(void *state, const float *x, float *y, size_t count);
void fast_gelu_backward(void *state, const float *x, const float *dy, float *dx, size_t count, bool accumulate);

#endif
