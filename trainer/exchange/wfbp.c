/* wfbp.c - wait-free backpropagation (Zhang et al., Poseidon, ATC 2017; "WFBP" in Shi et al.'s
 * comparisons): each layer's gradients go out by a non-blocking allreduce as soon as backward has
 * computed them, on the rank's communication thread, while the layers before it still compute;
 * the last layer's go first. The sums of all pieces are the BSP sum, element for element, and the
 * mean is taken the same way, so WFBP's parameters equal BSP's bitwise at two ranks (beyond, MPI
 * may sum a piece in another order). */
#include "trainer/exchange/pieces.h"

#include <stdlib.h>

static int wfbp_create(struct exchange *x, struct dt_err *err)
{
    struct pieces *p = calloc(1, sizeof *p);
    int layers = model_layer_spans(x->model, NULL, NULL);
    size_t *first = calloc((size_t)layers + 1, sizeof *first), *count = calloc((size_t)layers + 1, sizeof *count);
    int rc = p && first && count ? 0 : dt_fail(err, "out of memory");
    x->state = p;
    if (rc == 0) {
        model_layer_spans(x->model, first, count);
        struct comm_thread_ops ops = {.start = pieces_start_allreduce, .ctx = x, .fifo = true, .what = "allreduce"};
        rc = pieces_open(p, x, NULL, first, count, layers, 0, 0, ops, err);
    }
    free(first), free(count);
    return rc;
}

static void wfbp_destroy(struct exchange *x)
{
    if (x->state)
        pieces_close(x->state);
    free(x->state);
}

static void wfbp_begin_backward(struct exchange *x)
{
    pieces_begin(x->state, x);
}

static int wfbp_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    (void)err;
    pieces_ready_from(x->state, first);
    return 0;
}

static int wfbp_finish(struct exchange *x, struct dt_err *err)
{
    if (pieces_wait_all(x->state, x, err) < 0)
        return -1;
    exchange_mean(x, x->grads, x->count);
    return 0;
}

const struct exchange_method exchange_wfbp = {
    .name = "wfbp-a2a",
    .needs_op_order = true,
    .needs_thread = true,
    .create = wfbp_create,
    .begin_backward = wfbp_begin_backward,
    .grads_ready = wfbp_grads_ready,
    .finish = wfbp_finish,
    .destroy = wfbp_destroy,
};
