/* topo_cache.c - discover a node's topology once, share it with the node's other ranks (topo.h). */
#include "topo.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

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

static int write_cache(const struct topo *topo, const char *path, struct dt_err *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (hwloc_topology_export_xml(topo->hw, tmp, 0) < 0) {
        unlink(tmp);
        return dt_fail(err, "cannot write the topology cache %s: %s", tmp, strerror(errno));
    }
    if (rename(tmp, path) < 0) {   /* readers see the old file or the whole new one, never half */
        unlink(tmp);
        return dt_fail(err, "cannot write the topology cache %s: %s", path, strerror(errno));
    }
    return 0;
}

/* Under the lock: the cache if it is good, else discovery and a new cache. */
static int load_locked(struct topo *topo, const char *path, bool *from_cache, struct dt_err *err)
{
    struct stat st;
    if (stat(path, &st) == 0 && st.st_uid == getuid()) {
        struct dt_err ignored;
        if (topo_load_ex(topo, path, true, &ignored) == 0 && cache_matches(topo)) {
            *from_cache = true;
            return 0;
        }
        if (topo->hw)
            topo_free(topo);
    }
    *from_cache = false;
    if (topo_load(topo, NULL, err) < 0)
        return -1;
    struct dt_err write_err;
    if (write_cache(topo, path, &write_err) < 0)
        fprintf(stderr, "dtrain: %s (going on without a cache)\n", write_err.msg);
    return 0;
}

int topo_load_cached(struct topo *topo, const char *cache_dir, bool *from_cache, struct dt_err *err)
{
    char host[256] = "localhost", boot[64], path[4096], lock_path[4200];
    gethostname(host, sizeof host - 1);
    read_boot_id(boot, sizeof boot);
    snprintf(path, sizeof path, "%s/dtrain-topo-%u-%s-%s-%x.xml", cache_dir ? cache_dir : default_cache_dir(),
             (unsigned)getuid(), host, boot, (unsigned)HWLOC_API_VERSION);
    snprintf(lock_path, sizeof lock_path, "%s.lock", path);
    int lock = open(lock_path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (lock < 0 || flock(lock, LOCK_EX) < 0) {   /* no lock, no cache: discover like before */
        if (lock >= 0)
            close(lock);
        *from_cache = false;
        return topo_load(topo, NULL, err);
    }
    int rc = load_locked(topo, path, from_cache, err);
    close(lock);   /* releases the lock */
    return rc;
}
