/* comm_thread.c - a rank's communication thread: plan, priority, credit, rank 0's order (comm_thread.h). */
#include "trainer/exchange/comm_thread.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* How long the thread sleeps when transfers are under way but none moved: MPI advances them only
 * inside its calls, so the thread calls in again. While the rank waits for a transfer (its cores
 * are idle) every ENGINE_POLL_FAST_NS; while it computes, backing off from that to
 * ENGINE_POLL_SLOW_NS, so the polling leaves the cores to the compute it overlaps (on a node with
 * fewer cores than threads every wake-up is taken from the compute). Work made ready wakes the
 * thread at once. */
#define ENGINE_POLL_FAST_NS 20000L
#define ENGINE_POLL_SLOW_NS 1000000L

enum transfer_state { WAITING, READY, STARTED, DONE };

struct comm_thread {
    struct comm *comm;             /* the thread's own during a step (the method's) */
    struct comm_thread_ops ops;
    struct comm_thread_transfer *plan;  /* in priority order: by layer, then partition */
    int transfers, layers;
    int *layer_begin;              /* layer l's transfers: [layer_begin[l], layer_begin[l + 1]) */
    size_t credit_bytes;

    pthread_mutex_t lock;          /* everything below, and the plan's states */
    pthread_cond_t wake;           /* the thread: something became ready, or stop */
    pthread_cond_t moved;          /* the rank: a transfer finished, or one failed */
    pthread_t thread;
    bool running, stop, failed;
    bool blocked;                  /* in a transport call, the lock released (see release_for_call) */
    int waiters;                   /* the rank's threads in a wait (poll fast) */
    long poll_ns;                  /* the thread's current pause */
    struct dt_err error;
    long credit;                   /* bytes that may still start (negative: overdrawn) */
    int ready_from;                /* plan[ready_from...] have been made ready this step */
    int picked;                    /* transfers started (or ordered) this step */
    int in_flight;
    struct timeline *timeline;
    struct comm_thread_stats stats;
};

static bool thread_leads(const struct comm_thread *e)
{
    return !e->ops.ordered || e->ops.fifo || e->comm->rank == 0;
}

/* ---------- the plan ---------- */

static int make_plan(struct comm_thread *e, const size_t *first, const size_t *count, int layers, size_t per,
                     struct dt_err *err)
{
    if (per == 0)
        for (int l = 0; l < layers; l++)
            per = count[l] > per ? count[l] : per;   /* whole spans */
    per = per ? per : 1;
    size_t n = 0;
    for (int l = 0; l < layers; l++)
        n += (count[l] + per - 1) / per;
    e->plan = calloc(n ? n : 1, sizeof *e->plan);
    e->layer_begin = calloc((size_t)layers + 1, sizeof *e->layer_begin);
    if (!e->plan || !e->layer_begin)
        return dt_fail(err, "out of memory for %zu transfers", n);
    int k = 0;
    for (int l = 0; l < layers; l++) {
        e->layer_begin[l] = k;
        for (size_t done = 0, part = 0; done < count[l]; done += per, part++) {
            size_t left = count[l] - done;
            e->plan[k] = (struct comm_thread_transfer){.first = first[l] + done, .count = left < per ? left : per,
                                                  .index = k, .layer = l, .part = (int)part, .state = DONE};
            k++;
        }
    }
    e->layer_begin[layers] = k;
    e->transfers = k;
    e->layers = layers;
    e->ready_from = k;
    return 0;
}

/* ---------- the thread ---------- */

/* The thread calls the transport with the lock released. The rank takes the lock to make each
 * layer's gradients ready, between the layers of its backward pass; a transport call held under
 * it put the backward pass behind the network (one MPI_Test of a 3-rank run took up to 291 ms:
 * docs/studies/2026-11-29-backward-behind-the-transport.md). Only this thread touches a started
 * transfer's requests and stages, so those need no lock; the rank's side reads a transfer's
 * state, which changes with the lock held. `blocked` tells comm_thread_destroy that the thread is
 * inside such a call. */
static void release_for_call(struct comm_thread *e)
{
    e->blocked = true;
    pthread_mutex_unlock(&e->lock);
}

static void retake_after_call(struct comm_thread *e)
{
    pthread_mutex_lock(&e->lock);
    e->blocked = false;
}

static void thread_fail(struct comm_thread *e, const struct dt_err *err)
{
    if (!e->failed)
        e->error = *err;
    e->failed = true;
    pthread_cond_broadcast(&e->moved);
}

