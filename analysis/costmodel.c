/* costmodel.c - predicted step times of the exchange methods (see costmodel.h). */
#include "costmodel.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exchange_methods.h"
#include "grouping.h"

/* Steps the ByteScheduler schedule is run for before its period is read off. */
#define SIMULATED_STEPS 6

/* ---------- pieces sent one at a time ---------- */

/* A piece of the gradients: when backward has made it ready (from the start of backward), what
 * sending it costs, and its layer and bytes. */
struct piece {
    double ready, cost, bytes;
    int layer;
    double done;               /* when its sum is back */
    double done_sending;       /* when it has crossed the link (its credit back) */
};

/* Sends pieces in their order, one at a time from `from`: each starts when ready and the link is
 * free. Returns when the last one has left. */
static double send_in_order(struct piece *pieces, int n, double from)
{
    double free_at = from;
    for (int k = 0; k < n; k++) {
        double start = pieces[k].ready > free_at ? pieces[k].ready : free_at;
        free_at = start + pieces[k].cost;
        pieces[k].done = free_at;
    }
    return free_at;
}

/* What a method's transfers cost: an allreduce, or a parameter server's push and pull. */
struct transfer_cost {
    const struct cluster_shape *c;
    bool ps;
    double load;               /* a push's bytes at the busiest link, per byte pushed */
    int in_node;               /* node-local sums: a piece's hand-offs inside a node each way */
    bool one_link;             /* pushes and pulls share one link (colocated servers) */
    const struct link_cost *round;   /* the colocated servers' round as measured, or NULL */
    double eager;              /* a bigger message needs a handshake (cluster_shape.eager_bytes) */
};

/* The link as many messages under way at once find it (link_cost.streamed), where measured. */
static struct link_cost streamed(struct link_cost link)
{
    if (!link.streamed || link.streamed_points < 2)
        return link;
    return (struct link_cost){.curve = link.streamed, .points = link.streamed_points};
}

/* An allreduce among many under way: on the links' (and the measured allreduce's) streamed rates. */
static double allreduce_streamed(const struct cluster_shape *c, double bytes)
{
    struct cluster_shape busy = *c;
    struct link_cost measured = c->allreduce ? streamed(*c->allreduce) : (struct link_cost){0};
    busy.intra = streamed(c->intra), busy.inter = streamed(c->inter);
    busy.allreduce = c->allreduce ? &measured : NULL;
    return cost_allreduce(&busy, bytes);
}

/* pieces: the partitions of a step, each at one server: fewer than the servers leave some idle. */
static struct transfer_cost transfer_cost_of(const struct cluster_shape *c, bool ps, bool node_sums, int pieces)
{
    struct transfer_cost t = {.c = c, .ps = ps};
    int pushers = node_sums ? 1 : c->gpus_per_node;   /* a node's pushes of a piece */
    int servers = c->servers > 0 ? c->servers : c->nodes;
    servers = pieces > 0 && pieces < servers ? pieces : servers;
    int behind = c->nodes_per_link > 1 ? (c->nodes_per_link < c->nodes ? c->nodes_per_link : c->nodes) : 1;
    double load = (double)(c->nodes * pushers) / servers;   /* each server takes every push of its share */
    if (behind * pushers > load)
        load = behind * pushers;               /* a link carries all its nodes' pushes */
    if (c->servers_colocated)   /* what crosses: the pushes from outside to the servers behind a link */
        load = (double)pushers * (c->nodes - behind) * (behind < servers ? (double)behind / servers : 1);
    /* The measured round is this traffic where it has the round's pattern: one push a node (node
     * sums, or a worker a node), every node's server holding parts. */
    if (c->servers_colocated && pushers == 1 && servers == c->nodes)
        t.round = c->servers_round;
    t.one_link = c->servers_colocated;
    t.load = load;
    t.in_node = node_sums ? c->gpus_per_node - 1 : 0;
    t.eager = c->eager_bytes > 0 ? c->eager_bytes : MODEL_EAGER_BYTES;
    return t;
}

/* A piece's push (or pull) of `bytes` across the link between nodes: its bytes at the busiest
 * link (t->load of them), or half the colocated servers' round of a buffer that size as measured
 * (a push and a pull); nothing when it stays on the node. */
