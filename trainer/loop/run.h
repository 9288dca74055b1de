/* run.h - everything one training run holds (data, model, backend, optimizer, exchange, device
 * mirrors), made by run_setup and released by run_free, so the loop in train.c only steps it. */
#ifndef RUN_H
#define RUN_H

#include "trainer/loop/compute.h"
#include "trainer/loop/phase.h"
#include "trainer/loop/rank_status.h"
#include "trainer/loop/straggler.h"
#include "trainer/backend/backend.h"
#include "trainer/data/data.h"
#include "trainer/loop/device.h"
#include "trainer/loop/emulate.h"
#include "trainer/exchange/exchange.h"
#include "trainer/data/loader.h"
#include "trainer/nn/nn.h"
#include "trainer/optim/optim.h"
#include "formats/profile.h"
#include "trainer/loop/trace.h"
#include "trainer/loop/train.h"

struct run {
    struct dataset train, test;
    struct model model;
    struct backend *fast, *gpu;
    const struct backend *be;  /* the one computing: reference, fast or gpu */
    struct workspace ws;
    struct optimizer opt;
    struct loader loader;
    float *params, *grads, *buffers;   /* host arrays: on a GPU the copies checkpoints and broadcasts use */
    float *eval_x;
    int *eval_y;
    struct device_state dev;   /* all NULL on the CPU */
    const struct device_ops *device;   /* where the model's state lives: host arrays or a GPU's copies */
    struct comm *nccl;         /* the GPU ranks' gradient transport, when there are several */
    struct exchange exchange;
    struct workers workers;    /* the ranks that train: shards, lr scaling, evaluation, rates */
    struct timeline *timeline_file;   /* --timeline: this rank's trace, open */
    struct timeline *timeline;        /* where steps are recorded now (NULL after --timeline-steps) */
    struct step_trace trace;
    struct profile measured;   /* --profile-out: summed over the counted steps */
    struct emulation emu;      /* --emulate */
    struct straggler_watch straggler;   /* this rank's compute time a step, for the straggler report */
    struct rank_status *status;   /* where this rank is, for a stall's report (NULL: not kept) */
    struct step_phase phase;   /* where the step under way is (phase.h) */
    const struct compute *compute;   /* what computes the passes: the model, or the emulated device */
    bool emulating;
    uint64_t step_noise;       /* this step's dropout randomness, the same on every rank (struct batch) */
};

/* Opens the data, builds the model on its backend, sets every rank to rank 0's initial values and
 * makes the optimizer, loader, exchange and device copies. r is zeroed first; after a failure
 * run_free still releases what was made. 0 or -1 with err. */
int run_setup(struct run *r, const struct train_config *cfg, struct comm *comm, struct dt_err *err);
void run_free(struct run *r);

/* The arrays the backend computes on: the device copies on a GPU, else the host arrays. */
float *run_params(struct run *r);
float *run_grads(struct run *r);
float *run_buffers(struct run *r);


#endif