/* The credit plan[k] takes. */
static long credit_charge(const struct comm_thread *e, int k)
{
    const struct comm_thread_transfer *t = &e->plan[k];
    return (long)(e->ops.charge ? e->ops.charge(e->ops.ctx, t) : t->count * sizeof(float));
}

/* Starts plan[k] (lock held; the method's start does not block). */
static int start_transfer(struct comm_thread *e, int k)
{
    struct comm_thread_transfer *t = &e->plan[k];
    struct dt_err err;
    t->nreqs = 0;
    t->stage = 0;
    t->credit_stage = 0;
    t->credit_back = false;
    t->started = e->timeline ? timeline_now() : 0;   /* the trace's alone */
    release_for_call(e);   /* t stays READY to the rank until it is STARTED below */
    int rc = e->ops.start(e->ops.ctx, e->comm, t, &err);
    retake_after_call(e);
    if (rc < 0) {
        dt_wrap(&err, "layer %d, partition %d", t->layer, t->part);
        thread_fail(e, &err);
        return -1;
    }
    t->state = STARTED;
    e->credit -= credit_charge(e, k);
    e->in_flight++;
    e->picked++;
    e->stats.started++;
    e->stats.floats += (double)t->count;
    return 0;
}

static bool has_credit(const struct comm_thread *e)
{
    return e->credit_bytes == 0 || e->credit > 0;
}

/* Whether plan[k] may start now: ready, and credit left or none taken. */
static bool transfer_startable(const struct comm_thread *e, int k)
{
    return e->plan[k].state == READY && (has_credit(e) || credit_charge(e, k) == 0);
}

/* The transfer to start next, or -1: the one made ready first (FIFO: backward readies from the
 * end), or the one of highest priority. */
static int best_ready(const struct comm_thread *e)
{
    if (e->ops.fifo) {
        for (int k = e->transfers - 1; k >= e->ready_from; k--)
            if (transfer_startable(e, k))
                return k;
        return -1;
    }
    for (int k = e->ready_from; k < e->transfers; k++)
        if (transfer_startable(e, k))
            return k;
    return -1;
}

/* Tests n of t's requests; -1 when the test failed (the thread has failed). */
static int test_transfers(struct comm_thread *e, struct comm_thread_transfer *t, int n, bool *done)
{
    struct dt_err err;
    release_for_call(e);
    int rc = e->comm->test_all(e->comm, t->reqs, n, done, &err);
    retake_after_call(e);
    if (rc < 0) {
        dt_wrap(&err, "layer %d, partition %d", t->layer, t->part);
        thread_fail(e, &err);
        return -1;
    }
    return 0;
}

/* A stage of t is done: the next one started (1), or none left (0), or -1 (the thread failed). */
static int next_stage(struct comm_thread *e, struct comm_thread_transfer *t)
{
    struct dt_err err;
    int more = 0;
    double done_at = e->timeline ? timeline_now() : 0;   /* (no clock read while nothing is traced) */
    if (e->ops.advance) {
        release_for_call(e);
        more = e->ops.advance(e->ops.ctx, e->comm, t, &err);
        retake_after_call(e);
    }
    if (more < 0) {
        dt_wrap(&err, "layer %d, partition %d, stage %d", t->layer, t->part, t->stage + 1);
        thread_fail(e, &err);
        return -1;
    }
    if (more > 0 && e->timeline) {   /* where a transfer's time went (a node's hand-offs, the push across): in the trace */
        char name[64];
        snprintf(name, sizeof name, "%s L%d.%d stage %d done", e->ops.what, t->layer, t->part, t->stage);
        timeline_instant(e->timeline, LANE_EXCHANGE, "stage", name, done_at, "stage", t->stage);
    }
    t->stage += more;
    return more;
}

/* Tests the transfers under way: those sent return their credit, those whose last stage is done
 * are marked so. Whether any moved. Each transfer is tested on its own, one MPI_Test (a pass of
 * MPI's progress) each: a nonblocking allreduce moves to its next round only inside such a pass.
 * One MPI_Testsome a round over all of them instead (a trial, 2026-11-29: 2 ranks, LeNet, this
 * 2-vCPU VM, alternating with the build before) ran 0.85-0.93x the samples/s: it does not look
 * again after its pass, so a completion waited a round; looking again made it even with the
 * build before, within this VM's 15% spread, so it was left out. */
