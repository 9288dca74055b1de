/* test_published_tables.c - scaling tables saved exactly as they were published (NVIDIA's
 * DeepLearningExamples READMEs, a CG solver's strong-scaling page, a DDP run's plan in ranges, a
 * molecular dynamics code's benchmarks on three machines;
 * tests/fixtures/published/, each
 * citing its source and the findings worked out by hand in its header): dtrain-analyze audit reads
 * every one, reports the slips a careful reader finds by hand and nothing else, says how it read
 * each table; and dtrain-analyze table turns them into speedup tables. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/duration.h"
#include "formats/scaling_cells.h"
#include "tests/analyze_util.h"
#include "tests/testutil.h"

struct expected_audit {
    const char *fixture;
    int tables, findings;
    const char *finding[8];   /* each a line the audit prints */
};

static const struct expected_audit published[] = {
    {"published/dle-resnet50.md", 3, 4,
     {"dle-resnet50.md:17: Mixed Precision Strong Scaling 6.72 at 8 GPUs does not follow from Throughput - mixed "
      "precision: 16621 / 2470 = 6.729",
      "dle-resnet50.md:25: FP32 Strong Scaling 7.76 at 8 GPUs does not follow from Throughput - FP32: 2855 / 367 = "
      "7.779 (7.7673-7.7913",
      "dle-resnet50.md:33: FP32 Strong Scaling 7.75 at 8 GPUs does not follow from Throughput - FP32: 2766 / 356 = 7.770",
      "dle-resnet50.md:33: Mixed Precision Strong Scaling 6.96 at 8 GPUs does not follow from Throughput - mixed "
      "precision: 8056 / 1156 = 6.969"}},
    {"published/dle-fastpitch.md", 4, 1,
     {"dle-fastpitch.md:23: Speed-up with mixed precision 1.17 at 4 GPUs does not follow from Time to train with mixed "
      "precision (Hrs): 4.1 / 3.3 = 1.242"}},
    {"published/dle-tacotron2.md", 4, 0, {NULL}},
    {"published/ddp-letterbox-ranges.md", 1, 0, {NULL}},
    {"published/gromacs-settings.md", 2, 0, {NULL}},
    {"published/ml-benchmarks-settings.md", 18, 0, {NULL}},
    {"published/megatron-transposed.md", 3, 0, {NULL}},
    {"published/dle-more-forms.md", 12, 4,
     {"dle-more-forms.md:36: Speedup (Mixed Precision to TF32) 2.29 at 2 nodes does not follow from Mixed Precision "
      "Throughput: 10646 / 4638 = 2.295",
      "dle-more-forms.md:78: \"Weak scaling - FP32\" and \"Weak scaling - mixed precision\" are swapped",
      "dle-more-forms.md:100: Throughput speedup (FP32 - mixed precision) 1.37 at 8 GPUs does not follow from "
      "Throughput - mixed precision [img/s]: 53.40 / 44.55 = 1.199",
      "dle-more-forms.md:100: Weak scaling - FP32 5.26 at 8 GPUs does not follow from Throughput - FP32 [img/s]: "
      "44.55 / 7.57 = 5.885"}},
    {"published/spmv-cg-strong.md", 1, 0, {NULL}},
    {"published/dle-maskrcnn.md", 6, 8,
     {"dle-maskrcnn.md:16: Multi-gpu weak scaling with FP32 3.67 at 4 GPUs does not follow from FP 32 items/sec: "
      "30.23 / 8.47 = 3.569",
      "dle-maskrcnn.md:16: Multi-gpu weak scaling with FP16 3.53 at 4 GPUs",
      "dle-maskrcnn.md:17: Multi-gpu weak scaling with FP32 6.96 at 8 GPUs",
      "dle-maskrcnn.md:17: Multi-gpu weak scaling with FP16 6.51 at 8 GPUs",
      "dle-maskrcnn.md:30: Multi-gpu weak scaling with FP32 3.86 at 4 GPUs",
      "dle-maskrcnn.md:30: Multi-gpu weak scaling with FP16 3.63 at 4 GPUs",
      "dle-maskrcnn.md:36: Multi-gpu weak scaling with FP16 3.57 at 4 GPUs",
      "dle-maskrcnn.md:37: Multi-gpu weak scaling with FP16 7.68 at 8 GPUs"}},
};

