/* commbench_rounds.c - the parameter servers' rounds dtrain-commbench times (see commbench_rounds.h). */
#include "probe/commbench_rounds.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/partitions.h"

/* Tags: the push of buffer (or piece) i of k is ROUNDS_TAG_FIRST + i, its sum ROUNDS_TAG_FIRST + k +
 * i (MPI guarantees tags to 32767, which bounds the pieces of a round). */
#define ROUNDS_TAG_FIRST 16
#define ROUNDS_MOST_PIECES ((32767 - ROUNDS_TAG_FIRST) / 2)
/* How long a rank waiting on pieces sleeps when none moved: from the first, doubling to the
 * second (dtrain-train's servers do the same: the ranks beside it keep the cores). */
#define ROUNDS_POLL_FIRST_NS 20000L
#define ROUNDS_POLL_MOST_NS 1000000L

/* Rank r's part of a buffer of count floats cut into world parts: [first, first + *len). */
static size_t part_of(size_t count, int world, int r, size_t *len)
{
    size_t first = count * (size_t)r / (size_t)world;
    *len = count * (size_t)(r + 1) / (size_t)world - first;
    return first;
}

/* This rank's roles in a layout (commbench_rounds.h); a buffer is cut into a part per server. */
struct roles {
    enum layout layout;
    int world, servers, workers;
    int worker, server;        /* this rank's index in each role, or -1 */
};

static struct roles roles_of(const struct comm *c, enum layout layout)
{
    struct roles r = {layout, c->world, c->world, c->world, c->rank, c->rank};
    if (layout == ONE_SERVER) {
        bool serves = c->rank == c->world - 1;
        r.servers = 1, r.workers = c->world - 1, r.worker = serves ? -1 : c->rank, r.server = serves ? 0 : -1;
    } else if (layout == PAIRS) {
        bool serves = c->rank % 2 == 1;
        r.servers = r.workers = c->world / 2, r.worker = serves ? -1 : c->rank / 2, r.server = serves ? c->rank / 2 : -1;
    }
    return r;
}

static int server_rank(const struct roles *r, int j)
{
    return r->layout == PAIRS ? 2 * j + 1 : r->layout == ONE_SERVER ? r->world - 1 : j;
}

static int worker_rank(const struct roles *r, int w) { return r->layout == PAIRS ? 2 * w : w; }

/* A server's row for one worker's push of one buffer: the largest part, in floats. */
static size_t slot_row(const struct buffers *b, const struct roles *r)
{
    return b->count / (size_t)r->servers + 1;
}

/* A server's slot for worker w's push of buffer i. */
static float *slot_of(const struct buffers *b, const struct roles *r, int i, int w)
{
    return b->slots + ((size_t)i * (size_t)r->workers + (size_t)w) * slot_row(b, r);
}

/* sums[e] = the sum over rows w = 0..workers-1 of rows[w * stride + e], in row (worker) order. */
static void sum_rows(float *sums, const float *rows, size_t stride, int workers, size_t len)
{
    for (size_t e = 0; e < len; e++) {
        float sum = 0;
        for (int w = 0; w < workers; w++)
            sum += rows[(size_t)w * stride + e];
        sums[e] = sum;
    }
}

/* A round's first half: each worker's part j of each buffer to server j (tags ROUNDS_TAG_FIRST..), each server's
 * receives of its part from every worker (a worker's own part copied). Requests into reqs. */
