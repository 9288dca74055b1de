/* atomic_file.c - whole-or-nothing file writes (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int atomic_write(const char *path, atomic_fill fill, const void *arg, struct dt_err *err)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return dt_fail(err, "cannot write %s: %s", tmp, strerror(errno));
    int failed = fill(f, arg) < 0 || ferror(f);
    failed |= fclose(f) != 0;
    if (failed || rename(tmp, path) < 0) {
        unlink(tmp);
        return dt_fail(err, "cannot write %s", path);
    }
    return 0;
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
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    return make_dirs(dir);
}
