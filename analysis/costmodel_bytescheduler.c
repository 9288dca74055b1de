/* costmodel_bytescheduler.c - ByteScheduler's steps in a row, simulated (costmodel.h's
 * bytescheduler-a2a and bytescheduler-ps): pieces started by priority under the credit, through
 * the link (allreduce) or through the servers' queues, each layer's next forward waiting for its
 * sums; the step is the steady distance between two forward passes' starts. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "analysis/costmodel_pieces.h"
#include "common/partitions.h"

/* Steps the ByteScheduler schedule is run for before its period is read off. */
#define SIMULATED_STEPS 6

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
static double send_by_priority(struct piece *pieces, int n, double free_at, double credit)
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
        /* an allreduce: its sums (and its credit) back a tail after it leaves the link */
        pieces[best].done_sending = pieces[best].done = free_at + pieces[best].tail;
    }
    free(started);
    return free_at;
}

/* The best ready piece that may start at `now` (ready, waiting, and its pool's credit lets it:
 * busy[pool] bytes under way; a pool's best ready piece waits for its credit, the ones after it
 * too), or -1. */
static int next_to_start(const struct piece *pieces, const int *state, int n, double now, const double *busy,
                         double credit)
{
    bool waits[2] = {false, false};
    for (int k = 0; k < n; k++) {
        int q = pieces[k].pool;
        if (state[k] != 0 || pieces[k].ready > now || waits[q])
            continue;
        if (busy[q] == 0 || busy[q] + pieces[k].bytes <= credit)
            return k;
        waits[q] = true;
    }
    return -1;
}

/* ---------- ByteScheduler's pieces through the servers' queues ---------- */

/* Where a server's piece is: waiting, gathered inside its node (node-local sums), which message of
 * its push and pull is crossing, or handed out inside its node. */
enum piece_leg {
    LEG_WAITING, LEG_GATHER, LEG_PUSH_HEAD, LEG_PUSH_ANSWER, LEG_PUSH, LEG_SUMMED, LEG_PULL_HEAD, LEG_PULL_ANSWER,
    LEG_PULL, LEG_HAND_OUT, LEG_DONE
};

/* Puts a message costing `cost` on a queue free at *free_at from `now`; returns when it is through. */
static double queue_put(double *free_at, double now, double cost)
{
    *free_at = (*free_at > now ? *free_at : now) + cost;
    return *free_at;
}

/* Puts a message on `queue` (one of ways): while the link's other way still carries messages put
 * on it before, it goes t->both_ways times slower (a shaped TCP link's two ways loaded at once: each
 * way's acknowledgements wait behind the other's data); those messages keep their times. Returns
 * when it is through. */
static double put_on_link(const struct transfer_cost *t, double *queue, double *ways, double now, double cost)
{
    bool two_ways = (queue == &ways[0] || queue == &ways[1]) && (t->two_sides || !t->one_link);
    double start = fmax(*queue, now), busy = two_ways ? ways[queue == &ways[0] ? 1 : 0] - start : 0;
    if (t->both_ways > 1 && busy > 0)
        cost = cost * t->both_ways <= busy ? cost * t->both_ways : busy + cost - busy / t->both_ways;
    return queue_put(queue, now, cost);
}

/* When each queue is free: way 0 towards a piece's server, 1 back. Without two sides, ways[0] and
 * [1] (with colocated servers the same one); with them, the link's two ways: into the server's
 * side and out of it, which is into the other. Way 2: the node's own links (node-local sums'
 * hand-offs, in and out alike, as costmodel.c's share_the_link), beside the link between nodes. */
static double *queue_of(const struct transfer_cost *t, const struct piece *p, int way, double *ways)
{
    if (way >= 2)
        return &ways[way];
    if (!t->two_sides)
        return &ways[t->one_link ? 0 : way];
    return &ways[way == 0 ? p->side : 1 - p->side];
}

/* Piece k's next message, from `now`: its leg moves on and at[k] says when that message is through.
 * Pushes cross towards the server, pulls back (queue_of), a handshake's answer the other way; a
 * message of no data costs the link's latency (the one-message curve at 0 bytes); the hand-offs
 * inside the node, where there are any, before the push and after the pull. */
