/* trace.h - what --timeline records of a training step: the step, forward and backward and each
 * layer's share of them (a "layer" is an op with parameters and the ops after it up to the next,
 * timed between the passes' per-layer hooks), the wait for the gradient exchange, the update. The
 * exchange methods add their transfers on the exchange lane. */
#ifndef TRACE_H
#define TRACE_H

#include "nn.h"
#include "timeline.h"

struct step_trace {
    struct timeline *timeline; /* NULL: nothing is recorded and the hooks pass straight through */
    int layers;
    char (*names)[32];         /* "conv 3" per layer */
    /* during a pass */
    const struct params_needed *need;   /* the exchange's hooks the trace's wrap */
    struct grads_ready ready;
    struct params_needed need_hook;
    struct grads_ready ready_hook;
    int layer;                 /* the layer being timed; -1: none yet */
    double mark;               /* when it began */
};

/* For model m into t (NULL: off). 0, or -1 when out of memory. */
int trace_init(struct step_trace *s, const struct model *m, struct timeline *t);
void trace_free(struct step_trace *s);

/* The forward pass's hook: need (may be NULL) wrapped so that each layer is timed. */
const struct params_needed *trace_forward(struct step_trace *s, const struct params_needed *need);
/* The end of the forward pass (the last layer's span ends). */
void trace_forward_done(struct step_trace *s);
/* The backward pass's hook, ready wrapped likewise. */
struct grads_ready trace_backward(struct step_trace *s, struct grads_ready ready);

#endif
