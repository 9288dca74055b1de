/* ps.c - parameter servers, BytePS's way (seeds 002 and 004): the last --ps-servers ranks of the
 * job train nothing; the gradient buffer is cut into partitions of --partition-bytes, spread over
 * the servers balanced by bytes; each step every worker pushes its partitions to their servers,
 * which sum them in worker order and send each worker the sum back; the workers then take the mean
 * and run the optimizer themselves, so their parameters stay identical. bsp-ps pushes everything
 * after backward, wfbp-ps pushes each partition as soon as backward has completed it. With two
 * workers a sum is a + b, as the allreduce's: parameters equal BSP's bitwise.
 *
 * Messages (all on the world comm): worker 0 tells each server, before a step's first push,
 * whether a step comes (1) or training is over (0) (PS_TAG_CONTROL); partition p travels both ways
 * with tag PS_TAG_FIRST + p. Every rank computes the same partitions and owners. */
#include "exchange.h"
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PS_TAG_CONTROL 1
#define PS_TAG_FIRST 16
/* MPI guarantees tags up to 32767: partitions beyond are refused (use larger partitions). */
#define PS_MAX_PARTITIONS (32767 - PS_TAG_FIRST)

struct partition {
    size_t first, count;       /* floats of the gradient buffer */
    int server;                /* its server's index (world rank: workers + index) */
};

struct ps {
    bool layerwise;            /* wfbp-ps */
    int servers, workers, me;  /* me: this server's index, or -1 on a worker */
    size_t mine;               /* server: floats of its partitions */
    struct comm *group;        /* the workers' comm, or the servers' */
    struct partition *parts;
    int nparts;
    int next;                  /* worker: partitions [0, next) not yet pushed this step */
    float *inbox;              /* worker: the sums coming back; server: workers x its partitions */
    float *sums;               /* server: the sums of its partitions */
    struct comm_request *reqs;
    int nreqs, cap;
    int control;               /* worker 0's message to the servers (kept until sent) */
    bool told;                 /* the servers know this step has begun */
};

/* Cuts count floats into partitions and gives each to the server with the fewest bytes so far. */
static int plan_partitions(struct ps *s, size_t count, size_t partition_bytes, struct dt_err *err)
{
    size_t per = partition_bytes / sizeof(float) ? partition_bytes / sizeof(float) : 1;
    size_t n = (count + per - 1) / per;
    if (n > PS_MAX_PARTITIONS)
        return dt_fail(err, "--partition-bytes %zu cuts the gradients into %zu partitions (at most %d)",
                       partition_bytes, n, PS_MAX_PARTITIONS);
    size_t *load = calloc((size_t)s->servers, sizeof *load);
    s->parts = calloc(n ? n : 1, sizeof *s->parts);
    if (!load || !s->parts)
        return free(load), dt_fail(err, "out of memory");
    for (size_t p = 0; p < n; p++) {
        int least = 0;
        for (int k = 1; k < s->servers; k++)
            if (load[k] < load[least])
                least = k;
        size_t first = p * per, left = count - first;
        s->parts[p] = (struct partition){first, left < per ? left : per, least};
        load[least] += s->parts[p].count;
    }
    free(load);
    s->nparts = (int)n;
    return 0;
}

/* Room for one more request. */
static struct comm_request *next_request(struct ps *s, struct dt_err *err)
{
    if (s->nreqs == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        struct comm_request *grown = realloc(s->reqs, (size_t)cap * sizeof *grown);
        if (!grown)
            return dt_fail(err, "out of memory"), NULL;
        s->reqs = grown, s->cap = cap;
    }
    return &s->reqs[s->nreqs++];
}

static int wait_requests(struct exchange *x, struct ps *s, struct dt_err *err)
{
    double start = timeline_now();
    int rc = x->transport->wait_all(x->transport, s->reqs, s->nreqs, err);
    timeline_span(x->timeline, LANE_EXCHANGE, "exchange", "wait", start, timeline_now());
    s->nreqs = 0;
    return rc;
}