static void test_published_tables_audited_as_by_hand(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
        const struct expected_audit *e = &published[i];
        char path[4096];
        tu_fixture(path, sizeof path, e->fixture);
        struct tu_result r;
        run_analyze((char *[]){"audit", path, NULL}, &r);
        int found = lines_with(r.out, "does not follow") + lines_with(r.out, "are swapped");
        if (r.status != (e->findings ? 1 : 0) || found != e->findings)
            print_error("%s:\n%s\n%s\n", e->fixture, r.out, r.err);
        assert_int_equal(r.status, e->findings ? 1 : 0);
        assert_int_equal(found, e->findings);
        assert_int_equal(lines_with(r.out, "read as a scaling table"), e->tables);
        for (int f = 0; f < e->findings; f++) {
            if (!tu_contains(r.out, e->finding[f]))
                print_error("%s: expected \"%s\" in\n%s\n", e->fixture, e->finding[f], r.out);
            assert_true(tu_contains(r.out, e->finding[f]));
        }
        tu_result_free(&r);
    }
}

/* How each column was read is said, and a column that cannot be tied says why, unchecked. */
static void test_audit_says_how_it_read_each_column(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/dle-resnet50.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "\"TF32 Strong Scaling\" = \"Throughput - TF32\" over the smallest job's"));
    assert_true(tu_contains(r.out, "\"Throughput speedup (TF32 to mixed precision)\" = \"Throughput - mixed "
                                   "precision\" against \"Throughput - TF32\""));
    assert_true(tu_contains(r.out, "\"TF32 Training Time (90E)\" a time"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "published/dle-maskrcnn.md");
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "\"Speedup\" not checked: cannot tell which two columns \"Speedup\" compares"));
    tu_result_free(&r);
}

/* A slip planted in a table that had none is found; the same table as published passes. */
static void test_a_planted_slip_is_found(void **state)
{
    (void)state;
    /* 140,060 / 20,992 = 6.672 */
    assert_planted_slip_found("published/dle-tacotron2.md", "| 6.67 | 6.86 |", "| 6.76 |",
                              "Multi-GPU weak scaling with mixed precision 6.76 at 8 GPUs does not follow from Number "
                              "of mels used with mixed precision: 140060 / 20992 = 6.672");
}

/* Times written with their unit in each cell ("299.5 ms") under headers that say only "Total Time"
 * or "Time/Iteration" are times, not throughputs (they were: every speedup came out inverted, 0.51
 * at 2 GPUs); a plain "Speedup" and "Efficiency" reading 1.00 and 100% at the smallest job are over
 * the job sizes, of the first measure. A slip planted in the speedups is then found. */
static void test_times_with_units_in_their_cells(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/spmv-cg-strong.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| GPUs | Total Time (s) | Speedup | Efficiency |"));
    assert_true(tu_contains(r.out, "| 2 | 0.1522 | 1.97 | 0.98 |"));
    assert_true(tu_contains(r.out, "| 8 | 0.0403 | 7.43 | 0.93 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "\"Total Time\" a time; \"Time/Iteration\" a time; \"Speedup\" = \"Total Time\" "
                                   "over the smallest job's"));
    tu_result_free(&r);
    assert_planted_slip_found("published/spmv-cg-strong.md", "| 7.43×", "| 7.53",   /* 299.5 / 40.3 = 7.432 */
                              "Speedup 7.53 at 8 GPUs does not follow from Total Time");
}

/* A simulation code's tables of node counts and efficiencies alone: refused, saying what they lack
 * (the measure the ratios came from), not as a table lacking GPUs and a runtime. */
static void test_ratios_alone_are_refused_by_what_they_lack(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/ramses-efficiency-only.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "its table on line 9 has the job sizes (\"nodes\") and ratios (\"strong scaling "
                                   "efficiency\") but not the throughput or time they were worked out from"));
    tu_result_free(&r);
}

/* table: each throughput or time column as a speedup table over the smallest job. */
static void test_table_turns_them_into_speedup_tables(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/dle-fastpitch.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| GPUs | Throughput - TF32 | Speedup | Efficiency |"));
    assert_true(tu_contains(r.out, "| 8 | 914350 | 6.48 | 0.81 |"));   /* 914,350 / 141,028; / 8 */
    /* 14.5 / 2.2 hours; / 8: in seconds, as the column says (it printed the hours under "(s)") */
    assert_true(tu_contains(r.out, "| GPUs | Time to train with TF32 (Hrs) (s) | Speedup | Efficiency |\n|---|---|---|---|\n"
                                   "| 1 | 52200 | 1.00 | 1.00 |"));
    assert_true(tu_contains(r.out, "| 8 | 7920 | 6.59 | 0.82 |"));
    assert_int_equal(lines_with(r.out, "| Speedup | Efficiency |"), 8);   /* 2 columns x 4 tables */
    tu_result_free(&r);
}

