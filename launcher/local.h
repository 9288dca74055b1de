/* local.h - local mode: dtrain starts the ranks on this node itself and watches over them. */
#ifndef LOCAL_H
#define LOCAL_H

#include "launcher/alloc.h"
#include "launcher/launch.h"

/* Ranks local mode will start at most: far beyond the cores of any node. */
#define LOCAL_MAX_RANKS 1024

/* After one rank fails the others get SIGTERM, then SIGKILL this much later if still running:
 * long enough for a clean exit, short enough that a failure ends the job within 2 s. */
#define LOCAL_KILL_GRACE_MS 1000

/* Starts launch_local_ranks(req) ranks of argv, each in its own process group with its exports,
 * forwards SIGINT/SIGTERM/SIGHUP/SIGUSR1/SIGUSR2 to them, prefixes their output lines with
 * "RANK: " when req->label, and when one rank fails stops the others.
 * Returns the status dtrain exits with: 0 when every rank exits 0, else the first failing rank's
 * (128 + signal number when it was killed); -1 with err when the ranks could not be started. */
int local_run(const struct launch_request *req, const struct allocation *alloc, const struct node_bind *nb,
              char *const *argv, struct dt_err *err);

/* A TCP port on 127.0.0.1 that is free right now (the kernel's choice), or 0. */
int local_free_port(void);

#endif
