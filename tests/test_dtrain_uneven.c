/* test_dtrain_uneven.c - dtrain --gpus-per-node auto on steps whose nodes got different GPU
 * counts, from environments recorded on the test cluster: a heterogeneous step (srun A : B), whose
 * tasks see the combined layout, each node binding one rank per GPU it was given. (The plain
 * uneven step srun -n5 --gpus-per-task=1 is test_dtrain's.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

static void dry_run(const char *fixture, struct tu_result *r)
{
    char topology[4200];
    tu_fixture(topology, sizeof topology, "topo/2s-8gpu-8hca-pcie-switches.xml");
    struct tu_env env = {0};
    tu_env_basics(&env);
    tu_env_load(&env, fixture);
    char *argv[] = {(char *)tu_bin("dtrain"), "-g", "auto", "-t", topology, "--dry-run", "--", "true", NULL};
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

/* srun -N1 -n3 --gpus-per-task=1 -w gn01 : -N1 -n2 --gpus-per-task=1 -w gn02: 3 ranks on gn01, 2 on
 * gn02, one world of 5 with one rendezvous (the het job's first component's job id). */
static void test_heterogeneous_step(void **state)
{
    (void)state;
    struct tu_result first, fourth;
    dry_run("srun_het_3+2_task0.env", &first);
    dry_run("srun_het_3+2_task3.env", &fourth);
    assert_int_equal(first.status, 0);
    assert_int_equal(fourth.status, 0);
    assert_true(tu_contains(first.out, "export DTRAIN_GPUS_PER_NODE=3\n") && tu_contains(first.out, "export RANK=0\n"));
    assert_true(tu_contains(fourth.out, "export DTRAIN_GPUS_PER_NODE=2\n") && tu_contains(fourth.out, "export RANK=3\n"));
    assert_true(tu_contains(fourth.out, "export WORLD_SIZE=5\n") && tu_contains(fourth.out, "export LOCAL_RANK=0\n"));
    assert_true(tu_contains(fourth.out, "export LOCAL_WORLD_SIZE=2\n"));
    const char *port = strstr(first.out, "export MASTER_PORT=");
    assert_non_null(port);
    char line[64];
    snprintf(line, sizeof line, "%.*s", (int)strcspn(port, "\n") + 1, port);
    assert_true(tu_contains(fourth.out, line));   /* both components meet at one port */
    tu_result_free(&first);
    tu_result_free(&fourth);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heterogeneous_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