static int push_parts(struct comm *c, const struct roles *r, int k, struct buffers *b, struct comm_request *reqs,
                      int *n, struct dt_err *err)
{
    size_t mine = 0, first = r->server >= 0 ? part_of(b->count, r->servers, r->server, &mine) : 0;
    for (int i = 0; i < k; i++) {
        float *data = b->data + (size_t)i * b->count;
        for (int j = 0; r->worker >= 0 && j < r->servers; j++) {
            size_t len, at = part_of(b->count, r->servers, j, &len);
            if (server_rank(r, j) != c->rank &&
                c->isend(c, data + at, len * sizeof(float), server_rank(r, j), ROUNDS_TAG_FIRST + i, &reqs[(*n)++], err) < 0)
                return -1;
        }
        for (int w = 0; r->server >= 0 && w < r->workers; w++) {
            if (worker_rank(r, w) == c->rank)   /* this rank's own push */
                memcpy(slot_of(b, r, i, w), data + first, mine * sizeof(float));
            else if (c->irecv(c, slot_of(b, r, i, w), mine * sizeof(float), worker_rank(r, w), ROUNDS_TAG_FIRST + i, &reqs[(*n)++],
                              err) < 0)
                return -1;
        }
    }
    return 0;
}

/* Its second half: each server's sum of its part over the workers, in worker order, to every
 * worker (tags ROUNDS_TAG_FIRST + k..); each worker's sums land whole in b->result (a server's own part there). */
static int send_sums(struct comm *c, const struct roles *r, int k, struct buffers *b, struct comm_request *reqs,
                     int *n, struct dt_err *err)
{
    size_t mine = 0, first = r->server >= 0 ? part_of(b->count, r->servers, r->server, &mine) : 0;
    for (int i = 0; i < k; i++) {
        float *sums = b->result + (size_t)i * b->count;
        if (r->server >= 0)
            sum_rows(sums + first, slot_of(b, r, i, 0), slot_row(b, r), r->workers, mine);
        for (int w = 0; r->server >= 0 && w < r->workers; w++)
            if (worker_rank(r, w) != c->rank &&
                c->isend(c, sums + first, mine * sizeof(float), worker_rank(r, w), ROUNDS_TAG_FIRST + k + i, &reqs[(*n)++], err) < 0)
                return -1;
        for (int j = 0; r->worker >= 0 && j < r->servers; j++) {
            size_t len, at = part_of(b->count, r->servers, j, &len);
            if (server_rank(r, j) != c->rank &&
                c->irecv(c, sums + at, len * sizeof(float), server_rank(r, j), ROUNDS_TAG_FIRST + k + i, &reqs[(*n)++], err) < 0)
                return -1;
        }
    }
    return 0;
}

int rounds_parts(struct comm *c, enum layout layout, int k, struct buffers *b, struct dt_err *err)
{
    struct roles r = roles_of(c, layout);
    int n = 0;
    struct comm_request *reqs = malloc(sizeof *reqs * (size_t)k * (size_t)c->world * 2);
    if (!reqs)
        return dt_fail(err, "out of memory");
    int rc = push_parts(c, &r, k, b, reqs, &n, err) < 0 ? -1 : c->wait_all(c, reqs, n, err);
    n = 0;
    rc = rc < 0 || send_sums(c, &r, k, b, reqs, &n, err) < 0 ? -1 : c->wait_all(c, reqs, n, err);
    free(reqs);
    return rc;
}


/* ---------- pieces under a credit ---------- */

/* A round's pieces: piece j is `per` floats from j per (the last may be short), held by server
 * server[j] at at[j] floats into its rows (a row per worker of `held` floats, its share). */
struct pieces {
    int n;
    size_t per, count, held;
    int *server;
    size_t *at;
};

static size_t piece_len(const struct pieces *p, int j)
{
    size_t first = (size_t)j * p->per;
    return p->count - first < p->per ? p->count - first : p->per;
}

static int plan_pieces(const struct roles *r, size_t count, size_t per, struct pieces *p, struct dt_err *err)
{
    *p = (struct pieces){.n = (int)((count + per - 1) / per), .per = per, .count = count};
    if (p->n > ROUNDS_MOST_PIECES)
        return dt_fail(err, "--partition-bytes %zu cuts %zu bytes into %d pieces, more than %d", per * sizeof(float),
                       count * sizeof(float), p->n, ROUNDS_MOST_PIECES);
    size_t *held = calloc((size_t)r->servers, sizeof *held);
    p->server = malloc((size_t)p->n * sizeof *p->server), p->at = malloc((size_t)p->n * sizeof *p->at);
    if (!held || !p->server || !p->at)
        return free(held), dt_fail(err, "out of memory");
    for (int j = 0; j < p->n; j++) {   /* as dtrain-train's servers place partitions */
        int k = partition_server(held, r->servers);
        p->server[j] = k, p->at[j] = held[k], held[k] += piece_len(p, j);
    }
    p->held = r->server >= 0 ? held[r->server] : 0;
    free(held);
    return 0;
}

