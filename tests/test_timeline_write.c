/* test_timeline_write.c - a --timeline that cannot be written says why and leaves no file: a write
 * cut by the file-size limit (EFBIG, as a full disk gives ENOSPC) used to end with "writing FILE
 * failed" and no reason, and leave a torn or empty trace behind. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"
#include "trainer/base/timeline.h"

static void test_a_failed_timeline_says_why_and_goes(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-timeline-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);   /* EFBIG instead of the signal */
        struct rlimit limit = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &limit);
        struct dt_err err;
        struct timeline *t = timeline_open(path, 0, "rank 0", &err);
        if (!t)
            _exit(2);
        for (int i = 0; i < 2000; i++)   /* far past 4 KiB */
            timeline_span(t, LANE_COMPUTE, "step", "forward", i, i + 0.5);
        int rc = timeline_close(t, &err);
        _exit(rc < 0 && strstr(err.msg, strerror(EFBIG)) && strstr(err.msg, "the file is removed") ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(access(path, F_OK), -1);   /* no torn trace left */
    assert_int_equal(tu_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_failed_timeline_says_why_and_goes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
