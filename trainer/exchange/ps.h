/* ps.h - parameter servers, as bsp-ps and wfbp-ps (ps.c) and bytescheduler-ps (bytescheduler.c)
 * share them: the last --ps-servers ranks of the job serve, the gradient buffer is cut into
 * partitions spread over the servers by bytes, workers push partitions and get their sums back.
 *
 * Messages: worker 0 tells each server, before a step's first push, whether a step comes (1) or
 * training is over (0), on the world comm (PS_TAG_CONTROL); partition p travels both ways with tag
 * PS_TAG_FIRST + p on the servers' own comm (a duplicate of the world, so a worker's communication
 * thread may push while its rank calls collectives). Every rank computes the same partitions and
 * owners. */
#ifndef PS_H
#define PS_H

#include "trainer/exchange/exchange.h"
#include "trainer/exchange/pieces.h"

struct ps;

/* Sets up the servers of x: partitions of the whole buffer (by_layer false), or of each layer
 * separately (ByteScheduler's tasks are tensors). Sets x->workers and x->serving. 0 or -1 with err. */
int ps_open(struct exchange *x, bool by_layer, struct ps **ps, struct dt_err *err);
void ps_free(struct ps *ps);

/* The worker's pieces (pieces.h) are the partitions, pushed over the servers' comm: each transfer k of
 * the engine's plan pushes partition k and asks for its sum into the inbox (the plan must be cut
 * as the partitions are); its credit comes back once the push is out. by_priority: ByteScheduler's
 * order, else as backward readies them. */
int ps_open_pieces(struct ps *ps, struct exchange *x, struct pieces *pieces, bool by_priority, size_t credit_bytes,
                   struct dt_err *err);

/* The sums that came back (the inbox, indexed like the gradient buffer). */
const float *ps_sums(const struct ps *ps);

/* Worker 0 tells every server whether a step comes (1) or training is over (0); waits until
 * the messages are out. Other workers do nothing. 0 or -1 with err. */
int ps_tell_servers(struct exchange *x, struct ps *ps, int what, struct dt_err *err);

/* A server's whole job: serve steps until worker 0 says training is over. 0 or -1 with err. */
int ps_serve(struct exchange *x, struct ps *ps, struct dt_err *err);

/* "2 workers, 1 server, 9 partitions of up to 20000 bytes", into text. */
void ps_describe(const struct ps *ps, char *text, size_t size);

#endif
