/* pieces.h - what WFBP-like methods share: the gradient buffer sent in pieces, from its end towards
 * its start as backward completes it, each piece a non-blocking sum over the transport; the step
 * waits for all of them and takes the mean. */
#ifndef PIECES_H
#define PIECES_H

#include "exchange.h"

struct pieces {
    struct comm_request *requests;   /* this step's transfers */
    int started, cap;
    size_t unsent_end;               /* gradients [0, unsent_end) not yet sent this step */
};

/* Ready for a step over grads[0, count); fails when the transport has no non-blocking sum. */
int pieces_init(struct pieces *p, const struct exchange *x, struct dt_err *err);
void pieces_free(struct pieces *p);

/* Sends grads[first, unsent_end) as one piece (nothing when first is not below unsent_end) and
 * lets the pieces under way advance. */
int pieces_send_from(struct pieces *p, struct exchange *x, size_t first, struct dt_err *err);

/* Sends what is left, waits for every piece, divides by the workers: the mean. */
int pieces_finish(struct pieces *p, struct exchange *x, struct dt_err *err);

#endif
