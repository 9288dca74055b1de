/* test_analyze.c - dtrain-analyze table and audit: speedup tables of run records (experiments
 * kept apart, resumed and fixed-step runs, torn lines), hand-made tables corrected and audited
 * (the reference bigMNIST table when ../shared is there, the project's own tables with one of each
 * error), timeline sums; H:MM:SS. throughput and plot: test_analyze_plots.c; predict:
 * test_predict.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "common/duration.h"
#include "tests/analyze_util.h"
#include "tests/testutil.h"

static void run_audit(const char *file, struct tu_result *r)
{
    char *argv[] = {(char *)tu_bin("dtrain-analyze"), "audit", (char *)file, NULL};
    struct tu_env env = {0};
    tu_env_basics(&env);
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

/* Audits one of the project's table fixtures: the exit status, and every line of expected in the
 * output. r keeps the result for further checks; the caller frees it. */
static void audit_fixture(const char *name, int status, const char *const *expected, size_t count, struct tu_result *r)
{
    char path[4096];
    fixture(path, sizeof path, name);
    run_audit(path, r);
    assert_int_equal(r->status, status);
    for (size_t i = 0; i < count; i++)
        assert_true(tu_contains(r->out, expected[i]));
}

static void test_durations(void **state)
{
    (void)state;
    assert_int_equal(duration_parse("14:36:52"), 14 * 3600 + 36 * 60 + 52);
    assert_int_equal(duration_parse("0:51:27"), 51 * 60 + 27);
    assert_int_equal(duration_parse("123:00:01"), 123 * 3600 + 1);
    assert_float_equal(duration_parse("0:00:02.43"), 2.43, 1e-9);
    assert_float_equal(duration_unit("0:00:02.43"), 0.01, 1e-12);
    assert_float_equal(duration_unit("0:51:27"), 1, 0);
    const char *bad[] = {"", "1:2:3", "1:60:00", "1:00:60", "x:00:00", "1:00", "1:00:00 ", "-1:00:00",
                         "1:00:00.", "1:00:00.5x", "1:00:00,5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(duration_parse(bad[i]), -1);
    char out[32];
    duration_format(15 * 3600 + 20 * 60 + 10.4, 0, out);
    assert_string_equal(out, "15:20:10");
    duration_format(59.996, 2, out);   /* the carry reaches the minutes */
    assert_string_equal(out, "0:01:00.00");
    duration_format(2.434, 2, out);
    assert_string_equal(out, "0:00:02.43");
    duration_format(5.92593e+61, 0, out);   /* libFuzzer's: an average of absurd runtimes */
    assert_string_equal(out, "999999999:59:59");
    duration_format(1.0 / 0.0, 3, out);
    assert_string_equal(out, "999999999:59:59.999");
}

static void test_audit_finds_every_error_of_the_seeds_bigmnist_table(void **state)
{
    (void)state;
    char path[4096];
    if (!tu_shared(path, sizeof path, "seeds/003_b04018c01c393b57.txt")) {
        tu_skip("../shared/seeds not present");
    }
    struct tu_result r;
    run_audit(path, &r);
    assert_int_equal(r.status, 1);
    /* the errors the analyzer issue lists, each with its line */
    const char *expected[] = {
        ":25: Avg runtime 14:36:52 of 1 node x 1 GPU is not the mean of its 9 runs (15:20:10)",
        ":58: speedup 1.6 of 2 nodes x 1 GPU does not follow from the runtimes: 14:36:52 / 8:09:01 = 1.79",
        ":68: node list is malformed: invalid hostlist \"gn[03-07-09]\"",
        ":63: 3 nodes, but the node list gn[03,05] names 2",
        ":37: Epoch 0, but the other runs of 1 node x 3 GPUs have 10",
        ":5: 625 steps, but 60000 samples / (batch 64 x 2 GPUs) make 469 an epoch",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        assert_true(tu_contains(r.out, expected[i]));
    /* every Avg row of the bigMNIST table is off: 7 of them */
    int avg = 0;
    for (const char *p = r.out; (p = strstr(p, "is not the mean of its")); p++)
        avg++;
    assert_int_equal(avg, 7);
    assert_true(tu_contains(r.out, "audit: 2 tables, 61 rows read, 0 lines skipped; 13 findings"));
    tu_result_free(&r);
}

static void test_audit_of_notebooks(void **state)
{
    (void)state;
    char path[4096];
    struct tu_result r;
    fixture(path, sizeof path, "notebook.md");   /* five planted errors beside right runs */
    run_audit(path, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "notebook.md:12: headline 241.8 of \"lm1-241.8-2.95x, baseline: 81.84\" is not the "
                                   "peak of its 2 Step lines (241.89)"));
    assert_true(tu_contains(r.out, "notebook.md:16: speedup 3.95x of \"lm1-320.29-3.95x, baseline: 81.84\" does not "
                                   "follow from its figures: 320.29 / 81.84 = 3.914"));
    /* a run heading at its model's level, a baseline that is no 1-GPU run's peak, a pasted copy */
    assert_true(tu_contains(r.out, "notebook.md:23: run heading \"lm1-41.9\" is at level 2, the level of the model "
                                   "headings; read as a run of ResNet50 (level 3, like the runs beside it)"));
    assert_true(tu_contains(r.out, "notebook.md:30: baseline 61.44 of \"lm6-105.51-1.72x, baseline: 61.44\" is not the "
                                   "peak of the 1-GPU run of ResNet50 on lm6 (line 20: 60.44)"));
    assert_true(tu_contains(r.out, "notebook.md:34: the 2 Step and 0 Epoch lines of \"lm1-81.71-1.95x, baseline: 41.9\" "
                                   "(ResNet50, 3 GPUs on lm1) are those of line 27 (\"lm1-81.71-1.95x, baseline: 41.9\", "
                                   "2 GPUs): a copy, not a measurement"));
    assert_true(tu_contains(r.out, "audit: 0 tables, 0 rows read, 9 notebook runs, 0 lines skipped; 5 findings"));
    tu_result_free(&r);

    if (!tu_shared(path, sizeof path, "seeds/001_3998dbd99d4aa271.txt")) {
        tu_skip("../shared/seeds not present");
    }
    run_audit(path, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, ":97: speedup 1.648x of \"lm6-198.38-1.648x, baseline: 120.7\" does not follow "
                                   "from its figures: 198.38 / 120.7 = 1.644"));
    assert_true(tu_contains(r.out, ":128: headline 241.8 of"));
    assert_true(tu_contains(r.out, ":378: headline 122.25 of"));
    assert_true(tu_contains(r.out, ":507: headline 231.64 of"));
    assert_true(tu_contains(r.out, ":520: speedup 3.73x of"));
    /* ResNet-101's 3- and 4-GPU lm6 runs are the 2-GPU run pasted twice */
    assert_true(tu_contains(r.out, ":254: the 9 Step and 4 Epoch lines of \"lm6-50.71-1.61x, baseline: 31.51\" "
                                   "(ResNet101, 3 GPUs on lm6) are those of line 223"));
    assert_true(tu_contains(r.out, ":285: the 9 Step and 4 Epoch lines of"));
    assert_true(tu_contains(r.out, ":49: run heading \"lm1-41.9\" is at level 2"));
    assert_true(tu_contains(r.out, ":79: run heading \"lm1-21.73\" is at level 2"));
    assert_true(tu_contains(r.out, "audit: 0 tables, 0 rows read, 36 notebook runs, 0 lines skipped; 9 findings"));
    tu_result_free(&r);
}

