/* stall.h - which rank of a watched job has stalled: the decision rank 0's watcher makes from the
 * reports of every rank's watcher, kept apart from sockets and /proc so it can be tested alone.
 *
 * A rank progresses while its program uses CPU time or writes output. When one rank stops (a
 * SIGSTOP, a read that never returns, a lost node), the others go on until they need it in the
 * next collective and then wait: under MPI they spin (and so still progress), under gloo or NCCL
 * they sleep. Either way the rank that stopped first is the one the others wait for: a rank is
 * named when it has not progressed for the threshold. Its state says more than the time: under gloo
 * a rank asleep in a read and its peers asleep in their collective stop within a step of each
 * other, in either order by the samples. So among the stalled ranks those of the most suspect
 * state are named (stall_suspicion: stopped or gone, then waiting on disk or in a read, then
 * running); where only waiters (asleep in a futex or a socket) have stalled while others go on,
 * the verdict waits up to the threshold again for the others, and then names the first waiter to
 * stop with any that stopped within STALL_TOGETHER_S of it. */
#ifndef STALL_H
#define STALL_H

#include <stdbool.h>
#include <stddef.h>

/* Ranks whose last progress lies this close to the first one's are named with it: each rank is
 * sampled four times a second on its own node's clock, so closer than that they cannot be told
 * apart by time. */
#define STALL_TOGETHER_S 0.6

struct watched_rank {
    int rank;
    char host[64];
    bool reported;            /* a report has arrived (rank 0's own counts from its start); a rank
                               * whose watcher never reported is not judged (rank 0 warns once) */
    bool finished;            /* its program has ended: not judged any more */
    double last_progress_s;   /* on rank 0's clock */
    char state[96];           /* proc_describe's words, as last reported; "" before any */
    bool lost;                /* its watcher's connection closed before the step ended */
};

struct stall_verdict {
    int named[8];             /* the ranks the others wait for, first to stop first */
    int num_named;            /* 0: nothing has stalled */
    double stalled_for_s;     /* how long the first named rank has made no progress */
};

/* Decides at time now (rank 0's clock) over n ranks with the threshold in seconds; ranks not
 * reported or finished are left out. */
void stall_decide(const struct watched_rank *ranks, int n, double now, double threshold_s, struct stall_verdict *v);

/* How much a rank's state says it is the one the others wait for (4: stopped or gone; 3: waiting
 * on disk; 2: asleep in a read of a pipe or file; 1: running, or asleep where not known; 0: asleep
 * where a collective's waiter sleeps, a futex, poll or a socket's receive). */
int stall_suspicion(const struct watched_rank *r);

/* A rank's state in words as rank 0 knows it: what its watcher last reported, or that its
 * connection closed (gone) or it never reported. */
const char *stall_state_of(const struct watched_rank *r);

/* The report rank 0 prints: each named rank with its host, its state and how long, and which
 * ranks wait; into text. */
void stall_describe(const struct watched_rank *ranks, int n, double now, const struct stall_verdict *v, char *text,
                    size_t size);

#endif
