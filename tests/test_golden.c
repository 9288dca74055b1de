/* test_golden.c - what the tools print for fixed inputs, held in golden files (tests/golden/), as
 * hwloc holds its utilities' output: the binding plan of a saved topology, the topology itself, a
 * speedup table of fixture records, a hand-made table corrected, a lab table's slow node, and
 * dtrain-commbench's header and columns. A changed output fails here until its golden file is updated on purpose
 * (`make golden` rewrites them all; the diff is then reviewed like code). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/testutil.h"

/* Runs argv (argv[0] a tool's name) with only PATH, HOME and the lines of the env fixture (NULL:
 * none), so that nothing of this machine's environment reaches the output. */
static void run_tool(char **argv, const char *env_fixture, const char *extra_var, struct tu_result *r)
{
    char *full[32];
    int argc = 0;
    full[argc++] = (char *)tu_bin(argv[0]);
    for (int i = 1; argv[i] && argc < 31; i++)
        full[argc++] = argv[i];
    full[argc] = NULL;
    struct tu_env env = {0};
    tu_env_basics(&env);
    if (env_fixture)
        tu_env_load(&env, env_fixture);
    if (extra_var) {
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(extra_var, "="), extra_var);
        tu_env_set(&env, name, strchr(extra_var, '=') + 1);
    }
    assert_int_equal(tu_run(full, env.vars, r), 0);
    tu_env_free(&env);
}

/* dtrain --plan of an 8-GPU node's saved topology, as task 2 of an sbatch step with 2 GPUs a node
 * (gn02) sees it: text and JSON. */
static void test_plan_of_a_saved_topology(void **state)
{
    (void)state;
    char topology[4096];
    tu_fixture(topology, sizeof topology, "topo/2s-8gpu-8hca-pcie-switches.xml");
    struct tu_result r;
    run_tool((char *[]){"dtrain", "--plan", "--gpus-per-node", "2", "--topology", topology, NULL},
             "sbatch_gpus2_step_task2.env", NULL, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_golden("plan-8gpu-gn02.txt", r.out));
    tu_result_free(&r);
    run_tool((char *[]){"dtrain", "--plan", "--json", "--gpus-per-node", "2", "--topology", topology, NULL},
             "sbatch_gpus2_step_task2.env", NULL, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_golden("plan-8gpu-gn02.json", r.out));
    tu_result_free(&r);
}

/* dtrain-topo of the same saved topology and of a CPU-only one. */
static void test_topology_of_saved_nodes(void **state)
{
    (void)state;
    const char *nodes[][2] = {{"topo/2s-8gpu-8hca-pcie-switches.xml", "topo-8gpu.txt"},
                              {"topo/2s-cpuonly-1eth.xml", "topo-cpuonly.txt"}};
    for (int i = 0; i < 2; i++) {
        char topology[4096];
        tu_fixture(topology, sizeof topology, nodes[i][0]);
        struct tu_result r;
        run_tool((char *[]){"dtrain-topo", "--topology", topology, NULL}, NULL, NULL, &r);
        assert_int_equal(r.status, 0);
        assert_true(tu_golden(nodes[i][1], r.out));
        tu_result_free(&r);
    }
}

/* dtrain-analyze table of fixture records (standard output: the table; standard error: what was
 * read and skipped), and of a hand-made table with wrong averages, corrected. */
static void test_tables_of_fixtures(void **state)
{
    (void)state;
    char records[4096], hand_made[4096];
    tu_fixture(records, sizeof records, "records/runs.jsonl");
    tu_fixture(hand_made, sizeof hand_made, "tables/broken.md");
    struct tu_result r;
    run_tool((char *[]){"dtrain-analyze", "table", "--extra", records, NULL}, NULL, NULL, &r);
    assert_int_equal(r.status, 2);   /* one line of the fixture is not a record: said, and exit 2 */
    assert_true(tu_golden("table-records.md", r.out));
    assert_true(tu_golden("table-records.err", r.err));
    tu_result_free(&r);
    run_tool((char *[]){"dtrain-analyze", "table", hand_made, NULL}, NULL, NULL, &r);
    assert_true(tu_golden("table-corrected.md", r.out));
    tu_result_free(&r);
    char lab[4096];
    tu_fixture(lab, sizeof lab, "nodes/lab.md");
    run_tool((char *[]){"dtrain-analyze", "nodes", lab, NULL}, NULL, NULL, &r);
    assert_int_equal(r.status, 1);   /* a slow node named */
    assert_true(tu_golden("nodes-lab.md", r.out));
    tu_result_free(&r);
}

/* dtrain-commbench on one rank (an MPI singleton): its header and, per size, the columns that do
 * not depend on the machine (size, count, type, #wrong); the times are masked. */
static void test_commbench_header_and_columns(void **state)
{
    (void)state;
    struct tu_result r;
    /* Open MPI's own allocations outlive MPI_Finalize: not this program's leaks */
    run_tool((char *[]){"dtrain-commbench", "--min-bytes", "8", "--max-bytes", "1K", "--iters", "2", "--warmup", "1",
                        NULL},
             NULL, "ASAN_OPTIONS=detect_leaks=0", &r);
    if (r.status != 0 && tu_contains(r.err, "MPI"))
        tu_skip("an MPI singleton cannot start here: %.200s", r.err);
    assert_int_equal(r.status, 0);
    char masked[8192] = "";
    size_t used = 0;
    for (char *line = strtok(r.out, "\n"); line && used < sizeof masked - 256; line = strtok(NULL, "\n")) {
        long size, count;
        char type[16];
        double t, alg, bus;
        int wrong;
        if (line[0] != '#' && sscanf(line, "%ld %ld %15s %lf %lf %lf %d", &size, &count, type, &t, &alg, &bus, &wrong) == 7)
            used += (size_t)snprintf(masked + used, sizeof masked - used, "%13ld %12ld  %5s  (time) (algbw) (busbw) %7d\n",
                                     size, count, type, wrong);
        else if (strncmp(line, "# this node's links", 19) == 0 || strncmp(line, "# no link here reports", 22) == 0)
            used += (size_t)snprintf(masked + used, sizeof masked - used, "# (the node's links and their rates)\n");
        else
            used += (size_t)snprintf(masked + used, sizeof masked - used, "%s\n", line);
    }
    assert_true(tu_golden("commbench-1rank.txt", masked));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_of_a_saved_topology),
        cmocka_unit_test(test_topology_of_saved_nodes),
        cmocka_unit_test(test_tables_of_fixtures),
        cmocka_unit_test(test_commbench_header_and_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
