/* timeline.c - Chrome trace files (see timeline.h). Events are written as they come, one per
 * line, so a run that dies leaves a readable prefix. The rank's thread and its communication
 * thread write into one trace: each event is written under the file's lock, whole. */
#include "trainer/base/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"

struct timeline {
    FILE *f;
    char path[4096];
    int pid;
    double origin;             /* timeline_now() at open: time 0 of the trace */
    bool failed;
    int failed_errno;          /* why the first write failed */
};

/* The first failed write: its errno is what the message at the close says. */
static void note_failure(struct timeline *t)
{
    if (!t->failed)
        t->failed_errno = errno;
    t->failed = true;
}

double timeline_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double timeline_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static const char *const lane_names[LANE_COUNT] = {"compute", "gradient exchange", "device-host copies"};

/* Metadata events: the process's and the lanes' names, and their order. */
/* The process's name, and the wall-clock time of the trace's time 0 (wall_origin, seconds since
 * the epoch): the ranks' traces are each on their own monotonic clock, and this puts them on one
 * (to the nodes' clock sync) to see how far apart the ranks start the same transfer. */
static void name_things(struct timeline *t, const char *process, double wall_origin)
{
    fprintf(t->f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"%s\","
            "\"wall_origin\":%.6f}}", t->pid, process, wall_origin);
    for (int lane = 0; lane < LANE_COUNT; lane++) {
        fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                t->pid, lane, lane_names[lane]);
        fprintf(t->f, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":"
                "{\"sort_index\":%d}}", t->pid, lane, lane);
    }
}

struct timeline *timeline_open(const char *path, int pid, const char *process, struct dt_err *err)
{
    struct timeline *t = calloc(1, sizeof *t);
    if (!t)
        return dt_fail(err, "out of memory"), NULL;
    snprintf(t->path, sizeof t->path, "%s", path);
    int fd = open_output(path, O_WRONLY | O_TRUNC, "--timeline", err);
    if (fd >= 0 && !(t->f = fdopen(fd, "w"))) {
        dt_fail(err, "--timeline %s: %s", path, strerror(errno));
        close(fd);
        fd = -1;
    }
    if (fd < 0) {
        free(t);
        return NULL;
    }
    t->pid = pid;
    t->origin = timeline_now();
    double wall_origin = timeline_wall_now();
    fputs("[\n", t->f);
    name_things(t, process, wall_origin);
    return t;
}

static double timeline_micros(const struct timeline *t, double at)
{
    return (at - t->origin) * 1e6;
}

void timeline_span(struct timeline *t, enum timeline_lane lane, const char *cat, const char *name, double start,
                   double end)
{
    if (!t)
        return;
    flockfile(t->f);
    if (fprintf(t->f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f}",
                name, cat, t->pid, lane, timeline_micros(t, start), (end - start) * 1e6) < 0)
        note_failure(t);
    funlockfile(t->f);
}

void timeline_instant(struct timeline *t, enum timeline_lane lane, const char *cat, const char *name, double at,
                      const char *value_name, double value)
{
    if (!t)
        return;
    flockfile(t->f);
    int rc = fprintf(t->f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,"
                     "\"ts\":%.3f", name, cat, t->pid, lane, timeline_micros(t, at));
    if (rc >= 0 && value_name)
        rc = fprintf(t->f, ",\"args\":{\"%s\":%.17g}", value_name, value);
    if (rc < 0 || fputc('}', t->f) == EOF)
        note_failure(t);
    funlockfile(t->f);
}

int timeline_close(struct timeline *t, struct dt_err *err)
{
    if (!t)
        return 0;
    if (fputs("\n]\n", t->f) == EOF)
        note_failure(t);
    if (fclose(t->f) != 0)
        note_failure(t);
    int rc = 0;
    if (t->failed) {   /* a torn trace would mislead whoever opens it: it goes, and that is said */
        unlink(t->path);
        rc = dt_fail(err, "--timeline: writing %s failed (%s): the file is removed", t->path,
                     strerror(t->failed_errno ? t->failed_errno : EIO));
    }
    free(t);
    return rc;
}