static double across(const struct transfer_cost *t, double bytes)
{
    if (!(bytes > 0 && t->load > 0))
        return 0;
    if (t->round)
        return link_message(streamed(*t->round), bytes) / 2;
    return link_message(streamed(t->c->inter), bytes * t->load);
}

/* The node's root receiving (or sending) a piece from each of its other workers, one after another. */
static double in_node(const struct transfer_cost *t, double bytes)
{
    return t->in_node > 0 ? t->in_node * link_message(streamed(t->c->intra), bytes) : 0;
}

/* The link's time for a piece (a push's, after the node's sum, or the whole allreduce's). */
static double send_cost(const struct transfer_cost *t, double bytes)
{
    return t->ps ? in_node(t, bytes) + across(t, bytes) : allreduce_streamed(t->c, bytes);
}

/* A server's pull of a piece: back across the link, then the node's root hands it on. */
static double pull_cost(const struct transfer_cost *t, double bytes)
{
    return across(t, bytes) + in_node(t, bytes);
}

/* When a piece's sum is back, after it has left at `sent`: a pull comes after a push. */
static double sum_back(const struct transfer_cost *t, double sent, double bytes)
{
    return t->ps ? sent + pull_cost(t, bytes) : sent;
}

/* When backward (started at 0) has finished layer l: R_l = the backward of layers l..L-1. */
static void ready_times(const struct step_costs *s, double *ready)
{
    double t = 0;
    for (int l = s->layers - 1; l >= 0; l--)
        ready[l] = t += s->layer[l].backward;
}

/* ---------- one-step schedules: bsp, wfbp, mg-wfbp and their servers ---------- */

/* Each layer's (or group's) gradients as pieces, from the last: group g spans layers [first[g],
 * first[g + 1]). Returns the end of the exchange, from the start of backward. */
static double exchange_groups(const struct step_costs *s, const struct transfer_cost *t, const int *first, int groups)
{
    double *ready = malloc((size_t)s->layers * sizeof *ready);
    struct piece *pieces = calloc((size_t)groups, sizeof *pieces);
    if (!ready || !pieces)
        return free(ready), free(pieces), -1;
    ready_times(s, ready);
    for (int g = groups - 1, k = 0; g >= 0; g--, k++) {
        int end = g + 1 < groups ? first[g + 1] : s->layers;
        for (int l = first[g]; l < end; l++)
            pieces[k].bytes += s->layer[l].bytes;
        pieces[k].ready = ready[first[g]];
        pieces[k].cost = send_cost(t, pieces[k].bytes);
    }
    double sent = send_in_order(pieces, groups, 0), back = sum_back(t, sent, pieces[groups - 1].bytes);
    free(ready), free(pieces);
    return back;
}

/* Partitions of at most `per` bytes of [from, to) of the buffer, appended to pieces with the
 * ready time of the layer holding each one's first byte. */
static int cut(const struct step_costs *s, const double *ready, double from, double to, double per,
               struct piece *pieces, int n)
{
    for (double at = from; at < to; at += per) {
        double offset = 0;
        int l = 0;
        while (l + 1 < s->layers && offset + s->layer[l].bytes <= at)
            offset += s->layer[l++].bytes;
        pieces[n++] = (struct piece){.ready = ready[l], .bytes = to - at < per ? to - at : per, .layer = l};
    }
    return n;
}

/* A parameter server's pieces (bsp-ps, wfbp-ps), each pushed once ready: the pushes under way share
 * the link (each of m at 1/m of it), a piece's pull starting when its push is through and sharing
 * the link the other way (with colocated servers the same link) with the other pulls (Open MPI
 * interleaves big messages' fragments); .done_sending and .done set. Returns when the last pull is
 * through (-1: out of memory). */
