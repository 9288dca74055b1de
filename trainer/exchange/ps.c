/* ps.c - parameter servers, BytePS's way (as the reference AllReduce-against-PS and method comparisons ran them; see ps.h): the last --ps-servers
 * ranks of the job train nothing; the gradient buffer is cut into partitions of --partition-bytes,
 * spread over the servers balanced by bytes; each step every worker pushes its partitions to their
 * servers, which sum each partition (in worker order) as soon as every worker's push of it has
 * arrived and send the sum back; the workers then take the mean and run the optimizer themselves,
 * so their parameters stay identical. bsp-ps pushes everything after backward, wfbp-ps pushes each
 * partition as soon as backward has completed it. With two workers a sum is a + b, as the
 * allreduce's: parameters equal BSP's bitwise. Where a node has several workers they sum inside
 * the node first, as BytePS does (node_sums.h; --ps-node-sums off: each pushes its own), and a
 * server then adds one push per node. */
#include "trainer/exchange/ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trainer/base/fault.h"
#include "trainer/exchange/node_sums.h"
#include "common/partitions.h"
#include "trainer/exchange/placement.h"

#define PS_TAG_CONTROL 1
#define PS_TAG_FIRST 16
/* MPI guarantees tags up to 32767: partitions beyond are refused (use larger partitions). */
#define PS_MAX_PARTITIONS (32767 - PS_TAG_FIRST)
/* How long a server sleeps when nothing moved, no push and no word of a step (back_off; MPI advances
 * them only inside its calls): from the first to the second, doubling while nothing moves, so that
 * an idle server (colocated, beside its node's workers) leaves them the cores. */
#define PS_POLL_FIRST_NS 20000L
#define PS_POLL_MOST_NS 1000000L

struct partition {
    size_t first, count;       /* floats of the gradient buffer */
    int server;                /* its server's index (world rank: workers + index) */
};

struct ps {
    int servers, workers, me;  /* me: this server's index, or -1 on a worker */
    bool node_sums;            /* a node's workers sum first (node): one push per node */
    const char *node_sums_said;   /* for the record: "on", "off", NULL (no node has several workers) */
    struct node_sums node;
    int senders;               /* the pushes a server sums a partition over: workers, or nodes */
    size_t partition_bytes;
    bool by_layer;             /* each layer cut on its own */
    struct comm *group;        /* the workers' comm, or the servers' */
    struct comm *traffic;      /* the world's duplicate the partitions travel on */
    int *server_rank;          /* server index -> world rank, then worker index -> world rank: */
    int *worker_rank;          /* (one allocation) */
    struct partition *parts;
    int nparts;
    const float *grads;        /* worker: what it pushes */
    float *inbox;              /* worker: the sums coming back; server: its partitions, sender after sender */
    float *sums;               /* server: the sums of its partitions */
    size_t mine;               /* server: floats of its partitions */
    struct comm_request *reqs; /* server: a receive and a send per sender and partition of its own */
};

/* ---------- the plan ---------- */

/* Appends [first, first + count) cut into partitions, each to the server with the fewest bytes
 * (partitions.h: the cost model places them the same way). */
static int cut_partitions(struct ps *s, size_t first, size_t count, size_t per, size_t *load, int *n, struct dt_err *err)
{
    for (size_t done = 0; done < count; done += per) {
        if (*n >= PS_MAX_PARTITIONS)
            return dt_fail(err, "--partition-bytes %zu cuts the gradients into more than %d partitions",
                           s->partition_bytes, PS_MAX_PARTITIONS);
        int least = partition_server(load, s->servers);
        size_t left = count - done;
        s->parts[*n] = (struct partition){first + done, left < per ? left : per, least};
        load[least] += s->parts[(*n)++].count;
    }
    return 0;
}

/* The partitions of the whole buffer, or of each layer. */
static int plan_partitions(struct ps *s, const struct exchange *x, bool by_layer, struct dt_err *err)
{
    size_t per = exchange_partition_floats(&x->options);
    int layers = by_layer ? model_layer_spans(x->model, NULL, NULL) : 1;
    size_t *first = calloc((size_t)layers, sizeof *first), *count = calloc((size_t)layers, sizeof *count);
    size_t *load = calloc((size_t)s->servers, sizeof *load), most = x->count / per + (size_t)layers + 1;
    s->parts = calloc(most < PS_MAX_PARTITIONS + 1 ? most : PS_MAX_PARTITIONS + 1, sizeof *s->parts);
    int rc = first && count && load && s->parts ? 0 : dt_fail(err, "out of memory");
    if (rc == 0 && by_layer)
        model_layer_spans(x->model, first, count);
    else if (rc == 0)
        count[0] = x->count;
    for (int l = 0; l < layers && rc == 0; l++)
        rc = cut_partitions(s, first[l], count[l], per, load, &s->nparts, err);
    free(first), free(count), free(load);
    return rc;
}

