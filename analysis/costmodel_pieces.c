/* costmodel_pieces.c - what a piece of a step's gradients costs (costmodel_pieces.h): its push
 * and its pull across the links or inside a node, an allreduce among many under way, and when
 * backward readies each layer. */
#include "analysis/costmodel_pieces.h"

#include <stddef.h>

/* The link as many messages under way at once find it (link_cost.streamed), where measured. */
static struct link_cost streamed_link(struct link_cost link)
{
    if (!link.streamed || link.streamed_points < 2)
        return link;
    return (struct link_cost){.curve = link.streamed, .points = link.streamed_points};
}

/* An allreduce among many under way: on the links' (and the measured allreduce's) streamed rates. */
static double allreduce_streamed(const struct cluster_shape *c, double bytes)
{
    struct cluster_shape busy = *c;
    struct link_cost measured = c->allreduce ? streamed_link(*c->allreduce) : (struct link_cost){0};
    busy.intra = streamed_link(c->intra), busy.inter = streamed_link(c->inter);
    busy.allreduce = c->allreduce ? &measured : NULL;
    return cost_allreduce(&busy, bytes);
}

/* Allreduces started apart at three ranks, a worker a node, the first two behind one link
 * (nodes_per_link >= 2): Open MPI's Rabenseifner beyond a power of two folds rank 0 into rank 1
 * before a 2-rank allreduce of ranks 1 and 2 across the link, and hands the sums back after. Each
 * rank starting its allreduces on its own as backward readies them (WFBP, MG-WFBP), one's folds
 * ride the leaf while others hold the link: an operation's share of the link is the 2-rank
 * allreduce's across it (a trial stream of allreduces at three ranks on the test cluster: 7.05 ms
 * a MB, the 2-rank link's 7.0; four started together, the job's measured allreduce: 8.6). The
 * folds' own time, on the unshaped leaf, is not counted. */
static bool folds_beside_the_link(const struct cluster_shape *c)
{
    return c->nodes == 3 && c->gpus_per_node == 1 && c->nodes_per_link >= 2;
}

static double allreduce_started_apart(const struct cluster_shape *c, double bytes)
{
    struct cluster_shape core = *c;
    core.nodes = 2, core.allreduce = NULL, core.inter = streamed_link(c->inter);
    return cost_allreduce(&core, bytes);
}

/* The link between nodes as a server's messages cross it: a direction at a time where measured so. */
struct link_cost servers_link_of(const struct transfer_cost *t)
{
    return t->c->servers_link ? *t->c->servers_link : t->c->inter;
}

/* A piece's push (or pull) of `bytes` across the link between nodes: its bytes at the busiest
 * link (`load` of them a byte pushed), or half the colocated servers' round of a buffer that size
 * as measured (a push and a pull); nothing when it stays on the node. */
static double time_across(const struct transfer_cost *t, double bytes, double load)
{
    if (!(bytes > 0 && load > 0))
        return 0;
    if (t->round)
        return link_message(streamed_link(*t->round), bytes) / 2;
    return link_message(streamed_link(servers_link_of(t)), bytes * load);
}

/* The node's root receiving (or sending) a piece from each of its other workers, one after another:
 * inside the node, on links of its own, so a piece's hand-offs run while other pieces cross the
 * link between nodes (BytePS's and dtrain's stages of a partition are pipelined). */
double piece_in_node_cost(const struct transfer_cost *t, double bytes)
{
    return t->in_node > 0 ? t->in_node * link_message(streamed_link(t->c->intra), bytes) : 0;
}

/* The link's time for a piece across the link between nodes: a push's (after the node's sum, `load`
 * its bytes across the busiest link a byte), or the whole allreduce's. */
double piece_push_cost(const struct transfer_cost *t, double bytes, double load)
{
    if (t->ps)
        return time_across(t, bytes, load);
    return t->apart && folds_beside_the_link(t->c) ? allreduce_started_apart(t->c, bytes) : allreduce_streamed(t->c, bytes);
}

/* A server's pull of a piece back across the link (`load` its bytes across the busiest link a byte). */
double piece_pull_cost(const struct transfer_cost *t, double bytes, double load)
{
    return time_across(t, bytes, load);
}

/* When backward (started at 0) has finished layer l: R_l = the backward of layers l..L-1. */
void backward_ready_times(const struct step_costs *s, double *ready)
{
    double t = 0;
    for (int l = s->layers - 1; l >= 0; l--)
        ready[l] = t += s->layer[l].backward;
}