static double share_the_link(struct piece *p, int n, const struct transfer_cost *t)
{
    int *state = calloc((size_t)n + 1, sizeof *state);   /* 0 waiting, 1 pushing, 2 pulling, 3 done */
    double *left = calloc((size_t)n + 1, sizeof *left), now = 0, back = 0;
    if (!state || !left)
        return free(state), free(left), -1;
    for (int done = 0; done < n;) {
        int pushing = 0, pulling = 0;
        double soonest = INFINITY;   /* the next piece made ready */
        for (int k = 0; k < n; k++) {
            if (state[k] == 0 && p[k].ready <= now)
                state[k] = 1, left[k] = p[k].cost;
            pushing += state[k] == 1, pulling += state[k] == 2;
            if (state[k] == 0 && p[k].ready < soonest)
                soonest = p[k].ready;
        }
        int ways[3] = {0, t->one_link ? pushing + pulling : pushing, t->one_link ? pushing + pulling : pulling};
        double until = soonest;
        for (int k = 0; k < n; k++)
            if (state[k] == 1 || state[k] == 2)
                until = fmin(until, now + left[k] * ways[state[k]]);
        for (int k = 0; k < n; k++) {
            if (state[k] != 1 && state[k] != 2)
                continue;
            left[k] -= (until - now) / ways[state[k]];
            if (left[k] > 1e-12 * (1 + p[k].cost))
                continue;
            if (state[k] == 1)   /* pushed: the pull next */
                p[k].done_sending = until, state[k] = 2, left[k] = pull_cost(t, p[k].bytes);
            else
                state[k] = 3, p[k].done = back = until, done++;
        }
        now = until;
    }
    free(state), free(left);
    return back;
}


/* A parameter server's partitions of the whole buffer (bsp-ps, wfbp-ps), pushed from the last,
 * all after backward or each when backward has reached its first byte. Every push under way
 * shares the link (dtrain's and BytePS's servers take them all at once), and so do the pulls the
 * other way, each starting when its partition's push is through: pieces pushed together are
 * through together, so their pulls follow the pushes instead of overlapping them. */
static double exchange_partitions(const struct step_costs *s, const struct transfer_cost *t, double per,
                                  bool at_end_only)
{
    double total = 0;
    for (int l = 0; l < s->layers; l++)
        total += s->layer[l].bytes;
    int most = (int)ceil(total / per) + 1;
    double *ready = malloc((size_t)s->layers * sizeof *ready);
    struct piece *pieces = calloc((size_t)most, sizeof *pieces), *backwards = calloc((size_t)most, sizeof *pieces);
    if (!ready || !pieces || !backwards)
        return free(ready), free(pieces), free(backwards), -1;
    ready_times(s, ready);
    int n = cut(s, ready, 0, total, per, pieces, 0);
    for (int k = 0; k < n; k++) {   /* from the end of the buffer */
        backwards[k] = pieces[n - 1 - k];
        backwards[k].ready = at_end_only ? ready[0] : backwards[k].ready;
        backwards[k].cost = send_cost(t, backwards[k].bytes);
    }
    double back = share_the_link(backwards, n, t);   /* the last sum back */
    free(ready), free(pieces), free(backwards);
    return back;
}

/* MG-WFBP's groups (grouping.h), planned with the alpha and beta of the allreduce at this size
 * of job, as its fit on the job's links would find them (a line through 32 KiB and 2 MiB). */
static int mgwfbp_groups(const struct step_costs *s, const struct cluster_shape *c, int *first)
{
    double small = 32768, large = 2097152, t0 = cost_allreduce(c, small), t1 = cost_allreduce(c, large);
    struct alpha_beta fit = {.beta = (t1 - t0) / (large - small)};
    fit.alpha = t0 - fit.beta * small;
    double *backward = malloc((size_t)s->layers * sizeof *backward);
    size_t *bytes = malloc((size_t)s->layers * sizeof *bytes);
    bool *merged = malloc((size_t)s->layers * sizeof *merged);
    int groups = -1;
    if (backward && bytes && merged) {
        for (int l = 0; l < s->layers; l++)
            backward[l] = s->layer[l].backward, bytes[l] = (size_t)s->layer[l].bytes;
        grouping_mgwfbp(s->layers, backward, bytes, fit, merged, NULL);
        groups = 0;
        for (int l = 0; l < s->layers; l++)
            if (l == 0 || !merged[l])
                first[groups++] = l;
    }
    free(backward), free(bytes), free(merged);
    return groups;
}

/* ---------- ByteScheduler: steps in a row ---------- */

/* Bytes of the pieces started and not yet through the link at `now`. */
static double under_way(const struct piece *pieces, const bool *started, int n, double now)
{
    double bytes = 0;
    for (int k = 0; k < n; k++)
        if (started[k] && pieces[k].done_sending > now)
            bytes += pieces[k].bytes;
    return bytes;
}