const float *ps_sums(const struct ps *ps)
{
    return ps->inbox;
}

void ps_describe(const struct ps *s, char *text, size_t size)
{
    char nodes[64] = "";
    if (s->node_sums)
        snprintf(nodes, sizeof nodes, " summed on %d node%s", s->node.nodes, s->node.nodes == 1 ? "" : "s");
    snprintf(text, size, "%d workers%s, %d server%s, %d partition%s of up to %zu bytes", s->workers, nodes, s->servers,
             s->servers == 1 ? "" : "s", s->nparts, s->nparts == 1 ? "" : "s", s->partition_bytes);
}

/* The world rank of the k-th push a server receives of partition p: worker k's, or node k's root's. */
static int sender_rank(const struct ps *s, int k, int p)
{
    return s->node_sums ? node_sums_root(&s->node, k, p) : s->worker_rank[k];
}

/* ---------- a worker ---------- */

/* What node_sums.c needs of partition p. */
static struct node_push node_push(const struct ps *s, int p)
{
    return (struct node_push){.grads = s->grads, .inbox = s->inbox, .server = s->server_rank[s->parts[p].server],
                              .tag = PS_TAG_FIRST + p};
}

/* The engine's start of transfer t: the push of partition t->index and the receive of its sum
 * (or, summed on the node, their first stage). */
static int start_push(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err)
{
    struct ps *s = ctx;
    struct node_push push = node_push(s, t->index);
    return s->node_sums ? node_sums_start(&s->node, comm, t, &push, err) : node_push_to_server(comm, t, &push, err);
}

static int advance_push(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err)
{
    struct ps *s = ctx;
    struct node_push push = node_push(s, t->index);
    return node_sums_advance(&s->node, comm, t, &push, err);
}

static size_t push_charge(void *ctx, const struct comm_thread_transfer *t)
{
    const struct ps *s = ctx;
    return node_sums_charge(&s->node, t);
}

/* The engine's spans are the layers cut as the partitions are (by layer), or the partitions
 * themselves: either way its transfer k is partition k. */
int ps_open_pieces(struct ps *s, struct exchange *x, struct pieces *pieces, bool by_priority, size_t credit_bytes,
                   struct dt_err *err)
{
    int spans = s->by_layer ? model_layer_spans(x->model, NULL, NULL) : s->nparts;
    size_t *first = calloc((size_t)spans + 1, sizeof *first), *count = calloc((size_t)spans + 1, sizeof *count);
    if (!first || !count)
        return free(first), free(count), dt_fail(err, "out of memory");
    if (s->by_layer)
        model_layer_spans(x->model, first, count);
    for (int p = 0; !s->by_layer && p < s->nparts; p++)
        first[p] = s->parts[p].first, count[p] = s->parts[p].count;
    struct comm_thread_ops ops = {.start = start_push, .ctx = s, .fifo = !by_priority, .credit_requests = 1,
                                  .advance = s->node_sums ? advance_push : NULL,
                                  .charge = s->node_sums ? push_charge : NULL, .what = "push"};
    int rc = pieces_open(pieces, x, s->traffic, first, count, spans, s->by_layer ? exchange_partition_floats(&x->options) : 0,
                         credit_bytes, ops, err);
    free(first), free(count);
    int transfers;
    if (rc == 0 && (comm_thread_plan(pieces->thread, &transfers), transfers != s->nparts))
        rc = dt_fail(err, "the communication thread plans %d transfers for %d partitions", transfers, s->nparts);
    return rc;
}

int ps_tell_servers(struct exchange *x, struct ps *s, int what, struct dt_err *err)
{
    if (s->group->rank != 0)
        return 0;
    for (int k = 0; k < s->servers; k++)   /* a few bytes: sent at once, whatever the server does */
        if (x->transport->send(x->transport, &what, sizeof what, s->server_rank[k], PS_TAG_CONTROL, err) < 0)
            return dt_wrap(err, "telling server rank %d %s", s->server_rank[k], what ? "a step comes" : "to stop");
    return 0;
}

/* ---------- a server ---------- */

