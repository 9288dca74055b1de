/* atomic_file.c - creating output files safely, whole-or-nothing writes (see atomic_file.h). */
#include "common/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process's umask, read without changing it (umask(2) would, for every thread). */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    unsigned mask = 022;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &mask) == 1)
            break;
    if (f)
        fclose(f);
    return (mode_t)mask;
}

int atomic_temp(const char *path, char *tmp, size_t tmp_size, struct dt_err *err)
{
    if (snprintf(tmp, tmp_size, "%s.tmp.%d.XXXXXX", path, (int)getpid()) >= (int)tmp_size)
        return dt_fail(err, "cannot write %s: the path is too long", path);
    /* mkostemp opens with O_CREAT|O_EXCL, mode 0600: a name that exists, a link included, is
     * never opened; it tries another */
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return dt_fail(err, "cannot write %s: %s", tmp, strerror(errno));
    return fd;
}

/* The directory part of path ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t size)
{
    snprintf(dir, size, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
}

int atomic_commit(int fd, const char *tmp, const char *path, struct dt_err *err)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    int ok = fchmod(fd, 0666 & ~current_umask()) == 0 && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) == 0) {
        if (fsync_dir(dir) == 0)
            return 0;
        /* the file is whole and in place; only its name may not survive a crash */
        return dt_fail(err, "%s is written, but its directory %s could not be flushed (%s): a crash now could "
                       "lose it", path, dir, strerror(errno));
    }
    saved = ok ? errno : saved;
    unlink(tmp);
    return dt_fail(err, "cannot write %s: %s", path, strerror(saved));
}

int atomic_write(const char *path, atomic_fill fill, const void *arg, struct dt_err *err)
{
    char tmp[4200];
    int fd = atomic_temp(path, tmp, sizeof tmp, err);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(dup(fd), "wb");
    errno = 0;
    int failed = !f || fill(f, arg) < 0 || ferror(f), saved = errno;
    if (f && fclose(f) != 0)
        failed = 1, saved = saved ? saved : errno;
    if (failed) {
        close(fd);
        unlink(tmp);
        return dt_fail(err, "cannot write %s: %s", path, saved ? strerror(saved) : "the data could not be made");
    }
    return atomic_commit(fd, tmp, path, err);
}

const char *not_own_regular_file(int fd)
{
    struct stat st;
    return fstat(fd, &st) < 0        ? strerror(errno)
           : !S_ISREG(st.st_mode)   ? "not a regular file"
           : st.st_uid != geteuid() ? "a file of another user"
                                    : NULL;
}

int open_output(const char *path, int flags, const char *what, struct dt_err *err)
{
    int keep = flags & (O_ACCMODE | O_APPEND);
    int fd = open(path, keep | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (fd < 0) {
        int saved = errno;
        /* a FIFO with no reader: O_NONBLOCK turns the hang into ENXIO */
        return dt_fail(err, "%s %s: cannot open it: %s%s", what, path, strerror(saved),
                       saved == ELOOP ? " (a symbolic link: outputs are not written through one)"
                       : saved == ENXIO ? " (a FIFO or socket, not a file)" : "");
    }
    const char *why = not_own_regular_file(fd);
    if (!why && (fcntl(fd, F_SETFL, keep & O_APPEND) < 0 || ((flags & O_TRUNC) && ftruncate(fd, 0) < 0)))
        why = strerror(errno);
    if (why) {
        close(fd);
        return dt_fail(err, "%s %s: %s: not written", what, path, why);
    }
    return fd;
}

int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int write_fully(int fd, const void *data, size_t bytes)
{
    for (const char *p = data; bytes > 0;) {
        ssize_t n = write(fd, p, bytes);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            return -1;
        }
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

int make_dirs(const char *dir)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) < 0 && errno != EEXIST ? -1 : 0;
}

int make_parent_dirs(const char *path)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    return strcmp(dir, ".") == 0 || strcmp(dir, "/") == 0 ? 0 : make_dirs(dir);
}
