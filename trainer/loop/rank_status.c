/* rank_status.c - where each rank is, in a file the others read while a collective hangs
 * (rank_status.h). */
#include "trainer/loop/rank_status.h"

#include "trainer/base/timeline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A status file: one line, at most this long, rewritten in place. */
#define STATUS_BYTES 160

static const char *const phase_words[PHASE_COUNT] = {
    "starting", "loading data", "in forward", "in backward", "in the exchange", "in the update",
    "writing a checkpoint", "evaluating", "finished"};

static long wall_ms(void)
{
    return (long)(timeline_wall_now() * 1000);
}

/* The directory is ours: made by us (0700) or, already there, a directory of ours that nobody else
 * may write into (not a link another user planted). */
static int own_directory(const char *dir, struct dt_err *err)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return dt_fail(err, "%s: %s", dir, strerror(errno));
    struct stat st;
    if (lstat(dir, &st) < 0)
        return dt_fail(err, "%s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
        return dt_fail(err, "%s is not a private directory of this user: not used", dir);
    return 0;
}

int rank_status_open(struct rank_status *s, struct comm *comm, int world_rank, const char *parent, struct dt_err *err)
{
    *s = (struct rank_status){.rank = comm->rank, .world = comm->world, .world_rank = world_rank, .fd = -1};
    snprintf(s->host, sizeof s->host, "%.63s", comm->hostname);
    rank_status_set(s, PHASE_STARTING, 0);
    char dir[sizeof s->dir] = "";
    if (comm->rank == 0) {
        const char *base = parent ? parent : getenv("TMPDIR") && getenv("TMPDIR")[0] ? getenv("TMPDIR") : "/tmp";
        snprintf(dir, sizeof dir, "%.400s/dtrain-status-XXXXXX", base);
        if (!mkdtemp(dir))
            dir[0] = '\0';   /* the others learn there is none */
    }
    if (comm->world > 1 && comm->broadcast(comm, dir, sizeof dir, 0, err) < 0)
        return -1;
    if (!dir[0])
        return dt_fail(err, "no status directory could be made below %s", parent ? parent : "$TMPDIR or /tmp");
    if (own_directory(dir, err) < 0)
        return -1;
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    char path[sizeof s->dir + 32];
    snprintf(path, sizeof path, "%s/rank.%d", s->dir, s->rank);
    s->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (s->fd < 0)
        return dt_fail(err, "%s: %s", path, strerror(errno));
    rank_status_write(s);
    return 0;
}

void rank_status_set(struct rank_status *s, enum rank_phase phase, long step)
{
    atomic_store(&s->phase, (int)phase);
    atomic_store(&s->step, step);
    atomic_store(&s->since_ms, wall_ms());
}

void rank_status_phase(struct rank_status *s, enum rank_phase phase)
{
    if (!s)
        return;
    atomic_store(&s->phase, (int)phase);
    atomic_store(&s->since_ms, wall_ms());
}

void rank_status_write(const struct rank_status *s)
{
    if (s->fd < 0)
        return;
    char line[STATUS_BYTES];
    memset(line, ' ', sizeof line);
    int n = snprintf(line, sizeof line, "%ld %d %ld %d %s", atomic_load(&s->step), atomic_load(&s->phase),
                     atomic_load(&s->since_ms), s->world_rank, s->host);
    if (n > 0 && n < (int)sizeof line)
        line[n] = ' ';
    line[sizeof line - 1] = '\n';
    /* one write at offset 0 of a fixed size: a reader sees the old line or the new one */
    if (pwrite(s->fd, line, sizeof line, 0) < 0) {
        /* nothing to do on the watchdog's thread: the next write tries again */
    }
}

/* One rank's file, as read. */
struct status_read {
    bool found;
    long step, since_ms;
    int phase, world_rank;
    char host[64];
};

