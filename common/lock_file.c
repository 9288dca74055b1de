/* lock_file.c - a lock file of the user's own, waited for within a bound (see lock_file.h). */
#include "common/lock_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The lock file is fit to hold: a regular file of this user's that only they can open. */
static int check_lock_file(int fd, const char *path, const char *what, struct dt_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return dt_fail(err, "lock of %s: %s: %s", what, path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return dt_fail(err, "lock of %s: %s is not a regular file", what, path);
    if (st.st_uid != geteuid())
        return dt_fail(err, "lock of %s: %s belongs to uid %u, not to you: another user made it (to hold the "
                       "lock); remove it, or write to a directory only you can write", what, path,
                       (unsigned)st.st_uid);
    if ((st.st_mode & 077) && fchmod(fd, 0600) < 0)
        return dt_fail(err, "lock of %s: %s: cannot make it 0600: %s", what, path, strerror(errno));
    return 0;
}

static double seconds_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

int lock_fd_within(int fd, double wait_seconds)
{
    double deadline = seconds_now() + wait_seconds;
    while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return -1;
        if (seconds_now() >= deadline) {
            errno = EWOULDBLOCK;
            return -1;
        }
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    return 0;
}

int lock_file_take(const char *path, double wait_seconds, const char *what, struct dt_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        dt_fail(err, "lock of %s: cannot open %s: %s%s", what, path, strerror(saved),
                saved == ELOOP ? " (a link was planted there)" : "");
        errno = saved;
        return LOCK_FAILED;
    }
    if (check_lock_file(fd, path, what, err) < 0) {
        close(fd);
        errno = EPERM;
        return LOCK_FAILED;
    }
    if (lock_fd_within(fd, wait_seconds) == 0)
        return fd;
    int saved = errno;
    close(fd);
    if (saved == EWOULDBLOCK) {
        dt_fail(err, "%s is locked by another of your processes (%s), still after %.0f s", what, path, wait_seconds);
        return LOCK_HELD;
    }
    if (saved == ENOLCK || saved == EINVAL || saved == EOPNOTSUPP)
        return LOCK_UNSUPPORTED;
    dt_fail(err, "lock of %s: %s: %s", what, path, strerror(saved));
    return LOCK_FAILED;
}
