/* step_costs.h - a training step as the cost model (costmodel.h) reads it from a profile
 * (dtrain-train --profile-out): each layer's forward and backward and its gradients' bytes, and
 * the update. */
#ifndef STEP_COSTS_H
#define STEP_COSTS_H

struct layer_cost {
    double forward, backward;  /* seconds a step */
    double bytes;              /* its gradients */
};

struct step_costs {
    int layers;
    const struct layer_cost *layer;   /* from the input */
    double update;             /* seconds a step, all parameters */
};

#endif
