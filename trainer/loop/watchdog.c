/* watchdog.c - the hung-rank watchdog (see watchdog.h). */
#include "watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Tells why, lets the caller record it, and ends every rank: the job cannot go on. */
static void end_job(struct watchdog *wd, const char *message, long step)
{
    fprintf(stderr, "dtrain-train: rank %d on %s: %s\n", wd->comm->rank, wd->comm->hostname, message);
    if (wd->on_stall.call)
        wd->on_stall.call(wd->on_stall.ctx, message, step);
    wd->comm->abort(wd->comm, 3);
    _exit(3);   /* the single-process comm returns from abort only by exiting; MPI_Abort does not return */
}

static void *watchdog_main(void *arg)
{
    struct watchdog *wd = arg;
    char message[DT_ERR_MSG_MAX + 128];
    while (!atomic_load(&wd->stop)) {
        usleep(200 * 1000);
        long step = atomic_load(&wd->step);
        struct dt_err err;
        if (wd->transport && wd->transport->health && wd->transport->health(wd->transport, &err) < 0) {
            snprintf(message, sizeof message, "%s (after step %ld): a peer died or the network failed; ending the "
                     "job", err.msg, step);
            end_job(wd, message, step);
        }
        double idle = (now_ms() - atomic_load(&wd->progress_ms)) / 1000.0;
        if (wd->timeout <= 0 || idle < wd->timeout || atomic_load(&wd->stop))
            continue;
        snprintf(message, sizeof message, "no step finished for %.0f s (after step %ld): a rank hung or the network "
                 "failed; ending the job (--timeout)", idle, step);
        end_job(wd, message, step);
    }
    return NULL;
}

void watchdog_touch(struct watchdog *wd, long step)
{
    atomic_store(&wd->step, step);
    atomic_store(&wd->progress_ms, now_ms());
}

void watchdog_start(struct watchdog *wd, struct comm *comm, struct comm *transport, double timeout_seconds, long step,
                    struct stall_hook on_stall)
{
    wd->comm = comm;
    wd->transport = transport;
    wd->on_stall = on_stall;
    wd->timeout = timeout_seconds;
    atomic_store(&wd->stop, 0);
    watchdog_touch(wd, step);
    bool watched = timeout_seconds > 0 || (transport && transport->health);
    wd->running = watched && pthread_create(&wd->thread, NULL, watchdog_main, wd) == 0;
}

void watchdog_stop(struct watchdog *wd)
{
    if (!wd->running)
        return;
    atomic_store(&wd->stop, 1);
    pthread_join(wd->thread, NULL);
    wd->running = false;
}