static void next_leg(struct piece *p, int k, int *leg, double *at, double now, double *ways,
                     const struct transfer_cost *t)
{
    int next = leg[k] + 1;
    double in_node = piece_in_node_cost(t, p[k].bytes);
    if (in_node <= 0 && next == LEG_GATHER)
        next++;
    if (next == LEG_SUMMED) {   /* the server sums once the near side's workers have pushed too */
        double summed = fmax(now, p[k].ready_near);
        p[k].done_near = summed + in_node;
        if (summed > now) {
            leg[k] = LEG_SUMMED, at[k] = summed;
            return;
        }
        next++;
    }
    if (p[k].bytes <= t->eager && (next == LEG_PUSH_HEAD || next == LEG_PULL_HEAD))
        next += 2;   /* sent at once */
    if (in_node <= 0 && next == LEG_HAND_OUT)
        next++;
    if ((leg[k] = next) == LEG_DONE)
        return;
    int way = leg[k] == LEG_GATHER || leg[k] == LEG_HAND_OUT                            ? 2
              : leg[k] == LEG_PUSH_HEAD || leg[k] == LEG_PULL_ANSWER || leg[k] == LEG_PUSH ? 0
                                                                                           : 1;
    double cost = leg[k] == LEG_PUSH                                 ? p[k].cost
                  : leg[k] == LEG_PULL                               ? piece_pull_cost(t, p[k].bytes, p[k].load)
                  : leg[k] == LEG_GATHER || leg[k] == LEG_HAND_OUT ? in_node
                                                                     : link_message(servers_link_of(t), 0);
    at[k] = put_on_link(t, queue_of(t, &p[k], way, ways), ways, now, cost);
}

/* A parameter server's pieces of one step in priority order (bytescheduler-ps): started as
 * send_by_priority starts them, each message through its queue in the order put on it (ways: when
 * each queue is free, kept from step to step); a piece's credit back when its push is through.
 * Sets .done_sending and .done; 0, or -1 out of memory. */
static double queue_by_priority(struct piece *p, int n, double *ways, double credit, const struct transfer_cost *t)
{
    int *leg = calloc((size_t)n + 1, sizeof *leg);
    double *at = calloc((size_t)n + 1, sizeof *at), busy[2] = {0, 0}, now = -INFINITY;
    if (!leg || !at)
        return free(leg), free(at), -1;
    for (int done = 0; done < n;) {
        for (int k; (k = next_to_start(p, leg, n, now, busy, credit)) >= 0; busy[p[k].pool] += p[k].bytes)
            next_leg(p, k, leg, at, now, ways, t);
        int k = -1;   /* the next message through, or the next piece made ready */
        double soonest = INFINITY;
        for (int j = 0; j < n; j++) {
            if (leg[j] != LEG_WAITING && leg[j] != LEG_DONE && (k < 0 || at[j] < at[k]))
                k = j;
            if (leg[j] == LEG_WAITING && p[j].ready > now && p[j].ready < soonest)
                soonest = p[j].ready;
        }
        if (k < 0 && (busy[0] = busy[1] = 0, soonest == INFINITY))
            continue;   /* nothing under way holds credit (no rounding left): what is ready starts */
        if (k < 0 || soonest < at[k]) {
            now = soonest;
            continue;
        }
        now = at[k];
        if (leg[k] == LEG_PUSH)   /* pushed: the credit back */
            busy[p[k].pool] -= p[k].bytes, p[k].done_sending = now;
        next_leg(p, k, leg, at, now, ways, t);
        done += leg[k] == LEG_DONE;
        if (leg[k] == LEG_DONE)
            p[k].done = now;
    }
    free(leg), free(at);
    return 0;
}

/* The nodes on side 0 or 1 of the link. */
static int side_nodes(const struct transfer_cost *t, int side)
{
    return side == 0 ? t->behind : t->c->nodes - t->behind;
}

/* Each layer cut on its own into pieces of at most `per`, in priority order (from the input), a
 * layer's ready at from[0] + ready[l]; with two sides, each at its server as dtrain-train places it
 * (partitions.h), its push crossing into that server's side from the workers of the other (as many
 * bytes a byte as they push), who start it by their own credit and priority when their backward
 * (from[their side]) has made it ready; the workers on the server's side push it at once, without
 * crossing (ready_near). Returns how many; -1 out of memory. */
static int cut_layers(const struct step_costs *s, const struct transfer_cost *t, double per, const double *from,
                      const double *ready, struct piece *pieces)
{
    size_t *held = t->two_sides ? calloc((size_t)t->c->nodes, sizeof *held) : NULL;
    if (t->two_sides && !held)
        return -1;
    int n = 0;
    for (int l = 0; l < s->layers; l++)
        for (double at = 0; at < s->layer[l].bytes; at += per) {
            struct piece *p = &pieces[n++];
            *p = (struct piece){.ready = from[0] + ready[l], .bytes = fmin(s->layer[l].bytes - at, per), .layer = l,
                                .load = t->load};
            if (held) {
                int server = partition_server(held, t->c->nodes);
                held[server] += (size_t)p->bytes;
                p->side = server < t->behind ? 0 : 1;
                p->pool = 1 - p->side;
                p->load = (double)t->pushers * side_nodes(t, p->pool);
                p->ready = from[p->pool] + ready[l];
                p->ready_near = from[p->side] + ready[l] + piece_in_node_cost(t, p->bytes);
            }
            p->cost = piece_push_cost(t, p->bytes, p->load);
            p->tail = piece_tail(t, p->bytes, p->cost);
        }
    free(held);
    return n;
}

