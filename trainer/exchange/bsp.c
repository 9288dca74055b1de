/* bsp.c - bulk-synchronous exchange: after backward, one allreduce of the whole flat gradient
 * buffer (as Horovod without fusion thresholds, or PyTorch DDP with one bucket). The baseline
 * every other method is measured against. */
#include "trainer/exchange/exchange.h"

static int bsp_finish(struct exchange *x, struct dt_err *err)
{
    x->stats.transfers++;
    x->stats.floats += (double)x->count;
    double start = timeline_now();
    if (x->transport->allreduce(x->transport, x->grads, x->count, COMM_AVG, err) < 0)
        return dt_wrap(err, "the gradient allreduce (%zu floats)", x->count);
    timeline_span(x->timeline, LANE_EXCHANGE, "exchange", "allreduce", start, timeline_now());
    return 0;
}

const struct exchange_method exchange_bsp = {
    .name = "bsp-a2a",
    .finish = bsp_finish,
};