/* Where a round of pieces stands on this rank. */
struct pieces_state {
    struct comm *c;
    const struct roles *r;
    struct buffers *b;
    const struct pieces *p;
    size_t credit, under;      /* bytes a worker may have under way (0: any), bytes it has */
    int next;                  /* the worker's next piece to push */
    char *pushed;              /* the worker's piece j: 0 waiting, 1 under way, 2 through */
    char *summed;              /* the server's piece j summed and its sums sent */
    struct comm_request *push, *in, *tail;   /* push[j]; in[j * workers + w]; the sums' receives and sends */
    int ntail;
};

/* The worker's pushes: started in order while the credit lets them (one may start when nothing is
 * under way), the finished ones' bytes given back. Sets *moved when one started or finished. */
static int worker_pushes(struct pieces_state *st, bool *moved, struct dt_err *err)
{
    const struct pieces *p = st->p;
    for (int j = 0; j < p->n; j++) {
        bool done = false;
        if (st->pushed[j] == 1 && st->c->test_all(st->c, &st->push[j], 1, &done, err) < 0)
            return -1;
        if (done)
            st->pushed[j] = 2, st->under -= piece_len(p, j) * sizeof(float), *moved = true;
    }
    for (; st->next < p->n; st->next++) {
        int j = st->next;
        size_t bytes = piece_len(p, j) * sizeof(float);
        const float *data = st->b->data + (size_t)j * p->per;
        if (server_rank(st->r, p->server[j]) == st->c->rank) {   /* its own server: a copy */
            memcpy(st->b->slots + (size_t)st->r->worker * p->held + p->at[j], data, bytes);
            st->pushed[j] = 2, *moved = true;
            continue;
        }
        if (st->credit && st->under > 0 && st->under + bytes > st->credit)
            break;
        if (st->c->isend(st->c, data, bytes, server_rank(st->r, p->server[j]), ROUNDS_TAG_FIRST + j, &st->push[j],
                         err) < 0)
            return -1;
        st->pushed[j] = 1, st->under += bytes, *moved = true;
    }
    return 0;
}

/* The server's pieces whose every push is in: summed in worker order into b->result and sent back. */
static int server_sums(struct pieces_state *st, bool *moved, struct dt_err *err)
{
    const struct pieces *p = st->p;
    const struct roles *r = st->r;
    for (int j = 0; j < p->n; j++) {
        if (p->server[j] != r->server || st->summed[j])
            continue;
        bool all = true;
        for (int w = 0; w < r->workers && all; w++) {
            if (worker_rank(r, w) == st->c->rank)
                all = st->pushed[j] == 2;
            else if (st->c->test_all(st->c, &st->in[(size_t)j * (size_t)r->workers + (size_t)w], 1, &all, err) < 0)
                return -1;
        }
        if (!all)
            continue;
        size_t len = piece_len(p, j);
        float *sums = st->b->result + (size_t)j * p->per;
        sum_rows(sums, st->b->slots + p->at[j], p->held, r->workers, len);
        for (int w = 0; w < r->workers; w++)
            if (worker_rank(r, w) != st->c->rank &&
                st->c->isend(st->c, sums, len * sizeof(float), worker_rank(r, w), ROUNDS_TAG_FIRST + p->n + j,
                             &st->tail[st->ntail++], err) < 0)
                return -1;
        st->summed[j] = 1, *moved = true;
    }
    return 0;
}

