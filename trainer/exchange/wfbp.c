/* wfbp.c - wait-free backpropagation (Zhang et al., Poseidon, ATC 2017; "WFBP" in Shi et al.'s
 * comparisons): each layer's gradients go out by a non-blocking allreduce as soon as backward has
 * computed them, while the layers before it still compute; the last layer's go first. The sums of
 * all pieces are the BSP sum, element for element, and the mean is taken the same way, so WFBP's
 * parameters equal BSP's bitwise at two ranks (beyond, MPI may sum a piece in another order). */
#include "pieces.h"

#include <stdlib.h>

static int wfbp_create(struct exchange *x, struct dt_err *err)
{
    struct pieces *p = calloc(1, sizeof *p);
    if (!p)
        return dt_fail(err, "out of memory");
    x->state = p;
    return pieces_init(p, x, err);
}

static void wfbp_destroy(struct exchange *x)
{
    if (x->state)
        pieces_free(x->state);
    free(x->state);
}

static int wfbp_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    return pieces_send_from(x->state, x, first, err);
}

static int wfbp_finish(struct exchange *x, struct dt_err *err)
{
    return pieces_finish(x->state, x, err);
}

const struct exchange_method exchange_wfbp = {
    .name = "wfbp-a2a",
    .aliases = "wfbp",
    .help = "WFBP: each layer's gradients sent (non-blocking allreduce) as soon as backward has them, "
            "overlapping the layers still computing (CPU ranks)",
    .needs_op_order = true,
    .create = wfbp_create,
    .grads_ready = wfbp_grads_ready,
    .finish = wfbp_finish,
    .destroy = wfbp_destroy,
};
