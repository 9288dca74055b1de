/* pieces.c - a step's gradients handed to the communication thread in pieces (see pieces.h). */
#include "trainer/exchange/pieces.h"

#include <string.h>

int pieces_start_allreduce(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err)
{
    struct exchange *x = ctx;
    t->nreqs = 1;
    t->reqs[0].ready_mark = t->index + 1;   /* what comm_thread_ready_from marked for it */
    return comm->iallreduce_sum(comm, x->grads + t->first, t->count, &t->reqs[0], err);
}

int pieces_open(struct pieces *p, struct exchange *x, struct comm *comm, const size_t *first, const size_t *count,
                int spans, size_t partition_floats, size_t credit_bytes, struct comm_thread_ops ops, struct dt_err *err)
{
    memset(p, 0, sizeof *p);
    if (ops.start == pieces_start_allreduce) {
        if (!x->transport->iallreduce_sum)
            return dt_fail(err, "the %s transport has no non-blocking allreduce", x->transport->name);
        /* the gradients' own transport: NCCL's split for device buffers, else the workers' host comm */
        struct comm *base = x->transport->device_buffers ? x->transport : x->workers.comm;
        if (base->split(base, 0, x->workers.rank, &p->own, err) < 0)
            return dt_wrap(err, "a comm for the communication thread");
        comm = p->own;
    }
    *p = (struct pieces){.own = p->own, .comm = comm, .ops = ops, .partition_floats = partition_floats,
                         .credit_bytes = credit_bytes};
    return comm_thread_create(&p->thread, comm, first, count, spans, partition_floats, credit_bytes, ops, err);
}

int pieces_replan(struct pieces *p, struct exchange *x, const size_t *first, const size_t *count, int spans,
                  struct dt_err *err)
{
    pieces_count(p, x);
    p->before = (struct comm_thread_stats){(long)x->stats.transfers, x->stats.floats};
    comm_thread_destroy(p->thread);
    p->thread = NULL;
    return comm_thread_create(&p->thread, p->comm, first, count, spans, p->partition_floats, p->credit_bytes, p->ops, err);
}

bool pieces_close(struct pieces *p)
{
    bool released = comm_thread_destroy(p->thread);
    if (released && p->own)   /* a thread left in a transfer still uses its comm */
        p->own->destroy(p->own);
    memset(p, 0, sizeof *p);
    return released;
}

void pieces_begin(struct pieces *p, const struct exchange *x)
{
    comm_thread_begin_step(p->thread, x->timeline);
}

void pieces_ready_from(struct pieces *p, size_t first)
{
    comm_thread_ready_from(p->thread, first);
}

void pieces_count(struct pieces *p, struct exchange *x)
{
    struct comm_thread_stats now = comm_thread_stats(p->thread);
    x->stats.transfers = p->before.started + now.started;
    x->stats.floats = p->before.floats + now.floats;
}

int pieces_wait_all(struct pieces *p, struct exchange *x, struct dt_err *err)
{
    comm_thread_ready_from(p->thread, 0);
    double start = timeline_now();
    int rc = comm_thread_wait_all(p->thread, err);
    timeline_span(x->timeline, LANE_EXCHANGE, "exchange", "wait", start, timeline_now());
    pieces_count(p, x);
    return rc < 0 ? dt_wrap(err, "waiting for the gradient exchange") : 0;
}