/* Worker 0 tells every server whether a step comes (1) or training is over (0). */
static int tell_servers(struct exchange *x, struct ps *s, int what, struct dt_err *err)
{
    if (s->group->rank != 0)
        return 0;
    s->control = what;
    for (int k = 0; k < s->servers; k++) {
        struct comm_request *req = next_request(s, err);
        if (!req || x->transport->isend(x->transport, &s->control, sizeof s->control, s->workers + k,
                                        PS_TAG_CONTROL, req, err) < 0)
            return -1;
    }
    return 0;
}

/* Pushes partition p to its server and asks for its sum back. */
static int push(struct exchange *x, struct ps *s, int p, struct dt_err *err)
{
    const struct partition *part = &s->parts[p];
    int server = s->workers + part->server;
    size_t bytes = part->count * sizeof(float);
    struct comm_request *out = next_request(s, err), *in = out ? next_request(s, err) : NULL;
    if (!in || x->transport->isend(x->transport, x->grads + part->first, bytes, server, PS_TAG_FIRST + p, out, err) < 0 ||
        x->transport->irecv(x->transport, s->inbox + part->first, bytes, server, PS_TAG_FIRST + p, in, err) < 0)
        return dt_wrap(err, "pushing partition %d to server rank %d", p, server);
    timeline_instant(x->timeline, LANE_EXCHANGE, "exchange", "push", timeline_now(), "partition", p);
    x->stats.pieces++;
    x->stats.floats += (double)part->count;
    return 0;
}

/* Pushes every partition not yet pushed that lies in [first, end), from the last. */
static int push_from(struct exchange *x, struct ps *s, size_t first, struct dt_err *err)
{
    if (!s->told && tell_servers(x, s, 1, err) < 0)   /* the step's first push */
        return -1;
    s->told = true;
    while (s->next > 0 && s->parts[s->next - 1].first >= first)
        if (push(x, s, --s->next, err) < 0)
            return -1;
    bool done;
    return x->transport->test_all(x->transport, s->reqs, s->nreqs, &done, err);
}

static int ps_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    struct ps *s = x->state;
    return s->layerwise ? push_from(x, s, first, err) : 0;
}

static int ps_finish(struct exchange *x, struct dt_err *err)
{
    struct ps *s = x->state;
    if (push_from(x, s, 0, err) < 0 || wait_requests(x, s, err) < 0)
        return dt_wrap(err, "the parameter-server exchange");
    s->next = s->nparts;
    s->told = false;
    memcpy(x->grads, s->inbox, x->count * sizeof(float));
    comm_scale(x->grads, x->count, s->workers);
    return 0;
}

static int ps_close(struct exchange *x, struct dt_err *err)
{
    struct ps *s = x->state;
    if (tell_servers(x, s, 0, err) < 0 || wait_requests(x, s, err) < 0)
        return dt_wrap(err, "telling the parameter servers that training ended");
    return 0;
}

/* A server's step: every worker's pushes of its partitions, their sums (in worker order), each
 * sum back to every worker. */
static int serve_step(struct exchange *x, struct ps *s, struct dt_err *err)
{
    size_t slot = 0, mine = s->mine;   /* where partition p's floats sit in sums, and worker w's in inbox */
    for (int p = 0; p < s->nparts; p++) {
        const struct partition *part = &s->parts[p];
        if (part->server != s->me)
            continue;
        for (int w = 0; w < s->workers; w++) {
            struct comm_request *req = next_request(s, err);
            if (!req || x->transport->irecv(x->transport, s->inbox + w * mine + slot, part->count * sizeof(float), w,
                                            PS_TAG_FIRST + p, req, err) < 0)
                return -1;
        }
        slot += part->count;
    }
    if (wait_requests(x, s, err) < 0)
        return -1;
    for (size_t i = 0; i < mine; i++) {
        float sum = s->inbox[i];
        for (int w = 1; w < s->workers; w++)
            sum += s->inbox[w * mine + i];
        s->sums[i] = sum;
    }
    slot = 0;
    for (int p = 0; p < s->nparts; p++) {
        const struct partition *part = &s->parts[p];
        if (part->server != s->me)
            continue;
        for (int w = 0; w < s->workers; w++) {
            struct comm_request *req = next_request(s, err);
            if (!req || x->transport->isend(x->transport, s->sums + slot, part->count * sizeof(float), w,
                                            PS_TAG_FIRST + p, req, err) < 0)
                return -1;
        }
        slot += part->count;
    }
    return wait_requests(x, s, err);
}

