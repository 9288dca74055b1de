/* costmodel.c - predicted step times of the exchange methods (see costmodel.h). */
#include "analysis/costmodel.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/costmodel_pieces.h"
#include "common/exchange_methods.h"
#include "common/grouping.h"

/* ---------- pieces sent one at a time ---------- */

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

/* The pushes the busiest link carries a way, with servers on nodes of their own: the nodes in
 * blocks of nodes_per_link behind one link each, in rank order, the workers' nodes first and the
 * servers' after (dtrain-train's placement: the last ranks serve). A block's link carries out the
 * pushes of its workers to the servers outside it and in the pushes to its servers from the
 * workers outside it (the pulls mirror them); a push inside a block never crosses. With one node a
 * link this is max(N P / S, P): a server's own link takes every push of its share, a worker's its
 * own. (Three workers and a server on the test cluster: the third worker shares the server's leaf,
 * two of the three pushes cross the shaped link, not all three.) */
static double dedicated_servers_load(const struct cluster_shape *c, int pushers, int servers)
{
    int per_link = c->nodes_per_link > 1 ? c->nodes_per_link : 1, total = c->nodes + servers;
    double busiest = 0;
    for (int first = 0; first < total; first += per_link) {
        int last = first + per_link < total ? first + per_link : total;
        int workers_in = last < c->nodes ? last - first : first < c->nodes ? c->nodes - first : 0;
        int servers_in = last - first - workers_in;
        double out = (double)workers_in * pushers * (servers - servers_in) / servers;
        double in = (double)(c->nodes - workers_in) * pushers * servers_in / servers;
        busiest = fmax(busiest, fmax(out, in));
    }
    return busiest;
}

/* pieces: the partitions of a step, each at one server: fewer than the servers leave some idle.
 * by_priority: ByteScheduler's, a few pieces under way under the credit, in priority order. */
static struct transfer_cost transfer_cost_of(const struct cluster_shape *c, bool ps, bool node_sums, int pieces,
                                             bool by_priority)
{
    struct transfer_cost t = {.c = c, .ps = ps};
    int pushers = node_sums ? 1 : c->gpus_per_node;   /* a node's pushes of a piece */
    int servers = c->servers > 0 ? c->servers : c->nodes;
    servers = pieces > 0 && pieces < servers ? pieces : servers;
    int behind = c->nodes_per_link > 1 ? (c->nodes_per_link < c->nodes ? c->nodes_per_link : c->nodes) : 1;
    double load = dedicated_servers_load(c, pushers, servers);
    if (c->servers_colocated)   /* what crosses: the pushes from outside to the servers behind a link */
        load = (double)pushers * (c->nodes - behind) * (behind < servers ? (double)behind / servers : 1);
    /* The measured round is this traffic where it has the round's pattern: one push a node (node
     * sums, or a worker a node), every node's server holding parts, every part under way at once
     * (not ByteScheduler's few). */
    if (c->servers_colocated && pushers == 1 && servers == c->nodes && !by_priority)
        t.round = c->servers_round;
    t.one_link = c->servers_colocated || c->servers_half_duplex;
    /* ByteScheduler's few pieces each through its own server's side of the link, where the nodes
     * are two sides of one; with more sides a piece's pushes would leave through every other
     * side's link and its pull enter them, which one queue a way does not hold: spread as above */
    if (c->servers_colocated && by_priority && c->nodes > behind && c->nodes <= 2 * behind)
        t.two_sides = true, t.behind = behind, t.pushers = pushers;
    t.load = load;
    t.in_node = node_sums ? c->gpus_per_node - 1 : 0;
    t.eager = c->eager_bytes > 0 ? c->eager_bytes : MODEL_EAGER_BYTES;
    return t;
}

static double send_cost(const struct transfer_cost *t, double bytes)
{
    return piece_push_cost(t, bytes, t->load);
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
    backward_ready_times(s, ready);
    for (int g = groups - 1, k = 0; g >= 0; g--, k++) {
        int end = g + 1 < groups ? first[g + 1] : s->layers;
        for (int l = first[g]; l < end; l++)
            pieces[k].bytes += s->layer[l].bytes;
        pieces[k].ready = ready[first[g]];
        pieces[k].cost = send_cost(t, pieces[k].bytes);
        pieces[k].tail = piece_tail(t, pieces[k].bytes, pieces[k].cost);
    }
    double back = send_in_order(pieces, groups, 0);   /* each one's sums a tail after it leaves the link */
    for (int k = 0; k < groups; k++)
        back = fmax(back, pieces[k].done + pieces[k].tail);
    free(ready), free(pieces);
    return back;
}

