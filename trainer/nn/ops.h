/* ops.h - the op table: each kind of layer defined once (its name, what it reads, whether it owns
 * parameters, what it keeps from forward to backward, its forward and backward over a backend, its
 * arithmetic), so that a new layer (layer norm, attention) is one entry in ops.c and the passes,
 * the workspace and the FLOP count in nn.c never name a kind. */
#ifndef OPS_H
#define OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trainer/backend/backend.h"
#include "trainer/nn/model.h"

/* What an op's kernels see during a pass. */
struct pass {
    const struct model *m;
    const struct backend *be;
    struct workspace *ws;
    const float *params;
    float *buffers;            /* forward: running statistics (BN) */
    float *grads;              /* backward: parameter gradients, added to */
    int n;                     /* samples */
    bool training;             /* forward: batch statistics, and keep what backward needs */
    int index;                 /* the op's place in m->ops (its kept im2col columns) */
    const int *labels;         /* forward: the batch's, for the loss op */
    uint64_t noise;            /* the batch's dropout randomness (struct batch; backward: the forward's) */
    long position;
    double loss;               /* forward: what the loss op computed */
    int correct;               /* forward: right answers the loss op counted */
};

struct op_type {
    const char *name;
    int inputs;                /* tensors read: 1 (in), or 2 (in and in2) */
    bool owns_params;          /* parameters at op->w (and op->b): backward completes them */
    bool is_loss;              /* ends the graph: forward sets p->loss and writes the logits' gradient */
    /* Parameters it owns, from op->w on (weights, then bias): where owns_params. */
    size_t (*param_count)(const struct model *m, const struct op *op);
    /* Bytes the op keeps from forward to backward in its workspace slot (op->slot) for max_batch
     * samples, in the backend's memory; NULL: none. */
    size_t (*saved_bytes)(const struct model *m, const struct op *op, int max_batch);
    /* Floats of im2col columns a CPU backend may keep for it between the passes; NULL: none. */
    size_t (*column_floats)(const struct model *m, const struct op *op, int max_batch);
    /* Its initial running statistics in buffers; NULL: it has none. */
    void (*init_buffers)(const struct model *m, const struct op *op, float *buffers);
    void (*forward)(struct pass *p, const struct op *op);
    /* Gradients of its inputs (overwritten, or added to where acc: the input has other readers)
     * and, if it owns parameters, added into p->grads. */
    void (*backward)(const struct pass *p, const struct op *op, bool acc);
    /* Multiply-adds of its forward pass per sample (GEMM-shaped work only); NULL: none counted. */
    double (*forward_macs)(const struct model *m, const struct op *op);
    /* Whether a backend has its kernels; NULL: every backend has (the convolutional nets' layers). */
    bool (*runs_on)(const struct backend *be);
};

/* Indexed by enum op_kind. */
extern const struct op_type op_types[OP_KIND_COUNT];

static inline const struct op_type *op_type_of(const struct op *op)
{
    return &op_types[op->kind];
}

#endif
