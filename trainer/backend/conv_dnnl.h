/* conv_dnnl.h - convolutions through oneDNN's JIT kernels (conv_dnnl.c). */
#ifndef CONV_DNNL_H
#define CONV_DNNL_H

#include <stdbool.h>

#include "trainer/backend/backend.h"

struct conv_dnnl;

/* NULL when oneDNN cannot start. */
struct conv_dnnl *conv_dnnl_create(void);
void conv_dnnl_destroy(struct conv_dnnl *cd);

/* As backend.h's conv_forward and conv_backward (backward ADDS into dw and db, and into dx when
 * accumulate). Return 0, or -1 when oneDNN refused the shape or ran out of memory (then nothing
 * was written). */
int conv_dnnl_forward(struct conv_dnnl *cd, const struct conv_shape *s, const float *x, const float *w,
                      const float *b, float *y);
int conv_dnnl_backward(struct conv_dnnl *cd, const struct conv_shape *s, const float *x, const float *w,
                       const float *dy, float *dx, float *dw, float *db, bool accumulate);

#endif