/* Partitions of at most `per` bytes of [from, to) of the buffer, appended to pieces with the
 * ready time of the layer holding each one's first byte. */
static int cut_partitions(const struct step_costs *s, const double *ready, double from, double to, double per,
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

/* Where a server's piece is (share_the_link): waiting, or which stage of its transfer it is in. */
enum piece_stage { STAGE_WAITING, STAGE_GATHER, STAGE_PUSH, STAGE_PULL, STAGE_HAND_OUT, STAGE_DONE };

/* What each stage costs piece p alone on its resource. */
static double stage_cost(const struct transfer_cost *t, const struct piece *p, int stage)
{
    switch (stage) {
    case STAGE_GATHER:
    case STAGE_HAND_OUT: return piece_in_node_cost(t, p->bytes);
    case STAGE_PUSH: return p->cost;
    case STAGE_PULL: return piece_pull_cost(t, p->bytes, t->load);
    default: return 0;
    }
}

/* The resource a stage's pieces share: the node's own links (the node-local sums' hand-offs, in
 * and out alike: BytePS's one NCCL loop runs the reduces and the broadcasts), the link between
 * nodes each way (one link both ways where pushes and pulls take turns: colocated servers, or a
 * transport that carries a node's traffic a way at a time, cluster_shape.servers_half_duplex). */
enum { IN_NODE, LINK_OUT, LINK_BACK, RESOURCES };
static int stage_resource(const struct transfer_cost *t, int stage)
{
    return stage == STAGE_PUSH ? LINK_OUT : stage == STAGE_PULL ? (t->one_link ? LINK_OUT : LINK_BACK) : IN_NODE;
}

/* The hand-offs inside a node go a piece at a time, in the order the pieces came (BytePS's NCCL
 * loop); the link between nodes carries every piece under way at once, each at its share (dtrain's
 * and BytePS's servers take every push at once, Open MPI interleaves big messages' fragments). */
static bool one_at_a_time(int resource)
{
    return resource == IN_NODE;
}

/* Moves piece k on from its stage at `now` to its next stage that costs anything (left[k] its cost,
 * entered[k] now). */
static void next_stage(struct piece *p, int k, int *stage, double *left, double *entered, double now,
                       const struct transfer_cost *t)
{
    do {
        if (stage[k] == STAGE_PUSH)
            p[k].done_sending = now;
        stage[k]++;
        left[k] = stage_cost(t, &p[k], stage[k]);
    } while (stage[k] != STAGE_DONE && left[k] <= 0);
    entered[k] = now;
    if (stage[k] == STAGE_DONE)
        p[k].done = now;
}

/* The pieces under way and how each resource is shared at `now`: sharing[r] of them on resource r,
 * head[r] the first come on a resource that takes one at a time. Returns how many are done. */
static int under_way(const int *stage, const double *entered, int n, const struct transfer_cost *t,
                     int *sharing, int *head)
{
    int done = 0;
    for (int r = 0; r < RESOURCES; r++)
        sharing[r] = 0, head[r] = -1;
    for (int k = 0; k < n; k++) {
        done += stage[k] == STAGE_DONE;
        if (stage[k] == STAGE_WAITING || stage[k] == STAGE_DONE)
            continue;
        int r = stage_resource(t, stage[k]);
        sharing[r]++;
        if (head[r] < 0 || entered[k] < entered[head[r]])
            head[r] = k;
    }
    return done;
}

/* The share of its resource piece k gets (0 while it queues). */
static double share_of(const struct transfer_cost *t, const int *stage, const int *sharing, const int *head, int k)
{
    int r = stage_resource(t, stage[k]);
    return one_at_a_time(r) ? (head[r] == k ? 1 : 0) : 1.0 / sharing[r];
}

/* A parameter server's pieces (bsp-ps, wfbp-ps), each on its way once ready: the node's sum inside
 * the node (node-local sums), the push, the pull, the sum handed out, each stage on its resource
 * (stage_resource, one_at_a_time); stages on different resources overlap, as the stages of
 * different partitions do in BytePS and dtrain. .done_sending and .done set. Returns when the last
 * sum is handed out (-1: out of memory). */
static double share_the_link(struct piece *p, int n, const struct transfer_cost *t)
{
    int *stage = calloc((size_t)n + 1, sizeof *stage), sharing[RESOURCES], head[RESOURCES];
    double *left = calloc((size_t)n + 1, sizeof *left), *entered = calloc((size_t)n + 1, sizeof *entered);
    double now = 0, back = 0;
    if (!stage || !left || !entered)
        return free(stage), free(left), free(entered), -1;
    for (;;) {
        double soonest = INFINITY;   /* the next piece made ready */
        for (int k = 0; k < n; k++) {
            if (stage[k] == STAGE_WAITING && p[k].ready <= now)
                next_stage(p, k, stage, left, entered, now, t);
            if (stage[k] == STAGE_WAITING && p[k].ready < soonest)
                soonest = p[k].ready;
        }
        int done = under_way(stage, entered, n, t, sharing, head);
        double until = soonest;
        for (int k = 0; k < n; k++)
            if (stage[k] != STAGE_WAITING && stage[k] != STAGE_DONE && share_of(t, stage, sharing, head, k) > 0)
                until = fmin(until, now + left[k] / share_of(t, stage, sharing, head, k));
        if (done == n || until == INFINITY)
            break;
        for (int k = 0; k < n; k++) {
            if (stage[k] == STAGE_WAITING || stage[k] == STAGE_DONE)
                continue;
            left[k] -= (until - now) * share_of(t, stage, sharing, head, k);
            if (left[k] <= 1e-12 * (1 + stage_cost(t, &p[k], stage[k])))
                next_stage(p, k, stage, left, entered, until, t);
        }
        now = until;
    }
    for (int k = 0; k < n; k++)
        back = fmax(back, p[k].done);
    free(stage), free(left), free(entered);
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
    backward_ready_times(s, ready);
    int n = cut_partitions(s, ready, 0, total, per, pieces, 0);
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
 * of job as dtrain-train finds them: a line through the first and the last of grouping.h's sizes
 * (dtrain-train fits all of them: the same line where the time is one between them), and what is
 * below zero taken as none. */
static int mgwfbp_groups(const struct step_costs *s, const struct cluster_shape *c, int *first)
{
    double small = (double)GROUPING_FIT_FIRST_BYTES, large = small * (1 << (GROUPING_FIT_SIZES - 1)),
           t0 = cost_allreduce(c, small), t1 = cost_allreduce(c, large);
    struct alpha_beta fit = {.beta = (t1 - t0) / (large - small)};
    fit.alpha = t0 - fit.beta * small;
    fit = grouping_plan_cost(fit);
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
static double overlapped_step(const struct step_inputs *in, double exchange)
{
    if (exchange < 0)
        return -1;
    return in->forward + (exchange > in->backward ? exchange : in->backward) + in->s->update;
}

static double bsp_step(const struct step_inputs *in)
{
    return overlapped_step(in, in->backward + cost_allreduce(in->c, in->bytes));
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
    return overlapped_step(in, exchange);
}

static double wfbp_step(const struct step_inputs *in)
{
    return groups_step(in, false);
}

static double mgwfbp_step(const struct step_inputs *in)
{
    return groups_step(in, true);
}

static double bytescheduler_any_step(const struct step_inputs *in)
{
    struct transfer_cost t = in->t;
    if ((t.both_ways = bytescheduler_both_ways(&in->t, in->bytes, in->per, in->credit)) < 0)
        return -1;
    return bytescheduler_step(in->s, &t, in->per, in->credit);
}

static double bsp_ps_step(const struct step_inputs *in)
{
    return overlapped_step(in, exchange_partitions(in->s, &in->t, in->per, true));
}

static double wfbp_ps_step(const struct step_inputs *in)
{
    return overlapped_step(in, exchange_partitions(in->s, &in->t, in->per, false));
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
    in.t = transfer_cost_of(c, m->servers, node_sums, pieces, m->takes_credit);
    in.credit = settings && settings->credit_bytes > 0 ? settings->credit_bytes : METHOD_CREDIT_BYTES;
    if (c->nodes * c->gpus_per_node < 2)
        return in.forward + in.backward + s->update;   /* one worker exchanges nothing */
    for (size_t i = 0; i < sizeof step_of_method / sizeof step_of_method[0]; i++)
        if (strcmp(step_of_method[i].method, m->name) == 0)
            return step_of_method[i].step(&in);
    return -1;
}
