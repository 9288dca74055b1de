/* watchdog.h - a collective waits for the slowest rank, forever if one hung (a stuck NFS read, a
 * dead NIC): the watchdog thread ends the whole job, naming the rank and host, when no step has
 * finished for the timeout (trainer/base/fault.h injects the hangs that test it), or at once when the
 * gradient transport reports a failure of its own (NCCL's asynchronous errors: a dead peer leaves
 * this rank's GPU waiting, and no call returns to say so). */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "trainer/comm/comm.h"
#include "trainer/loop/rank_status.h"

/* Told on the watchdog's thread just before it ends the job, with its message and the last step
 * finished (the run's record of the failure); call NULL: nobody is told. */
struct stall_hook {
    void (*call)(void *ctx, const char *message, long step);
    void *ctx;
};

struct watchdog {
    pthread_t thread;
    bool running;
    struct comm *comm;
    struct comm *transport;    /* the gradients' transport, its health polled; may be NULL */
    double timeout;            /* seconds (0: no stall is timed) */
    _Atomic long progress_ms;  /* when the last step (or evaluation) finished */
    _Atomic int stop;
    _Atomic long step;         /* for the message */
    struct stall_hook on_stall;   /* told before the job is ended */
    struct rank_status *status;   /* where every rank is (NULL: not known): written once a second, read on a stall */
    double warning;            /* seconds without a finished step before a warning (0: none) */
    _Atomic int warned;        /* this stall has been warned of */
};

/* Starts watching: stalls longer than timeout_seconds (0: none), and the health of transport (NULL,
 * or one without a health op: none). Nothing to watch: no thread. */
void watchdog_start(struct watchdog *wd, struct comm *comm, struct comm *transport, double timeout_seconds, long step,
                    struct stall_hook on_stall);
/* Before watchdog_start: a stall is described from every rank's status (rank_status.h), with a
 * warning first after warning_seconds (0: no warning). */
void watchdog_describe_with(struct watchdog *wd, struct rank_status *status, double warning_seconds);

/* The deadline before training: from the program's start (before MPI_Init, which blocks forever
 * when a rank exits before its own) until watchdog_start takes over, or start_deadline_disarm (a
 * parameter server, an export: no steps to watch). Past timeout_seconds (0: none) it names the
 * process and host and what it was doing, and ends the process (status 3): no collective and no
 * MPI can be used there, and the launcher ends the rest of the job. */
void start_deadline_arm(double timeout_seconds);
void start_deadline_disarm(void);

/* A step (or an evaluation) finished. */
void watchdog_touch(struct watchdog *wd, long step);
void watchdog_stop(struct watchdog *wd);

#endif