/* Side s's forward pass from `start`, each layer waiting for its sums of the step before (done,
 * unless the first step) and applying its share of the update first; returns when it ends. */
static double forward_pass(const struct step_costs *s, double start, const double *done, bool first, double total)
{
    double t_at = start;
    for (int l = 0; l < s->layers; l++) {
        if (!first)
            t_at = (t_at > done[l] ? t_at : done[l]) + s->update * s->layer[l].bytes / total;
        t_at += s->layer[l].forward;
    }
    return t_at;
}

/* When each side's workers have their sums of each layer (done[side * layers + l]): with two
 * sides, the workers on a piece's server's side when it is summed, the others when it is pulled
 * back across; else every worker when it is back. */
static void layers_done(const struct piece *pieces, int n, int sides, int layers, double *done)
{
    for (int i = 0; i < sides * layers; i++)
        done[i] = 0;
    for (int k = 0; k < n; k++)
        for (int side = 0; side < sides; side++) {
            double got = sides == 2 && pieces[k].side == side ? pieces[k].done_near : pieces[k].done;
            double *d = &done[side * layers + pieces[k].layer];
            *d = got > *d ? got : *d;
        }
}

/* The steady distance between two forward passes' starts: each layer's forward waits for its
 * sums of the step before and applies its share of the update first. With two sides, each side's
 * workers run their own steps (they wait for different pieces), the servers holding them together. */
double bytescheduler_step(const struct step_costs *s, const struct transfer_cost *t, double per, double credit)
{
    int n = 0, most = 0, sides = t->ps && t->two_sides ? 2 : 1;
    double total = 0;
    for (int l = 0; l < s->layers; l++)
        most += (int)ceil(s->layer[l].bytes / per) + 1, total += s->layer[l].bytes;
    struct piece *pieces = calloc((size_t)most + 1, sizeof *pieces);
    double *ready = malloc((size_t)s->layers * sizeof *ready), *done = calloc(2 * (size_t)s->layers, sizeof *done);
    if (!pieces || !ready || !done)
        return free(pieces), free(ready), free(done), -1;
    backward_ready_times(s, ready);
    double start[2] = {0, 0}, previous = 0, link_free = 0, ways[3] = {0, 0, 0};   /* when each way is free (queue_of) */
    for (int step = 0; step < SIMULATED_STEPS; step++) {
        double t_at[2];   /* each side's forward pass */
        for (int side = 0; side < sides; side++)
            t_at[side] = forward_pass(s, start[side], done + side * s->layers, step == 0, total);
        if ((n = cut_layers(s, t, per, t_at, ready, pieces)) < 0)
            link_free = -1;
        else
            link_free = t->ps ? queue_by_priority(pieces, n, ways, credit, t)   /* its queues keep when they are free */
                              : send_by_priority(pieces, n, link_free, credit);
        if (link_free < 0)
            break;   /* out of memory */
        layers_done(pieces, n, sides, s->layers, done);
        previous = start[0];
        for (int side = 0; side < sides; side++)
            start[side] = t_at[side] + ready[0];   /* backward over: the next forward begins */
    }
    free(pieces), free(ready), free(done);
    return link_free < 0 ? -1 : start[0] - previous;
}

/* ByteScheduler-PS's schedule of one layer of `bytes` and nothing to compute: its traffic alone, a
 * round as dtrain-commbench --partition-bytes measures it, a message slowed both_ways times while
 * the other way is busy. */
static double traffic_alone(const struct transfer_cost *t, double bytes, double per, double credit, double both_ways)
{
    struct layer_cost one = {.bytes = bytes};
    struct step_costs s = {.layers = 1, .layer = &one};
    struct transfer_cost slowed = *t;
    slowed.both_ways = both_ways;
    return bytescheduler_step(&s, &slowed, per, credit);
}

/* The schedule's round is not monotone in the slow-down (a slower pull can let the next push start
 * behind it): every tenth from 1 to 8 is tried, then the hundredths around the best. */
double bytescheduler_both_ways(const struct transfer_cost *t, double bytes, double per, double credit)
{
    const struct link_cost *m = t->c->servers_pieces;
    if (!t->ps || !m || !m->curve || m->points < 2)
        return 1;
    double at = fmin(fmax(bytes, m->curve[0].bytes), m->curve[m->points - 1].bytes);
    double measured = link_message(*m, at), best = 1, miss = INFINITY;
    for (int pass = 0; pass < 2; pass++) {
        double from = pass == 0 ? 1 : fmax(1, best - 0.1), by = pass == 0 ? 0.1 : 0.01;
        for (int k = 0; k <= (pass == 0 ? 70 : 20); k++) {
            double slow = from + k * by, round = traffic_alone(t, at, per, credit, slow);
            if (round < 0)
                return -1;
            if (fabs(log(round / measured)) < miss - 1e-12)
                miss = fabs(log(round / measured)), best = slow;
        }
    }
    return best;
}
