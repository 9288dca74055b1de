/* test_interposed_faults.c - failures a healthy machine never shows, made by this program's own
 * fsync and hwloc_topology_load (an executable's definition of a function is the one the library
 * code linked into it calls): a directory that cannot be flushed after the rename of a whole file,
 * and hwloc crashing while it loads a topology. Each must be said as what happened. */
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>
#include <hwloc.h>

#include "common/atomic_file.h"
#include "topology/topo.h"
#include "tests/testutil.h"

static int fail_directory_fsync;   /* a directory's fsync fails with EIO */
static int crash_in_load;          /* hwloc_topology_load dies of SIGSEGV */

int fsync(int fd)
{
    struct stat st;
    if (fail_directory_fsync && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fsync, fd);
}

int hwloc_topology_load(hwloc_topology_t topology)
{
    if (crash_in_load)
        raise(SIGSEGV);   /* as hwloc 2.9's libxml2 reader did on two flipped bytes */
    int (*real)(hwloc_topology_t) = (int (*)(hwloc_topology_t))dlsym(RTLD_NEXT, "hwloc_topology_load");
    return real(topology);
}

static int fill_hello(FILE *out, const void *arg)
{
    (void)arg;
    return fputs("hello\n", out) < 0 ? -1 : 0;
}

/* The file is whole and in place; only its name may not survive a crash: said so, not "cannot
 * write" (which it said, though the file was there). */
static void test_directory_flush_failure_is_said_as_such(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-fsync-XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.json", dir);
    struct dt_err err = {0};
    fail_directory_fsync = 1;
    int rc = atomic_write(path, fill_hello, NULL, &err);
    fail_directory_fsync = 0;
    print_message("%s\n", err.msg);
    assert_int_equal(rc, -1);
    assert_true(tu_contains(err.msg, "out.json is written, but its directory"));
    assert_true(tu_contains(err.msg, "could not be flushed (Input/output error)"));
    char *text = tu_read_file(path);
    assert_non_null(text);
    assert_string_equal(text, "hello\n");
    free(text);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* hwloc dying inside its reader is an error naming the file and the fix, and this process goes on. */
static void test_hwloc_crash_is_an_error(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "topo/2s-cpuonly-1eth.xml");
    struct topo topo;
    struct dt_err err = {0};
    crash_in_load = 1;
    int rc = topo_load(&topo, path, &err);
    crash_in_load = 0;
    print_message("%s\n", err.msg);
    assert_int_equal(rc, -1);
    assert_true(tu_contains(err.msg, "2s-cpuonly-1eth.xml made hwloc's XML reader crash (signal 11"));
    assert_true(tu_contains(err.msg, "lstopo --of xml"));
    assert_int_equal(topo_load(&topo, path, &err), 0);   /* the same file, hwloc well again */
    topo_free(&topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_directory_flush_failure_is_said_as_such),
        cmocka_unit_test(test_hwloc_crash_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
