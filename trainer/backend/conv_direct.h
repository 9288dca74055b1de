/* conv_direct.h - stride-1 convolutions without im2col, for small layers (conv_direct.c). */
#ifndef CONV_DIRECT_H
#define CONV_DIRECT_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/backend/backend.h"

/* Whether the direct method is the faster one for this shape (chosen by bench/conv_layers). */
bool conv_direct_suits(const struct conv_shape *s);

/* Floats of scratch the two functions below need. */
size_t conv_direct_scratch(const struct conv_shape *s);

/* As backend.h's conv_forward/conv_backward, for stride 1 only. */
void conv_direct_forward(const struct conv_shape *s, const float *x, const float *w, const float *b, float *y,
                         float *scratch);
void conv_direct_backward(const struct conv_shape *s, const float *x, const float *w, const float *dy, float *dx,
                          float *dw, float *db, float *scratch, bool accumulate);

#endif
