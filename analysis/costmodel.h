/* costmodel.h - the predicted time of a data-parallel training step with each gradient-exchange
 * method, from a profile's per-layer compute and the links' alpha-beta costs: what dtrain-analyze
 * predict prints before an allocation is spent. Pure arithmetic, tested on hand-worked cases.
 *
 * Collectives (Thakur, Rabenseifner and Gropp 2005; shared/notes/exchange-methods.md section 4),
 * n bytes over p ranks, a link costing alpha + beta * bytes (a measured link: each step's message
 * at its own size, 2(p-1) messages of n/p for the ring, two of n/2, n/4, ... for Rabenseifner):
 *   ring            2(p-1) alpha + 2(p-1)/p n beta
 *   Rabenseifner    2 lg p alpha + 2(p-1)/p n beta        (p a power of two)
 *   hierarchical    a ring inside each node of G ranks, one between the N nodes, a ring again:
 *                   2(G-1) a_in + 2(G-1)/G n b_in + 2(N-1) a_out + 2(N-1)/N n b_out
 * With several nodes a flat ring or Rabenseifner crosses a node's one link: its alpha and beta are
 * the link's between nodes. An allreduce costs the cheapest of those that apply (as MPI and NCCL
 * choose the algorithm by size).
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
 *                      pushed; with
 *                      node-local sums a piece first costs G - 1 messages inside the node (the
 *                      node's root receiving each other worker's) and its sum as many after the
 *                      pull (the root handing it on).
 * The pieces of every method but BSP go at the links' streamed rate where it was measured
 * (link_cost.streamed); BSP's one allreduce at the rate of one message alone.
 * One worker exchanges nothing: F + B + U. */
#ifndef COSTMODEL_H
#define COSTMODEL_H

#include <stdbool.h>
#include <stddef.h>

/* A link: what one message of n bytes costs, alpha + beta n, or, where `curve` is given, the times
 * measured for messages of increasing sizes (dtrain-commbench's table), read between two sizes on
 * the straight line through them, below the first at the first's time (a small message costs its
 * latency) and past the last on the last two points' line. A measured curve keeps what a line
 * fitted over 4 KiB-32 MiB loses: the latency of a small message across a shaped queue, and a
 * rate that changes with size. */
struct link_point {
    double bytes, seconds;
};

struct link_cost {
    double alpha, beta;
    const struct link_point *curve;   /* NULL: alpha and beta */
    int points;                       /* 2 or more where curve is given */
    /* Where measured with many messages under way at once (dtrain-commbench --inflight K: a
     * message's share of their time), as a layer-wise method's pieces and a server's partitions
     * travel; NULL: they cost what one message alone does. A link kept busy by many reaches a
     * rate one at a time does not (TCP's window, MPI's progress). */
    const struct link_point *streamed;
    int streamed_points;
};

/* Seconds of one message of `bytes` over link. */
double link_message(struct link_cost link, double bytes);

struct cluster_shape {
    int nodes, gpus_per_node;  /* workers: nodes x gpus_per_node */
    struct link_cost intra, inter;   /* inside a node, between nodes */
    int servers;               /* parameter servers (each on a node of its own); 0: one per worker node */
    /* Instead, one server on each worker node, beside its workers (BytePS's colocated mode,
     * dtrain-train --ps-colocated): a node's link carries the (N - 1) / N of its pushes bound for
     * the other nodes' servers and its own server's answers to them, pushes and pulls alike. */
    bool servers_colocated;
    /* Nodes behind one link to the rest (a leaf switch's uplink; 0 or 1: a link a node): the
     * servers' pushes and pulls of those nodes cross it together. An allreduce is measured over
     * the job (allreduce) or composed a link a node. */
    int nodes_per_link;
    /* The allreduce of this job as measured at its size (dtrain-commbench or nccl-tests over all its
     * workers: the seconds of n bytes, link_message's reading of the curve), or NULL: composed from
     * the links by the algorithms above. A measured one carries what the algorithms leave out: the
     * library's own choice of algorithm, links shared by several pairs, a host's cores shared by
     * its ranks. */
    const struct link_cost *allreduce;
    /* The transport's largest message sent at once (0: MODEL_EAGER_BYTES); a bigger one waits for
     * the receiver's answer to its first fragment, which crosses the other way (Open MPI's
     * rendezvous; btl_tcp_eager_limit). */
    double eager_bytes;
};

/* Open MPI's TCP eager limit (ompi_info: btl_tcp_eager_limit, 65536 by default). */
#define MODEL_EAGER_BYTES 65536.0

struct layer_cost {
    double forward, backward;  /* seconds a step */
    double bytes;              /* its gradients */
};

struct step_costs {
    int layers;
    const struct layer_cost *layer;   /* from the input */
    double update;             /* seconds a step, all parameters */
};

struct method_settings {
    double partition_bytes;    /* ByteScheduler's and the servers' partitions (0: 4096000) */
    double credit_bytes;       /* ByteScheduler's bytes under way at once (0: 16000000) */
    bool ps_node_sums_off;     /* parameter servers: every worker pushes its own (default: a node's
                                  workers sum first and push once, as BytePS and dtrain-train do) */
};

/* The allreduce algorithms, and the cheapest that applies: seconds for n bytes. */
double cost_ring(int p, struct link_cost link, double bytes);
double cost_rabenseifner(int p, struct link_cost link, double bytes);   /* p a power of two, else -1 */
double cost_hierarchical(const struct cluster_shape *c, double bytes);
double cost_allreduce(const struct cluster_shape *c, double bytes);

/* Seconds of one step of method (a name or alias of exchange_methods.h: "bsp-a2a", "wfbp-ps", ...)
 * on cluster c; -1 for a method it does not know. */
double cost_step(const struct step_costs *s, const struct cluster_shape *c, const char *method,
                 const struct method_settings *settings);

/* Whether the model has a step for method (every method of exchange_methods.h should). */
bool cost_knows(const char *method);

#endif
