/* comm_thread.h - a rank's communication thread (Horovod's background thread, ByteScheduler's core),
 * through which every method but BSP sends its gradients. A step's transfers are planned once:
 * spans of the gradient buffer (layers, MG-WFBP's groups, a parameter server's partitions), each
 * cut into partitions, the same plan on every rank. Backward makes them ready, from the last span
 * towards the first, and the thread starts them: in the order they became ready (FIFO: WFBP), or
 * by priority, the span nearest the input first, since the next forward pass needs it first,
 * while credit lasts (bytes under way; one start may overdraw it; ByteScheduler). It keeps them
 * moving while the rank computes; the rank waits for a span, or for all.
 *
 * Over collectives every rank must start the same transfers in the same order, yet each rank's
 * ready set and credit differ from moment to moment: rank 0's thread picks and broadcasts each
 * choice, the others start what it chose (as ByteScheduler does). Over point-to-point pushes to
 * parameter servers each rank picks for itself.
 *
 * The thread is the only user of its comm during a step (a duplicate of the workers' or of the
 * world's that the method made for it), so the rank's own collectives between steps never meet its
 * transfers; the transport must be safe to call from two threads (comm->thread_safe:
 * MPI_THREAD_MULTIPLE). */
#ifndef COMM_THREAD_H
#define COMM_THREAD_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/comm/comm.h"
#include "common/dt_error.h"
#include "trainer/base/timeline.h"

/* A stage's requests at most: a push and its pull, or a node's root receiving from, or sending to,
 * up to 8 other workers of its node (ps.c's node-local sums). */
#define ENGINE_MAX_REQUESTS 8

/* One partition of one layer's gradients. */
struct comm_thread_transfer {
    size_t first, count;       /* floats of the gradient buffer */
    int index;                 /* in the plan */
    int layer, part;           /* the span (0: nearest the input) and the partition within it */
    struct comm_request reqs[ENGINE_MAX_REQUESTS];
    int nreqs;                 /* set by the method's start (and advance) */
    int stage;                 /* 0 when started; the method's advance counts on */
    int credit_stage;          /* the stage whose first credit_requests return the credit (start
                                  may set it; 0 by default) */
    int state;                 /* the engine's (under its lock) */
    bool credit_back;          /* its credit has been returned */
    double started;            /* when it was started (timeline_now) */
};

/* What a transfer is: the method's. */
struct comm_thread_ops {
    /* Starts t on comm, filling t->reqs and t->nreqs (at most ENGINE_MAX_REQUESTS); runs on the
     * engine's thread. 0 or -1 with err. */
    int (*start)(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err);
    void *ctx;
    bool fifo;                 /* start in the order made ready (every rank alike), not by priority */
    bool ordered;              /* by priority over collectives: rank 0 picks the order, the others follow */
    /* A transfer's credit comes back when its first credit_requests requests complete (0: all
     * of them). A push returns it once sent: were it held until the sum came back, two workers
     * that each pushed a different partition first would each wait for the other's push of it,
     * with no credit left to make it. */
    int credit_requests;
    /* Optional, for transfers in stages (a node's root sums its workers' pushes, then pushes the
     * node's sum): called on the engine's thread when all of t's requests are done; starts the next
     * stage (t->reqs, t->nreqs; t->stage counted on by the engine): 1; or 0: t is done; -1 with err.
     * NULL: a transfer is one stage. */
    int (*advance)(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err);
    /* Optional: the bytes of credit t takes (NULL: all of its bytes). A transfer that takes none
     * starts whatever the credit left: a worker's push to its node's root must never wait behind
     * the root's own transfers, which wait for it. */
    size_t (*charge)(void *ctx, const struct comm_thread_transfer *t);
    const char *what;          /* the timeline's name for a transfer ("allreduce", "push") */
};

struct comm_thread_stats {
    long started;              /* transfers started */
    double floats;             /* their gradient elements */
};

struct comm_thread;

/* The plan: span l, gradients [first[l], first[l] + count[l]), in partitions of at most
 * partition_floats (0: whole); credit_bytes under way at once (0: no limit). The thread's
 * transfers go over comm (the caller's; it outlives the engine). 0, or -1 with err (a transport
 * not safe for threads is refused). */
int comm_thread_create(struct comm_thread **thread, struct comm *comm, const size_t *first, const size_t *count, int spans,
                  size_t partition_floats, size_t credit_bytes, struct comm_thread_ops ops, struct dt_err *err);

/* The plan, in priority order (for the method's buffers and the tests). */
const struct comm_thread_transfer *comm_thread_plan(const struct comm_thread *e, int *transfers);

/* A new step (the previous one's transfers all done): every transfer waits for its gradients
 * again; timeline (NULL: none) is where this step's transfers are drawn. */
void comm_thread_begin_step(struct comm_thread *e, struct timeline *timeline);

/* Backward has made gradients [first, end of the buffer) final: their transfers are ready (on a
 * device transport each is marked (comm->mark_ready, mark = its plan index + 1), and the method's
 * start sets that mark in its request). */
void comm_thread_ready_from(struct comm_thread *e, size_t first);

/* Waits until span's transfers of this step are done. 0, or -1 with err when a transfer failed
 * (the job must then be aborted). */
int comm_thread_wait_span(struct comm_thread *e, int span, struct dt_err *err);

/* Waits until every transfer that was made ready is done. 0 or -1 with err. */
int comm_thread_wait_all(struct comm_thread *e, struct dt_err *err);

/* Counted over the run (after comm_thread_wait_all, or any time for an estimate). */
struct comm_thread_stats comm_thread_stats(struct comm_thread *e);

/* Stops the thread and frees the engine: true. A thread stuck in a transfer that will never
 * finish (a failed run about to abort the job) is left running, and its memory with it: false,
 * and its comm must not be freed either. */
bool comm_thread_destroy(struct comm_thread *e);

#endif
