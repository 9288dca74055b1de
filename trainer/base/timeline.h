/* timeline.h - a Chrome trace of one process (the JSON event format that Perfetto and
 * chrome://tracing open): complete spans and instants on named lanes, microseconds from the
 * trace's start. What dtrain-train --timeline writes, one file per rank, as Horovod's timeline. */
#ifndef TIMELINE_H
#define TIMELINE_H

#include <stdbool.h>

#include "common/dt_error.h"

struct timeline;

/* Lanes (Chrome's threads) a trace shows, top to bottom. */
enum timeline_lane {
    LANE_COMPUTE,
    LANE_EXCHANGE,
    LANE_COPY,                 /* a GPU rank's gradients to host memory and back (host-staged exchange) */
    LANE_COUNT
};

/* A trace into path, of process `pid` (the rank) called `process` ("rank 0 on gn01"). NULL with
 * err when the file cannot be created. */
struct timeline *timeline_open(const char *path, int pid, const char *process, struct dt_err *err);

/* Seconds on the trace's clock (CLOCK_MONOTONIC): also the clock the trainer times steps,
 * layers and transfers with, so a trace and the numbers it explains agree. */
double timeline_now(void);
/* Seconds since the epoch (CLOCK_REALTIME): for times other processes or nodes compare with this
 * one's (when a rank's phase began, when training started), which timeline_now's clock is not. */
double timeline_wall_now(void);

/* A span [start, end) (timeline_now's seconds) called name, of category cat. No-ops on NULL. */
void timeline_span(struct timeline *t, enum timeline_lane lane, const char *cat, const char *name, double start,
                   double end);
/* A moment, with one number argument (args.value) when value_name is not NULL. */
void timeline_instant(struct timeline *t, enum timeline_lane lane, const char *cat, const char *name, double at,
                      const char *value_name, double value);

/* Ends the JSON and closes the file. 0, or -1 with err when a write failed (the file then is
 * incomplete: Perfetto still opens what it holds). NULL: 0. */
int timeline_close(struct timeline *t, struct dt_err *err);

#endif
