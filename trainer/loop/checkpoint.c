/* checkpoint.c - atomic checkpoint files and picking the newest valid one (see checkpoint.h).
 *
 * File: a fixed header (magic, format version, sizes, step, fingerprint, CRC-32) followed by the
 * payload: parameters, buffers, optimizer moments. The CRC covers the header (its crc field
 * zeroed) and the payload, so a flipped bit anywhere rejects the file; a file is read into
 * scratch memory and copied into the run's state only once it has passed every check. */
#include "trainer/loop/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/atomic_file.h"
#include "common/lock_file.h"

#define CK_MAGIC "DTRAINCK"
#define CK_FORMAT 2   /* 1: the CRC covered the payload only (such files are passed over) */

struct header {
    char magic[8];
    uint32_t format;
    uint32_t has_v;
    uint64_t step, opt_step, fingerprint, num_params, num_buffers;
    uint32_t resumed;
    uint32_t crc;              /* of the header (this field 0) and the payload */
};

/* Largest believable counters: a header that passed its CRC but says more was not written by us. */
#define CK_MAX_STEP (1L << 48)
#define CK_MAX_RESUMED 1000000

/* Passed-over files named one by one before the rest are counted. */
#define CK_NAMED_SKIPS 8

struct part {
    const void *data;
    size_t bytes;
};

static int parts_of(const struct checkpoint *ck, struct part parts[4])
{
    int n = 0;
    parts[n++] = (struct part){ck->params, ck->num_params * sizeof(float)};
    parts[n++] = (struct part){ck->buffers, ck->num_buffers * sizeof(float)};
    parts[n++] = (struct part){ck->opt_m, ck->num_params * sizeof(float)};
    if (ck->opt_v)
        parts[n++] = (struct part){ck->opt_v, ck->num_params * sizeof(float)};
    return n;
}

/* crc extended over bytes (zlib takes at most 4 GiB a call). */
static uLong crc_of(uLong crc, const void *data, size_t bytes)
{
    for (size_t done = 0; done < bytes;) {
        uInt chunk = bytes - done > (1u << 30) ? 1u << 30 : (uInt)(bytes - done);
        crc = crc32(crc, (const Bytef *)data + done, chunk);
        done += chunk;
    }
    return crc;
}

/* Parses "ckpt-STEP.dtc"; -1 for other names. */
static long step_of(const char *name)
{
    long step;
    char tail[8];
    if (sscanf(name, "ckpt-%ld.%7s", &step, tail) != 2 || strcmp(tail, "dtc") != 0 || step < 0)
        return -1;
    return step;
}

static int newest_first(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of every checkpoint-named entry of dir, newest first, however many there are (the
 * caller frees *steps). Returns how many, or -1 with errno. */
static int list_steps(const char *dir, long **steps)
{
    *steps = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0, room = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long s = step_of(e->d_name);
        if (s < 0)
            continue;
        if (n == room) {
            long *grown = realloc(*steps, (size_t)(room = room ? 2 * room : 64) * sizeof **steps);
            if (!grown) {
                closedir(d), free(*steps), *steps = NULL;
                errno = ENOMEM;
                return -1;
            }
            *steps = grown;
        }
        (*steps)[n++] = s;
    }
    closedir(d);
    qsort(*steps, (size_t)n, sizeof **steps, newest_first);
    return n;
}

/* Opens a checkpoint for reading only when it is a regular file of this user's: never through a
 * link, never blocking on a FIFO. Returns the fd, or -1 with *why saying what it is instead. */
static int open_own_file(const char *path, const char **why)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    *why = fd < 0 ? (errno == ELOOP ? "a symbolic link" : "cannot be opened") : not_own_regular_file(fd);
    if (*why && fd >= 0)
        close(fd);
    return *why ? -1 : fd;
}

static bool header_fits(const struct header *h, const struct checkpoint *ck);

/* Whether DIR/ckpt-STEP.dtc is one of this run's: the user's regular file whose header is of this
 * format and this model and optimizer. (Its CRC is not checked: pruning needs only to know whose
 * it is.) */
static bool is_own_checkpoint(const char *dir, long step, const struct checkpoint *ck)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, step);
    const char *why;
    int fd = open_own_file(path, &why);
    if (fd < 0)
        return false;
    struct header h;
    bool own = read(fd, &h, sizeof h) == (ssize_t)sizeof h && header_fits(&h, ck);
    close(fd);
    return own;
}

