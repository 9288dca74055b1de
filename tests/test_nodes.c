/* test_nodes.c - dtrain-analyze nodes: the slow node of a lab's table, of run records, and, where
 * ../shared is there, the reference bigMNIST table's gn08 and gn09 and the notebooks' lm1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* n04 took about 1.5x the median in all three of its runs, alone and beside n03. */
static void test_the_slow_node_of_a_table(void **state)
{
    (void)state;
    char lab[4200];
    tu_fixture(lab, sizeof lab, "nodes/lab.md");
    struct tu_result r;
    run_analyze((char *[]){"nodes", lab, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "| Node | Runs | Slow runs | Median time ratio | Slowest run | Verdict |\n"));
    assert_true(tu_contains(r.out, "| n04 | 3 | 3 | 1.49 | 1.49x: 2 nodes x 1 GPU of"));
    assert_true(tu_contains(r.out, "n[03-04] (") && tu_contains(r.out, "lab.md:15) | **slow** |\n"));
    assert_true(tu_contains(r.out, "| n03 | 2 | 1 | 1.22 |"));   /* beside n04 once: not slow */
    assert_null(strstr(strstr(r.out, "| n03 |"), "**slow**"));
    assert_true(tu_contains(r.err, "3 configurations compared, 5 nodes"));
    assert_true(tu_contains(r.err, "slow node: n04 (sbatch --exclude=n04)"));
    tu_result_free(&r);
    run_analyze((char *[]){"nodes", "--threshold", "0.6", "-f", "csv", lab, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "node,runs,slow_runs,median_ratio,worst_ratio,worst_run,verdict\nn04,3,0,1.49"));
    tu_result_free(&r);
    const char *bad[][2] = {{"--threshold", "-1"}, {"--format", "xml"}};
    for (int i = 0; i < 2; i++) {
        run_analyze((char *[]){"nodes", (char *)bad[i][0], (char *)bad[i][1], lab, NULL}, &r);
        assert_int_equal(r.status, 2);
        assert_true(tu_contains(r.err, bad[i][0]));
        tu_result_free(&r);
    }
    /* one configuration, always on one node: nothing tells nodes apart */
    char one[] = "/tmp/dtrain-test-nodes-one-XXXXXX";
    int fd = mkstemp(one);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    fputs("| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |\n|---|---|---|---|---|---|---|---|\n"
          "| 1 | 1 | 1 | 64 | 938 | 1:00:00 | - | n01 |\n| 1 | 1 | 1 | 64 | 938 | 1:30:00 | - | n01 |\n", out);
    fclose(out);
    run_analyze((char *[]){"nodes", one, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "nothing to compare"));
    tu_result_free(&r);
    unlink(one);
}

/* Run records: gn03's runs take 1.4x the others' at both job sizes. */
static void test_the_slow_node_of_records(void **state)
{
    (void)state;
    char name[] = "/tmp/dtrain-test-nodes-XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    for (int n = 1; n <= 4; n++) {
        json_t *one = json_pack("[s]", n == 1 ? "gn01" : n == 2 ? "gn02" : n == 3 ? "gn03" : "gn04");
        json_t *two = json_pack("[ss]", json_string_value(json_array_get(one, 0)),
                                json_string_value(json_array_get(one, 0)));
        write_record2(out, 1, 1, 1876, n == 3 ? 140 : 100, "hostnames", one, NULL, NULL);
        write_record2(out, 1, 2, 938, n == 3 ? 70 : 50, "hostnames", two, NULL, NULL);
    }
    fclose(out);
    struct tu_result r;
    run_analyze((char *[]){"nodes", name, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "| gn03 | 2 | 2 | 1.40 | 1.40x: 1 node x 1 of lenet"));
    assert_true(tu_contains(r.err, "slow node: gn03"));
    tu_result_free(&r);
    unlink(name);
}

/* A notebook's runs by node, the runs across both nodes named by node lists: gpu7's 1-GPU run is
 * 1.22x its configuration's median time a sample, and gpu7 is listed first (slowest). */
static void test_the_slow_node_of_a_notebook(void **state)
{
    (void)state;
    char notebook[4200];
    tu_fixture(notebook, sizeof notebook, "notebooks/two-nodes.md");
    struct tu_result r;
    run_analyze((char *[]){"nodes", notebook, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| gpu7 | 3 | 1 | 1.03 | 1.22x: VGG11 on 1 GPU, 61.50 data/sec (") &&
                tu_contains(r.out, "two-nodes.md:12) | - |"));
    const char *gpu7 = strstr(r.out, "| gpu7 |"), *gpu3 = strstr(r.out, "| gpu3 |");
    assert_true(gpu7 && gpu3 && gpu7 < gpu3);
    assert_true(tu_contains(r.err, "nodes: 2 configurations compared, 2 nodes"));
    tu_result_free(&r);
}

/* The reference bigMNIST tables' gn08 and gn09 (21 h where the others take 11.5-15.8 h), and
 * the notebooks' lm1 behind lm6. */
static void test_the_reference_experiments_slow_nodes(void **state)
{
    (void)state;
    char bigmnist[4200], nb0[4200], nb1[4200];
    if (!tu_shared(bigmnist, sizeof bigmnist, "seeds/003_b04018c01c393b57.txt"))
        tu_skip("the reference experiments (../shared/seeds) are not here");
    tu_shared(nb0, sizeof nb0, "seeds/000_685292da7d634812.txt");
    tu_shared(nb1, sizeof nb1, "seeds/001_3998dbd99d4aa271.txt");
    struct tu_result r;
    run_analyze((char *[]){"nodes", bigmnist, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.err, "slow nodes: gn[08-09] (sbatch --exclude=gn[08-09])"));
    tu_result_free(&r);
    run_analyze((char *[]){"nodes", nb0, nb1, NULL}, &r);
    assert_true(r.status == 0 || r.status == 1);
    const char *lm1 = strstr(r.out, "| lm1 |"), *lm6 = strstr(r.out, "| lm6 |");
    assert_true(lm1 && lm6 && lm1 < lm6);   /* slowest first */
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_the_slow_node_of_a_table),
        cmocka_unit_test(test_the_slow_node_of_records),
        cmocka_unit_test(test_the_slow_node_of_a_notebook),
        cmocka_unit_test(test_the_reference_experiments_slow_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
