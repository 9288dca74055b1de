/* compute.h - what computes a step's two passes: the model on its backend, or (--emulate) an
 * emulated device whose layers wait a profile's times. Chosen once when the run is set up; the
 * step then calls compute_forward and compute_backward the same either way, and the exchange's
 * hooks see each layer, timed by the run's trace, from both. */
#ifndef COMPUTE_H
#define COMPUTE_H

#include "trainer/nn/nn.h"

struct run;

struct compute {
    const char *name;
    /* the forward pass over b, need told before each layer; returns the loss */
    double (*forward)(struct run *r, const struct batch *b, const struct params_needed *need);
    /* the backward pass of a batch of n, ready told as each layer's gradients are final */
    void (*backward)(struct run *r, int n, const struct grads_ready *ready);
};

/* The model computing on the run's backend, and the emulated device of --emulate. */
extern const struct compute compute_model, compute_emulated;

/* A step's forward pass (the test-only slow-rank fault first): the loss, or 0 where nothing is
 * computed (emulated, or a CUDA graph being recorded). */
double compute_forward(struct run *r, const struct batch *b);

/* A step's backward pass: the gradients zeroed, then computed, each layer's handed to the
 * exchange as it is final. */
void compute_backward(struct run *r, int n);

#endif
