/* check_links.c - every pair of ranks' link measured (check_links.h). */
#include "probe/check_links.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PING_PONGS 20   /* latency: the median of these round trips, halved */
#define CHECK_PASSES 2  /* the schedule is run twice, each link's best kept */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int check_partner(int rank, int world, int round)
{
    int m = world % 2 ? world + 1 : world;   /* an odd world plays with a dummy, m - 1 */
    int fixed = m - 1, r = round % (m - 1);
    int partner;
    if (rank == fixed)
        partner = r;   /* the circle's centre meets whoever stands at the round's head */
    else if (rank == r)
        partner = fixed;
    else
        partner = ((2 * r - rank) % (m - 1) + (m - 1)) % (m - 1);
    return partner >= world || partner == rank ? -1 : partner;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One pair: latency by ping-pong, bandwidth from the lower rank to the higher. */
static int measure_pair(struct comm *c, int peer, char *buf, size_t bytes, int iters, struct link_figures *out,
                        struct dt_err *err)
{
    bool low = c->rank < peer;
    double rtt[PING_PONGS];
    /* untimed first: the transport connects a pair on its first message (TCP: a handshake) */
    if ((low ? c->send(c, buf, bytes, peer, 0, err) : c->recv(c, buf, bytes, peer, 0, err)) < 0 ||
        (low ? c->recv(c, buf, 1, peer, 0, err) : c->send(c, buf, 1, peer, 0, err)) < 0)
        return -1;
    for (int i = 0; i < PING_PONGS; i++) {
        double t0 = now_s();
        int rc = low ? (c->send(c, buf, 8, peer, 1, err) < 0 || c->recv(c, buf, 8, peer, 1, err) < 0)
                     : (c->recv(c, buf, 8, peer, 1, err) < 0 || c->send(c, buf, 8, peer, 1, err) < 0);
        if (rc)
            return -1;
        rtt[i] = now_s() - t0;
    }
    qsort(rtt, PING_PONGS, sizeof rtt[0], by_value);
    out->latency_s = rtt[PING_PONGS / 2] / 2;
    double t0 = now_s();
    for (int i = 0; i < iters; i++)
        if ((low ? c->send(c, buf, bytes, peer, 2, err) : c->recv(c, buf, bytes, peer, 2, err)) < 0)
            return -1;
    /* the receiver's acknowledgement ends the timing once every byte is in */
    if ((low ? c->recv(c, buf, 1, peer, 3, err) : c->send(c, buf, 1, peer, 3, err)) < 0)
        return -1;
    out->bytes_per_s = (double)bytes * iters / (now_s() - t0);
    return 0;
}

#define TAG_TOKEN 9

/* Waits for the token from rank `from` without spinning: a rank that waits its turn must leave the
 * cores to the pair being measured (the ranks of a test cluster share a machine's). */
static int wait_token(struct comm *c, int from, struct dt_err *err)
{
    char token;
    struct comm_request req;
    bool done = false;
    if (c->irecv(c, &token, 1, from, TAG_TOKEN, &req, err) < 0)
        return -1;
    while (!done) {
        if (c->test_all(c, &req, 1, &done, err) < 0)
            return -1;
        if (!done)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return 0;
}

/* One pair at a time, in the order (0,1), (0,2), ..., (1,2), ...: the lower rank of a pair, once
 * done, hands the token to the next pair's ranks. */
static int links_one_at_a_time(struct comm *c, char *buf, size_t bytes, int iters, struct link_figures *mine,
                               struct dt_err *err)
{
    int n = c->world, prev = -1;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            bool in = c->rank == a || c->rank == b;
            if (in && prev >= 0 && prev != c->rank && wait_token(c, prev, err) < 0)
                return -1;
            for (int pass = 0; in && pass < CHECK_PASSES; pass++) {
                struct link_figures f, *kept = &mine[a * n + b];
                if (measure_pair(c, c->rank == a ? b : a, buf, bytes, iters, &f, err) < 0)
                    return -1;
                if (c->rank == a && (pass == 0 || f.bytes_per_s > kept->bytes_per_s))
                    kept->bytes_per_s = f.bytes_per_s;
                if (c->rank == a && (pass == 0 || f.latency_s < kept->latency_s))
                    kept->latency_s = f.latency_s;
            }
            int na = b + 1 < n ? a : a + 1, nb = b + 1 < n ? b + 1 : a + 2;   /* the next pair */
            if (c->rank == a && na < n && nb < n) {
                for (int m = 0; m < 2; m++) {
                    int to = m ? nb : na;
                    if (to != c->rank && c->send(c, "t", 1, to, TAG_TOKEN, err) < 0)
                        return -1;
                }
            }
            prev = a;
        }
    /* the last pair's lower rank lets the others into the gather, which they would spin in */
    int last_a = n - 2, last_b = n - 1;
    if (c->rank == last_a) {
        for (int to = 0; to < n; to++)
            if (to != last_a && to != last_b && c->send(c, "t", 1, to, TAG_TOKEN, err) < 0)
                return -1;
    } else if (c->rank != last_b && wait_token(c, last_a, err) < 0) {
        return -1;
    }
    return 0;
}

int check_links(struct comm *comm, size_t bytes, int iters, bool one_at_a_time, struct link_figures *links,
                struct dt_err *err)
{
    int n = comm->world, rounds = n % 2 ? n : n - 1;
    struct link_figures *mine = calloc((size_t)n * n, sizeof *mine);
    char *buf = malloc(bytes > 8 ? bytes : 8);
    if (!mine || !buf)
        return free(mine), free(buf), dt_fail(err, "out of memory");
    memset(buf, 0x5a, bytes > 8 ? bytes : 8);
    int rc = one_at_a_time ? links_one_at_a_time(comm, buf, bytes, iters, mine, err) : 0;
    /* Every pair twice, the best of the two kept: the ranks' first moments after their start (the
     * launcher's own processes, connections being made) must not read as a slow link. */
    for (int pass = 0; pass < CHECK_PASSES && rc == 0 && !one_at_a_time; pass++) {
        for (int round = 0; round < rounds && rc == 0; round++) {
            int peer = check_partner(comm->rank, n, round);
            struct link_figures f;
            if (peer < 0)
                continue;
            rc = measure_pair(comm, peer, buf, bytes, iters, &f, err);
            struct link_figures *kept = &mine[comm->rank * n + peer];   /* the lower rank keeps them */
            if (rc == 0 && comm->rank < peer && (pass == 0 || f.bytes_per_s > kept->bytes_per_s))
                kept->bytes_per_s = f.bytes_per_s;
            if (rc == 0 && comm->rank < peer && (pass == 0 || f.latency_s < kept->latency_s))
                kept->latency_s = f.latency_s;
        }
    }
    /* every rank's row into one table on every rank */
    struct link_figures *rows = rc == 0 ? malloc((size_t)n * n * sizeof *rows) : NULL;
    if (rc == 0 && !rows)
        rc = dt_fail(err, "out of memory");
    if (rc == 0)
        rc = comm->allgather(comm, mine + (size_t)comm->rank * n, (size_t)n * sizeof *mine, rows, err);
    if (rc == 0)
        memcpy(links, rows, (size_t)n * n * sizeof *links);
    free(rows), free(mine), free(buf);
    return rc;
}
