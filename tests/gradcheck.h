/* gradcheck.h - the tests' one gradient checker: an independent forward pass in double precision
 * over any model of nn.h (convolutions, pooling, batch norm and linear layers; embeddings, layer
 * norm, attention with its padding mask, dropout drawn as the kernels draw it, GELU, tanh; the
 * classification and masked-LM losses), and the central differences of its loss, held against
 * the float gradients model_backward computed. test_nn and test_seq both use it. */
#ifndef GRADCHECK_H
#define GRADCHECK_H

#include <stdint.h>

#include "trainer/nn/nn.h"

/* The model's loss in double precision for parameters p and inputs x (n samples), dropout drawn
 * from the batch's noise and position as model_forward draws it. */
double gradcheck_loss(const struct model *m, const double *p, const double *x, const int *labels, int n, uint64_t noise,
                      long position);

/* Every parameter's gradient against (L(p + h) - L(p - h)) / 2h of gradcheck_loss: returns the
 * worst relative difference |numeric - analytic| / max(|numeric|, 1e-3), printing each parameter
 * beyond tolerance; *forward_error gets the relative difference between float_loss (the float
 * forward pass's) and the double one's. */
double gradcheck_worst(const struct model *m, const float *params, const float *grads, const struct batch *b,
                       double float_loss, double h, double tolerance, double *forward_error);

#endif