/* The link's queue: the pieces of one step (in priority order) start, the best ready one first,
 * while the credit lasts (one start may overdraw it when nothing is under way), and cross the link
 * in the order they started, after what it carries from `free_at` on; returns when it is free
 * again. */
static double send_by_priority(struct piece *pieces, int n, double free_at, double credit,
                               const struct transfer_cost *t)
{
    bool *started = calloc((size_t)n, sizeof *started);
    if (!started)
        return -1;
    double now = -INFINITY;
    for (int left = n; left > 0; left--) {
        double soonest = INFINITY;
        for (int k = 0; k < n; k++)
            if (!started[k] && pieces[k].ready < soonest)
                soonest = pieces[k].ready;
        now = now > soonest ? now : soonest;
        int best = -1;
        for (;;) {   /* the best ready piece, once the credit lets it start */
            for (best = 0; best < n && (started[best] || pieces[best].ready > now); best++)
                ;
            double busy = under_way(pieces, started, n, now);
            if (busy == 0 || busy + pieces[best].bytes <= credit)
                break;
            double next = INFINITY;   /* wait for the first piece under way to get through */
            for (int k = 0; k < n; k++)
                if (started[k] && pieces[k].done_sending > now && pieces[k].done_sending < next)
                    next = pieces[k].done_sending;
            now = next;
        }
        started[best] = true;
        free_at = (now > free_at ? now : free_at) + pieces[best].cost;
        pieces[best].done_sending = free_at;
        pieces[best].done = sum_back(t, free_at, pieces[best].bytes);
    }
    free(started);
    return free_at;
}

/* The best ready piece that may start at `now` (ready, waiting, and the credit lets it: `busy`
 * bytes under way), or -1. */
static int next_to_start(const struct piece *pieces, const int *state, int n, double now, double busy, double credit)
{
    for (int k = 0; k < n; k++)
        if (state[k] == 0 && pieces[k].ready <= now)
            return busy == 0 || busy + pieces[k].bytes <= credit ? k : -1;
    return -1;
}

/* ---------- ByteScheduler's pieces through the servers' queues ---------- */

/* Where a server's piece is: waiting, or which message of its push and pull is crossing. */
enum piece_leg { LEG_WAITING, LEG_PUSH_HEAD, LEG_PUSH_ANSWER, LEG_PUSH, LEG_PULL_HEAD, LEG_PULL_ANSWER, LEG_PULL, LEG_DONE };

/* Puts a message costing `cost` on a queue free at *free_at from `now`; returns when it is through. */
static double queue_put(double *free_at, double now, double cost)
{
    *free_at = (*free_at > now ? *free_at : now) + cost;
    return *free_at;
}

/* Piece k's next message, from `now`: its leg moves on and at[k] says when that message is through.
 * Pushes cross queue[0], pulls queue[1] (with colocated servers the same), a handshake's answer the
 * other way; a message of no data costs the link's latency (the one-message curve at 0 bytes). */
static void next_leg(const struct piece *p, int k, int *leg, double *at, double now, double *queue[2],
                     const struct transfer_cost *t)
{
    int next = leg[k] + 1;
    if (p[k].bytes <= t->eager && (next == LEG_PUSH_HEAD || next == LEG_PULL_HEAD))
        next += 2;   /* sent at once */
    if ((leg[k] = next) == LEG_DONE)
        return;
    int way = leg[k] == LEG_PUSH_HEAD || leg[k] == LEG_PULL_ANSWER || leg[k] == LEG_PUSH ? 0 : 1;
    double cost = leg[k] == LEG_PUSH ? p[k].cost : leg[k] == LEG_PULL ? pull_cost(t, p[k].bytes) : link_message(t->c->inter, 0);
    at[k] = queue_put(queue[way], now, cost);
}

/* A parameter server's pieces of one step in priority order (bytescheduler-ps): started as
 * send_by_priority starts them, each message through its queue in the order put on it (queue[0]
 * and [1]: when each way is free, kept from step to step); a piece's credit back when its push is
 * through. Sets .done_sending and .done; 0, or -1 out of memory. */
