/* node_sums.h - BytePS's node-local sums for the parameter servers (ps.c): the workers of a node
 * add up each partition inside the node before it crosses the node's link, so that one push and
 * one pull per node and partition go to the servers instead of one per worker.
 *
 * Partition p's root on a node is the node's worker p mod (its workers): the workers take turns, as
 * BytePS spreads its reduce roots. A worker that is not p's root pushes p to the root and gets the
 * servers' sum back from it (one stage). The root receives the others' pushes (stage 0), adds them
 * to its own in the node's rank order and pushes the node's sum to p's server, receiving the sum
 * of every node's (stage 1), then hands that sum to the node's other workers (stage 2). Inside a
 * node the messages travel through MPI's shared memory. A node with one worker pushes as without.
 * The workers then divide by every worker of the job, as without: the mean is the same, only the
 * order of the additions differs (the node's first). */
#ifndef NODE_SUMS_H
#define NODE_SUMS_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/exchange/comm_thread.h"
#include "common/dt_error.h"

/* The most workers a node may have: the root's stage holds a request per other worker. */
#define NODE_SUMS_MAX_WORKERS (ENGINE_MAX_REQUESTS + 1)

struct node_sums {
    int nodes;                 /* the nodes with workers */
    int *first, *member;       /* node n's workers (world ranks, in rank order): member[first[n]]
                                  up to member[first[n + 1] - 1] */
    int node, local, size;     /* this worker's node, its index there, the node's workers (-1: a server) */
    size_t *slot;              /* root: where partition p's pushes begin in peers */
    float *peers;              /* root: the node's other workers' pushes of its partitions */
    float *node_sum;           /* root: the node's sums, indexed like the gradient buffer */
};

/* Plans the nodes from every rank's host and which ranks serve; me: this rank. *several: whether a
 * node has two or more workers. The plan is kept where node-local sums are wanted and a node has
 * several workers (else it is freed: nothing is summed inside a node). 0, or -1 with err (wanted,
 * and a node with more than NODE_SUMS_MAX_WORKERS workers). */
int node_sums_plan(struct node_sums *ns, int world, const char *const *hosts, const bool *serving, int me,
                   bool wanted, bool *several, struct dt_err *err);

/* The world rank that pushes partition p for node n: its root there. */
int node_sums_root(const struct node_sums *ns, int node, int p);

/* A worker's buffers for the partitions it roots (partition p: count[p] floats of a gradient buffer
 * of total floats). 0 or -1 with err. */
int node_sums_buffers(struct node_sums *ns, const size_t *count, int nparts, size_t total, struct dt_err *err);

/* What the stages of a partition's transfer need besides the transfer (t->index: the partition). */
struct node_push {
    const float *grads;        /* this worker's gradients */
    float *inbox;              /* where the servers' sum arrives (indexed like the gradients) */
    int server;                /* the partition's server, a world rank */
    int tag;                   /* the partition's tag, inside the node and to the server alike */
};

/* A worker's own push of t's partition to its server and the receive of the sum (what every worker
 * does with the node's sums off, and a worker alone on its node with them on). */
int node_push_to_server(struct comm *comm, struct comm_thread_transfer *t, const struct node_push *push,
                        struct dt_err *err);

/* The communication thread's start and advance of t (comm_thread.h), and the credit t takes: a
 * root's (or a lone worker's) bytes, pushed across the link; none for a push to the root, which
 * must never wait behind the root's own transfers, waiting for it. */
int node_sums_start(struct node_sums *ns, struct comm *comm, struct comm_thread_transfer *t,
                    const struct node_push *push, struct dt_err *err);
int node_sums_advance(struct node_sums *ns, struct comm *comm, struct comm_thread_transfer *t,
                      const struct node_push *push, struct dt_err *err);
size_t node_sums_charge(const struct node_sums *ns, const struct comm_thread_transfer *t);

void node_sums_free(struct node_sums *ns);

#endif