/* Keeps the checkpoint just saved and the newest CHECKPOINT_KEEP - 1 others of this run; files
 * this run would not load (another configuration's, another user's, damaged) are neither counted
 * nor touched: counted, another run's higher steps would make every save delete itself. */
static void prune_checkpoints(const char *dir, const struct checkpoint *saved)
{
    long *steps;
    int count = list_steps(dir, &steps);
    for (int i = 0, kept = 1; i < count; i++) {
        if (steps[i] == saved->step || !is_own_checkpoint(dir, steps[i], saved))
            continue;
        if (kept < CHECKPOINT_KEEP) {
            kept++;
            continue;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, steps[i]);
        unlink(path);
    }
    free(steps);
}

int checkpoint_save(const char *dir, const struct checkpoint *ck, struct dt_err *err)
{
    if (make_dirs(dir) < 0)
        return dt_fail(err, "checkpoint directory %s: %s", dir, strerror(errno));
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, ck->step);
    struct part parts[4];
    int n = parts_of(ck, parts);
    struct header h = {.format = CK_FORMAT, .has_v = ck->opt_v != NULL, .step = (uint64_t)ck->step,
                       .opt_step = (uint64_t)ck->opt_step, .fingerprint = ck->fingerprint,
                       .num_params = ck->num_params, .num_buffers = ck->num_buffers, .resumed = (uint32_t)ck->resumed};
    memcpy(h.magic, CK_MAGIC, 8);
    uLong crc = crc_of(crc32(0L, Z_NULL, 0), &h, sizeof h);
    for (int i = 0; i < n; i++)
        crc = crc_of(crc, parts[i].data, parts[i].bytes);
    h.crc = (uint32_t)crc;
    int fd = atomic_temp(path, tmp, sizeof tmp, err);   /* new, owner-only: a planted name is never written */
    if (fd < 0)
        return dt_wrap(err, "checkpoint");
    bool ok = write_fully(fd, &h, sizeof h) == 0;
    for (int i = 0; i < n && ok; i++)
        ok = write_fully(fd, parts[i].data, parts[i].bytes) == 0;
    if (!ok) {
        int saved = errno;
        close(fd);
        unlink(tmp);
        return dt_fail(err, "checkpoint %s: %s", path, strerror(saved));
    }
    /* rename is atomic: a reader sees the old set of files or the new one, never half a file */
    if (atomic_commit(fd, tmp, path, err) < 0)
        return dt_wrap(err, "checkpoint");
    prune_checkpoints(dir, ck);
    return 0;
}

/* Whether a header (before its CRC is checked) is of this format and of this run, and believable. */
static bool header_fits(const struct header *h, const struct checkpoint *ck)
{
    return memcmp(h->magic, CK_MAGIC, 8) == 0 && h->format == CK_FORMAT && h->fingerprint == ck->fingerprint &&
           h->num_params == ck->num_params && h->num_buffers == ck->num_buffers &&
           (h->has_v != 0) == (ck->opt_v != NULL) && h->step <= (uint64_t)CK_MAX_STEP && h->opt_step <= h->step &&
           h->resumed <= CK_MAX_RESUMED;
}

/* Reads one file and, if it is whole, undamaged and of this run, copies it into ck. Nothing of
 * ck changes otherwise. */
static bool load_one(int fd, struct checkpoint *ck)
{
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return false;
    }
    struct header h;
    struct part parts[4];
    int n = parts_of(ck, parts);
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += parts[i].bytes;
    bool ok = fread(&h, sizeof h, 1, f) == 1 && header_fits(&h, ck);
    char *scratch = ok ? malloc(total ? total : 1) : NULL;
    ok = ok && scratch && fread(scratch, 1, total, f) == total && fgetc(f) == EOF;   /* nothing missing or extra */
    fclose(f);
    if (ok) {
        struct header zeroed = h;
        zeroed.crc = 0;
        ok = crc_of(crc_of(crc32(0L, Z_NULL, 0), &zeroed, sizeof zeroed), scratch, total) == h.crc;
    }
    for (size_t at = 0, i = 0; ok && i < (size_t)n; at += parts[i].bytes, i++)
        memcpy((void *)parts[i].data, scratch + at, parts[i].bytes);
    free(scratch);
    if (ok) {
        ck->step = (long)h.step;
        ck->opt_step = (long)h.opt_step;
        ck->resumed = (int)h.resumed;
    }
    return ok;
}

