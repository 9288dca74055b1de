/* costmodel_pieces.h - what the cost model's schedules share, private to it: a piece of a step's
 * gradients, what a method's transfers cost (costmodel.c works it out from the cluster's shape),
 * a piece's push and pull (costmodel_pieces.c), and ByteScheduler's steps in a row
 * (costmodel_bytescheduler.c). */
#ifndef COSTMODEL_PIECES_H
#define COSTMODEL_PIECES_H

#include <stdbool.h>

#include "analysis/collectives.h"
#include "analysis/step_costs.h"

/* A piece of the gradients: when backward has made it ready (from the start of backward), what
 * sending it costs, and its layer and bytes. */
struct piece {
    double ready, cost, bytes;
    double tail;               /* an allreduce: from leaving the link to its sums back (piece_tail) */
    int layer;
    int side;                  /* bytescheduler-ps, two sides: its server's (0 or 1) */
    double load;               /* its bytes across the busiest link, per byte pushed */
    double done;               /* when its sum is back */
    double done_sending;       /* when it has crossed the link (its credit back) */
    /* bytescheduler-ps, two sides: the workers on the server's side, whose pushes do not cross:
     * when backward made it ready there (and their node's root has it), when its sum is theirs */
    double ready_near, done_near;
    int pool;                  /* whose credit its bytes hold until pushed: 0, or with two sides the side pushing across */
};

/* What a method's transfers cost: an allreduce, or a parameter server's push and pull. */
struct transfer_cost {
    const struct cluster_shape *c;
    bool ps;
    double load;               /* a push's bytes at the busiest link, per byte pushed */
    int in_node;               /* node-local sums: a piece's hand-offs inside a node each way */
    bool one_link;             /* pushes and pulls share one link (colocated servers) */
    /* Colocated servers, piece by piece (bytescheduler-ps), where the nodes are two sides of one
     * link (`behind` of them on the first): each piece whole at its server, through that link
     * whole (false: the pieces' bytes spread over every server, t.load); each node's pushes of a
     * piece. (A server a node: c->nodes of them.) */
    bool two_sides;
    int behind, pushers;
    const struct link_cost *round;   /* the colocated servers' round as measured, or NULL */
    double eager;              /* a bigger message needs a handshake (cluster_shape.eager_bytes) */
    /* ByteScheduler-PS: how many times longer a message takes while the link's other way carries
     * messages put on it before (>= 1; 0 or 1: not at all), fitted to cluster_shape.servers_pieces */
    double both_ways;
};

/* The link between nodes as the servers' messages cross it (cluster_shape.servers_link, else inter). */
struct link_cost servers_link_of(const struct transfer_cost *t);

/* The link's time for a piece across the link between nodes: a push's (after the node's sum; `load`
 * its bytes across the busiest link a byte pushed), or the whole allreduce's. */
double piece_push_cost(const struct transfer_cost *t, double bytes, double load);

/* An allreduce's sums back after it has held the link for `cost` (piece_push_cost): what one alone
 * takes beyond that (its way back), where the job's allreduce (or, at 2 ranks, the link) was
 * measured alone as well as under way with others (link_cost.alone); 0 otherwise, and for a
 * server's pieces. */
double piece_tail(const struct transfer_cost *t, double bytes, double cost);

/* A server's pull of a piece back across the link (`load` as for its push). */
double piece_pull_cost(const struct transfer_cost *t, double bytes, double load);

/* Node-local sums: the node's root's hand-offs of a piece inside the node, one way (its other
 * workers' pushes in before the push across, the sum out to them after the pull); 0 without. */
double piece_in_node_cost(const struct transfer_cost *t, double bytes);

/* ready[l]: when backward (started at 0) has finished layer l, the backward of layers l..L-1. */
void backward_ready_times(const struct step_costs *s, double *ready);

/* ByteScheduler's step (costmodel_bytescheduler.c): the steady distance between two forward
 * passes' starts, its pieces of at most `per` bytes under `credit`; -1 out of memory. */
double bytescheduler_step(const struct step_costs *s, const struct transfer_cost *t, double per, double credit);

/* The both_ways slow-down that makes ByteScheduler-PS's schedule of its traffic alone (one layer of
 * the step's `bytes`, no compute) take what t->c->servers_pieces measured for that many bytes: the
 * best of 1 to 8, by hundredths; 1 without a measurement or where the schedule is not faster than
 * it; -1 out of memory. */
double bytescheduler_both_ways(const struct transfer_cost *t, double bytes, double per, double credit);

#endif
