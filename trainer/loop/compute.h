/* compute.h - what computes a step: the model on the CPU backends, the model on a GPU (its state
 * in device memory, device.c), or (--emulate) an emulated device whose layers wait a profile's
 * times. Chosen once when the run is set up; the step then calls compute_forward,
 * compute_backward, compute_check and the update the same on each, and the exchange's hooks see
 * each layer, timed by the run's trace, from all three. */
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
    /* 0, or -1 with err where the device failed since the last check */
    int (*check)(const struct run *r, struct dt_err *err);
    /* the optimizer's step begins (counted: already counted, a captured step's update) */
    void (*begin_update)(struct run *r, bool counted);
    /* params[first, first + count) updated from their gradients */
    void (*update)(struct run *r, size_t first, size_t count);
};

/* The model on the CPU backends, on a GPU, and the emulated device of --emulate. */
extern const struct compute compute_host, compute_gpu, compute_emulated;

/* A step's forward pass (the test-only slow-rank fault first): the loss, or 0 where nothing is
 * computed (emulated, or a CUDA graph being recorded). */
double compute_forward(struct run *r, const struct batch *b);

/* A step's backward pass: the gradients zeroed, then computed, each layer's handed to the
 * exchange as it is final. */
void compute_backward(struct run *r, int n);

/* Whether the device failed: 0, or -1 with err. */
int compute_check(const struct run *r, struct dt_err *err);

/* The update: its step begun once (counted: a captured step's, counted when it was launched),
 * then params[first, first + count) updated, all at once or a layer at a time. */
void compute_begin_update(struct run *r, bool counted);
void compute_update(struct run *r, size_t first, size_t count);

#endif
