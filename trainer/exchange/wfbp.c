/* wfbp.c - wait-free backpropagation (Zhang et al., Poseidon, ATC 2017; "WFBP" in Shi et al.'s
 * comparisons): each layer's gradients go out by a non-blocking allreduce as soon as backward has
 * computed them, while the layers before it still compute; the last layer's go first. The sums of
 * all pieces are the BSP sum, element for element, and the mean is taken the same way, so WFBP's
 * parameters equal BSP's bitwise. */
#include "exchange.h"

#include <stdlib.h>

struct wfbp {
    struct comm_request *requests;   /* this step's transfers */
    int started, cap;
    size_t unsent_end;               /* gradients [0, unsent_end) not yet sent this step */
};

static int wfbp_create(struct exchange *x, struct dt_err *err)
{
    struct wfbp *w = calloc(1, sizeof *w);
    if (!w)
        return dt_fail(err, "out of memory");
    w->unsent_end = x->count;
    x->state = w;
    if (!x->transport->iallreduce_sum)
        return dt_fail(err, "the %s transport has no non-blocking allreduce", x->transport->name);
    return 0;
}

static void wfbp_destroy(struct exchange *x)
{
    struct wfbp *w = x->state;
    if (w)
        free(w->requests);
    free(w);
}

/* Starts the sum of grads[first, end): one more request. */
static int start_piece(struct exchange *x, size_t first, size_t end, struct dt_err *err)
{
    struct wfbp *w = x->state;
    if (w->started == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        struct comm_request *grown = realloc(w->requests, (size_t)cap * sizeof *grown);
        if (!grown)
            return dt_fail(err, "out of memory");
        w->requests = grown, w->cap = cap;
    }
    if (x->transport->iallreduce_sum(x->transport, x->grads + first, end - first, &w->requests[w->started], err) < 0)
        return dt_wrap(err, "a layer's gradients (%zu floats)", end - first);
    w->started++;
    x->stats.pieces++;
    x->stats.floats += (double)(end - first);
    return 0;
}

static int wfbp_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    struct wfbp *w = x->state;
    if (first >= w->unsent_end)
        return 0;
    if (start_piece(x, first, w->unsent_end, err) < 0)
        return -1;
    w->unsent_end = first;
    bool done;   /* lets the pieces under way advance while the next layers compute */
    return x->transport->test_all(x->transport, w->requests, w->started, &done, err);
}

static int wfbp_finish(struct exchange *x, struct dt_err *err)
{
    struct wfbp *w = x->state;
    if (w->unsent_end > 0 && start_piece(x, 0, w->unsent_end, err) < 0)
        return -1;
    int rc = x->transport->wait_all(x->transport, w->requests, w->started, err);
    w->started = 0;
    w->unsent_end = x->count;
    if (rc < 0)
        return dt_wrap(err, "waiting for the gradient exchange");
    comm_scale(x->grads, x->count, x->workers.count);
    return 0;
}

const struct exchange_method exchange_wfbp = {
    .name = "wfbp",
    .aliases = "",
    .help = "WFBP: each layer's gradients sent (non-blocking allreduce) as soon as backward has them, "
            "overlapping the layers still computing (CPU ranks)",
    .needs_op_order = true,
    .create = wfbp_create,
    .grads_ready = wfbp_grads_ready,
    .finish = wfbp_finish,
    .destroy = wfbp_destroy,
};
