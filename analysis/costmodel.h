/* costmodel.h - the predicted time of a data-parallel training step with each gradient-exchange
 * method, from a profile's per-layer compute and the links' alpha-beta costs: what dtrain-analyze
 * predict prints before an allocation is spent. Pure arithmetic, tested on hand-worked cases.
 * The links and the allreduce's algorithms are collectives.h's.
 *
 * Schedules of one step after the forward pass (F: the sum of the layers' forward, B: of their
 * backward, U: the update):
 *   bsp-a2a            F + B + AR(all gradients) + U
 *   wfbp-a2a, mg-wfbp  F + max(B, end of the last allreduce) + U, each layer's (each group's:
 *                      grouping.h's rule with the allreduce's alpha and beta) allreduce starting
 *                      when backward has finished it and the one before has ended (one at a time)
 *   bytescheduler-a2a  steps in a row, simulated: a ready partition starts, the one nearest the
 *                      input first, while the credit lasts (bytes started and not yet through;
 *                      one start may overdraw it), and started ones cross the link in the order
 *                      they started (a credit of one partition: each starts when the link is
 *                      free, the best priority can do; a credit of everything: the order backward
 *                      made them ready); the next step's forward of a layer waits for that
 *                      layer's sums and update; the step is the steady distance between two
 *                      forward passes' starts
 *   *-ps               a partition's push and pull each cost one message of bytes
 *                      max(P, N P / S) (N nodes each pushing P times, S servers each receiving
 *                      every push of its share; P = 1 with BytePS's node-local sums, else a push
 *                      per worker, P = G); bsp-ps pushes every partition after backward, wfbp-ps
 *                      each when backward has completed it, and the pushes under way share the
 *                      link (m of them at 1/m of its rate each), as do the pulls the other way,
 *                      a partition's pull starting when its push is through (with colocated
 *                      servers pushes and pulls share one link, each (N - 1) / N of the bytes
 *                      across it; K nodes behind one link: max(N P / S, K P), colocated
 *                      K P (N - K) / N); bytescheduler-ps's pieces, started
 *                      as its allreduce twin's, cross a queue each way in the order they were
 *                      put on it (a TCP stream's bytes), a piece over the eager limit after a
 *                      handshake (its first fragment there, the answer back, then the rest), its
 *                      pull (with the same handshake) after its push, its credit back when
 *                      pushed; with colocated servers each piece whole at its server, placed as
 *                      dtrain-train places it (partitions.h), its push crossing into that server's
 *                      group of K nodes (P (N - K) bytes a byte) and its pull out of it, a queue
 *                      each way of each group's link (of two groups' one link, its two ways); with
 *                      two groups each group's workers run their own steps, pushing across (by
 *                      their own credit) the pieces of the other group's servers only, and having
 *                      a piece of their own group's when it is summed, another's when pulled; with
 *                      node-local sums a piece first costs G - 1 messages inside the node (the
 *                      node's root receiving each other worker's) and its sum as many after the
 *                      pull (the root handing it on), on the node's own links, a piece at a time
 *                      in the order they came, while other pieces cross the link between nodes;
 *                      servers_half_duplex: a node's pushes and pulls take turns on one rate.
 * The pieces of every method but BSP go at the links' streamed rate where it was measured
 * (link_cost.streamed); BSP's one allreduce at the rate of one message alone. The layer-wise
 * allreduces (WFBP, MG-WFBP, ByteScheduler-A2A), each rank starting them on its own, at three ranks
 * whose first two nodes share a link: the 2-rank allreduce's across the link (the leaf's hops ride
 * beside it); each one's sums back after what one alone takes beyond its share of the link, where
 * that was measured (link_cost.alone: costmodel_pieces.c). The servers'
 * messages cross the link as measured a direction at a time where it was (cluster_shape.servers_link).
 * One worker exchanges nothing: F + B + U. */
#ifndef COSTMODEL_H
#define COSTMODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis/collectives.h"
#include "analysis/step_costs.h"

struct method_settings {
    double partition_bytes;    /* ByteScheduler's and the servers' partitions (0: 4096000) */
    double credit_bytes;       /* ByteScheduler's bytes under way at once (0: 16000000) */
    bool ps_node_sums_off;     /* parameter servers: every worker pushes its own (default: a node's
                                  workers sum first and push once, as BytePS and dtrain-train do) */
};


/* Seconds of one step of method (a name or alias of exchange_methods.h: "bsp-a2a", "wfbp-ps", ...)
 * on cluster c; -1 for a method it does not know. */
double cost_step(const struct step_costs *s, const struct cluster_shape *c, const char *method,
                 const struct method_settings *settings);

/* Whether the model has a step for method (every method of exchange_methods.h should). */
bool cost_knows(const char *method);

#endif
