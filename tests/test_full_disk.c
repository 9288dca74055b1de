/* test_full_disk.c - a full disk is an error, not an empty file: a tool's standard output that
 * cannot be written (here /dev/full) ends it with status 1 and the reason (common/stdout_check.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"

/* A full disk is an error, not an empty file: every tool's --help, a table, a plan, a hostlist and
 * a topology written to /dev/full end with status 1 and the reason (before, all but three tools
 * ended with 0 and wrote nothing). */
static void test_a_full_disk_is_an_error(void **state)
{
    (void)state;
    if (access("/dev/full", W_OK) != 0) {
        tu_skip("no /dev/full");
        return;
    }
    const char *tools[] = {"dtrain", "dtrain-train", "dtrain-topo", "dtrain-hostlist", "dtrain-commbench",
                           "dtrain-analyze", "dtrain-rankinfo", "dtrain-check", "dtrain-record"};
    char fixture[4096], topology[4096], cmd[12288];
    tu_fixture(fixture, sizeof fixture, "records/runs.jsonl");
    tu_fixture(topology, sizeof topology, "topo/2s-8gpu-8hca-pcie-switches.xml");
    const char *runs[16];
    char lines[16][9000];
    int count = 0;
    for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++)
        snprintf(lines[count], sizeof lines[count], "'%s' --help", tu_bin(tools[t])), runs[count] = lines[count], count++;
    snprintf(lines[count], sizeof lines[count], "'%s' table '%s'", tu_bin("dtrain-analyze"), fixture);
    runs[count] = lines[count], count++;
    snprintf(lines[count], sizeof lines[count], "'%s' --plan --topology '%s' --ranks 2", tu_bin("dtrain"), topology);
    runs[count] = lines[count], count++;
    snprintf(lines[count], sizeof lines[count], "'%s' expand 'gn[01-40]'", tu_bin("dtrain-hostlist"));
    runs[count] = lines[count], count++;
    snprintf(lines[count], sizeof lines[count], "'%s' --topology '%s'", tu_bin("dtrain-topo"), topology);
    runs[count] = lines[count], count++;
    for (int i = 0; i < count; i++) {
        snprintf(cmd, sizeof cmd, "%s >/dev/full", runs[i]);
        char *argv[] = {"/bin/sh", "-c", cmd, NULL};
        struct tu_env env = {0};
        tu_env_basics(&env);
        struct tu_result r;
        assert_int_equal(tu_run(argv, env.vars, &r), 0);
        tu_env_free(&env);
        if (r.status != 1 || !tu_contains(r.err, "cannot write standard output: No space left on device"))
            fail_msg("%s >/dev/full: status %d, said: %s", runs[i], r.status, r.err);
        tu_result_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_full_disk_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