static double queue_by_priority(struct piece *p, int n, double *queue[2], double credit, const struct transfer_cost *t)
{
    int *leg = calloc((size_t)n + 1, sizeof *leg);
    double *at = calloc((size_t)n + 1, sizeof *at), busy = 0, now = -INFINITY;
    if (!leg || !at)
        return free(leg), free(at), -1;
    for (int done = 0; done < n;) {
        for (int k; (k = next_to_start(p, leg, n, now, busy, credit)) >= 0; busy += p[k].bytes)
            next_leg(p, k, leg, at, now, queue, t);
        int k = -1;   /* the next message through, or the next piece made ready */
        double soonest = INFINITY;
        for (int j = 0; j < n; j++) {
            if (leg[j] != LEG_WAITING && leg[j] != LEG_DONE && (k < 0 || at[j] < at[k]))
                k = j;
            if (leg[j] == LEG_WAITING && p[j].ready > now && p[j].ready < soonest)
                soonest = p[j].ready;
        }
        if (k < 0 && (busy = 0, soonest == INFINITY))
            continue;   /* nothing under way holds credit (no rounding left): what is ready starts */
        if (k < 0 || soonest < at[k]) {
            now = soonest;
            continue;
        }
        now = at[k];
        if (leg[k] == LEG_PUSH)   /* pushed: the credit back */
            busy -= p[k].bytes, p[k].done_sending = now;
        next_leg(p, k, leg, at, now, queue, t);
        done += leg[k] == LEG_DONE;
        if (leg[k] == LEG_DONE)
            p[k].done = now;
    }
    free(leg), free(at);
    return 0;
}

/* The steady distance between two forward passes' starts: each layer's forward waits for its
 * sums of the step before and applies its share of the update first. */
static double bytescheduler_step(const struct step_costs *s, const struct transfer_cost *t, double per, double credit)
{
    int n = 0, most = 0;
    double total = 0;
    for (int l = 0; l < s->layers; l++)
        most += (int)ceil(s->layer[l].bytes / per) + 1, total += s->layer[l].bytes;
    struct piece *pieces = calloc((size_t)most + 1, sizeof *pieces);
    double *ready = malloc((size_t)s->layers * sizeof *ready), *done = calloc((size_t)s->layers, sizeof *done);
    if (!pieces || !ready || !done)
        return free(pieces), free(ready), free(done), -1;
    ready_times(s, ready);
    double start = 0, previous = 0, link_free = 0, ways[2] = {0, 0};
    double *queue[2] = {&ways[0], t->one_link ? &ways[0] : &ways[1]};   /* pushes', pulls' */
    for (int step = 0; step < SIMULATED_STEPS; step++) {
        double t_at = start;   /* the forward pass */
        for (int l = 0; l < s->layers; l++) {
            if (step > 0)
                t_at = (t_at > done[l] ? t_at : done[l]) + s->update * s->layer[l].bytes / total;
            t_at += s->layer[l].forward;
        }
        n = 0;   /* each layer cut on its own, in priority order */
        for (int l = 0; l < s->layers; l++)
            for (double at = 0; at < s->layer[l].bytes; at += per) {
                double bytes = s->layer[l].bytes - at < per ? s->layer[l].bytes - at : per;
                pieces[n++] = (struct piece){.ready = t_at + ready[l], .cost = send_cost(t, bytes), .bytes = bytes,
                                             .layer = l};
            }
        link_free = t->ps ? queue_by_priority(pieces, n, queue, credit, t)   /* its queues keep when they are free */
                          : send_by_priority(pieces, n, link_free, credit, t);
        if (link_free < 0)
            break;   /* out of memory */
        for (int l = 0; l < s->layers; l++)
            done[l] = 0;
        for (int k = 0; k < n; k++)
            done[pieces[k].layer] = pieces[k].done > done[pieces[k].layer] ? pieces[k].done : done[pieces[k].layer];
        previous = start;
        start = t_at + ready[0];   /* backward over: the next forward begins */
    }
    free(pieces), free(ready), free(done);
    return link_free < 0 ? -1 : start - previous;
}

/* ---------- a step ---------- */

/* What every method's step shares: the sums of the layers and the link's costs. */
struct step_inputs {
    const struct step_costs *s;
    const struct cluster_shape *c;
    struct transfer_cost t;
    double forward, backward, bytes, per, credit;
};

/* The overlapped exchange after the forward pass: forward, then backward or the exchange,
 * whichever ends later, then the update (-1 stays -1). */