/* Sums partition p (its floats at slot of this server's) over the senders, in their order. */
static void sum_partition(struct ps *s, size_t slot, size_t count)
{
    for (size_t i = slot; i < slot + count; i++) {
        float sum = s->inbox[i];
        for (int w = 1; w < s->senders; w++)
            sum += s->inbox[(size_t)w * s->mine + i];
        s->sums[i] = sum;
    }
}

/* Posts the receives of every sender's push of this server's partitions (receive of local
 * partition j from sender w: reqs[j * senders + w]). */
static int post_receives(struct ps *s, int *local, struct dt_err *err)
{
    size_t slot = 0;
    int j = 0;
    for (int p = 0; p < s->nparts; p++) {
        const struct partition *part = &s->parts[p];
        if (part->server != s->me)
            continue;
        for (int w = 0; w < s->senders; w++)
            if (s->traffic->irecv(s->traffic, s->inbox + (size_t)w * s->mine + slot, part->count * sizeof(float),
                                  sender_rank(s, w, p), PS_TAG_FIRST + p, &s->reqs[j * s->senders + w], err) < 0)
                return -1;
        local[j++] = p;
        slot += part->count;
    }
    return 0;
}

/* Sleeps `pause` ns (MPI moves nothing meanwhile: the cores are left to the node's other ranks)
 * and returns the next pause, doubled up to PS_POLL_MOST_NS. */
static long back_off(long pause)
{
    nanosleep(&(struct timespec){0, pause}, NULL);
    return pause * 2 < PS_POLL_MOST_NS ? pause * 2 : PS_POLL_MOST_NS;
}

/* A server's step: each partition summed as soon as every worker's push of it is in, and its sum
 * sent back at once (the partitions a worker pushed first come back first). */
static int serve_step(struct ps *s, int *local, int nlocal, struct dt_err *err)
{
    struct comm_request *sends = s->reqs + (size_t)nlocal * s->senders;
    if (post_receives(s, local, err) < 0)
        return -1;
    char *summed = calloc((size_t)nlocal + 1, 1);
    if (!summed)
        return dt_fail(err, "out of memory");
    int left = nlocal, rc = 0;
    long pause = PS_POLL_FIRST_NS;
    while (left > 0 && rc == 0) {
        bool moved = false;
        size_t slot = 0;
        for (int j = 0; j < nlocal && rc == 0; slot += s->parts[local[j]].count, j++) {
            bool in = false;
            if (summed[j] || (rc = s->traffic->test_all(s->traffic, s->reqs + j * s->senders, s->senders, &in, err)) < 0 ||
                !in)
                continue;
            const struct partition *part = &s->parts[local[j]];
            sum_partition(s, slot, part->count);
            for (int w = 0; w < s->senders && rc == 0; w++)
                rc = s->traffic->isend(s->traffic, s->sums + slot, part->count * sizeof(float),
                                       sender_rank(s, w, local[j]), PS_TAG_FIRST + local[j], &sends[j * s->senders + w],
                                       err);
            summed[j] = 1, left--, moved = true;
        }
        if (moved)
            pause = PS_POLL_FIRST_NS;
        else if (rc == 0)
            pause = back_off(pause);
    }
    free(summed);
    if (rc == 0)
        rc = s->traffic->wait_all(s->traffic, sends, nlocal * s->senders, err);
    return rc;
}

/* Waits for worker 0's word that a step comes (or that training ended) without spinning: MPI's
 * blocking receive polls a core for the whole compute phase, which on a node shared with its
 * workers (colocated servers) takes the cores their transfers and the kernel's network work need;
 * a receive tested at the serve loop's backing-off pace leaves them (BytePS's servers block in
 * ZeroMQ). */
static int wait_for_word(struct exchange *x, struct ps *s, int *control, struct dt_err *err)
{
    struct comm_request req;
    if (x->transport->irecv(x->transport, control, sizeof *control, s->worker_rank[0], PS_TAG_CONTROL, &req, err) < 0)
        return -1;
    long pause = PS_POLL_FIRST_NS;
    for (bool in = false;;) {
        if (x->transport->test_all(x->transport, &req, 1, &in, err) < 0)
            return -1;
        if (in)
            return 0;
        pause = back_off(pause);
    }
}