/* Posts what a round receives: the server's pushes of its pieces, the worker's sums. */
static int post_receives(struct pieces_state *st, struct dt_err *err)
{
    const struct pieces *p = st->p;
    const struct roles *r = st->r;
    for (int j = 0; j < p->n; j++) {
        for (int w = 0; p->server[j] == r->server && w < r->workers; w++)
            if (worker_rank(r, w) != st->c->rank &&
                st->c->irecv(st->c, st->b->slots + (size_t)w * p->held + p->at[j], piece_len(p, j) * sizeof(float),
                             worker_rank(r, w), ROUNDS_TAG_FIRST + j, &st->in[(size_t)j * (size_t)r->workers + (size_t)w],
                             err) < 0)
                return -1;
        if (r->worker >= 0 && server_rank(r, p->server[j]) != st->c->rank &&
            st->c->irecv(st->c, st->b->result + (size_t)j * p->per, piece_len(p, j) * sizeof(float),
                         server_rank(r, p->server[j]), ROUNDS_TAG_FIRST + p->n + j, &st->tail[st->ntail++], err) < 0)
            return -1;
    }
    return 0;
}

/* Whether this rank's part of the round is done but for its last sends and receives. */
static bool pieces_settled(const struct pieces_state *st)
{
    for (int j = 0; j < st->p->n; j++)
        if ((st->r->worker >= 0 && st->pushed[j] != 2) || (st->p->server[j] == st->r->server && !st->summed[j]))
            return false;
    return true;
}

static int run_pieces(struct pieces_state *st, struct dt_err *err)
{
    if (post_receives(st, err) < 0)
        return -1;
    long nap = ROUNDS_POLL_FIRST_NS;
    while (!pieces_settled(st)) {
        bool moved = false;
        if ((st->r->worker >= 0 && worker_pushes(st, &moved, err) < 0) ||
            (st->r->server >= 0 && server_sums(st, &moved, err) < 0))
            return -1;
        if (moved) {
            nap = ROUNDS_POLL_FIRST_NS;
            continue;
        }
        nanosleep(&(struct timespec){0, nap}, NULL);
        nap = nap * 2 < ROUNDS_POLL_MOST_NS ? nap * 2 : ROUNDS_POLL_MOST_NS;
    }
    return st->c->wait_all(st->c, st->tail, st->ntail, err);
}

int rounds_pieces(struct comm *c, enum layout layout, struct buffers *b, size_t piece, size_t credit_bytes,
                  struct dt_err *err)
{
    struct roles r = roles_of(c, layout);
    struct pieces p;
    if (plan_pieces(&r, b->count, piece, &p, err) < 0)
        return free(p.server), free(p.at), -1;
    size_t n = (size_t)p.n, workers = (size_t)r.workers;
    struct pieces_state st = {.c = c, .r = &r, .b = b, .p = &p, .credit = credit_bytes};
    st.pushed = calloc(n, 1), st.summed = calloc(n, 1);
    st.push = calloc(n, sizeof *st.push), st.in = calloc(n * workers, sizeof *st.in);
    st.tail = calloc(n * (workers + 1), sizeof *st.tail);   /* a server's sends, a worker's receives */
    int rc = st.pushed && st.summed && st.push && st.in && st.tail ? run_pieces(&st, err) : dt_fail(err, "out of memory");
    free(st.pushed), free(st.summed), free(st.push), free(st.in), free(st.tail), free(p.server), free(p.at);
    return rc;
}

size_t rounds_slot_floats(const struct comm *c, enum layout layout, size_t total, int k, size_t piece)
{
    struct roles r = roles_of(c, layout);
    if (r.server < 0)
        return 0;
    /* a part per server: count / servers + 1 floats a worker and buffer (total: k buffers); equal
     * pieces placed in turn: a server's share is at most count / servers and two pieces */
    size_t row = piece ? total / (size_t)r.servers + 2 * piece : total / (size_t)r.servers + (size_t)k;
    return row * (size_t)r.workers;
}

int rounds_workers(const struct comm *c, enum layout layout)
{
    return roles_of(c, layout).workers;
}

bool rounds_serves_only(const struct comm *c, enum layout layout)
{
    return roles_of(c, layout).worker < 0;
}