/* Whether dir can hold checkpoints no other user could have written or replaced: it is the user's
 * (or root's) and no one else may write it, or it is sticky (a shared /tmp-like one: each user can
 * rename or remove only their own files there, and only the user's files are loaded). */
static int check_dir_trusted(const char *dir, struct dt_err *err)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return errno == ENOENT ? 0 : dt_fail(err, "checkpoint directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return dt_fail(err, "checkpoint directory %s: not a directory", dir);
    /* A sticky directory keeps other users' hands off the user's files, but not its owner's: only
     * the user's own, or root's, is trusted (another owner removed ckpt-10.dtc and the run resumed
     * from step 5 without a word). */
    if (st.st_uid != geteuid() && st.st_uid != 0)
        return dt_fail(err, "checkpoint directory %s belongs to uid %u: its owner can remove or replace its "
                       "checkpoints; use a directory of your own", dir, (unsigned)st.st_uid);
    bool others_write = st.st_mode & (S_IWGRP | S_IWOTH);
    if (others_write && !(st.st_mode & S_ISVTX))
        return dt_fail(err, "checkpoint directory %s may be written by other users (owner uid %u, mode %03o, not "
                       "sticky): another user could replace its checkpoints; use a directory of your own, or "
                       "chmod go-w it", dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777));
    return 0;
}

int checkpoint_lock(const char *dir, struct dt_err *err)
{
    if (make_dirs(dir) < 0)
        return dt_fail(err, "checkpoint directory %s: %s", dir, strerror(errno));
    if (check_dir_trusted(dir, err) < 0)
        return -1;
    /* The lock is a file of the user's inside (lock_file.h): a lock on the directory itself could be
     * held by anyone who can open it, stopping every run on it. */
    char path[4096], what[4200];
    if (snprintf(path, sizeof path, "%s/.dtrain-lock", dir) >= (int)sizeof path)
        return dt_fail(err, "checkpoint directory %s: the path is too long", dir);
    snprintf(what, sizeof what, "checkpoint directory %s", dir);
    int fd = lock_file_take(path, 0, what, err);
    if (fd >= 0 || fd == LOCK_FAILED)
        return fd;
    if (fd == LOCK_HELD)
        return dt_fail(err, "checkpoint directory %s is in use by another running job (it holds %s): give each "
                       "job a --checkpoint directory of its own, or wait for that one to end", dir, path);
    /* a file system without flock (some NFS setups): run unprotected rather than not at all */
    fprintf(stderr, "dtrain-train: warning: cannot lock checkpoint directory %s (no flock there): a second job "
            "on it would not be stopped\n", dir);
    return -2;
}

void checkpoint_remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    for (struct dirent *e; (e = readdir(d));) {
        long step;
        int pid, end = 0;
        /* ckpt-STEP.dtc.tmp.PID.XXXXXX (atomic_temp's) or ckpt-STEP.dtc.tmp.PID (older dtrain's) */
        if (sscanf(e->d_name, "ckpt-%ld.dtc.tmp.%d%n", &step, &pid, &end) != 2 || pid == (int)getpid())
            continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (lstat(path, &st) == 0 && st.st_uid == geteuid())   /* only the user's own leftovers */
            unlink(path);
    }
    closedir(d);
}

int checkpoint_load_newest(const char *dir, struct checkpoint *ck, struct dt_err *err)
{
    if (check_dir_trusted(dir, err) < 0)
        return -1;
    long *steps;
    int count = list_steps(dir, &steps);
    if (count < 0)
        return errno == ENOENT ? 0 : dt_fail(err, "checkpoint directory %s: %s", dir, strerror(errno));
    int loaded = 0, passed_over = 0;
    for (int i = 0; i < count && !loaded; i++) {
        char path[4096];
        const char *why;
        snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, steps[i]);
        int fd = open_own_file(path, &why);
        if (fd >= 0 && (loaded = load_one(fd, ck)))
            break;
        if (++passed_over <= CK_NAMED_SKIPS)   /* a directory of a thousand: the first few, then a count */
            fprintf(stderr, "dtrain-train: passing over %s: %s\n", path, why ? why : "torn, damaged or of another run");
    }
    if (passed_over > CK_NAMED_SKIPS)
        fprintf(stderr, "dtrain-train: passed over %d more checkpoint files in %s\n", passed_over - CK_NAMED_SKIPS, dir);
    free(steps);
    return loaded;
}
