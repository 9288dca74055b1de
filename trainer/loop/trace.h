/* trace.h - what --timeline records of a training step: the step, forward and backward and each
 * layer's share of them (a "layer" is an op with parameters and the ops after it up to the next,
 * timed between the passes' per-layer hooks, the exchange's own waits there left out), the wait
 * for the gradient exchange, the update. The exchange methods add their transfers on the exchange
 * lane. --profile-out sums the same layer times into a profile (profile.h). */
#ifndef TRACE_H
#define TRACE_H

#include <stdbool.h>

#include "trainer/nn/nn.h"
#include "formats/profile.h"
#include "trainer/base/timeline.h"

struct step_trace {
    struct timeline *timeline; /* NULL: no spans are written */
    struct profile *profile;   /* not NULL: layer times are summed into it while counting */
    bool counting;             /* this step counts towards the profile */
    void (*settle)(void *ctx); /* profiling a GPU: waits for the queued work before each mark */
    void *settle_ctx;
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

/* For model m into t (NULL: no spans) and profile (NULL: none; its layers are m's). With neither,
 * the hooks pass straight through. 0, or -1 when out of memory. */
int trace_init(struct step_trace *s, const struct model *m, struct timeline *t, struct profile *profile);
void trace_free(struct step_trace *s);

/* Steps measured before a profile counts them: plans, caches and JIT compilation settle first. */
#define PROFILE_WARMUP_STEPS 2

/* timeline_now(), once the queued work is done when profiling a GPU. */
double trace_now_settled(struct step_trace *s);

/* The forward pass's hook: need (may be NULL) wrapped so that each layer is timed. */
const struct params_needed *trace_forward(struct step_trace *s, const struct params_needed *need);
/* The end of the forward pass (the last layer's span ends). */
void trace_forward_done(struct step_trace *s);
/* The backward pass's hook, ready wrapped likewise. */
struct grads_ready trace_backward(struct step_trace *s, struct grads_ready ready);

#endif