static bool transfers_complete(struct comm_thread *e)
{
    bool any = false;
    for (int k = e->ready_from; k < e->transfers && e->in_flight > 0 && !e->failed; k++) {
        struct comm_thread_transfer *t = &e->plan[k];
        if (t->state != STARTED)
            continue;
        bool sent = t->credit_back || t->stage != t->credit_stage, done = false;
        int credit_requests = e->ops.credit_requests ? e->ops.credit_requests : t->nreqs;
        if ((!sent && test_transfers(e, t, credit_requests, &sent) < 0) || (sent && test_transfers(e, t, t->nreqs, &done) < 0))
            return true;
        if (sent && !t->credit_back && t->stage >= t->credit_stage) {
            t->credit_back = true;
            e->credit += credit_charge(e, k);
            any = true;
        }
        int more = done ? next_stage(e, t) : 0;
        if (more < 0)
            return true;
        if (!done || more) {
            any |= more;
            continue;
        }
        t->state = DONE;
        e->in_flight--;
        if (e->timeline) {   /* as the stage marks: no name made, no clock read, while nothing is traced */
            char name[64];
            snprintf(name, sizeof name, "%s L%d.%d", e->ops.what, t->layer, t->part);
            timeline_span(e->timeline, LANE_EXCHANGE, "transfer", name, t->started, timeline_now());
        }
        any = true;
    }
    if (any)
        pthread_cond_broadcast(&e->moved);
    return any;
}

/* Rank 0, or any rank over point-to-point: starts ready transfers by priority while credit
 * lasts, telling the followers each choice first. Whether any started. */
static bool lead_round(struct comm_thread *e)
{
    bool any = false;
    for (int k; !e->failed && (k = best_ready(e)) >= 0; any = true) {   /* best_ready weighs the credit */
        if (e->ops.ordered && !e->ops.fifo && e->comm->world > 1) {
            struct dt_err err;
            int order = k;
            release_for_call(e);   /* a broadcast's root returns once the message is out */
            int rc = e->comm->broadcast(e->comm, &order, sizeof order, 0, &err);
            retake_after_call(e);
            if (rc < 0) {
                dt_wrap(&err, "telling the ranks which transfer is next");
                thread_fail(e, &err);
                return true;
            }
        }
        if (start_transfer(e, k) < 0)
            return true;
    }
    return any;
}

/* A follower: takes rank 0's next choice (waiting for it) and starts it once backward has made it
 * ready here. Whether it started one. */
static bool follow_round(struct comm_thread *e, int *order)
{
    if (*order < 0 && e->picked < e->transfers && e->ready_from < e->transfers) {
        struct dt_err err;
        int next = -1;
        release_for_call(e);   /* rank 0 chooses when its backward and credit allow */
        int rc = e->comm->broadcast(e->comm, &next, sizeof next, 0, &err);
        retake_after_call(e);
        if (rc < 0 || next < 0 || next >= e->transfers) {
            if (rc == 0)
                dt_fail(&err, "rank 0 chose transfer %d of %d", next, e->transfers);
            dt_wrap(&err, "waiting for rank 0's choice of the next transfer");
            thread_fail(e, &err);
            return true;
        }
        *order = next;
    }
    if (*order >= 0 && e->plan[*order].state == READY) {
        int k = *order;
        *order = -1;
        start_transfer(e, k);   /* a failure is kept for the rank's next wait */
        return true;
    }
    return false;
}

/* Sleeps until work is made ready, the rank starts waiting, or the pause is over; the pause
 * doubles each time nothing moved, up to the slow poll, unless the rank waits. */
static void pause_briefly(struct comm_thread *e)
{
    long ns = e->waiters > 0 ? ENGINE_POLL_FAST_NS : e->poll_ns;
    e->poll_ns = ns * 2 < ENGINE_POLL_SLOW_NS ? ns * 2 : ENGINE_POLL_SLOW_NS;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ns;
    if (until.tv_nsec >= 1000000000L)
        until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(&e->wake, &e->lock, &until);
}

