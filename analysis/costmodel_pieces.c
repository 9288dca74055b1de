/* costmodel_pieces.c - what a piece of a step's gradients costs (costmodel_pieces.h): its push
 * and its pull across the links or inside a node, an allreduce among many under way, and when
 * backward readies each layer. */
#include "analysis/costmodel_pieces.h"

#include <math.h>
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
 * (nodes_per_link >= 2): ranks 0 and 1 share a leaf, and rank 2's allreduce with them crosses the
 * link as a 2-rank one would. Each rank starting its allreduces on its own, as backward readies
 * them (WFBP, MG-WFBP) or as the credit frees and rank 0's choice arrives (ByteScheduler-A2A), one's
 * hops on the leaf ride beside others' time on the link: an operation's share of the link is the
 * 2-rank allreduce's across it (a trial stream of allreduces at three ranks on the test cluster:
 * 7.05 ms a MB, the 2-rank link's 7.0; four started together from idle, dtrain-commbench
 * --inflight's, 8.6). */
static bool crosses_as_two_ranks(const struct cluster_shape *c)
{
    return c->nodes == 3 && c->gpus_per_node == 1 && c->nodes_per_link >= 2;
}

/* A 2-rank allreduce across the link, from its messages as link measured them (a curve of c's
 * inter: streamed or alone). */
static double allreduce_across(const struct cluster_shape *c, struct link_cost link, double bytes)
{
    struct cluster_shape core = *c;
    core.nodes = 2, core.gpus_per_node = 1, core.allreduce = NULL, core.inter = link;
    return cost_allreduce(&core, bytes);
}

static double two_rank_share(const struct cluster_shape *c, double bytes)
{
    return allreduce_across(c, streamed_link(c->inter), bytes);
}

/* A link's (or measured allreduce's) curve of one nonblocking allreduce alone; .curve NULL where
 * not measured. */
static struct link_cost alone_link(const struct link_cost *link)
{
    return link->alone && link->alone_points >= 2 ? (struct link_cost){.curve = link->alone, .points = link->alone_points}
                                                  : (struct link_cost){0};
}

/* One of dtrain-train's allreduces alone over the job: the job's measured allreduce, or a 2-rank
 * job's link; -1 where not measured. */
static double job_allreduce_alone(const struct cluster_shape *c, double bytes)
{
    struct link_cost alone = alone_link(c->allreduce ? c->allreduce : &c->inter);
    if (!alone.curve || (!c->allreduce && c->nodes * c->gpus_per_node != 2))
        return -1;
    return c->allreduce ? link_message(alone, bytes) : allreduce_across(c, alone, bytes);
}

/* Open MPI's nonblocking allreduce in place (dtrain-train's; libnbc takes its binomial tree for
 * every in-place call) sums up to rank 0 and sends the sums back down: across a link its bytes go
 * one way, then the same bytes back. Among others one's way back rides beside the next one's way
 * out; one alone has nothing beside it. K started together then take one alone's time plus K - 1
 * shares: share = (K x each one's part of the K's time - alone) / (K - 1), at least half of one
 * alone (its one way) and at most the K's part. Where one alone was not measured, or took no
 * longer than its part of K, the share is that part. */
static double share_among_others(double part_of_k, double alone, int k)
{
    if (!(alone > part_of_k) || k < 2)
        return part_of_k;
    return fmax((k * part_of_k - alone) / (k - 1), alone / 2);
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
    const struct cluster_shape *c = t->c;
    if (t->ps)
        return time_across(t, bytes, load);
    if (crosses_as_two_ranks(c)) {
        struct link_cost alone = alone_link(&c->inter);
        return share_among_others(two_rank_share(c, bytes), alone.curve ? allreduce_across(c, alone, bytes) : -1,
                                  c->inter.inflight);
    }
    return share_among_others(allreduce_streamed(c, bytes), job_allreduce_alone(c, bytes),
                              c->allreduce ? c->allreduce->inflight : c->inter.inflight);
}

/* The way back of an allreduce alone: one alone takes its time, of which `cost` held the link. */
double piece_tail(const struct transfer_cost *t, double bytes, double cost)
{
    double alone = t->ps ? -1 : job_allreduce_alone(t->c, bytes);
    return alone > cost ? alone - cost : 0;
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

