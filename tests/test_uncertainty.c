/* test_uncertainty.c - what a table says of its own uncertainty: each Avg row's number of runs, the
 * 95% confidence intervals of its mean runtime and of its speedup, and its efficiency (worked by
 * hand below for the fixture records), the reference experiments' form kept by --format reference,
 * and audit's two checks on lab tables: efficiency = speedup / GPUs, and a claimed gain its runs do
 * not show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/stats.h"
#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* The fixture's 1 x 1 runs take 100, 110 and 120 s: mean 110, std 10, t(2) = 4.303, so the mean's
 * interval is 110 -+ 4.303 x 10 / sqrt 3 = 85.16-134.84 s. Its 2 x 1 runs take 60 and 50 s (mean 55,
 * std 7.07): the speedup 2.00's interval is 2 e^(-+h), h = t(1) sqrt((10 / sqrt 3 / 110)^2 +
 * (7.07 / sqrt 2 / 55)^2) = 12.706 x 0.10497 = 1.3338: 0.53-7.59, two runs being almost no
 * evidence. The baseline's speedup is 1 by definition: no interval. */
static void test_avg_rows_carry_their_uncertainty(void **state)
{
    (void)state;
    char file[4200];
    clean_records(file, sizeof file);
    struct tu_result r;
    run_analyze((char *[]){"table", file, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| Node(s) | Runs | Runtime 95% CI | Speedup 95% CI | Efficiency |"));
    assert_true(tu_contains(r.out, "| **Avg** | **3** | **0:01:25-0:02:15** | **- (baseline)** | **1.00** |"));
    assert_true(tu_contains(r.out, "| **Avg** | **2** | **0:00:00-0:01:59** | **0.53-7.59** | **1.00** |"));
    assert_true(tu_contains(r.out, "| 2 | 1 | 2 | 64 | 938 | 0:01:00 | - | gn[01-02] | - | - | - | - |"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--format", "json", file, NULL}, &r);
    assert_true(tu_contains(r.out, "\"runs\": 3, \"runtime_seconds\": 110.000, \"speedup\": 1.0000, \"efficiency\": "
                                   "1.0000, \"runtime_ci95\": [85.157, 134.843], \"speedup_ci95\": null"));
    assert_true(tu_contains(r.out, "\"speedup_ci95\": [0.5270, 7.5908]"));
    tu_result_free(&r);
    unlink(file);
    /* a lab's table corrected carries the same: lab.md's two 1 x 1 runs of 100.4 and 99.6 s give
     * 100 -+ 12.706 x 0.566 / sqrt 2 = 94.9-105.1 s; its 1 x 2 has one run */
    char lab[4096];
    tu_fixture(lab, sizeof lab, "tables/lab.md");
    run_analyze((char *[]){"table", lab, NULL}, &r);
    assert_true(tu_contains(r.out, "| **Avg** |  |  | **2** | **0:01:34.9-0:01:45.1** | **- (baseline)** | **1.00** |"));
    assert_true(tu_contains(r.out, "| **1.92** | **Avg** |  |  | **1** | **- (1 run)** | **- (1 run)** | **0.96** |"));
    tu_result_free(&r);
    /* the arithmetic itself: t's table, and one value giving no interval */
    assert_true(fabs(stats_t975(1) - 12.706) < 1e-9 && fabs(stats_t975(30) - 2.042) < 1e-9);
    assert_true(fabs(stats_t975(120) - 1.980) < 0.002 && isnan(stats_ci95_half(3.0, 1)));
    double lo, hi;
    stats_ratio_ci95(2.0, 110, 10, 3, 55, 7.0710678, 1, &lo, &hi);
    assert_true(isnan(lo) && isnan(hi));
}

/* --format reference prints the reference experiments' columns exactly as before intervals were
 * added (its golden files are the tables as they were: of records, and of a lab's table corrected). */
static void test_reference_format_is_the_old_table(void **state)
{
    (void)state;
    char records[4096];
    tu_fixture(records, sizeof records, "records/runs.jsonl");
    struct tu_result r;
    run_analyze((char *[]){"table", "--format", "reference", "--extra", records, NULL}, &r);
    assert_int_equal(r.status, 2);   /* the fixture's broken line, as ever */
    assert_true(tu_golden("table-records-reference.md", r.out));
    assert_null(strstr(r.out, "95% CI"));
    tu_result_free(&r);
    char hand_made[4096];
    tu_fixture(hand_made, sizeof hand_made, "tables/broken.md");
    run_analyze((char *[]){"table", "--format", "reference", hand_made, NULL}, &r);
    assert_true(tu_golden("table-corrected-reference.md", r.out));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--format", "tsv", records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--format \"tsv\": md, csv, json or reference"));
    tu_result_free(&r);
}

/* A lab table's Efficiency column is held to speedup / GPUs in all (0.92 for 3.85 on 4 GPUs is not;
 * 55% for 1.10 on 2 is), and a speedup above 1 whose runs' interval contains 1 is flagged as a gain
 * not shown; the gains its runs do show (1.92, 3.85) are not. */
static void test_audit_checks_efficiency_and_claimed_gains(void **state)
{
    (void)state;
    char path[4096];
    fixture(path, sizeof path, "lab-efficiency.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "lab-efficiency.md:19: efficiency 0.92 of 2 nodes x 2 GPUs is not speedup / GPUs: "
                                   "3.85 / 4 = 0.963"));
    assert_true(tu_contains(r.out, "lab-efficiency.md:23: speedup 1.1 of 2 nodes x 1 GPU claims a gain its runs do not "
                                   "show: the 95% interval of the runtime ratio, 0.82-1.46 (from 3 and 3 runs), contains 1"));
    assert_true(tu_contains(r.out, "audit: 1 table, 16 rows read, 0 lines skipped; 2 findings"));
    tu_result_free(&r);
}

/* A lab whose table starts at 1 x 4 gives efficiencies against that baseline (94% for 1.88 on
 * twice the GPUs): held to speedup / (GPUs / 4), not flagged as not speedup / GPUs (1.88 / 8); the
 * one off (80% for 3.53 on 4 times the GPUs) is. table --baseline 1x4 prints them so. */
static void test_efficiency_against_a_baseline_of_several_gpus(void **state)
{
    (void)state;
    char path[4096];
    fixture(path, sizeof path, "lab-efficiency-from-4.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "lab-efficiency-from-4.md:7: efficiency 0.8 of 4 nodes x 4 GPUs is not speedup / "
                                   "(GPUs / the baseline's 4): 3.53 / 4 = 0.882"));
    assert_true(tu_contains(r.out, "1 finding"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--baseline", "1x4", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| **1.88** | **Avg** |  |  | **1** | **- (1 run)** | **- (1 run)** | **0.94** |"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avg_rows_carry_their_uncertainty),
        cmocka_unit_test(test_reference_format_is_the_old_table),
        cmocka_unit_test(test_audit_checks_efficiency_and_claimed_gains),
        cmocka_unit_test(test_efficiency_against_a_baseline_of_several_gpus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
