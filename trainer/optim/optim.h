/* optim.h - optimizers over the flat parameter buffer, with PyTorch's update rules (torch.optim.SGD
 * and torch.optim.Adam), so runs compare with the PyTorch peer step for step. */
#ifndef OPTIM_H
#define OPTIM_H

#include <stddef.h>

#include "common/dt_error.h"

enum optim_kind { OPTIM_SGD, OPTIM_ADAM };

struct optimizer {
    enum optim_kind kind;
    float lr, momentum, weight_decay;   /* momentum: SGD only */
    float beta1, beta2, eps;            /* Adam only */
    long step;                          /* steps taken: Adam's bias correction */
    size_t count;
    float *m, *v;                       /* SGD: m = momentum buffer; Adam: first and second moments */
};

/* "sgd" or "adam"; lr and friends are set by the caller afterwards. Returns 0 or -1 with err. */
int optim_create(struct optimizer *opt, const char *name, size_t count, struct dt_err *err);
void optim_free(struct optimizer *opt);

/* One update of params from grads: optim_begin_step, then optim_update_range over all of them. */
void optim_step(struct optimizer *opt, float *params, const float *grads);

/* A step's two halves, for methods that update layer by layer (ByteScheduler) and for a device
 * that runs the arithmetic itself: count the step once (Adam's bias correction, SGD's first step),
 * then update any ranges of the buffer, each once, in any order. */
void optim_begin_step(struct optimizer *opt);
void optim_update_range(struct optimizer *opt, float *params, const float *grads, size_t first, size_t count);

/* Adam's per-step constants after opt->step was counted: lr / (1 - beta1^step) and
 * sqrt(1 - beta2^step) (a GPU update computes with the same two numbers). */
void optim_adam_scalars(const struct optimizer *opt, float *step_size, float *root2);

#endif