int ps_serve(struct exchange *x, struct ps *s, struct dt_err *err)
{
    int nlocal = 0;
    for (int p = 0; p < s->nparts; p++)
        nlocal += s->parts[p].server == s->me;
    int *local = calloc((size_t)nlocal + 1, sizeof *local);
    if (!local)
        return dt_fail(err, "out of memory");
    int rc = 0;
    for (long step = 1; rc == 0; step++) {
        int control = -1;
        if (wait_for_word(x, s, &control, err) < 0) {
            rc = dt_wrap(err, "server %d waiting for step %ld", s->me, step);
            break;
        }
        if (control == 0)
            break;
        fault_injection_point(x->transport->rank, step);
        if (serve_step(s, local, nlocal, err) < 0)
            rc = dt_wrap(err, "server %d, step %ld", s->me, step);
        x->stats.steps += rc == 0;
    }
    free(local);
    return rc;
}

/* ---------- set-up ---------- */

void ps_free(struct ps *s)
{
    if (!s)
        return;
    if (s->group)
        s->group->destroy(s->group);
    if (s->traffic)
        s->traffic->destroy(s->traffic);
    free(s->parts);
    free(s->server_rank);
    free(s->inbox);
    free(s->sums);
    free(s->reqs);
    node_sums_free(&s->node);
    free(s);
}

/* Which ranks serve (placement.h), this rank's index among the servers (or -1), and the nodes
 * whose workers sum first. */
static int place_servers(struct ps *s, struct comm *world, const struct exchange_options *options, struct dt_err *err)
{
    int n = world->world, dedicated = options->ps_servers ? options->ps_servers : EXCHANGE_PS_SERVERS;
    bool *serving = calloc((size_t)n, sizeof *serving);
    const char **hosts = calloc((size_t)n, sizeof *hosts);
    char *names = calloc((size_t)n, sizeof world->hostname);
    s->server_rank = calloc(2 * (size_t)n, sizeof *s->server_rank);
    int rc = serving && hosts && s->server_rank && names ? 0 : dt_fail(err, "out of memory");
    if (rc == 0)   /* every rank's host: colocated, the last rank of each serves; its workers sum first */
        rc = world->allgather(world, world->hostname, sizeof world->hostname, names, err);
    for (int r = 0; rc == 0 && r < n; r++)
        hosts[r] = names + (size_t)r * sizeof world->hostname;
    if (rc == 0) {
        s->servers = placement_servers(n, hosts, dedicated, options->ps_colocated, serving);
        s->workers = n - s->servers;
        s->worker_rank = s->server_rank + s->servers;
        s->me = -1;
        for (int r = 0, k = 0, w = 0; r < n; r++) {
            if (serving[r] && r == world->rank)
                s->me = k;
            if (serving[r])
                s->server_rank[k++] = r;
            else
                s->worker_rank[w++] = r;
        }
    }
    bool several = false;   /* a node has several workers */
    if (rc == 0 && s->workers > 0)
        rc = node_sums_plan(&s->node, n, hosts, serving, world->rank, !options->ps_node_sums_off, &several, err);
    s->node_sums = several && !options->ps_node_sums_off;
    s->node_sums_said = !several ? NULL : s->node_sums ? "on" : "off";
    s->senders = s->node_sums ? s->node.nodes : s->workers;
    if (rc == 0 && s->workers < 1)
        rc = options->ps_colocated
                 ? dt_fail(err, "--ps-colocated: every node's last rank serves, and no rank is left to train (run 2 "
                           "or more ranks per node)")
                 : dt_fail(err, "%d rank%s cannot hold %d server%s and a worker (--ps-servers)", n, n == 1 ? "" : "s",
                           dedicated, dedicated == 1 ? "" : "s");
    free(serving), free(hosts), free(names);
    return rc;
}

/* A server's buffers: every sender's pushes of its partitions, their sums, two requests each. */
static int server_buffers(struct ps *s, struct dt_err *err)
{
    int nlocal = 0;
    for (int p = 0; p < s->nparts; p++)
        if (s->parts[p].server == s->me)
            s->mine += s->parts[p].count, nlocal++;
    s->inbox = malloc(((size_t)s->senders * s->mine + 1) * sizeof(float));
    s->sums = malloc((s->mine + 1) * sizeof(float));
    s->reqs = calloc(2 * (size_t)nlocal * s->senders + 1, sizeof *s->reqs);
    return s->inbox && s->sums && s->reqs ? 0 : dt_fail(err, "out of memory for %zu floats of partitions", s->mine);
}