/* A GPUs column that is the job's total (8192 on 2048 nodes) is read per node, and said so; a
 * table of GPUs per node is left as it is. */
static void test_a_total_gpu_count_is_read_as_one(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/total-gpus.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, "--baseline", "1x4", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| **2048** | **4** |"));
    assert_true(tu_contains(r.out, "| **2048** | **4** | **-** | **-** | **-** | **0:00:36.0** | **800.00** |"));
    assert_true(tu_contains(r.err, "its GPUs column holds the job's total"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/lab-efficiency.md");
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_false(tu_contains(r.err, "the job's total"));
    tu_result_free(&r);
}

/* Two tables under one heading are named by the short line of prose above each (both came out
 * "# Table" before), so two problem sizes can be told apart. */
static void test_tables_named_by_their_own_lines(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/two-problem-sizes.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "# Strong scaling on the lab cluster (made for the tests: two tables under one "
                                   "heading): Problem size 1024^3 (corrected"));
    assert_true(tu_contains(r.out, "heading): Problem size 2048^3 (corrected"));
    tu_result_free(&r);
}

/* Clocks as tables write them: the last part's field from the header ([h:m], [d:h]), Slurm's
 * D-HH:MM:SS, and the header units that name a clock. */
static void test_clock_parts(void **state)
{
    (void)state;
    /* clocks as tables write them: the last part's field from the header, Slurm's day form */
    assert_float_equal(duration_parse_clock("12:30"), 750, 0);
    assert_float_equal(duration_parse_clock("1-02:03:04"), 93784, 0);
    assert_float_equal(duration_parse_clock("2-05"), 2 * 86400 + 5 * 3600, 0);
    assert_float_equal(duration_parse_clock("1-02:03"), 86400 + 2 * 3600 + 180, 0);
    assert_float_equal(duration_fields_unit("1-02:03", 1), 60, 0);
    assert_float_equal(duration_parse_fields("5:40", 60), 5 * 3600 + 40 * 60, 0);
    assert_float_equal(duration_parse_fields("1:12", 3600), 86400 + 12 * 3600, 0);
    assert_float_equal(duration_fields_unit("1:12", 3600), 3600, 0);
    const char *bad_clocks[] = {"1:24", "1-24:00:00", "1:60", "-1:00", "1-", "1:00:00:00:00", "1.5:00", "1:00x"};
    assert_float_equal(duration_parse_fields(bad_clocks[0], 3600), -1, 0);   /* 24 hours after the day */
    for (size_t i = 1; i < sizeof bad_clocks / sizeof bad_clocks[0]; i++)
        assert_float_equal(duration_parse_fields(bad_clocks[i], 1), -1, 0);
    assert_float_equal(duration_parse_fields("1:00:00:00", 1), 86400, 0);   /* D:HH:MM:SS */
    assert_float_equal(duration_parse_fields("1:00:00:00", 60), -1, 0);     /* a part beyond days */
    const struct { const char *unit; double last; } clock_units[] = {
        {"h:mm:ss", 1}, {"mm:ss", 1}, {"h:m", 60}, {"hh:mm", 60}, {"d:h", 3600}, {"dhh:mm:ss", 1},
        {"d-hh:mm", 60}, {"min:sec", 1}, {"days:hours", 3600}, {"h", -1}, {"h:s", -1}, {"m:h", -1}, {"x:y", -1},
        {"h:", -1}, {"", -1}};
    for (size_t i = 0; i < sizeof clock_units / sizeof clock_units[0]; i++)
        assert_float_equal(duration_clock_unit(clock_units[i].unit), clock_units[i].last, 0);
}

/* Times written as clocks: a published table's "Time to train [h:mm]" and sacct's D-HH:MM:SS (they
 * were read as the number before the first ':', 10 for 10:00, 1 for 1-04:00:00: a false finding on
 * each table), and a lab's Runtime under [d:h], [h:m] or in D-HH:MM:SS, its speedups and
 * efficiencies against its own baseline where it starts at 1 x 4. */
