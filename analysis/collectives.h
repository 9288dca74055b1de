/* collectives.h - the cluster the cost model (costmodel.h) runs a step on: its links, as an
 * alpha-beta line or a measured curve, its shape (nodes, workers, servers, nodes behind a link),
 * and what an allreduce costs on it.
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
 * choose the algorithm by size). */
#ifndef COLLECTIVES_H
#define COLLECTIVES_H

#include <stdbool.h>

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
    /* Where measured beside it (dtrain-commbench --inflight K on an allreduce): one such
     * nonblocking allreduce alone, and the K the streamed times are a share of. Open MPI's
     * in-place nonblocking allreduce (libnbc's binomial tree) crosses a link one way, then back:
     * under way with others, one's way back overlaps the next one's way out; alone, it does not. */
    const struct link_point *alone;
    int alone_points, inflight;
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
    /* A node's pushes and pulls take turns on one rate (the two directions of its link as one):
     * how the reference comparison's BytePS ran over 10 GbE TCP, whose BSP-PS exchange at 8-32 GPUs
     * is a push and then a pull of every byte at the link's rate (docs/cost-model.md). false: each
     * direction at its own rate, as dtrain's servers over Open MPI (colocated servers share one
     * link either way). */
    bool servers_half_duplex;
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
    /* With colocated servers, their round as measured over this job's nodes (dtrain-commbench --op
     * colocated, one rank a node: every node's pushes to every other's server and the sums back,
     * both ways across the links at once; the seconds of a buffer of n bytes), or NULL: the
     * servers' traffic composed from the inter link. A measured round carries what composing
     * leaves out: the two directions of a link loaded at once, TCP's flows sharing a queue. */
    const struct link_cost *servers_round;
    /* The link between nodes as the servers' pushes and pulls find it, one direction at a time
     * (dtrain-commbench --op pushpull on 2 ranks across it: a push, then its sum back), or NULL:
     * inter's reading, which an allreduce measured with both directions loaded at once. On a
     * shaped link one direction alone went 17-20% faster than that reading says (2026-11-27). */
    const struct link_cost *servers_link;
    /* ByteScheduler-PS's traffic alone as measured over this job's ranks (dtrain-commbench
     * --partition-bytes, the seconds of a round of n bytes in its pieces), or NULL. Its schedule's
     * pushes and pulls cross the link's two ways at once, which a shaped TCP link carries slower
     * than each way alone: the model's slow-down of a message while the other way is busy is fitted
     * to this measurement (costmodel_bytescheduler.c). */
    const struct link_cost *servers_pieces;
    /* The transport's largest message sent at once (0: MODEL_EAGER_BYTES); a bigger one waits for
     * the receiver's answer to its first fragment, which crosses the other way (Open MPI's
     * rendezvous; btl_tcp_eager_limit). */
    double eager_bytes;
};

/* Open MPI's TCP eager limit (ompi_info: btl_tcp_eager_limit, 65536 by default). */
#define MODEL_EAGER_BYTES 65536.0

/* The allreduce algorithms, and the cheapest that applies: seconds for n bytes. */
double cost_ring(int p, struct link_cost link, double bytes);
double cost_rabenseifner(int p, struct link_cost link, double bytes);   /* p a power of two, else -1 */
double cost_hierarchical(const struct cluster_shape *c, double bytes);
double cost_allreduce(const struct cluster_shape *c, double bytes);

#endif
