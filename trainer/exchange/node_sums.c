/* node_sums.c - the workers of a node sum a partition before it leaves the node (see node_sums.h). */
#include "trainer/exchange/node_sums.h"

#include <stdlib.h>

#include "trainer/exchange/placement.h"

void node_sums_free(struct node_sums *ns)
{
    free(ns->first), free(ns->member), free(ns->slot), free(ns->peers), free(ns->node_sum);
    *ns = (struct node_sums){.node = -1, .local = -1};
}

int node_sums_plan(struct node_sums *ns, int world, const char *const *hosts, const bool *serving, int me,
                   bool wanted, bool *several, struct dt_err *err)
{
    *ns = (struct node_sums){.node = -1, .local = -1};
    *several = false;
    ns->first = calloc((size_t)world + 1, sizeof *ns->first);
    ns->member = calloc((size_t)world, sizeof *ns->member);
    if (!ns->first || !ns->member)
        return node_sums_free(ns), dt_fail(err, "out of memory");
    ns->nodes = placement_nodes(world, hosts, serving, ns->first, ns->member);
    for (int n = 0; n < ns->nodes; n++) {
        int size = ns->first[n + 1] - ns->first[n];
        *several |= size > 1;
        if (wanted && size > NODE_SUMS_MAX_WORKERS) {
            dt_fail(err, "node %s has %d workers; node-local sums take at most %d (--ps-node-sums off)",
                    hosts[ns->member[ns->first[n]]], size, NODE_SUMS_MAX_WORKERS);
            return node_sums_free(ns), -1;
        }
        for (int k = ns->first[n]; k < ns->first[n + 1]; k++)
            if (ns->member[k] == me)
                ns->node = n, ns->local = k - ns->first[n], ns->size = size;
    }
    if (!wanted || !*several)
        node_sums_free(ns);
    return 0;
}

int node_sums_root(const struct node_sums *ns, int node, int p)
{
    int size = ns->first[node + 1] - ns->first[node];
    return ns->member[ns->first[node] + p % size];
}

static bool is_root(const struct node_sums *ns, int p)
{
    return p % ns->size == ns->local;
}

int node_sums_buffers(struct node_sums *ns, const size_t *count, int nparts, size_t total, struct dt_err *err)
{
    size_t rooted = 0;   /* floats of the partitions this worker roots */
    ns->slot = calloc((size_t)nparts + 1, sizeof *ns->slot);
    if (!ns->slot)
        return dt_fail(err, "out of memory");
    for (int p = 0; p < nparts; p++) {
        ns->slot[p] = rooted * (size_t)(ns->size - 1);
        rooted += is_root(ns, p) ? count[p] : 0;
    }
    ns->peers = malloc((rooted * (size_t)(ns->size - 1) + 1) * sizeof(float));
    ns->node_sum = malloc((total + 1) * sizeof(float));
    return ns->peers && ns->node_sum ? 0 : dt_fail(err, "out of memory for the node's sums of %zu floats", rooted);
}

/* The world rank of this node's worker j. */
static int local_rank(const struct node_sums *ns, int j)
{
    return ns->member[ns->first[ns->node] + j];
}

/* Where worker j's (j != this root) push of t's partition lands in peers. */
static float *peer_push(const struct node_sums *ns, const struct comm_thread_transfer *t, int j)
{
    int index = j < ns->local ? j : j - 1;   /* among the others */
    return ns->peers + ns->slot[t->index] + (size_t)index * t->count;
}

size_t node_sums_charge(const struct node_sums *ns, const struct comm_thread_transfer *t)
{
    return ns->size == 1 || is_root(ns, t->index) ? t->count * sizeof(float) : 0;
}

/* A push of the floats at from to peer (the server, or the node's root) and a receive of the sum
 * it sends back into the inbox. */
static int push_to(struct comm *comm, struct comm_thread_transfer *t, const float *from, int peer,
                   const struct node_push *push, struct dt_err *err)
{
    size_t bytes = t->count * sizeof(float);
    t->nreqs = 2;
    return comm->isend(comm, from, bytes, peer, push->tag, &t->reqs[0], err) < 0 ||
                   comm->irecv(comm, push->inbox + t->first, bytes, peer, push->tag, &t->reqs[1], err) < 0
               ? dt_wrap(err, "pushing partition %d to rank %d (%s)", t->index, peer,
                         peer == push->server ? "its server" : "its root on this node")
               : 0;
}

int node_push_to_server(struct comm *comm, struct comm_thread_transfer *t, const struct node_push *push,
                        struct dt_err *err)
{
    return push_to(comm, t, push->grads + t->first, push->server, push, err);
}

int node_sums_start(struct node_sums *ns, struct comm *comm, struct comm_thread_transfer *t,
                    const struct node_push *push, struct dt_err *err)
{
    size_t bytes = t->count * sizeof(float);
    if (ns->size == 1)   /* alone on its node */
        return node_push_to_server(comm, t, push, err);
    if (!is_root(ns, t->index))
        return push_to(comm, t, push->grads + t->first, local_rank(ns, t->index % ns->size), push, err);
    t->credit_stage = 1;   /* the root's credit is spent on its push across the link */
    t->nreqs = 0;
    for (int j = 0; j < ns->size; j++)
        if (j != ns->local &&
            comm->irecv(comm, peer_push(ns, t, j), bytes, local_rank(ns, j), push->tag, &t->reqs[t->nreqs++], err) < 0)
            return dt_wrap(err, "receiving partition %d from rank %d of this node", t->index, local_rank(ns, j));
    return 0;
}

/* The root's sum of the node's pushes of t's partition, in the node's rank order. */
static void sum_node(struct node_sums *ns, const struct comm_thread_transfer *t, const float *mine)
{
    float *sum = ns->node_sum + t->first;
    for (size_t i = 0; i < t->count; i++) {
        float s = ns->local == 0 ? mine[i] : peer_push(ns, t, 0)[i];
        for (int j = 1; j < ns->size; j++)
            s += j == ns->local ? mine[i] : peer_push(ns, t, j)[i];
        sum[i] = s;
    }
}

int node_sums_advance(struct node_sums *ns, struct comm *comm, struct comm_thread_transfer *t,
                      const struct node_push *push, struct dt_err *err)
{
    if (ns->size == 1 || !is_root(ns, t->index) || t->stage == 2)
        return 0;   /* done */
    if (t->stage == 0) {   /* every push of the node is in */
        sum_node(ns, t, push->grads + t->first);
        return push_to(comm, t, ns->node_sum + t->first, push->server, push, err) < 0 ? -1 : 1;
    }
    t->nreqs = 0;   /* the servers' sum is in: to the node's other workers */
    for (int j = 0; j < ns->size; j++)
        if (j != ns->local && comm->isend(comm, push->inbox + t->first, t->count * sizeof(float), local_rank(ns, j),
                                          push->tag, &t->reqs[t->nreqs++], err) < 0)
            return dt_wrap(err, "handing partition %d's sum to rank %d of this node", t->index, local_rank(ns, j));
    return 1;
}
