/* topo_cache.c - discover a node's topology once, share it with the node's other ranks (topo.h).
 *
 * The cache lives in shared places (/dev/shm, $TMPDIR) where other users can plant files, so
 * nothing is opened by a name another user could have chosen the target of: the user's own
 * directory dtrain-topo-UID is made 0700 and checked (a real directory, this user's, nobody else
 * may write), opened once, and every file inside is opened relative to it with O_NOFOLLOW, new
 * ones with O_EXCL. Anything that fails a check is reported and the topology discovered without
 * the cache: a cache is a speed-up, never a reason to fail or to write somewhere unexpected. */
#include "topology/topo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/atomic_file.h"

#define CACHE_MAX_BYTES (64 << 20)   /* a big node's export is ~1 MB; more is not ours */

static const char *default_cache_dir(void)
{
    const char *dir = getenv("DTRAIN_TOPO_CACHE");
    if (dir && *dir)
        return dir;
    struct stat st;
    if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
        return "/dev/shm";
    dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* The boot id changes at every reboot: a cache never outlives the hardware it describes. */
static void read_boot_id(char *buf, size_t size)
{
    snprintf(buf, size, "noboot");
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!f)
        return;
    if (fgets(buf, (int)size, f))
        buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* Does the cached topology describe this machine? (same boot, so only a damaged file fails) */
static bool cache_matches(const struct topo *topo)
{
    long cpus = sysconf(_SC_NPROCESSORS_CONF);
    hwloc_obj_t root = hwloc_get_root_obj(topo->hw);
    return cpus <= 0 || hwloc_bitmap_weight(root->complete_cpuset) == (int)cpus;
}

/* Is what `st` describes a regular file (or directory) of this user that no one else may write? */
static int check_owned(const struct stat *st, mode_t type, const char *path, struct dt_err *err)
{
    if ((st->st_mode & S_IFMT) != type)
        return dt_fail(err, "%s is not a %s (refused, not followed)", path, type == S_IFDIR ? "directory" : "regular file");
    if (st->st_uid != geteuid())
        return dt_fail(err, "%s belongs to uid %u, not to this user (uid %u)", path, (unsigned)st->st_uid,
                       (unsigned)geteuid());
    if (st->st_mode & (S_IWGRP | S_IWOTH))
        return dt_fail(err, "%s may be written by other users (mode %03o)", path, (unsigned)(st->st_mode & 0777));
    return 0;
}

/* Makes or opens base/dtrain-topo-UID, the user's private cache directory. Returns its fd. */
static int open_private_dir(const char *base, char *dir, size_t size, struct dt_err *err)
{
    snprintf(dir, size, "%s/dtrain-topo-%u", base, (unsigned)geteuid());
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return dt_fail(err, "cannot make %s: %s", dir, strerror(errno));
    struct stat named, opened;
    if (lstat(dir, &named) < 0)
        return dt_fail(err, "%s: %s", dir, strerror(errno));
    if (check_owned(&named, S_IFDIR, dir, err) < 0)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return dt_fail(err, "cannot open %s: %s", dir, strerror(errno));
    /* The name may have been swapped between lstat and open: the fd is what counts. */
    int rc = fstat(fd, &opened) < 0 ? dt_fail(err, "%s: %s", dir, strerror(errno))
             : opened.st_dev != named.st_dev || opened.st_ino != named.st_ino
                 ? dt_fail(err, "%s changed while it was opened (refused)", dir)
                 : check_owned(&opened, S_IFDIR, dir, err);
    if (rc < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Opens `name` inside the private directory, never through a symlink, and checks what it got. */
static int open_inside(int dir_fd, const char *dir, const char *name, int flags, struct dt_err *err)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = openat(dir_fd, name, flags | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;   /* the caller tells "no cache yet" by it */
        dt_fail(err, "%s: %s%s", path, strerror(saved), saved == ELOOP ? " (a symlink: refused, not followed)" : "");
        errno = saved;
        return -1;
    }
    struct stat st;
    int rc = fstat(fd, &st) < 0 ? dt_fail(err, "%s: %s", path, strerror(errno)) : check_owned(&st, S_IFREG, path, err);
    if (rc < 0) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* The cache's first line, before the XML: its length and CRC-32. A cache whose bytes changed (a
 * flipped bit, a torn copy) is rewritten, never handed to hwloc, whose XML reader crashes on some
 * damaged inputs: then every dtrain on the node would, and the cache would never be rewritten. */
#define CACHE_HEADER "dtrain-topology-cache length %d crc32 %08lx\n"

/* The XML of a cache file's text (its header checked): NULL when the header is missing or does
 * not match the bytes after it. */
static char *checked_xml(char *text, int *length)
{
    int want;
    unsigned long crc;
    char *end = strchr(text, '\n');   /* the XML begins right after the header's newline */
    if (!end || sscanf(text, "dtrain-topology-cache length %d crc32 %8lx", &want, &crc) != 2)
        return NULL;
    char *xml = end + 1;
    int have = (int)strlen(xml);
    if (have != want || crc32(0L, (const Bytef *)xml, (uInt)have) != crc)
        return NULL;
    *length = have + 1;
    return xml;
}

/* Reads the cache into memory through a checked fd. Returns the length with the NUL, 0 when
 * there is no cache yet, or -1 with err. */
static int read_cache(int dir_fd, const char *dir, const char *name, char **xml, struct dt_err *err)
{
    int fd = open_inside(dir_fd, dir, name, O_RDONLY, err);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    struct stat st;
    int rc = -1;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < CACHE_MAX_BYTES) {
        *xml = malloc((size_t)st.st_size + 1);
        ssize_t got = *xml ? read(fd, *xml, (size_t)st.st_size) : -1;
        if (got == st.st_size) {
            (*xml)[got] = '\0';
            rc = (int)got + 1;
        } else {
            free(*xml);
            *xml = NULL;
        }
    }
    close(fd);
    return rc < 0 ? dt_fail(err, "%s/%s: cannot be read whole", dir, name) : rc;
}

/* Writes a fresh temporary file (O_EXCL) and renames it over the cache: readers see the old file
 * or the whole new one, never half. */
static int write_cache(const struct topo *topo, int dir_fd, const char *dir, const char *name, struct dt_err *err)
{
    char tmp[560], *xml = NULL;
    int len = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", name, (long)getpid());
    unlinkat(dir_fd, tmp, 0);   /* a leftover of a killed run with this pid; only ours can be here */
    if (hwloc_topology_export_xmlbuffer(topo->hw, &xml, &len, 0) < 0 || len < 1)
        return dt_fail(err, "cannot export the topology of this machine: %s", strerror(errno));
    int fd = open_inside(dir_fd, dir, tmp, O_WRONLY | O_CREAT | O_EXCL, err);
    int rc = fd < 0 ? -1 : 0;
    if (fd >= 0) {
        char header[96];
        int header_len = snprintf(header, sizeof header, CACHE_HEADER, len - 1,
                                  crc32(0L, (const Bytef *)xml, (uInt)(len - 1)));   /* len counts the NUL */
        if (write_fully(fd, header, (size_t)header_len) < 0 || write_fully(fd, xml, (size_t)len - 1) < 0 ||
            fsync(fd) < 0)
            rc = dt_fail(err, "cannot write %s/%s: %s", dir, tmp, strerror(errno));
        close(fd);
        if (rc == 0 && renameat(dir_fd, tmp, dir_fd, name) < 0)
            rc = dt_fail(err, "cannot write the topology cache %s/%s: %s", dir, name, strerror(errno));
        if (rc < 0)
            unlinkat(dir_fd, tmp, 0);
    }
    hwloc_free_xmlbuffer(topo->hw, xml);
    return rc;
}

/* Under the lock: the cache if it is good, else discovery and a new cache. */
static int load_locked(struct topo *topo, int dir_fd, const char *dir, const char *name, bool *from_cache,
                       struct dt_err *err)
{
    char *xml = NULL;
    struct dt_err cache_err = {0};
    int len = read_cache(dir_fd, dir, name, &xml, &cache_err);
    char *checked = len > 0 ? checked_xml(xml, &len) : NULL;
    if (len > 0 && !checked)
        free(xml);   /* changed since it was written, or of an older dtrain: rewritten below */
    if (checked) {
        struct dt_err ignored;
        int loaded = topo_load_this_machine_xml(topo, checked, len, &ignored);
        free(xml);
        if (loaded == 0 && cache_matches(topo)) {
            *from_cache = true;
            return 0;
        }
        if (loaded == 0)
            topo_free(topo);
    } else if (errno != ENOENT && !strstr(cache_err.msg, "No such file")) {
        /* A damaged or empty file is simply rewritten; a planted one is worth saying. */
        if (strstr(cache_err.msg, "refused") || strstr(cache_err.msg, "uid") || strstr(cache_err.msg, "mode"))
            fprintf(stderr, "dtrain: topology cache: %s\n", cache_err.msg);
    }
    *from_cache = false;
    if (topo_load(topo, NULL, err) < 0)
        return -1;
    struct dt_err write_err = {0};
    if (write_cache(topo, dir_fd, dir, name, &write_err) < 0)
        fprintf(stderr, "dtrain: topology cache: %s (going on without a cache)\n", write_err.msg);
    return 0;
}

int topo_load_cached(struct topo *topo, const char *cache_dir, bool *from_cache, struct dt_err *err)
{
    char host[256] = "localhost", boot[64], dir[4096], name[512], lock_name[540];
    gethostname(host, sizeof host - 1);
    read_boot_id(boot, sizeof boot);
    snprintf(name, sizeof name, "%s-%s-%x.xml", host, boot, (unsigned)HWLOC_API_VERSION);
    snprintf(lock_name, sizeof lock_name, "%s.lock", name);
    *from_cache = false;
    struct dt_err cache_err = {0};
    int dir_fd = open_private_dir(cache_dir ? cache_dir : default_cache_dir(), dir, sizeof dir, &cache_err);
    int lock = dir_fd < 0 ? -1 : open_inside(dir_fd, dir, lock_name, O_RDWR | O_CREAT, &cache_err);
    if (lock < 0 || flock(lock, LOCK_EX) < 0) {   /* no lock, no cache: discover like before */
        fprintf(stderr, "dtrain: topology cache: %s (going on without a cache)\n",
                cache_err.msg[0] ? cache_err.msg : strerror(errno));
        if (lock >= 0)
            close(lock);
        if (dir_fd >= 0)
            close(dir_fd);
        return topo_load(topo, NULL, err);
    }
    int rc = load_locked(topo, dir_fd, dir, name, from_cache, err);
    close(lock);   /* releases the lock */
    close(dir_fd);
    return rc;
}