/* The reference method comparison table and the project's own method tables. */
static void test_audit_of_method_tables(void **state)
{
    (void)state;
    char path[4096];
    struct tu_result r;
    const char *clean[] = {"audit: 1 table, 2 rows read, 0 lines skipped; 0 findings"};
    audit_fixture("methods-clean.md", 0, clean, 1, &r);
    tu_result_free(&r);

    const char *expected[] = {
        "methods-broken.md:3: the header has 4 GPU columns, but 3 of the 3 rows have 3 values: a value is not under the "
        "GPU count it was measured at; read as written, 9 values beat GPUs x Baseline (line 5: 1890.500 +- 4.00 under "
        "1 GPU is 1.89x its Baseline 1000), read 1 column to the right, 1 do: the first GPU column is the extra one",
        "methods-broken.md:6: 4100.000 +- 12.00 at 4 GPUs is more than 4 x its Baseline 1000 (4000.0) by more than its "
        "std: 102.5% efficiency (LeNet, 64, 10GbE, WFBP-A2A)",
        "methods-broken.md:6: 7500.000 +- 0.00 at 8 GPUs: a spread of zero",
        "methods-broken.md:7: the values of LeNet, 64, 10GbE, MG-WFBP are those of line 5 (LeNet, 64, 10GbE, BSP-A2A): a copy",
        "audit: 1 table, 3 rows read, 1 lines skipped; 4 findings",
    };
    audit_fixture("methods-broken.md", 1, expected, sizeof expected / sizeof expected[0], &r);
    assert_true(tu_contains(r.err, "methods-broken.md:8: a value cell is not \"mean +- std\""));
    tu_result_free(&r);

    if (!tu_shared(path, sizeof path, "seeds/004_fa976a34413c7ab4.txt")) {
        tu_skip("../shared/seeds not present");
    }
    run_audit(path, &r);
    assert_int_equal(r.status, 1);
    /* the reference experiments' README says it: the header has one column more than the rows */
    assert_true(tu_contains(r.out, ":3: the header has 5 GPU columns, but 63 of the 63 rows have 4 values"));
    assert_true(tu_contains(r.out, "(line 5: 925.020 +- 4.42 under 1 GPU is 3.65x its Baseline 253.1), read 1 column "
                                   "to the right, 8 do: the first GPU column is the extra one"));
    assert_true(tu_contains(r.out, ":6: 1015.400 +- 1.26 at 4 GPUs is more than 4 x its Baseline 253.1 (1012.4)"));
    assert_true(tu_contains(r.out, ":15: 30.400 +- 0.00 at 8 GPUs: a spread of zero"));
    assert_true(tu_contains(r.out, "audit: 1 table, 63 rows read, 0 lines skipped; 15 findings"));
    tu_result_free(&r);
}

