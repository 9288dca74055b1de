/* commbench_rounds.h - the parameter servers' rounds dtrain-commbench times (--op pushpull,
 * colocated, colocated-ranks): who works and who serves, each worker's buffer pushed to the
 * servers, summed there and sent back. Two ways to cut the buffer:
 *   - a part per server, every part under way at once (bsp-ps's and wfbp-ps's traffic);
 *   - pieces of --partition-bytes, each whole at one server (placed as dtrain-train places them,
 *     partitions.h), a worker's pushes started in order while its bytes under way stay within
 *     --credit-bytes, a piece's sum sent back as soon as every push of it is in (bytescheduler-ps's
 *     traffic, all of a step's pieces ready at once).
 * Every worker ends with the sum of every worker's buffer in b->result. */
#ifndef COMMBENCH_ROUNDS_H
#define COMMBENCH_ROUNDS_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/comm/comm.h"
#include "common/dt_error.h"

/* Who does what: ONE_SERVER (pushpull): ranks 0..n-2 work, the last rank serves; EVERY_RANK
 * (colocated): every rank both; PAIRS (colocated-ranks), as dtrain-train --ps-colocated lays them
 * out: even ranks work, each odd rank serves beside the worker before it. */
enum layout { ONE_SERVER, EVERY_RANK, PAIRS };

/* The buffers of one size: what is sent (and, for allreduce, summed in place), what comes back. */
struct buffers {
    float *data, *result, *slots;   /* slots: a server's, one row per worker (rounds_slot_floats) */
    size_t count;
};

/* Floats of slots a rank needs for k rounds under way at once of `total` floats in all (k
 * buffers), or one round cut into pieces of `piece` floats (0: a part per server). */
size_t rounds_slot_floats(const struct comm *c, enum layout layout, size_t total, int k, size_t piece);

/* The workers whose buffers a round sums (world - 1, world or world / 2). */
int rounds_workers(const struct comm *c, enum layout layout);

/* Whether this rank only serves (it gets no sums back). */
bool rounds_serves_only(const struct comm *c, enum layout layout);

/* k rounds under way at once (1: one round), the buffer cut into a part per server: b->data +
 * i * b->count is buffer i, its sums land at b->result + i * b->count. */
int rounds_parts(struct comm *c, enum layout layout, int k, struct buffers *b, struct dt_err *err);

/* One round of pieces of `piece` floats under a worker's credit of `credit_bytes` (0: none). */
int rounds_pieces(struct comm *c, enum layout layout, struct buffers *b, size_t piece, size_t credit_bytes,
                  struct dt_err *err);

#endif
