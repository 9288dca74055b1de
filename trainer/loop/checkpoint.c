/* checkpoint.c - atomic checkpoint files and picking the newest valid one (see checkpoint.h).
 *
 * File: a fixed header (magic, format version, sizes, step, fingerprint, CRC-32) followed by the
 * payload: parameters, buffers, optimizer moments. The CRC covers the header (its crc field
 * zeroed) and the payload, so a flipped bit anywhere rejects the file; a file is read into
 * scratch memory and copied into the run's state only once it has passed every check. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "atomic_file.h"

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

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
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

/* The checkpoints of dir, newest first. Returns how many (at most max), or -1. */
static int list_steps(const char *dir, long *steps, int max)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) && n < max;) {
        long s = step_of(e->d_name);
        if (s >= 0)
            steps[n++] = s;
    }
    closedir(d);
    for (int i = 1; i < n; i++)   /* insertion sort, newest first */
        for (int j = i; j > 0 && steps[j] > steps[j - 1]; j--) {
            long t = steps[j];
            steps[j] = steps[j - 1];
            steps[j - 1] = t;
        }
    return n;
}

/* mkdir -p */
int checkpoint_save(const char *dir, const struct checkpoint *ck, struct dt_err *err)
{
    if (make_dirs(dir) < 0)
        return dt_fail(err, "checkpoint directory %s: %s", dir, strerror(errno));
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, ck->step);
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
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
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return dt_fail(err, "checkpoint %s: %s", tmp, strerror(errno));
    bool ok = write_fully(fd, &h, sizeof h) == 0;
    for (int i = 0; i < n && ok; i++)
        ok = write_fully(fd, parts[i].data, parts[i].bytes) == 0;
    ok = ok && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    /* rename is atomic: a reader sees the old set of files or the new one, never half a file */
    if (!ok || rename(tmp, path) < 0 || fsync_dir(dir) < 0) {
        int saved = errno;
        unlink(tmp);
        return dt_fail(err, "checkpoint %s: %s", path, strerror(saved));
    }
    long steps[64];
    int count = list_steps(dir, steps, 64);
    for (int i = CHECKPOINT_KEEP; i < count; i++) {
        snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, steps[i]);
        unlink(path);
    }
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
static bool load_one(const char *path, struct checkpoint *ck)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
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

void checkpoint_remove_stale(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char mine[32];
    snprintf(mine, sizeof mine, ".tmp.%d", (int)getpid());
    for (struct dirent *e; (e = readdir(d));) {
        const char *tmp = strstr(e->d_name, ".dtc.tmp.");
        if (strncmp(e->d_name, "ckpt-", 5) != 0 || !tmp || strcmp(tmp + 4, mine) == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

int checkpoint_load_newest(const char *dir, struct checkpoint *ck, struct dt_err *err)
{
    long steps[64];
    int count = list_steps(dir, steps, 64);
    if (count < 0)
        return errno == ENOENT ? 0 : dt_fail(err, "checkpoint directory %s: %s", dir, strerror(errno));
    for (int i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", dir, steps[i]);
        if (load_one(path, ck))
            return 1;
        fprintf(stderr, "dtrain-train: skipping %s: torn, damaged or of another run\n", path);
    }
    return 0;
}
