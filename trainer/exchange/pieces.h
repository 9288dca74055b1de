/* pieces.h - what the methods that send a step's gradients in pieces share (WFBP, MG-WFBP,
 * ByteScheduler, the parameter servers): the pieces are spans of the gradient buffer handed to
 * the rank's communication thread (comm_thread.h) as backward completes them; the step waits for all
 * of them (or, layer-wise, for each before its forward pass). Over allreduce the thread has its
 * own duplicate of the workers' comm. */
#ifndef PIECES_H
#define PIECES_H

#include "trainer/exchange/comm_thread.h"
#include "trainer/exchange/exchange.h"

struct pieces {
    struct comm_thread *thread;
    struct comm *own;                /* allreduce: the thread's duplicate of the workers' comm */
    struct comm *comm;               /* the thread's */
    struct comm_thread_ops ops;
    size_t partition_floats, credit_bytes;
    struct comm_thread_stats before;      /* counted by threads this one replaced (MG-WFBP's plan) */
};

/* The communication thread's start of an allreduce of a partition (ops.ctx: the exchange). */
int pieces_start_allreduce(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err);

/* Pieces of x's gradients: span l is [first[l], first[l] + count[l]), cut into partitions of at
 * most partition_floats (0: whole), credit_bytes under way (0: no limit). Over allreduce when
 * ops.start is pieces_start_allreduce (a duplicate of the workers' comm is made for it), else over
 * comm. 0 or -1 with err. */
int pieces_open(struct pieces *p, struct exchange *x, struct comm *comm, const size_t *first, const size_t *count,
                int spans, size_t partition_floats, size_t credit_bytes, struct comm_thread_ops ops, struct dt_err *err);
/* The same pieces with new spans (MG-WFBP, once planned), counting on. Between steps. */
int pieces_replan(struct pieces *p, struct exchange *x, const size_t *first, const size_t *count, int spans,
                  struct dt_err *err);
/* Stops the thread: true; false when it was left in a transfer (a failed run about to abort),
 * and then the comm it sends on must be left alone too. */
bool pieces_close(struct pieces *p);

/* A step's backward begins: the spans wait for their gradients again. */
void pieces_begin(struct pieces *p, const struct exchange *x);

/* Backward has made gradients [first, end) final: the pieces inside go out. */
void pieces_ready_from(struct pieces *p, size_t first);

/* Sends what is left and waits for every piece; x->stats counts them. 0 or -1 with err. */
int pieces_wait_all(struct pieces *p, struct exchange *x, struct dt_err *err);

/* x->stats from the pieces sent so far. */
void pieces_count(struct pieces *p, struct exchange *x);

#endif