static bool read_status(const char *dir, int rank, struct status_read *out)
{
    char path[600], line[STATUS_BYTES + 1];
    snprintf(path, sizeof path, "%s/rank.%d", dir, rank);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, line, STATUS_BYTES, 0);
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return false;
    line[n] = '\0';
    return sscanf(line, "%ld %d %ld %d %63s", &out->step, &out->phase, &out->since_ms, &out->world_rank, out->host) == 5 &&
           out->phase >= 0 && out->phase < PHASE_COUNT && (out->found = true);
}

/* Appends the ranks for which pick is set, runs folded ("0-1, 3"); returns how many. */
static int append_ranks(char *text, size_t size, const bool *pick, int world)
{
    int count = 0;
    for (int r = 0; r < world; r++) {
        if (!pick[r])
            continue;
        int last = r;
        while (last + 1 < world && pick[last + 1])
            last++;
        size_t used = strlen(text);
        snprintf(text + used, size - used, last > r ? "%s%d-%d" : "%s%d", count ? ", " : "", r, last);
        count += last - r + 1;
        r = last;
    }
    return count;
}

void rank_status_describe(const struct rank_status *s, char *text, size_t size)
{
    text[0] = '\0';
    struct status_read *all = calloc((size_t)s->world, sizeof *all);
    bool *pick = calloc((size_t)s->world, sizeof *pick);
    long step = -1;
    int phase = -1;
    for (int r = 0; all && pick && s->dir[0] && r < s->world; r++)
        if (read_status(s->dir, r, &all[r]) && (all[r].step > step || (all[r].step == step && all[r].phase > phase)))
            step = all[r].step, phase = all[r].phase;
    long now = wall_ms();
    for (int r = 0; step >= 0 && r < s->world; r++) {   /* the ranks behind, one by one */
        const struct status_read *x = &all[r];
        if (!x->found || (x->step == step && x->phase == phase))
            continue;
        size_t used = strlen(text);
        snprintf(text + used, size - used, "%srank %d on %s is %s of step %ld for %.1f s", used ? "; " : "",
                 x->world_rank, x->host, phase_words[x->phase], x->step, (now - x->since_ms) / 1000.0);
    }
    for (int r = 0; step >= 0 && r < s->world; r++)
        pick[r] = all[r].found && all[r].step == step && all[r].phase == phase;
    size_t used = strlen(text);
    if (step >= 0) {
        char ranks[512] = "";
        int n = append_ranks(ranks, sizeof ranks, pick, s->world);
        if (used == 0)   /* nobody behind: the ranks wait on a transfer, or the network */
            snprintf(text, size, "every rank is %s of step %ld", phase_words[phase], step);
        else
            snprintf(text + used, size - used, "; rank%s %s wait%s %s of step %ld", n == 1 ? "" : "s", ranks,
                     n == 1 ? "s" : "", phase_words[phase], step);
    }
    for (int r = 0; all && pick && r < s->world; r++)
        pick[r] = !all[r].found;
    used = strlen(text);
    if (used + 64 < size && all && pick) {
        char missing[256] = "";
        if (append_ranks(missing, sizeof missing, pick, s->world) > 0)
            snprintf(text + used, size - used, "%sno status from rank(s) %s (on another node: --status-dir on a "
                     "shared filesystem shows them)", used ? "; " : "", missing);
    }
    free(all), free(pick);
}

void rank_status_remove_all(struct rank_status *s)
{
    if (s->fd < 0 || !s->dir[0] || s->rank != 0)
        return rank_status_close(s);
    for (int r = 1; r < s->world; r++) {
        char path[sizeof s->dir + 32];
        snprintf(path, sizeof path, "%s/rank.%d", s->dir, r);
        unlink(path);
    }
    rank_status_close(s);
}

void rank_status_close(struct rank_status *s)
{
    if (s->fd < 0 || !s->dir[0])   /* never opened (a zeroed struct too) */
        return;
    close(s->fd);
    s->fd = -1;
    char path[sizeof s->dir + 32];
    snprintf(path, sizeof path, "%s/rank.%d", s->dir, s->rank);
    unlink(path);
    rmdir(s->dir);   /* the last rank's succeeds */
}