static void test_clock_times(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/scaling-clock-times.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    assert_true(tu_contains(r.out, "Speedup 3.60 at 4 GPUs does not follow from Time to train [h:mm]: 36000 / 10200 "
                                   "= 3.529"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_true(tu_contains(r.out, "| 2 | 19200 | 1.88 | 0.94 |"));
    assert_true(tu_contains(r.out, "| 16 | 52800 | 1.91 | 0.95 |"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/clock-units.md");
    run_analyze((char *[]){"table", "--baseline", "1x4", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| **2** | **1** | **-** | **-** | **-** | **13:00:00** |"));   /* 0:13 [d:h] */
    assert_true(tu_contains(r.out, "| **2** | **4** | **-** | **-** | **-** | **13:30:00** | **1.93** | **Avg** |"));
    assert_true(tu_contains(r.out, "| **1** | **4** | **-** | **-** | **-** | **26:00:00** | **1.00** | **Avg** |  |  | "
                                   "**1** | **- (1 run)** | **- (baseline)** | **1.00** |"));
    assert_true(tu_contains(r.out, "| **4** | **4** | **-** | **-** | **-** | **1:30:00** | **3.33** |"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_true(tu_contains(r.out, "| **2** | **1** | **-** | **-** | **-** | **13:00:00** | **1.85** |"));
    assert_true(tu_contains(r.out, "No run of the baseline, 1 x 1: no speedups (the smallest here is --baseline 1x4)"));
    tu_result_free(&r);
    /* the last row of a table this reader does not read is not the next one's title (it was:
     * "...: | 2 | 20:30 | 1.95 |"); sacct's elapsed time under a header saying D-HH:MM:SS */
    char after[4096];
    tu_fixture(after, sizeof after, "tables/after-a-scaling-table.md");
    run_analyze((char *[]){"table", after, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "# A published scaling table, then a lab's table under the same heading (made for "
                                   "the tests) (corrected"));
    assert_false(tu_contains(r.out, "| 20:30 | 1.95 | (corrected"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **-** | **-** | **-** | **12:30:00** | **1.92** |"));
    /* and the published table above it, as audit reads it: `table` printed the lab's table only */
    assert_true(tu_contains(r.out, "| 2 | 1230 | 1.95 | 0.98 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);   /* against the table's own 1.00 at 1 x 4 */
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "clock-units.md:26: speedup 3.13 of 4 nodes x 4 GPUs does not follow from the "
                                   "runtimes: 5:00 / 1:30 = 3.33"));
    assert_int_equal(lines_with(r.out, "clock-units.md:"), 1);
    tu_result_free(&r);
}









/* A table whose columns are releases, the measure said only in the heading above ("Training
 * throughput (img/s) by release"): read as throughputs, said so; it was passed over. */
static void test_columns_named_by_release(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/scaling-version-columns.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"GPUs\" the job sizes; \"v22.01\" a throughput (as the heading says); \"v23.04\" a "
                                   "throughput (as the heading says)"));
    assert_true(tu_contains(r.out, "audit: 2 tables, 4 rows read"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_true(tu_contains(r.out, "| 8 | 9100 | 7.52 | 0.94 |"));
    assert_true(tu_contains(r.out, "| 8 | 10020 | 7.68 | 0.96 |"));
    assert_true(tu_contains(r.out, "| 4 | 101 | 3.76 | 0.94 |"));
    tu_result_free(&r);
}

/* A table that cannot be read says which needed column it lacks and the closest it has. */
static void test_refusal_names_what_is_missing(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/lacks-runtime.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "its table on line 3: it lacks the runtime (Runtime, Time (s), Wall time) (the "
                                   "closest it has: \"Walltime [node-h]\")"));
    assert_false(tu_contains(r.err, "lacks the nodes"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_published_tables_audited_as_by_hand),
        cmocka_unit_test(test_times_with_units_in_their_cells),
        cmocka_unit_test(test_ratios_alone_are_refused_by_what_they_lack),
        cmocka_unit_test(test_audit_says_how_it_read_each_column),
        cmocka_unit_test(test_a_planted_slip_is_found),
        cmocka_unit_test(test_table_turns_them_into_speedup_tables),
        cmocka_unit_test(test_a_total_gpu_count_is_read_as_one),
        cmocka_unit_test(test_tables_named_by_their_own_lines),
        cmocka_unit_test(test_refusal_names_what_is_missing),
        cmocka_unit_test(test_clock_parts),
        cmocka_unit_test(test_clock_times),
        cmocka_unit_test(test_columns_named_by_release),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