static void *comm_thread_main(void *arg)
{
    struct comm_thread *e = arg;
    int order = -1;   /* a follower's next transfer, as rank 0 chose it */
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        if (e->failed) {
            pthread_cond_wait(&e->wake, &e->lock);
            continue;
        }
        bool moved = transfers_complete(e);
        moved |= thread_leads(e) ? lead_round(e) : follow_round(e, &order);
        bool waiting_for_order = !thread_leads(e) && order < 0 && e->picked < e->transfers && e->ready_from < e->transfers;
        if (moved) {
            e->poll_ns = ENGINE_POLL_FAST_NS;
            continue;
        }
        if (e->in_flight > 0 || waiting_for_order)
            pause_briefly(e);
        else
            pthread_cond_wait(&e->wake, &e->lock);   /* nothing under way, nothing startable */
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---------- the rank's side ---------- */

int comm_thread_create(struct comm_thread **thread, struct comm *comm, const size_t *first, const size_t *count, int spans,
                  size_t partition_floats, size_t credit_bytes, struct comm_thread_ops ops, struct dt_err *err)
{
    *thread = NULL;
    if (!comm->thread_safe)
        return dt_fail(err, "the %s transport cannot be used from a communication thread%s", comm->name,
                       comm->device_buffers ? "" : " (MPI without MPI_THREAD_MULTIPLE)");
    struct comm_thread *e = calloc(1, sizeof *e);
    if (!e)
        return dt_fail(err, "out of memory");
    e->ops = ops;
    e->credit_bytes = credit_bytes;
    e->comm = comm;
    if (make_plan(e, first, count, spans, partition_floats, err) < 0) {
        free(e->plan), free(e->layer_begin), free(e);
        return -1;
    }
    e->credit = (long)credit_bytes;
    e->poll_ns = ENGINE_POLL_FAST_NS;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->wake, NULL);
    pthread_cond_init(&e->moved, NULL);
    if (pthread_create(&e->thread, NULL, comm_thread_main, e) != 0) {
        comm_thread_destroy(e);
        return dt_fail(err, "cannot start the communication thread");
    }
    e->running = true;
    *thread = e;
    return 0;
}

const struct comm_thread_transfer *comm_thread_plan(const struct comm_thread *e, int *transfers)
{
    *transfers = e->transfers;
    return e->plan;
}

void comm_thread_begin_step(struct comm_thread *e, struct timeline *timeline)
{
    pthread_mutex_lock(&e->lock);
    for (int k = 0; k < e->transfers; k++)
        e->plan[k].state = WAITING;
    e->ready_from = e->transfers;
    e->picked = 0;
    e->timeline = timeline;
    pthread_mutex_unlock(&e->lock);
}

void comm_thread_ready_from(struct comm_thread *e, size_t first)
{
    pthread_mutex_lock(&e->lock);
    int k = e->ready_from;
    while (k > 0 && e->plan[k - 1].first >= first) {
        e->plan[--k].state = READY;
        /* a device transport notes this point of the compute stream for the transfer: started later
         * by the thread, it waits for these gradients only, not for the compute queued since */
        struct dt_err err;
        if (e->comm->mark_ready && e->comm->mark_ready(e->comm, k + 1, &err) < 0)
            thread_fail(e, &err);
    }
    if (k < e->ready_from) {
        for (int i = k; i < e->ready_from; i++)
            timeline_instant(e->timeline, LANE_EXCHANGE, "transfer", "ready", timeline_now(), "layer", e->plan[i].layer);
        e->ready_from = k;
        pthread_cond_signal(&e->wake);
    }
    pthread_mutex_unlock(&e->lock);
}

/* Waits until plan[begin, end) are done (those not made ready count as done). */
static int wait_transfers(struct comm_thread *e, int begin, int end, struct dt_err *err)
{
    pthread_mutex_lock(&e->lock);
    for (;;) {
        if (e->failed) {
            *err = e->error;
            pthread_mutex_unlock(&e->lock);
            return -1;
        }
        int k = begin;
        while (k < end && (e->plan[k].state == DONE || e->plan[k].state == WAITING))
            k++;
        if (k == end)
            break;
        e->waiters++;
        pthread_cond_signal(&e->wake);   /* the thread polls fast while the rank waits */
        pthread_cond_wait(&e->moved, &e->lock);
        e->waiters--;
    }
    pthread_mutex_unlock(&e->lock);
    return 0;
}

int comm_thread_wait_span(struct comm_thread *e, int span, struct dt_err *err)
{
    return wait_transfers(e, e->layer_begin[span], e->layer_begin[span + 1], err);
}

int comm_thread_wait_all(struct comm_thread *e, struct dt_err *err)
{
    return wait_transfers(e, 0, e->transfers, err);
}

struct comm_thread_stats comm_thread_stats(struct comm_thread *e)
{
    pthread_mutex_lock(&e->lock);
    struct comm_thread_stats stats = e->stats;
    pthread_mutex_unlock(&e->lock);
    return stats;
}

bool comm_thread_destroy(struct comm_thread *e)
{
    if (!e)
        return true;
    if (e->running) {
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        bool stuck = e->blocked || e->in_flight > 0;
        pthread_cond_signal(&e->wake);
        pthread_mutex_unlock(&e->lock);
        if (stuck)
            return false;   /* a failed run: the job is aborted next; joining could wait for ever */
        pthread_join(e->thread, NULL);
    }
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->wake);
    pthread_cond_destroy(&e->moved);
    free(e->plan);
    free(e->layer_begin);
    free(e);
    return true;
}
