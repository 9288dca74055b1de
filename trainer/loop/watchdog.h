/* watchdog.h - a collective waits for the slowest rank, forever if one hung (a stuck NFS read, a
 * dead NIC): the watchdog thread ends the whole job, naming the rank and host, when no step has
 * finished for the timeout (common/fault.h injects the hangs that test it). */
#ifndef WATCHDOG_H
#define WATCHDOG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "comm.h"

struct watchdog {
    pthread_t thread;
    bool running;
    struct comm *comm;
    double timeout;            /* seconds */
    _Atomic long progress_ms;  /* when the last step (or evaluation) finished */
    _Atomic int stop;
    _Atomic long step;         /* for the message */
    void (*on_stall)(const char *message, long step);   /* told before the job is ended; may be NULL */
};

/* Starts watching (timeout_seconds 0: never fires, no thread). */
void watchdog_start(struct watchdog *wd, struct comm *comm, double timeout_seconds, long step,
                    void (*on_stall)(const char *message, long step));
/* A step (or an evaluation) finished. */
void watchdog_touch(struct watchdog *wd, long step);
void watchdog_stop(struct watchdog *wd);

#endif