static int ps_serve(struct exchange *x, struct dt_err *err)
{
    struct ps *s = x->state;
    for (long step = 1;; step++) {
        int control = -1;
        if (x->transport->recv(x->transport, &control, sizeof control, 0, PS_TAG_CONTROL, err) < 0)
            return dt_wrap(err, "server %d waiting for step %ld", s->me, step);
        if (control == 0)
            return 0;
        fault_injection_point(x->transport->rank, step);
        if (serve_step(x, s, err) < 0)
            return dt_wrap(err, "server %d, step %ld", s->me, step);
        x->stats.steps++;
    }
}

static void ps_destroy(struct exchange *x)
{
    struct ps *s = x->state;
    if (!s)
        return;
    if (s->group)
        s->group->destroy(s->group);
    free(s->parts);
    free(s->inbox);
    free(s->sums);
    free(s->reqs);
    free(s);
}

/* The servers' buffers: every worker's pushes of this server's partitions, and their sums. */
static int server_buffers(struct ps *s, struct dt_err *err)
{
    for (int p = 0; p < s->nparts; p++)
        s->mine += s->parts[p].server == s->me ? s->parts[p].count : 0;
    s->inbox = malloc(((size_t)s->workers * s->mine + 1) * sizeof(float));
    s->sums = malloc((s->mine + 1) * sizeof(float));
    return s->inbox && s->sums ? 0 : dt_fail(err, "out of memory for %zu floats of partitions", s->mine);
}

static int ps_create(struct exchange *x, struct dt_err *err)
{
    struct comm *world = x->transport;
    struct ps *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(err, "out of memory");
    x->state = s;
    s->layerwise = x->method == &exchange_wfbp_ps;
    s->servers = x->options.ps_servers ? x->options.ps_servers : EXCHANGE_PS_SERVERS;
    s->workers = world->world - s->servers;
    if (!world->isend || !world->irecv)
        return dt_fail(err, "the %s transport has no point-to-point messages", world->name);
    if (s->workers < 1)
        return dt_fail(err, "%d rank%s cannot hold %d server%s and a worker (--ps-servers)", world->world,
                       world->world == 1 ? "" : "s", s->servers, s->servers == 1 ? "" : "s");
    s->me = world->rank >= s->workers ? world->rank - s->workers : -1;
    size_t partition = x->options.partition_bytes ? x->options.partition_bytes : EXCHANGE_PARTITION_BYTES;
    if (world->split(world, s->me >= 0, world->rank, &s->group, err) < 0 ||
        plan_partitions(s, x->count, partition, err) < 0)
        return -1;
    x->serving = s->me >= 0;
    x->workers = (struct workers){.comm = s->group, .rank = x->serving ? s->me : s->group->rank, .count = s->workers};
    s->next = s->nparts;
    snprintf(x->stats.detail, sizeof x->stats.detail, "%d workers, %d server%s, %d partition%s of up to %zu bytes",
             s->workers, s->servers, s->servers == 1 ? "" : "s", s->nparts, s->nparts == 1 ? "" : "s", partition);
    if (x->serving)
        return server_buffers(s, err);
    s->inbox = malloc((x->count + 1) * sizeof(float));
    return s->inbox ? 0 : dt_fail(err, "out of memory");
}

const struct exchange_method exchange_bsp_ps = {
    .name = "bsp-ps",
    .aliases = "ps",
    .help = "a parameter server: the last --ps-servers ranks (1) sum the workers' gradients, pushed in "
            "partitions of --partition-bytes (4096000) after backward (CPU ranks)",
    .create = ps_create,
    .finish = ps_finish,
    .serve = ps_serve,
    .close = ps_close,
    .destroy = ps_destroy,
};

const struct exchange_method exchange_wfbp_ps = {
    .name = "wfbp-ps",
    .aliases = "",
    .help = "as bsp-ps, each partition pushed as soon as backward has completed it (CPU ranks)",
    .needs_op_order = true,
    .create = ps_create,
    .grads_ready = ps_grads_ready,
    .finish = ps_finish,
    .serve = ps_serve,
    .close = ps_close,
    .destroy = ps_destroy,
};