/* A worker's buffers for the partitions it roots on its node. */
static int root_buffers(struct ps *s, size_t total, struct dt_err *err)
{
    size_t *count = calloc((size_t)s->nparts + 1, sizeof *count);
    if (!count)
        return dt_fail(err, "out of memory");
    for (int p = 0; p < s->nparts; p++)
        count[p] = s->parts[p].count;
    int rc = node_sums_buffers(&s->node, count, s->nparts, total, err);
    free(count);
    return rc;
}

int ps_open(struct exchange *x, bool by_layer, struct ps **ps, struct dt_err *err)
{
    struct comm *world = x->transport;
    struct ps *s = *ps = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(err, "out of memory");
    s->partition_bytes = exchange_partition_bytes(&x->options);
    if (!world->isend || !world->irecv)
        return dt_fail(err, "the %s transport has no point-to-point messages", world->name);
    if (place_servers(s, world, &x->options, err) < 0)
        return -1;
    s->by_layer = by_layer;
    if (world->split(world, s->me >= 0, world->rank, &s->group, err) < 0 ||
        world->split(world, 0, world->rank, &s->traffic, err) < 0 || plan_partitions(s, x, by_layer, err) < 0)
        return -1;
    x->serving = s->me >= 0;
    x->workers = (struct workers){.comm = s->group, .rank = x->serving ? s->me : s->group->rank, .count = s->workers};
    ps_describe(s, x->stats.detail, sizeof x->stats.detail);
    x->stats.node_sums = s->node_sums_said;
    if (x->serving)
        return server_buffers(s, err);
    s->grads = x->grads;
    s->inbox = malloc((x->count + 1) * sizeof(float));
    if (!s->inbox)
        return dt_fail(err, "out of memory");
    return s->node_sums ? root_buffers(s, x->count, err) : 0;
}

/* ---------- bsp-ps and wfbp-ps: a worker's step ---------- */

struct ps_worker {
    struct ps *ps;
    struct pieces pieces;      /* the partitions, pushed by the communication thread */
};

static void ps_begin_backward(struct exchange *x)
{
    struct ps_worker *w = x->state;
    if (ps_tell_servers(x, w->ps, 1, &x->pending) < 0)   /* before the step's first push */
        x->failed = true;
    pieces_begin(&w->pieces, x);
}

static int ps_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    (void)err;
    struct ps_worker *w = x->state;
    pieces_ready_from(&w->pieces, first);
    return 0;
}

static int ps_finish(struct exchange *x, struct dt_err *err)
{
    struct ps_worker *w = x->state;
    if (pieces_wait_all(&w->pieces, x, err) < 0)
        return dt_wrap(err, "the parameter-server exchange");
    memcpy(x->grads, ps_sums(w->ps), x->count * sizeof(float));
    comm_scale(x->grads, x->count, x->workers.count);
    return 0;
}

static int ps_close(struct exchange *x, struct dt_err *err)
{
    struct ps_worker *w = x->state;
    return ps_tell_servers(x, w->ps, 0, err) < 0 ? dt_wrap(err, "telling the parameter servers that training ended")
                                                  : 0;
}

static int ps_method_serve(struct exchange *x, struct dt_err *err)
{
    struct ps_worker *w = x->state;
    return ps_serve(x, w->ps, err);
}

static void ps_destroy(struct exchange *x)
{
    struct ps_worker *w = x->state;
    if (!w)
        return;
    if (pieces_close(&w->pieces))   /* else the thread still sends on the servers' comm */
        ps_free(w->ps);
    free(w);
}

static int ps_create(struct exchange *x, struct dt_err *err)
{
    struct ps_worker *w = calloc(1, sizeof *w);
    if (!w)
        return dt_fail(err, "out of memory");
    x->state = w;
    if (ps_open(x, false, &w->ps, err) < 0)
        return -1;
    return x->serving ? 0 : ps_open_pieces(w->ps, x, &w->pieces, false, 0, err);
}

const struct exchange_method exchange_bsp_ps = {
    .name = "bsp-ps",
    .needs_thread = true,
    .create = ps_create,
    .begin_backward = ps_begin_backward,
    .finish = ps_finish,
    .serve = ps_method_serve,
    .close = ps_close,
    .destroy = ps_destroy,
};

const struct exchange_method exchange_wfbp_ps = {
    .name = "wfbp-ps",
    .needs_op_order = true,
    .needs_thread = true,
    .create = ps_create,
    .begin_backward = ps_begin_backward,
    .grads_ready = ps_grads_ready,
    .finish = ps_finish,
    .serve = ps_method_serve,
    .close = ps_close,
    .destroy = ps_destroy,
};
