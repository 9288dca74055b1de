/* stdout_check.c - standard output flushed, closed and checked at exit (see stdout_check.h). */
#include "common/stdout_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *checked_tool = "dtrain";

static void check_stdout(void)
{
    /* ferror: an earlier write failed and its bytes are gone, even if this flush succeeds; errno
     * still holds that write's reason unless something after it failed too (then that one's) */
    int failed = ferror(stdout), earlier = errno;
    errno = 0;
    if (fflush(stdout) != 0)
        failed = 1;
    int saved = errno ? errno : failed ? earlier : 0;
    if (fclose(stdout) != 0 && errno != EBADF)   /* EBADF: no standard output was open at all */
        failed = 1, saved = saved ? saved : errno;
    if (!failed)
        return;
    fprintf(stderr, "%s: cannot write standard output: %s\n", checked_tool,
            saved ? strerror(saved) : "a write failed earlier");
    _exit(1);   /* exit() again from an atexit handler is undefined */
}

void stdout_check_at_exit(const char *tool)
{
    checked_tool = tool;
    atexit(check_stdout);
}