static double overlapped(const struct step_inputs *in, double exchange)
{
    if (exchange < 0)
        return -1;
    return in->forward + (exchange > in->backward ? exchange : in->backward) + in->s->update;
}

static double bsp_step(const struct step_inputs *in)
{
    return overlapped(in, in->backward + cost_allreduce(in->c, in->bytes));
}

/* WFBP (every layer its own group) and MG-WFBP (grouping.h's merged groups). */
static double groups_step(const struct step_inputs *in, bool merge)
{
    const struct step_costs *s = in->s;
    int *first = malloc((size_t)s->layers * sizeof *first), groups = s->layers;
    if (!first)
        return -1;
    for (int l = 0; l < s->layers; l++)
        first[l] = l;
    if (merge)
        groups = mgwfbp_groups(s, in->c, first);
    double exchange = groups > 0 ? exchange_groups(s, &in->t, first, groups) : -1;
    free(first);
    return overlapped(in, exchange);
}

static double wfbp_step(const struct step_inputs *in)
{
    return groups_step(in, false);
}

static double mgwfbp_step(const struct step_inputs *in)
{
    return groups_step(in, true);
}

/* ByteScheduler's pieces cross under a credit, a few at a time, in priority order: the link's own
 * times (many in flight), not the servers' round, which puts every part under way at once as
 * BSP-PS and WFBP-PS do. */
static double bytescheduler_any_step(const struct step_inputs *in)
{
    struct transfer_cost t = in->t;
    t.round = NULL;
    return bytescheduler_step(in->s, &t, in->per, in->credit);
}

static double bsp_ps_step(const struct step_inputs *in)
{
    return overlapped(in, exchange_partitions(in->s, &in->t, in->per, true));
}

static double wfbp_ps_step(const struct step_inputs *in)
{
    return overlapped(in, exchange_partitions(in->s, &in->t, in->per, false));
}

/* Each method's step, keyed by the names of exchange_methods.h (a test checks that every method
 * there has one); whether its transfers go through servers is that table's. */
static const struct {
    const char *method;
    double (*step)(const struct step_inputs *in);
} step_of_method[] = {
    {"bsp-a2a", bsp_step},       {"wfbp-a2a", wfbp_step},     {"mg-wfbp", mgwfbp_step},
    {"bytescheduler-a2a", bytescheduler_any_step},             {"bsp-ps", bsp_ps_step},
    {"wfbp-ps", wfbp_ps_step},   {"bytescheduler-ps", bytescheduler_any_step},
};

bool cost_knows(const char *method)
{
    const struct method_facts *m = method_find(method);
    for (size_t i = 0; m && i < sizeof step_of_method / sizeof step_of_method[0]; i++)
        if (strcmp(step_of_method[i].method, m->name) == 0)
            return true;
    return false;
}

double cost_step(const struct step_costs *s, const struct cluster_shape *c, const char *method,
                 const struct method_settings *settings)
{
    const struct method_facts *m = method_find(method);
    if (!m)
        return -1;
    bool node_sums = m->servers && !(settings && settings->ps_node_sums_off);
    struct step_inputs in = {.s = s, .c = c};
    in.per = settings && settings->partition_bytes > 0 ? settings->partition_bytes : METHOD_PARTITION_BYTES;
    int pieces = 0;   /* the servers' partitions: of each layer (ByteScheduler's), else of the buffer */
    for (int l = 0; l < s->layers; l++) {
        in.forward += s->layer[l].forward, in.backward += s->layer[l].backward, in.bytes += s->layer[l].bytes;
        pieces += m->takes_credit ? (int)ceil(s->layer[l].bytes / in.per) : 0;
    }
    pieces = m->takes_credit ? pieces : (int)ceil(in.bytes / in.per);
    in.t = transfer_cost_of(c, m->servers, node_sums, pieces);
    in.credit = settings && settings->credit_bytes > 0 ? settings->credit_bytes : METHOD_CREDIT_BYTES;
    if (c->nodes * c->gpus_per_node < 2)
        return in.forward + in.backward + s->update;   /* one worker exchanges nothing */
    for (size_t i = 0; i < sizeof step_of_method / sizeof step_of_method[0]; i++)
        if (strcmp(step_of_method[i].method, m->name) == 0)
            return step_of_method[i].step(&in);
    return -1;
}
