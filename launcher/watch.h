/* watch.h - `dtrain --watch`: dtrain stays the rank's parent instead of exec'ing it, passes its
 * output, signals and exit status through unchanged, and follows its progress (the CPU time of its
 * processes and its output) once a second. Every rank's watcher reports to rank 0's (watch_channel.h),
 * which names the rank the others wait for when one stops progressing (stall.h) and ends the step
 * with WATCH_EXIT_STALLED, a status the job script reads as that rank's node failing. */
#ifndef WATCH_H
#define WATCH_H

#include <stdbool.h>

#include "common/dt_error.h"

/* What rank 0's watcher exits with after ending a stalled step (dtrain-train's --timeout too). */
#define WATCH_EXIT_STALLED 3

struct watch_setup {
    int rank, world_size;
    const char *host;         /* this rank's node */
    const char *rank0_host;   /* where rank 0's watcher listens (the step's first node) */
    int port;                 /* the step's watch port (launch_watch_port) */
    double stall_s;           /* no progress for this long: stalled */
    const char *report_path;  /* rank 0: where the stall's JSON line goes (NULL: nowhere) */
    bool verbose;             /* at the end, say what the watching cost (its own CPU time) */
};

/* Runs argv as a child of this process (which keeps the environment and binding already applied)
 * and watches it. Returns the status to exit with: the program's (for a program killed by a
 * signal, 128 + the signal, after *raise_signal is set to it so the caller can die of it too),
 * or WATCH_EXIT_STALLED; -1 with err when the program could not be started. */
int watch_run(char *const *argv, const struct watch_setup *setup, int *raise_signal, struct dt_err *err);

/* Ends this process the way the program ended: by the same signal (no core file), else exit. */
void watch_exit_like(int status, int raise_signal);

#endif
