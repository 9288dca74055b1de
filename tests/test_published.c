/* test_published.c - scaling tables as labs and vendors publish them, and the rough edges a new user
 * hit reading them (issue 47): speedups written 1.89x or 1.89×, a table with no Node(s) column,
 * a table of records without the default baseline naming the one that would do, --extra on a
 * hand-made table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* 1.00x, 1.89× and 3.52x are read as speedups (they dropped every row: "is not a number"), the one
 * that does not follow from its runtimes is flagged, and a table without a Node(s) column gets no
 * "node list is malformed" finding per row. */
static void test_speedups_with_x_and_no_node_column(void **state)
{
    (void)state;
    char path[4096];
    fixture(path, sizeof path, "published-speedups.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "published-speedups.md:10: speedup 3.52 of 1 node x 4 GPUs does not follow from "
                                   "the runtimes: 100.0 / 27.0 = 3.70"));
    assert_true(tu_contains(r.out, "audit: 1 table, 3 rows read, 0 lines skipped; 1 finding"));
    assert_null(strstr(r.out, "node list"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", path, NULL}, &r);   /* the corrected table has its three rows */
    assert_true(tu_contains(r.out, "| 1 | 4 | - | - | - | 0:00:27.0 | - |"));
    assert_true(tu_contains(r.out, "| **3.70** | **Avg** |  | 3.52 |"));
    tu_result_free(&r);
}

/* Records of 2 x 1 and 2 x 2 only: the default 1 x 1 baseline is missing, and the message names the
 * --baseline that would work. */
static void test_a_missing_baseline_names_one_that_works(void **state)
{
    (void)state;
    char name[] = "/tmp/dtrain-test-baseline-XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    write_record(out, 2, 2, 938, 50, NULL, NULL);
    write_record(out, 2, 4, 469, 26, NULL, NULL);
    fclose(out);
    struct tu_result r;
    run_analyze((char *[]){"table", name, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no run of the baseline, 1 node x 1 GPU (the smallest here is --baseline 2x1)"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--baseline", "2x1", name, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    unlink(name);
}

/* --extra on a hand-made table adds the spread as it does on records (it silently added nothing):
 * lab.md's 1 x 1 runs of 100.4 and 99.6 s, std 0.6 s. */
static void test_extra_on_a_hand_made_table(void **state)
{
    (void)state;
    char path[4096];
    fixture(path, sizeof path, "lab.md");
    struct tu_result r;
    run_analyze((char *[]){"table", "--extra", path, NULL}, &r);
    assert_true(tu_contains(r.out, "| Efficiency | Std | Min-Max |"));
    assert_true(tu_contains(r.out, "| **1.00** | **0:00:00.6** | **0:01:39.6-0:01:40.4** |"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--extra", "--format", "csv", path, NULL}, &r);
    assert_true(tu_contains(r.out, "Speedup 95% CI,Efficiency,Std,Min,Max"));
    tu_result_free(&r);
}

/* Notebook headings give the GPU count in several forms: before the GPU (2x2080ti), after it
 * (A6000x2: read as 1 GPU, its 1.92x then "1.00"), alone (x4), as words (8-GPUs, 3gpu); a form not
 * read is caught by the speedup its own line states being far above the count read. */
static void test_gpu_counts_wherever_a_heading_writes_them(void **state)
{
    (void)state;
    char path[4200];
    tu_fixture(path, sizeof path, "notebooks/gpu-count-forms.md");
    struct tu_result r;
    run_analyze((char *[]){"throughput", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| EfficientNet-B3 | hpc12 | 2 | 2 | 170.12 | 170.12 | 1.92x | 96.2% |"));
    assert_true(tu_contains(r.out, "| EfficientNet-B3 | hpc12 | 4 | 1 | 330.00 | 330.00 | 3.73x | 93.3% |"));
    /* B3 is the model's, not a GPU: 600 / 88.40 on 8 GPUs */
    assert_true(tu_contains(r.out, "| EfficientNet-B3 | hpc12 | 8 | 1 | 600.00 | 600.00 | 6.79x | 84.8% |"));
    assert_true(tu_contains(r.out, "| ResNet50 | hpc12 | 8 | 1 | 760.00 | 760.00 | 7.60x | 95.0% |"));
    assert_true(tu_contains(r.out, "| ResNet50 | hpc12 | 3 | 1 | 290.00 | 290.00 | 2.90x | 96.7% |"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "gpu-count-forms.md:19: speedup 1.93x of \"hpc14-171.00-1.93x, baseline: 88.40\" is "
                                   "more than its 1 GPU as read from the headings (193% efficiency)"));
    assert_true(tu_contains(r.out, "; 2 findings"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_speedups_with_x_and_no_node_column),
        cmocka_unit_test(test_a_missing_baseline_names_one_that_works),
        cmocka_unit_test(test_extra_on_a_hand_made_table),
        cmocka_unit_test(test_gpu_counts_wherever_a_heading_writes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