/* A title that names bigMNIST holds each Steps cell to its 60000 x 120 samples an epoch; the one
 * run that took 7000 steps where its configuration's others took 7032 is named. */
static void test_audit_of_a_bigmnist_table(void **state)
{
    (void)state;
    struct tu_result r;
    const char *expected[] = {"bigmnist-lab.md:11: 7000 steps, but the other runs of 1 node x 2 GPUs have 7032",
                              "audit: 1 table, 6 rows read, 0 lines skipped; 1 finding"};
    audit_fixture("bigmnist-lab.md", 1, expected, 2, &r);
    tu_result_free(&r);
}

static void test_audit_of_own_tables(void **state)
{
    (void)state;
    char path[4096];
    struct tu_result r;
    const char *clean[] = {"audit: 1 table, 7 rows read, 0 lines skipped; 0 findings"};
    audit_fixture("clean.md", 0, clean, 1, &r);
    tu_result_free(&r);

    const char *expected[] = {
        ".md:8: Avg runtime 0:58:00 of 1 node x 1 GPU is not the mean of its 3 runs (1:00:00)",
        ".md:9: Epoch 0, but the other runs of 2 nodes x 1 GPU have 2",
        ".md:10: node list is malformed: invalid hostlist \"gn[03-05-07]\": a second '-' in one range",
        ".md:11: 2 nodes, but the node list gn04 names 1",
        ".md:13: speedup 2.5 of 2 nodes x 1 GPU does not follow from the runtimes: 0:58:00 / 0:30:00 = 1.93",
        ".md:14: 625 steps, but 60000 samples / (batch 64 x 2 GPUs) make 469 an epoch",
        "audit: 1 table, 11 rows read, 1 lines skipped; 7 findings",
    };
    audit_fixture("broken.md", 1, expected, sizeof expected / sizeof expected[0], &r);
    assert_true(tu_contains(r.err, "broken.md:16: Runtime (column 6) \"fifteen minutes\" is not H:MM:SS"));   /* skipped, and said */
    tu_result_free(&r);

    /* the same columns as CSV: "#Nodes,..." is a header, not a heading; a quoted "gn[03,05]" */
    audit_fixture("clean.csv", 0, clean, 1, &r);
    tu_result_free(&r);
    const char *csv_expected[] = {
        "broken.csv:7: Avg of 1 node x 1 GPU not checked: its run on line 5 could not be read",
        "broken.csv:10: speedup 2.5 of 2 nodes x 1 GPU does not follow from the runtimes: 1:00:00 / 0:30:00 = 2.00",
        "audit: 1 table, 7 rows read, 1 lines skipped; 2 findings",
    };
    audit_fixture("broken.csv", 1, csv_expected, 3, &r);
    assert_true(tu_contains(r.err, "broken.csv:5: Runtime (column 6) \"1h\" is not H:MM:SS"));
    tu_result_free(&r);

    run_audit("/nonexistent/table.md", &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/nonexistent/table.md: No such file or directory"));
    tu_result_free(&r);
    fixture(path, sizeof path, "../env/torchrun_rank3.env");   /* a file with no table */
    run_audit(path, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no result table"));
    tu_result_free(&r);
}


static void test_table_of_records(void **state)
{
    (void)state;
    char dir[4096], file[4200];
    tu_fixture(dir, sizeof dir, "records");
    clean_records(file, sizeof file);
    struct tu_result r;
    run_analyze((char *[]){"table", dir, NULL}, &r);   /* a directory, read recursively */
    assert_int_equal(r.status, 2);   /* a line could not be read: the table of the rest, and exit 2 */
    assert_true(tu_contains(r.out, "| 1 | 1 | 2 | 64 | 1876 | 0:01:40 | - | gn01 |"));
    assert_true(tu_contains(r.out, "| **1** | **1** | **2** | **64** | **1876** | **0:01:50** | **1.00** | **Avg** |"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **2** | **64** | **938** | **0:00:55** | **2.00** | **Avg** |"));
    assert_null(strstr(r.out, "0:00:10"));   /* the failed run is left out ... */
    assert_true(tu_contains(r.err, "5 runs read, 1 not completed (left out), 1 lines skipped"));   /* ... and said */
    assert_true(tu_contains(r.err, "runs.jsonl:4: field \"dtrain_version\""));   /* the first one missing */
    assert_true(tu_contains(r.err, "1 line of the input could not be read (above)"));
    tu_result_free(&r);

    run_analyze((char *[]){"table", "--stat", "median", "--baseline", "2x1", "--format", "json", file, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"speedup_by\": \"runtime\", \"baseline\": \"2x1\", \"stat\": \"median\""));
    assert_true(tu_contains(r.out, "\"nodes\": 1, \"gpus\": 1, \"runs\": 3, \"runtime_seconds\": 110.000, \"speedup\": 0.5000"));
    json_error_t error;
    json_t *parsed = json_loads(r.out, 0, &error);   /* the whole output is one JSON document */
    assert_non_null(parsed);
    assert_int_equal(json_array_size(json_object_get(parsed, "experiments")), 1);
    json_decref(parsed);
    tu_result_free(&r);

    run_analyze((char *[]){"table", "--extra", "--format", "csv", file, NULL}, &r);
    assert_true(tu_contains(r.out, "#Nodes,#GPUs,Epoch,Batchsize,Steps,Runtime,Speedup,Node(s),Runs,Runtime 95% CI,"
                                   "Speedup 95% CI,Efficiency,Std,Min,Max"));
    assert_true(tu_contains(r.out, "2,1,2,64,938,0:00:55,2.00,\"Avg\",2,\"0:00:00-0:01:59\",\"0.53-7.59\",1.00,0:00:07,"
                                   "0:00:50,0:01:00"));
    tu_result_free(&r);
    /* options after the files are options too (GNU getopt's order, restarted for the subcommand) */
    run_analyze((char *[]){"table", file, "--format", "csv", "-x", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"0.53-7.59\",1.00,0:00:07,0:00:50,0:01:00"));
    tu_result_free(&r);

    run_analyze((char *[]){"table", "--baseline", "4x4", file, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no run of the baseline, 4 nodes x 4 GPUs"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--stat", "mode", file, NULL}, &r);
    assert_int_equal(r.status, 2);
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--where", "colour=red", file, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "expected KEY=VALUE with KEY one of model"));
    tu_result_free(&r);
    run_analyze((char *[]){"table", "--help", NULL}, &r);   /* the command's own help, not the whole */
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "--baseline NxG"));
    assert_null(strstr(r.out, "dtrain-analyze audit FILE"));
    tu_result_free(&r);
    unlink(file);
}

static void test_a_resumed_run_is_counted_from_its_resume(void **state)
{
    (void)state;
    char name[] = "/tmp/dtrain-test-resumed-XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    assert_non_null(out);
    write_record(out, 1, 1, 1876, 100, NULL, NULL);
    write_record2(out, 1, 2, 938, 25, "resumed_at_step", json_integer(469), "resumed", json_integer(1));
    fclose(out);
    struct tu_result r;
    run_analyze((char *[]){"table", name, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "2.00"));
    assert_null(strstr(r.out, "4.00"));
    assert_true(tu_contains(r.out, "Speedup by samples/s"));
    tu_result_free(&r);
    unlink(name);
}

/* A records file that collects two experiments (batch 64 and 128) tables them apart, each under
 * its heading with its own baseline; --where picks one. */
/* A run whose nodes ran different numbers of GPUs (--gpus-per-node auto: 3 on gn01, 2 on gn02) is
 * its own configuration: #GPUs its total, the node column its split, efficiency over all 5. */
static void test_an_uneven_run_is_tabled_with_its_split(void **state)
{
    (void)state;
    char name[] = "/tmp/dtrain-test-uneven-XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    write_record(out, 1, 1, 1876, 100, NULL, NULL);
    write_record(out, 2, 4, 469, 26, NULL, NULL);   /* 2 + 2: even */
    write_record(out, 2, 5, 375, 25, NULL, NULL);   /* hosts gn01 x 3, gn02 x 2 */
    fclose(out);
    struct tu_result r;
    run_analyze((char *[]){"table", "--extra", name, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 2 | 2 | 2 | 64 | 469 | 0:00:26 | - | gn[01-02] |"));
    assert_true(tu_contains(r.out, "| 2 | 5 | 2 | 64 | 375 | 0:00:25 | - | gn01:3, gn02:2 |"));
    assert_true(tu_contains(r.out, "| **2** | **5** | **2** | **64** | **375** | **0:00:25** | **4.00** | **Avg** | **1** | "
                                   "**- (1 run)** | **- (1 run)** | **0.80** |"));
    tu_result_free(&r);
    unlink(name);
}

static void test_mixed_records_make_separate_experiments(void **state)
{
    (void)state;
    char name[] = "/tmp/dtrain-test-mixed-XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    write_record(out, 1, 1, 1876, 100, NULL, NULL);
    write_record(out, 2, 2, 938, 50, NULL, NULL);
    write_record(out, 1, 1, 938, 80, "batch_per_replica", json_integer(128));
    write_record(out, 2, 2, 469, 20, "batch_per_replica", json_integer(128));   /* 4.00 against its own */
    write_record(out, 2, 2, 469, 25, "comm", json_string("wfbp-a2a"));           /* no baseline of its own */
    fclose(out);
    struct tu_result r;
    run_analyze((char *[]){"table", name, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "### lenet on fashion-mnist, batch 64 a replica, 2 epochs, bsp-a2a, cpu, 1 thread, adam lr 0.01\n"));
    assert_true(tu_contains(r.out, "### lenet on fashion-mnist, batch 128 a replica, 2 epochs, bsp-a2a"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **2** | **64** | **938** | **0:00:50** | **2.00** | **Avg** |"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **2** | **128** | **469** | **0:00:20** | **4.00** | **Avg** |"));
    assert_true(tu_contains(r.out, "### lenet on fashion-mnist, batch 64 a replica, 2 epochs, wfbp-a2a"));
    assert_true(tu_contains(r.out, "No run of the baseline"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **2** | **64** | **469** | **0:00:25** | **-** | **Avg** |"));
    assert_true(tu_contains(r.err, "3 experiments"));
    tu_result_free(&r);

    run_analyze((char *[]){"table", name, "--where", "batch=128", "--where", "method=bsp-a2a", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "###"));   /* one experiment: no heading */
    assert_null(strstr(r.out, "| 64 |"));
    assert_true(tu_contains(r.out, "**4.00**"));
    assert_true(tu_contains(r.err, "2 of 5 runs meet --where"));
    tu_result_free(&r);
    unlink(name);
}

/* --max-steps at every job size: the runs did not train the same samples, so the speedup is by
 * samples/s (the runtime ratio would say 0.83 where the rate went up 1.67x), and the table says
 * so; its audit accepts that, and flags a runtime ratio in such a table. */
static void test_fixed_steps_speedup_by_samples_per_second(void **state)
{
    (void)state;
    char name[] = "/tmp/dtrain-test-steps-XXXXXX", table[] = "/tmp/dtrain-test-steps-md-XXXXXX";
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    write_record(out, 1, 1, 60, 10, "max_steps", json_integer(60));
    write_record(out, 2, 2, 60, 12, "max_steps", json_integer(60));
    fclose(out);
    struct tu_result r;
    run_analyze((char *[]){"table", name, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Speedup by samples/s: the runs did not train the same samples"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **2** | **64** | **60** | **0:00:12** | **1.67** | **Avg** |"));
    fd = mkstemp(table);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, r.out, strlen(r.out)), (ssize_t)strlen(r.out));
    close(fd);
    tu_result_free(&r);
    run_audit(table, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);

    /* the same table with the runtime ratio in it */
    FILE *f = fopen(table, "w");
    fputs("# Fixed steps\n\n| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |\n|---|---|---|---|---|---|---|---|\n"
          "| 1 | 1 | 1 | 64 | 60 | 0:00:10 | 1 | gn01 |\n| 2 | 1 | 1 | 64 | 60 | 0:00:12 | 0.83 | gn[01-02] |\n", f);
    fclose(f);
    run_audit(table, &r);
    assert_int_equal(r.status, 1);
    assert_null(strstr(r.out, "other runs have"));
    assert_true(tu_contains(r.out, ":6: speedup 0.83 of 2 nodes x 1 GPU is a runtime ratio, but the runs did not train "
                                   "the same samples (3840 at 1 x 1, 7680 here: Steps x Batchsize x GPUs); by samples/s it is 1.67"));
    tu_result_free(&r);
    /* a run of another batch in the table: another experiment, flagged */
    f = fopen(table, "w");
    fputs("# Mixed\n\n| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |\n|---|---|---|---|---|---|---|---|\n"
          "| 1 | 1 | 1 | 64 | 60 | 0:00:10 | 1 | gn01 |\n| 1 | 1 | 1 | 64 | 60 | 0:00:10 | 1 | gn02 |\n"
          "| 2 | 1 | 1 | 128 | 30 | 0:00:05 | 2 | gn[01-02] |\n", f);
    fclose(f);
    run_audit(table, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, ":7: Batchsize 128, but the table's other runs have 64: a run of another experiment"));
    tu_result_free(&r);
    unlink(table);
    unlink(name);
}

/* Hand-made tables come out corrected: the project's broken table (its 1 x 1 Avg is 0:58:00, its
 * runs' mean 1:00:00) and, where ../shared is present, the reference bigMNIST table. */
static void test_table_corrects_hand_made_tables(void **state)
{
    (void)state;
    char path[4096];
    fixture(path, sizeof path, "broken.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 2);   /* its "fifteen minutes" row cannot be read: said, and exit 2 */
    assert_true(tu_contains(r.out, "# MNIST scaling with one of each error (corrected: Avg = the mean of the runs above it)"));
    assert_true(tu_contains(r.out, "| **1** | **1** | **2** | **64** | **938** | **1:00:00** | **1.00** | **Avg** | 0:58:00 |  |"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **2** | **64** | **469** | **0:30:00** | **2.00** | **Avg** |  | 2.5 |"));
    assert_true(tu_contains(r.err, "broken.md:16: Runtime (column 6) \"fifteen minutes\" is not H:MM:SS"));
    tu_result_free(&r);
    fixture(path, sizeof path, "broken.csv");
    run_analyze((char *[]){"table", "--format", "csv", path, NULL}, &r);
    assert_true(tu_contains(r.out, "#Nodes,#GPUs,Epoch,Batchsize,Steps,Runtime,Speedup,Node(s),Given Runtime,Given Speedup"));
    assert_true(tu_contains(r.out, ",\"Avg\","));
    tu_result_free(&r);

    const char *shared = getenv("DTRAIN_SHARED");
    char seed[4200];
    snprintf(seed, sizeof seed, "%s/seeds/003_b04018c01c393b57.txt", shared ? shared : "");
    if (!shared || access(seed, R_OK) != 0) {
        tu_skip("the reference bigMNIST table (../shared/seeds) is not here");
    }
    run_analyze((char *[]){"table", seed, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| **1** | **1** | **10** | **512** | **140626** | **15:20:10** | **1.00** | **Avg** | 14:36:52 |  |"));
    assert_true(tu_contains(r.out, "| **2** | **1** | **10** | **512** | **70314** | **8:35:59** | **1.78** | **Avg** | 8:09:01 | 1.6 |"));
    assert_true(tu_contains(r.err, "2 hand-made tables, 61 rows read"));
    tu_result_free(&r);
}

/* A fragment of a torn write glued before a whole record (files written before appends were made
 * whole have these) keeps the record; a torn last line is said to be one. */
static void test_torn_record_lines(void **state)
{
    (void)state;
    char fixture_file[4200], torn[] = "/tmp/dtrain-test-torn-XXXXXX";
    tu_fixture(fixture_file, sizeof fixture_file, "records/runs.jsonl");
    FILE *in = fopen(fixture_file, "r");
    assert_non_null(in);
    char *line = NULL;
    size_t size = 0;
    assert_true(getline(&line, &size, in) > 100);
    fclose(in);
    int fd = mkstemp(torn);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "w");
    fprintf(out, "%.60s%s%.60s", line, line, line);   /* fragment+record, then a torn last line */
    fclose(out);
    free(line);
    struct tu_result r;
    run_analyze((char *[]){"table", torn, NULL}, &r);
    assert_int_equal(r.status, 2);   /* the torn last line could not be read */
    assert_true(tu_contains(r.err, ":1: 60 bytes of a torn record before a whole one"));
    assert_true(tu_contains(r.err, ":2: "));
    assert_true(tu_contains(r.err, "(a torn last line: a write that did not finish)"));
    assert_true(tu_contains(r.err, "1 runs read"));
    tu_result_free(&r);
    unlink(torn);
}

/* What the analyzer writes, its audit finds nothing wrong with. */
static void audit_written_table(const char *file, const char *format, const char *summary)
{
    char out[] = "/tmp/dtrain-test-table-XXXXXX";
    struct tu_result r;
    run_analyze((char *[]){"table", "--format", (char *)format, (char *)file, NULL}, &r);
    assert_int_equal(r.status, 0);
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, r.out, strlen(r.out)), (ssize_t)strlen(r.out));
    close(fd);
    tu_result_free(&r);
    run_audit(out, &r);
    assert_int_equal(r.status, strstr(summary, "; 0 findings") ? 0 : 1);
    assert_true(tu_contains(r.out, summary));
    tu_result_free(&r);
    unlink(out);
}

/* What the analyzer writes, its audit finds nothing wrong with: runs of minutes in whole seconds,
 * runs of seconds to the hundredth (rounded runtimes, speedups from the unrounded ones). */
static void test_written_table_passes_the_audit(void **state)
{
    (void)state;
    char file[4200], clean[4200];
    clean_records(clean, sizeof clean);
    /* one finding, and a true one: 2 x 1's two runs (60 and 50 s) against 1 x 1's three cannot show
     * the gain its speedup 2.00 claims (the table itself prints that interval, 0.53-7.59) */
    audit_written_table(clean, "md", "audit: 1 table, 7 rows read, 0 lines skipped; 1 finding");
    audit_written_table(clean, "csv", "audit: 1 table, 7 rows read, 0 lines skipped; 1 finding");
    unlink(clean);
    tu_fixture(file, sizeof file, "short-runs.jsonl");
    audit_written_table(file, "md", "audit: 1 table, 7 rows read, 0 lines skipped; 0 findings");
    struct tu_result r;
    run_analyze((char *[]){"table", file, NULL}, &r);
    assert_true(tu_contains(r.out, "| **1** | **1** | **2** | **64** | **1876** | **0:00:02.46** | **1.00** | **Avg** |"));
    tu_result_free(&r);
}

/* Headings whatever the model and GPU names are (digits only, letters and digits, with dashes), a
 * 1-GPU heading with no count, and dtrain's own job output (nodes and ranks from its lines); CSV
 * cells are numbers. */
static void test_timeline_sums(void **state)
{
    (void)state;
    char file[4200];
    tu_fixture(file, sizeof file, "timeline/wfbp.rank0.json");
    struct tu_result r;
    run_analyze((char *[]){"timeline", file, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| rank 0 on gn01 | 2 | 11.000 | 11.000 | 12.000 | 3.000 | 5.500 | 1.500 | 1.000 | 2.5 | 3.000 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"timeline", file, "--format", "csv", NULL}, &r);   /* options after the file, CSV */
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"rank 0 on gn01\",2,11.000,11.000,12.000,3.000,5.500,1.500,1.000,2.5,3.000\n"));
    tu_result_free(&r);
    tu_fixture(file, sizeof file, "records/runs.jsonl");
    run_analyze((char *[]){"timeline", file, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "runs.jsonl"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_audit_finds_every_error_of_the_seeds_bigmnist_table),
        cmocka_unit_test(test_audit_of_own_tables),
        cmocka_unit_test(test_audit_of_a_bigmnist_table),
        cmocka_unit_test(test_audit_of_notebooks),
        cmocka_unit_test(test_audit_of_method_tables),
        cmocka_unit_test(test_table_of_records),
        cmocka_unit_test(test_an_uneven_run_is_tabled_with_its_split),
        cmocka_unit_test(test_mixed_records_make_separate_experiments),
        cmocka_unit_test(test_fixed_steps_speedup_by_samples_per_second),
        cmocka_unit_test(test_table_corrects_hand_made_tables),
        cmocka_unit_test(test_torn_record_lines),
        cmocka_unit_test(test_written_table_passes_the_audit),
        cmocka_unit_test(test_timeline_sums),
        cmocka_unit_test(test_a_resumed_run_is_counted_from_its_resume),
    };
    return cmocka_run_group_tests_name("analyze", tests, NULL, NULL);
}
