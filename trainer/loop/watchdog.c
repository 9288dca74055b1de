/* watchdog.c - the hung-rank watchdog (see watchdog.h). */
#include "trainer/loop/watchdog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    if (wd->status) {   /* the others' watchdogs fire within a tick of this one: let them read it first */
        usleep(400 * 1000);
        rank_status_remove_all(wd->status);
    }
    wd->comm->abort(wd->comm, 3);
    _exit(3);   /* the single-process comm returns from abort only by exiting; MPI_Abort does not return */
}

/* After the watchdog's words, what every rank's status says (nothing without statuses). */
static void add_description(const struct watchdog *wd, char *message, size_t size)
{
    char where[1024];
    if (!wd->status)
        return;
    rank_status_describe(wd->status, where, sizeof where);
    size_t used = strlen(message);
    if (where[0])
        snprintf(message + used, size - used, ": %s", where);
}

static void *watchdog_main(void *arg)
{
    struct watchdog *wd = arg;
    char message[DT_ERR_MSG_MAX + 1280];
    for (int tick = 0; !atomic_load(&wd->stop); tick++) {
        usleep(200 * 1000);
        if (wd->status && tick % 5 == 0)   /* once a second */
            rank_status_write(wd->status);
        long step = atomic_load(&wd->step);
        struct dt_err err;
        if (wd->transport && wd->transport->health && wd->transport->health(wd->transport, &err) < 0) {
            snprintf(message, sizeof message, "%s (after step %ld): a peer died or the network failed; ending the "
                     "job", err.msg, step);
            end_job(wd, message, step);
        }
        double idle = (now_ms() - atomic_load(&wd->progress_ms)) / 1000.0;
        bool warns = wd->status && wd->status->rank == 0;   /* one rank warns; each rank ends the job */
        if (warns && wd->warning > 0 && idle >= wd->warning && (wd->timeout <= 0 || idle < wd->timeout) &&
            !atomic_exchange(&wd->warned, 1)) {
            if (wd->status)
                rank_status_write(wd->status);   /* this rank's newest, before reading everyone's */
            snprintf(message, sizeof message, "warning: no step finished for %.0f s (after step %ld)", idle, step);
            add_description(wd, message, sizeof message);
            fprintf(stderr, "dtrain-train: rank %d on %s: %s\n", wd->comm->rank, wd->comm->hostname, message);
        }
        if (wd->timeout <= 0 || idle < wd->timeout || atomic_load(&wd->stop))
            continue;
        if (wd->status)
            rank_status_write(wd->status);
        snprintf(message, sizeof message, "no step finished for %.0f s (after step %ld): a rank hung or the network "
                 "failed; ending the job (--timeout)", idle, step);
        add_description(wd, message, sizeof message);
        end_job(wd, message, step);
    }
    return NULL;
}

/* The start deadline's state: one per process, as the program's start is. */
static _Atomic int start_disarmed;
static double start_timeout;

static void *start_deadline_main(void *arg)
{
    (void)arg;
    long deadline = now_ms() + (long)(start_timeout * 1000);
    while (!atomic_load(&start_disarmed) && now_ms() < deadline)
        usleep(200 * 1000);
    if (atomic_load(&start_disarmed))
        return NULL;
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    const char *rank = getenv("OMPI_COMM_WORLD_RANK") ? getenv("OMPI_COMM_WORLD_RANK") : getenv("PMIX_RANK");
    fprintf(stderr, "dtrain-train: rank %s (pid %d) on %s: training had not started %.0f s after the program did "
            "(waiting in MPI_Init for a rank that never came, or for data, a file or the GPU); ending it (--timeout)\n",
            rank ? rank : "?", (int)getpid(), host, start_timeout);
    _exit(3);
}

void start_deadline_arm(double timeout_seconds)
{
    pthread_t thread;
    start_timeout = timeout_seconds;
    atomic_store(&start_disarmed, 0);
    if (timeout_seconds > 0 && pthread_create(&thread, NULL, start_deadline_main, NULL) == 0)
        pthread_detach(thread);
}

void start_deadline_disarm(void)
{
    atomic_store(&start_disarmed, 1);
}

void watchdog_touch(struct watchdog *wd, long step)
{
    atomic_store(&wd->step, step);
    atomic_store(&wd->progress_ms, now_ms());
    atomic_store(&wd->warned, 0);
}

void watchdog_describe_with(struct watchdog *wd, struct rank_status *status, double warning_seconds)
{
    wd->status = status;
    wd->warning = warning_seconds;
}

void watchdog_start(struct watchdog *wd, struct comm *comm, struct comm *transport, double timeout_seconds, long step,
                    struct stall_hook on_stall)
{
    wd->comm = comm;
    wd->transport = transport;
    wd->on_stall = on_stall;
    wd->timeout = timeout_seconds;
    start_deadline_disarm();   /* this watchdog takes over from here */
    atomic_store(&wd->stop, 0);
    watchdog_touch(wd, step);
    bool watched = timeout_seconds > 0 || (transport && transport->health) || wd->status || wd->warning > 0;
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
