/* pieces.c - a step's gradients sent piece by piece and waited for (see pieces.h). */
#include "pieces.h"

#include <stdlib.h>

int pieces_init(struct pieces *p, const struct exchange *x, struct dt_err *err)
{
    *p = (struct pieces){.unsent_end = x->count};
    if (!x->transport->iallreduce_sum)
        return dt_fail(err, "the %s transport has no non-blocking allreduce", x->transport->name);
    return 0;
}

void pieces_free(struct pieces *p)
{
    free(p->requests);
    p->requests = NULL;
}

/* Starts the sum of grads[first, end): one more request. */
static int start_piece(struct pieces *p, struct exchange *x, size_t first, size_t end, struct dt_err *err)
{
    if (p->started == p->cap) {
        int cap = p->cap ? 2 * p->cap : 64;
        struct comm_request *grown = realloc(p->requests, (size_t)cap * sizeof *grown);
        if (!grown)
            return dt_fail(err, "out of memory");
        p->requests = grown, p->cap = cap;
    }
    if (x->transport->iallreduce_sum(x->transport, x->grads + first, end - first, &p->requests[p->started], err) < 0)
        return dt_wrap(err, "gradients [%zu, %zu)", first, end);
    p->started++;
    timeline_instant(x->timeline, LANE_EXCHANGE, "exchange", "iallreduce", timeline_now(), "floats", (double)(end - first));
    x->stats.pieces++;
    x->stats.floats += (double)(end - first);
    return 0;
}

int pieces_send_from(struct pieces *p, struct exchange *x, size_t first, struct dt_err *err)
{
    if (first >= p->unsent_end)
        return 0;
    if (start_piece(p, x, first, p->unsent_end, err) < 0)
        return -1;
    p->unsent_end = first;
    bool done;   /* lets the pieces under way advance while the next layers compute */
    return x->transport->test_all(x->transport, p->requests, p->started, &done, err);
}

int pieces_finish(struct pieces *p, struct exchange *x, struct dt_err *err)
{
    if (p->unsent_end > 0 && start_piece(p, x, 0, p->unsent_end, err) < 0)
        return -1;
    double start = timeline_now();
    int rc = x->transport->wait_all(x->transport, p->requests, p->started, err);
    timeline_span(x->timeline, LANE_EXCHANGE, "exchange", "wait", start, timeline_now());
    p->started = 0;
    p->unsent_end = x->count;
    if (rc < 0)
        return dt_wrap(err, "waiting for the gradient exchange");
    comm_scale(x->grads, x->count, x->workers.count);
    return 0;
}
