/* emulate.h - emulated compute (dtrain-train --emulate PROFILE): the model's shapes, data, gradient
 * buffers, exchange and optimizer bookkeeping are real, but each layer's forward and backward pass
 * and the update take the time the profile gives (a timed wait that uses no CPU) instead of
 * computing, so many ranks can share few cores and the links between them are what is measured.
 * --emulate-rate R scales the profile so that one device trains R samples/s; --dilate K makes
 * every wait K times longer (the links are then to be shaped K times slower), and the run reports
 * its times divided by K: the machine's own copies and sums shrink beside the emulated work. */
#ifndef EMULATE_H
#define EMULATE_H

#include "common/dt_error.h"
#include "trainer/nn/nn.h"
#include "formats/profile.h"

/* What one device's step may take: a hand-edited profile or rate outside these (a layer of 1e300 s,
 * a denormal compute scaled to a rate) would overflow the waits and make a run "complete" at once. */
#define EMULATE_MIN_STEP_SECONDS 1e-6
#define EMULATE_MAX_STEP_SECONDS 3600.0

struct emulation {
    struct profile profile;
    double scale;              /* profile seconds -> wall seconds: rate scaling x batch ratio x dilation */
    double dilate;             /* K */
    size_t *first;             /* each layer's first parameter */
    size_t params;             /* all of them (an update's share of the profile's update time) */
    double target;             /* when the work under way ends (timeline_now's clock) */
};

/* Reads the profile at path for model m (its layers must be the profile's), trained at batch
 * samples per step: times scale with batch / the profile's batch, then to rate samples/s of one
 * device when rate > 0, then by dilate. 0, or -1 with err. */
int emulation_open(struct emulation *e, const char *path, double rate, double dilate, int batch,
                   const struct model *m, struct dt_err *err);
void emulation_close(struct emulation *e);

/* A forward pass: need (may be NULL) told before each layer, as model_forward does; each layer
 * then lasts its time. Returns the loss (0: nothing is computed). */
double emulate_forward(struct emulation *e, const struct params_needed *need);

/* A backward pass: each layer lasts its time, then ready (may be NULL) is told its gradients
 * are final, from the last layer to the first. */
void emulate_backward(struct emulation *e, const struct grads_ready *ready);

/* The update of count of the model's parameters: its share of the profile's update time. */
void emulate_update(struct emulation *e, size_t count);

/* Seconds of one emulated step's compute, at wall time (dilated). */
double emulation_step_seconds(const struct emulation *e);

#endif
