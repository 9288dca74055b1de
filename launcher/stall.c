/* stall.c - naming the rank a watched job waits for (stall.h). */
#include "launcher/stall.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static bool is_judged(const struct watched_rank *r)
{
    return (r->reported || r->lost) && !r->finished;
}

/* How much a rank's state says it is the one the others wait for, not one of those waiting: a
 * stopped or gone rank, then one waiting on disk or asleep in anything but a wait for a thread or
 * the network (a pipe, a file), then a running one; last, one asleep where a collective's waiter
 * sleeps (a futex: gloo's and NCCL's threads; poll, epoll, a socket's receive). Ranks that stopped
 * within the same report's second cannot be told apart by time (steps of 50 ms); by this they can. */
int stall_suspicion(const struct watched_rank *r)
{
    static const char *const waits[] = {"futex", "ep_poll", "do_poll", "do_select", "do_sys_poll", "sk_wait_data",
                                        "wait_woken", "inet_csk_accept", "unix_stream_read", "hrtimer_nanosleep"};
    const char *s = stall_state_of(r);
    if (r->lost || strncmp(s, "stopped", 7) == 0 || strncmp(s, "gone", 4) == 0)
        return 4;
    if (strncmp(s, "waiting on disk", 15) == 0)
        return 3;
    if (strncmp(s, "asleep", 6) == 0) {
        for (size_t i = 0; i < sizeof waits / sizeof waits[0]; i++)
            if (strstr(s, waits[i]))
                return 0;
        return strcmp(s, "asleep") == 0 ? 1 : 2;
    }
    return 1;
}

/* Whether rank i is one to name: stalled and, where some stalled rank's state says more than a
 * waiter's, as suspect as the most suspect (top); among waiters alone, stopped with the first. */
static bool to_name(const struct watched_rank *ranks, int i, const struct watched_rank *first, int top, double now,
                    double threshold_s)
{
    const struct watched_rank *r = &ranks[i];
    if (!is_judged(r) || now - r->last_progress_s < threshold_s)
        return false;
    return top > 0 ? stall_suspicion(r) == top : r->last_progress_s - first->last_progress_s <= STALL_TOGETHER_S;
}

void stall_decide(const struct watched_rank *ranks, int n, double now, double threshold_s, struct stall_verdict *v)
{
    *v = (struct stall_verdict){0};
    int first = -1, top = -1;
    bool some_going = false;
    for (int i = 0; i < n; i++) {
        if (!is_judged(&ranks[i]))
            continue;
        if (now - ranks[i].last_progress_s < threshold_s) {
            some_going = true;
            continue;
        }
        if (first < 0 || ranks[i].last_progress_s < ranks[first].last_progress_s)
            first = i;
        if (stall_suspicion(&ranks[i]) > top)
            top = stall_suspicion(&ranks[i]);
    }
    if (first < 0)
        return;
    /* Only waiters have stalled (asleep in a futex or a socket, as under gloo a rank waits in the
     * collective for one that has not stalled yet, by a few of its 4-a-second samples): wait for
     * the others, up to the threshold again (under MPI the others spin, and never stall). */
    if (top == 0 && some_going && now - ranks[first].last_progress_s < 2 * threshold_s)
        return;
    bool taken[n > 0 ? n : 1];
    memset(taken, 0, sizeof taken);
    while (v->num_named < (int)(sizeof v->named / sizeof v->named[0])) {
        int next = -1;
        for (int i = 0; i < n; i++)
            if (!taken[i] && to_name(ranks, i, &ranks[first], top, now, threshold_s) &&
                (next < 0 || ranks[i].last_progress_s < ranks[next].last_progress_s))
                next = i;
        if (next < 0)
            break;
        taken[next] = true;
        v->named[v->num_named++] = next;
    }
    v->stalled_for_s = now - ranks[v->named[0]].last_progress_s;
}

static size_t append_text(char *text, size_t size, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t append_text(char *text, size_t size, size_t len, const char *fmt, ...)
{
    if (len >= size)
        return len;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(text + len, size - len, fmt, ap);
    va_end(ap);
    return k < 0 ? len : len + (size_t)k;
}

const char *stall_state_of(const struct watched_rank *r)
{
    if (r->lost)
        return "gone: its watcher's connection closed (the node or the watcher died)";
    if (!r->reported)
        return "unknown: its watcher never reported";
    return r->state[0] ? r->state : "no state reported";
}

void stall_describe(const struct watched_rank *ranks, int n, double now, const struct stall_verdict *v, char *text,
                    size_t size)
{
    size_t len = 0;
    text[0] = '\0';
    bool named[n > 0 ? n : 1];
    memset(named, 0, sizeof named);
    for (int k = 0; k < v->num_named; k++) {
        const struct watched_rank *r = &ranks[v->named[k]];
        named[v->named[k]] = true;
        len = append_text(text, size, len, "%srank %d on %s has made no progress for %.1f s (%s)", k ? "; " : "", r->rank,
                     r->host[0] ? r->host : "?", now - r->last_progress_s, stall_state_of(r));
    }
    int waiting = 0;
    double latest = -1e300;
    for (int i = 0; i < n; i++) {
        if (named[i])
            continue;
        len = append_text(text, size, len, waiting++ ? ", %d" : "; the others (rank %d", ranks[i].rank);
        if (ranks[i].last_progress_s > latest)
            latest = ranks[i].last_progress_s;
    }
    if (waiting)
        len = append_text(text, size, len, ") went on until %.1f s ago", now - latest > 0 ? now - latest : 0.0);
}
