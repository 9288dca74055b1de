/* test_analyze.c - dtrain-analyze audit: the seeds' bigMNIST document (when ../shared is there)
 * and the project's own tables with one of each error; H:MM:SS. */
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

#include "duration.h"
#include "testutil.h"

static void audit(const char *file, struct tu_result *r)
{
    char *argv[] = {(char *)tu_bin("dtrain-analyze"), "audit", (char *)file, NULL};
    struct tu_env env = {0};
    tu_env_basics(&env);
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

static void fixture(char *path, size_t size, const char *name)
{
    char relative[512];
    snprintf(relative, sizeof relative, "tables/%s", name);
    tu_fixture(path, size, relative);
}

/* Audits one of the project's table fixtures: the exit status, and every line of expected in the
 * output. r keeps the result for further checks; the caller frees it. */
static void audit_fixture(const char *name, int status, const char *const *expected, size_t count, struct tu_result *r)
{
    char path[4096];
    fixture(path, sizeof path, name);
    audit(path, r);
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
}

static void test_audit_finds_every_error_of_the_seeds_bigmnist_table(void **state)
{
    (void)state;
    char path[4096];
    if (!tu_shared(path, sizeof path, "seeds/003_b04018c01c393b57.txt")) {
        tu_skip("../shared/seeds not present");
    }
    struct tu_result r;
    audit(path, &r);
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
    audit(path, &r);
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
    audit(path, &r);
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

/* The seeds' method comparison (004) and the project's own method tables. */
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
    audit(path, &r);
    assert_int_equal(r.status, 1);
    /* the seeds' README says it: the header has one column more than the rows */
    assert_true(tu_contains(r.out, ":3: the header has 5 GPU columns, but 63 of the 63 rows have 4 values"));
    assert_true(tu_contains(r.out, "(line 5: 925.020 +- 4.42 under 1 GPU is 3.65x its Baseline 253.1), read 1 column "
                                   "to the right, 8 do: the first GPU column is the extra one"));
    assert_true(tu_contains(r.out, ":6: 1015.400 +- 1.26 at 4 GPUs is more than 4 x its Baseline 253.1 (1012.4)"));
    assert_true(tu_contains(r.out, ":15: 30.400 +- 0.00 at 8 GPUs: a spread of zero"));
    assert_true(tu_contains(r.out, "audit: 1 table, 63 rows read, 0 lines skipped; 15 findings"));
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
    assert_true(tu_contains(r.err, "broken.md:16: Runtime is not H:MM:SS"));   /* skipped, and said */
    tu_result_free(&r);

    /* the same columns as CSV: "#Nodes,..." is a header, not a heading; a quoted "gn[03,05]" */
    audit_fixture("clean.csv", 0, clean, 1, &r);
    tu_result_free(&r);
    const char *csv_expected[] = {
        "broken.csv:10: speedup 2.5 of 2 nodes x 1 GPU does not follow from the runtimes: 1:00:00 / 0:30:00 = 2.00",
        "audit: 1 table, 7 rows read, 1 lines skipped; 1 finding",
    };
    audit_fixture("broken.csv", 1, csv_expected, 2, &r);
    assert_true(tu_contains(r.err, "broken.csv:5: Runtime is not H:MM:SS"));
    tu_result_free(&r);

    audit("/nonexistent/table.md", &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/nonexistent/table.md: No such file or directory"));
    tu_result_free(&r);
    fixture(path, sizeof path, "../env/torchrun_rank3.env");   /* a file with no table */
    audit(path, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no result table"));
    tu_result_free(&r);
}

static void run_analyze(char **args, struct tu_result *r)
{
    char *argv[24] = {(char *)tu_bin("dtrain-analyze")};
    for (int i = 0; args[i] && i < 22; i++)
        argv[i + 1] = args[i];
    struct tu_env env = {0};
    tu_env_basics(&env);
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

/* The fixture's records without its broken line (records/runs.jsonl has one on purpose). */
static void clean_records(char *out, size_t size)
{
    char fixture_file[4200], name[] = "/tmp/dtrain-test-clean-XXXXXX";
    tu_fixture(fixture_file, sizeof fixture_file, "records/runs.jsonl");
    int fd = mkstemp(name);
    assert_true(fd >= 0);
    FILE *in = fopen(fixture_file, "r"), *copy = fdopen(fd, "w");
    assert_non_null(in);
    char line[8192];
    while (fgets(line, sizeof line, in))
        if (!strstr(line, "broken line"))
            fputs(line, copy);
    fclose(in);
    fclose(copy);
    snprintf(out, size, "%s", name);
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
    assert_true(tu_contains(r.out, "#Nodes,#GPUs,Epoch,Batchsize,Steps,Runtime,Speedup,Node(s),Efficiency,Std,Min,Max"));
    assert_true(tu_contains(r.out, "2,1,2,64,938,0:00:55,2.00,\"Avg\",1.00,0:00:07,0:00:50,0:01:00"));
    tu_result_free(&r);
    /* options after the files are options too (GNU getopt's order, restarted for the subcommand) */
    run_analyze((char *[]){"table", file, "--format", "csv", "-x", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "2,1,2,64,938,0:00:55,2.00,\"Avg\",1.00,0:00:07,0:00:50,0:01:00"));
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

/* Writes the fixture's first record changed: job shape, steps, runtime, and one field set to a
 * JSON value (NULL: none). */
static void write_record2(FILE *out, int nodes, int ranks, long steps, double runtime, const char *key, json_t *value,
                          const char *key2, json_t *value2)
{
    char fixture_file[4200], line[8192];
    tu_fixture(fixture_file, sizeof fixture_file, "records/runs.jsonl");
    FILE *in = fopen(fixture_file, "r");
    assert_non_null(in);
    assert_non_null(fgets(line, sizeof line, in));
    fclose(in);
    json_error_t error;
    json_t *o = json_loads(line, 0, &error), *hosts = json_array();
    assert_non_null(o);
    for (int i = 0; i < ranks; i++)
        json_array_append_new(hosts, json_sprintf("gn%02d", i * nodes / ranks + 1));
    json_object_set_new(o, "nodelist", json_string(nodes == 1 ? "gn01" : nodes == 2 ? "gn[01-02]" : "gn[01-04]"));
    json_object_set_new(o, "hostnames", hosts);
    json_object_set_new(o, "nodes", json_integer(nodes));
    json_object_set_new(o, "gpus_per_node", json_integer(ranks / nodes));
    json_object_set_new(o, "world_size", json_integer(ranks));
    json_object_set_new(o, "steps_per_rank", json_integer(steps));
    json_object_set_new(o, "runtime_seconds", json_real(runtime));
    if (key)
        json_object_set_new(o, key, value);
    if (key2)
        json_object_set_new(o, key2, value2);
    char *text = json_dumps(o, JSON_COMPACT);
    fprintf(out, "%s\n", text);
    free(text);
    json_decref(o);
}

static void write_record(FILE *out, int nodes, int ranks, long steps, double runtime, const char *key, json_t *value)
{
    write_record2(out, nodes, ranks, steps, runtime, key, value, NULL, NULL);
}

/* A resumed run's runtime is of the steps after its resume (resumed_at_step): 2 ranks, 938 steps,
 * resumed after step 469, 25 s for the last 469 steps against the baseline's 100 s for 1876. By
 * runtime the speedup would read 4.00; by the samples of the timed part (469 x 2 x 64 = 60032 in
 * 25 s against 120064 in 100 s) it is 2.00, and the table says why it goes by samples/s. */
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
    audit(table, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);

    /* the same table with the runtime ratio in it */
    FILE *f = fopen(table, "w");
    fputs("# Fixed steps\n\n| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |\n|---|---|---|---|---|---|---|---|\n"
          "| 1 | 1 | 1 | 64 | 60 | 0:00:10 | 1 | gn01 |\n| 2 | 1 | 1 | 64 | 60 | 0:00:12 | 0.83 | gn[01-02] |\n", f);
    fclose(f);
    audit(table, &r);
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
    audit(table, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, ":7: Batchsize 128, but the table's other runs have 64: a run of another experiment"));
    tu_result_free(&r);
    unlink(table);
    unlink(name);
}

/* Hand-made tables come out corrected: the project's broken table (its 1 x 1 Avg is 0:58:00, its
 * runs' mean 1:00:00) and, where ../shared is present, the seeds' bigMNIST table. */
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
    assert_true(tu_contains(r.err, "broken.md:16: Runtime is not H:MM:SS"));
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
        tu_skip("the seeds' bigMNIST table (../shared/seeds) is not here");
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
    audit(out, &r);
    assert_int_equal(r.status, 0);
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
    audit_written_table(clean, "md", "audit: 1 table, 7 rows read, 0 lines skipped; 0 findings");
    audit_written_table(clean, "csv", "audit: 1 table, 7 rows read, 0 lines skipped; 0 findings");
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
static void test_throughput_reads_any_names(void **state)
{
    (void)state;
    char dir[4200];
    tu_fixture(dir, sizeof dir, "logs-names");
    struct tu_result r;
    run_analyze((char *[]){"throughput", dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| Single node 1 GPUs / VGG19-4090 / lm6-100.5 | VGG19 | lm6 | 1 |"));
    assert_true(tu_contains(r.out, "| Single node 1 GPUs / ViT-B16-H100-SXM / gn01-50.0 | ViT-B16 | gn01 | 1 |"));
    assert_true(tu_contains(r.out, "| Single node 1 GPUs / ResNet50-A100 / gn02-70.0 | ResNet50 | gn02 | 1 |"));
    /* the 2-GPU runs find their 1-GPU baselines under the names read right */
    assert_true(tu_contains(r.out, "| VGG19 | lm6 | 2 | 1 | 190.00 | 190.0 | 1.89x | 94.5% |"));
    assert_true(tu_contains(r.out, "| ViT-B16 | gn01 | 2 | 1 | 95.00 | 95.0 | 1.90x | 95.0% |"));
    assert_true(tu_contains(r.out, "slurm-77.out:3 | - | resnet18 | gn[01-02] | 8 | 2 | 810.50 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", dir, "--format", "csv", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Log,Line,Run,Model,Node(s),GPUs,Steps logged,Peak data/sec,Headline,Headline is peak,"
                                   "Speedup,Efficiency,Epochs,Final accuracy\n"));
    assert_true(tu_contains(r.out, "\"VGG19\",\"lm6\",2,1,190.00,190.0,yes,1.8905,0.9453,0,\n"));
    tu_result_free(&r);
    char methods[4200];
    tu_fixture(methods, sizeof methods, "methods");
    run_analyze((char *[]){"throughput", "-f", "csv", methods, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Model,BS,Tag,Method,Baseline,1 GPU mean,1 GPU std,2 GPUs mean,2 GPUs std"));
    assert_true(tu_contains(r.out, "\"lenet\",64,\"1gbit\",\"bsp-a2a\",1005.0,1005.000,7.071,1950.000,50.000"));
    assert_null(strstr(r.out, "+-"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", "--help", NULL}, &r);
    assert_true(tu_contains(r.out, "Usage: dtrain-analyze throughput"));
    assert_null(strstr(r.out, "Usage: dtrain-analyze table"));
    tu_result_free(&r);
}

static void test_throughput_of_logs(void **state)
{
    (void)state;
    char dir[4200];
    tu_fixture(dir, sizeof dir, "logs");
    struct tu_result r;
    run_analyze((char *[]){"throughput", dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    /* srun --label prefixes, both Step spellings, ". Test accuracy", peak not the last Step */
    assert_true(tu_contains(r.out, "slurm-1234.out:2 | - | - | - | 1 | 4 | 113.32 | - | - | - | 2 | 0.9186 |"));
    /* the path of headings names the run; a heading without log lines is no run */
    assert_true(tu_contains(r.out, "notebook.md:3 | Single node, MNIST / ResNet18-2x2080ti-128batch_size / "
                                   "lm1-160.70-1.96x, baseline: 81.84 | ResNet18 | lm1 | 2 | 2 | 160.70 | 160.70 | - | - | 1 | 0.8801 |"));
    assert_null(strstr(r.out, "no-log-lines"));
    assert_true(tu_contains(r.out, "notebook.md:8 | Single node, MNIST / ResNet50-2x2080ti-128batch_size | ResNet50 | - | 2 | 1 | 60.44 | - | - | - | 0 | - |"));
    tu_result_free(&r);

    char seed[4200];
    bool shared_missing = false;   /* the reference logs' checks are skipped without ../shared */
    if (tu_shared(seed, sizeof seed, "seeds/000_685292da7d634812.txt")) {   /* the seeds' notebook: each heading's figure is its peak Step value */
        run_analyze((char *[]){"throughput", seed, NULL}, &r);
        assert_true(tu_contains(r.out, "ResNet18-2080ti / lm6-120.7 | ResNet18 | lm6 | 1 | 9 | 120.70 | 120.7 | 1.00x | 100.0% | 4 | 0.9352 |"));
        /* "## lm1-41.9" sits at the model's level: still ResNet50's lm1 baseline */
        assert_true(tu_contains(r.out, "ResNet50-2080ti / lm1-41.9 | ResNet50 | lm1 | 1 | 9 | 41.90 | 41.9 | 1.00x |"));
        /* "# Single node 2 GPUs / ## ResNet101 / ### lm1-...": speedup against lm1's own 1-GPU run */
        assert_true(tu_contains(r.out, "ResNet101 / lm1-41.82-1.92x, baseline: 21.73 | ResNet101 | lm1 | 2 | 9 | 41.82 | 41.82 | "
                                       "1.92x | 96.2% | 4 | 0.9703 |"));
        assert_true(tu_contains(r.out, "lm6-198.38-1.648x, baseline: 120.7 | ResNet18 | lm6 | 2 | 9 | 198.38 | 198.38 | 1.64x | 82.2% |"));
        tu_result_free(&r);
    } else {
        shared_missing = true;
    }
    if (tu_shared(seed, sizeof seed, "seeds/001_3998dbd99d4aa271.txt")) {   /* node mixes; the Transformer's own baselines */
        run_analyze((char *[]){"throughput", seed, NULL}, &r);
        assert_true(tu_contains(r.out, "| ResNet18 | lm1 | 3 | 9 | 241.89 | 241.8, not the peak | 2.96x | 98.5% |"));
        assert_true(tu_contains(r.out, "128batch_size, 339.75-4.15x, baseline: 81.84 | ResNet18 | lm1+lm6 | 5 | 9 | 339.75 | "
                                       "339.75 | 4.15x | 83.0% |"));
        assert_true(tu_contains(r.out, "lm1-305.78-3.73x, baseline: 81.82 | Transformer 6 layer | lm1 | 4 | 9 | 305.78 | "
                                       "305.78 | 3.74x | 93.4% |"));
        /* the headline figures that are not their peaks are flagged */
        assert_true(tu_contains(r.out, "| 122.41 | 122.25, not the peak |"));
        assert_true(tu_contains(r.out, "| 231.70 | 231.64, not the peak |"));
        tu_result_free(&r);
    } else {
        shared_missing = true;
    }
    /* records: the method table, mean +- sample std of each model/batch/tag/method at each rank count */
    tu_fixture(dir, sizeof dir, "methods");
    char ps_dir[4096];
    tu_fixture(ps_dir, sizeof ps_dir, "methods-ps");
    run_analyze((char *[]){"throughput", dir, ps_dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| Model | BS | Tag | Method | Baseline | 1 GPU | 2 GPUs | 4 GPUs |"));
    assert_true(tu_contains(r.out, "| lenet | 64 | 1gbit | bsp-a2a | 1005.0 | 1005.000 +- 7.07 | 1950.000 +- 50.00 | "
                                   "2500.000 +- 0.00 |"));
    assert_true(tu_contains(r.out, "| lenet | 64 | 10gbit | bsp-a2a | 1020.0 | 1020.000 +- 0.00 | 1990.000 +- 0.00 | "
                                   "3920.000 +- 28.28 |"));
    /* parameter servers: the columns count workers, not the server ranks (3 ranks with one server;
     * 4 ranks on 2 nodes, colocated: 2 workers) */
    assert_true(tu_contains(r.out, "| lenet | 64 | 1gbit | bsp-ps (servers=1 partition=4096000) | 1005.0 | - | "
                                   "1900.000 +- 0.00 | - |"));
    assert_true(tu_contains(r.out, "| lenet | 64 | 1gbit | bsp-ps (servers=colocated partition=4096000) | 1005.0 | - | "
                                   "1800.000 +- 0.00 | - |"));
    assert_true(tu_contains(r.err, "throughput: 0 log runs, 12 records read, 0 not completed (left out), 0 lines skipped"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", "--format", "csv", dir, NULL}, &r);
    assert_true(tu_contains(r.out, "\"lenet\",64,\"1gbit\",\"bsp-a2a\",1005.0,1005.000,7.071,1950.000,50.000,2500.000,0.000\n"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", "--format", "xml", dir, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--format \"xml\": expected md or csv"));
    tu_result_free(&r);

    run_analyze((char *[]){"throughput", "/nonexistent.log", NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/nonexistent.log: No such file or directory"));
    tu_result_free(&r);
    if (shared_missing)
        tu_skip("the reference trainer logs (../shared/seeds) are not here: only the fixtures' part ran");
}

static char *read_whole(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = calloc(1, 1 << 20);
    if (text)
        text[fread(text, 1, (1 << 20) - 1, f)] = '\0';
    fclose(f);
    return text;
}

/* Runs a plot command that must succeed and returns what it wrote to PREFIX.EXT (free it). */
static char *drawn(char **args, const char *prefix, const char *ext)
{
    struct tu_result r;
    run_analyze(args, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    char path[4300];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    char *text = read_whole(path);
    assert_non_null(text);
    return text;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A real PNG: its signature, the 800x500 the script asks for, and more bytes than a blank canvas
 * compresses to (about 2 KB); the SVG holds the ideal line and the series. */
static void test_plot_renders_pictures(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-XXXXXX", prefix[64], path[128], records[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/plots/scaling", dir);   /* the folder plots is made */
    clean_records(records, sizeof records);
    struct tu_result r;
    run_analyze((char *[]){"plot", "--output", prefix, records, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    const char *pictures[] = {"speedup.png", "throughput.png"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s-%s", prefix, pictures[i]);
        unsigned char head[24];
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
        fclose(f);
        assert_memory_equal(head, "\x89PNG\r\n\x1a\n", 8);
        assert_int_equal((head[16] << 24) | (head[17] << 16) | (head[18] << 8) | head[19], 900);
        assert_int_equal((head[20] << 24) | (head[21] << 16) | (head[22] << 8) | head[23], 500);
        assert_true(file_size(path) > 8000);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s-speedup.svg", prefix);
    char *svg = read_whole(path);
    assert_non_null(svg);
    assert_true(tu_contains(svg, "ideal") && tu_contains(svg, "1 GPU per node") && tu_contains(svg, "<path"));
    free(svg);
    const char *leftovers[] = {"speedup.svg", "throughput.svg"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s-%s", prefix, leftovers[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s.dat", prefix);
    char *data = read_whole(path);
    assert_non_null(data);
    assert_true(tu_contains(data, "# 1 GPU per node\n1 1.0000 1000.00 1 0.0909 0.00\n2 2.0000 1000.00 2 0.2571 0.00\n"));
    free(data);
    unlink(path);
    unlink(records);
    snprintf(path, sizeof path, "%s.gp", prefix);
    unlink(path);

    /* one line per tag (two link speeds), each against its own 1-rank runs */
    snprintf(prefix, sizeof prefix, "%s/links", dir);
    tu_fixture(records, sizeof records, "methods");
    data = drawn((char *[]){"plot", "--series", "tag", "--output", prefix, records, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# 1gbit\n1 1.0000 1015.05 1 0.0070 7.14\n2 1.9395 1969.50 2 0.0497 50.50\n"
                                  "4 2.4876 2525.00 4 0.0000 0.00\n"));
    assert_true(tu_contains(data, "# 10gbit\n1 1.0000 1030.20 1 0.0000 0.00\n2 1.9510 2009.90 2 0.0000 0.00\n"
                                  "4 3.8430 3959.20 4 0.0277 28.57\n"));
    free(data);
    /* a series keeps its colour in both figures (the ideal line takes none of theirs), the key
     * sits outside the data, the repeats' spread is drawn */
    snprintf(path, sizeof path, "%s.gp", prefix);
    char *script = read_whole(path);
    assert_non_null(script);
    assert_true(tu_contains(script, "set key outside"));
    assert_true(tu_contains(script, "index 1 using 1:2:5 with yerrorlines linetype 2 pointtype 7 title '10gbit'"));
    assert_true(tu_contains(script, "index 1 using 1:3:6 with yerrorlines linetype 2 pointtype 7 title '10gbit'"));
    assert_true(tu_contains(script, "set xlabel 'GPUs (nodes x GPUs per node)'"));
    free(script);
    const char *made[] = {".dat", ".gp", "-speedup.png", "-speedup.svg", "-throughput.png", "-throughput.svg"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s%s", prefix, made[i]);
        assert_true(file_size(path) > 0);
        unlink(path);
    }
    run_analyze((char *[]){"plot", "--series", "color", "--output", prefix, records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--series \"color\": expected gpus-per-node, tag or method"));
    tu_result_free(&r);

    /* CPU ranks are called so; runs of two experiments in one line are refused, --where picks */
    char cpu[4200];
    snprintf(cpu, sizeof cpu, "%s/cpu.jsonl", dir);
    FILE *out = fopen(cpu, "w");
    assert_non_null(out);
    write_record(out, 1, 1, 1876, 100, "gpus_per_node", json_integer(0));
    write_record(out, 1, 2, 938, 50, "gpus_per_node", json_integer(0));
    write_record(out, 1, 2, 938, 40, "batch_per_replica", json_integer(128));
    fclose(out);
    snprintf(prefix, sizeof prefix, "%s/cpu", dir);
    run_analyze((char *[]){"plot", "-o", prefix, cpu, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "the records mixes experiments"));
    assert_true(tu_contains(r.err, "--where KEY=VALUE"));
    tu_result_free(&r);
    script = drawn((char *[]){"plot", "-o", prefix, cpu, "--where", "batch=64", NULL}, prefix, "gp");
    assert_true(tu_contains(script, "set xlabel 'CPU ranks (nodes x ranks per node)'"));
    assert_true(tu_contains(script, "title '2 ranks per node'"));
    free(script);
    /* emulated runs (--emulate: CPU ranks standing for GPUs) are drawn as emulated GPUs */
    snprintf(cpu, sizeof cpu, "%s/emulated.jsonl", dir);
    out = fopen(cpu, "w");
    assert_non_null(out);
    write_record2(out, 1, 1, 1876, 100, "gpus_per_node", json_integer(0), "emulation",
                  json_string("profile=r50.json rate=253.1 dilate=16"));
    write_record2(out, 2, 2, 938, 50, "gpus_per_node", json_integer(0), "emulation",
                  json_string("profile=r50.json rate=253.1 dilate=16"));
    fclose(out);
    snprintf(prefix, sizeof prefix, "%s/emulated", dir);
    script = drawn((char *[]){"plot", "-o", prefix, cpu, NULL}, prefix, "gp");
    assert_true(tu_contains(script, "set xlabel 'emulated GPUs (nodes x GPUs per node)'"));
    free(script);

    /* a line per method: one run on the baseline's one GPU serves every method (the seeds' one
     * Baseline), and a parameter server's job counts its workers, not its server ranks */
    char methods[4200];
    snprintf(methods, sizeof methods, "%s/methods.jsonl", dir);
    out = fopen(methods, "w");
    assert_non_null(out);
    write_record2(out, 1, 1, 1876, 100, "comm", json_string("bsp-a2a"), NULL, NULL);
    write_record2(out, 2, 2, 938, 50, "comm", json_string("wfbp-a2a"), NULL, NULL);
    write_record2(out, 3, 3, 938, 80, "comm", json_string("bsp-ps"), "comm_options", json_string("servers=1"));
    fclose(out);
    snprintf(prefix, sizeof prefix, "%s/m", dir);
    data = drawn((char *[]){"plot", "--series", "method", "-o", prefix, methods, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# wfbp-a2a\n1 1.0000 1000.00 1 0.0000 0.00\n2 2.0000 "));
    assert_true(tu_contains(data, "# bsp-ps\n1 1.0000 1000.00 1 0.0000 0.00\n2 1.2500 "));   /* 2 workers, 100 / 80 */
    free(data);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* The documents people already have, drawn: a hand-made table (from its corrected means) and,
 * where ../shared is present, the seeds' notebooks (000, 001) and method table (004). */
static void test_plot_draws_tables_notebooks_and_method_tables(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plotdocs-XXXXXX", prefix[128], path[256], table[4200];
    assert_non_null(mkdtemp(dir));
    fixture(table, sizeof table, "clean.md");
    snprintf(prefix, sizeof prefix, "%s/table", dir);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, table, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    snprintf(path, sizeof path, "%s.dat", prefix);
    char *data = read_whole(path);
    assert_non_null(data);
    assert_true(tu_contains(data, "# 1 node\n1 1.0000 "));
    assert_true(tu_contains(data, "# 1 GPU per node\n1 1.0000 "));
    free(data);

    const char *shared = getenv("DTRAIN_SHARED");
    if (!shared) {
        assert_int_equal(tu_remove_tree(dir), 0);
        tu_skip("the seeds (../shared/seeds) are not here");
    }
    char seed[4200];
    snprintf(seed, sizeof seed, "%s/seeds/000_685292da7d634812.txt", shared);
    snprintf(prefix, sizeof prefix, "%s/000", dir);
    data = drawn((char *[]){"plot", "-o", prefix, seed, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# ResNet18 on lm6\n1 1.0000 120.70 1 0.0000 0.00\n2 1.6436 198.38 1"));
    free(data);

    snprintf(seed, sizeof seed, "%s/seeds/001_3998dbd99d4aa271.txt", shared);
    snprintf(prefix, sizeof prefix, "%s/001", dir);
    run_analyze((char *[]){"plot", "-o", prefix, seed, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);

    snprintf(seed, sizeof seed, "%s/seeds/004_fa976a34413c7ab4.txt", shared);
    snprintf(prefix, sizeof prefix, "%s/004", dir);
    run_analyze((char *[]){"plot", "-o", prefix, seed, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    /* a chart per model and link, a line per method, the values at the GPU counts the Baselines
     * support (the header's extra "1 GPU" column read as the audit reads it) */
    snprintf(path, sizeof path, "%s-resnet-50-64-10gbe-with-tcp-ip.dat", prefix);
    data = read_whole(path);
    assert_non_null(data);
    assert_true(tu_contains(data, "# BSP-A2A\n4 3.6548 925.02 0 0.0175 4.42\n8 5.0663 1282.28"));
    assert_true(tu_contains(data, "# MG-WFBP\n"));
    free(data);
    snprintf(path, sizeof path, "%s-bert-large-8-100gbib-with-rdma-speedup.png", prefix);
    assert_true(file_size(path) > 8000);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A hand-made trace of two steps (tests/fixtures/timeline): step 1 of 10 ms (forward 3, backward
 * 5, exchange wait 1, update 1; transfers at 4, 6 and 8 ms, backward ending at 8: 4 ms under way
 * during backward), step 2 of 12 ms (3, 6, 2, 1; transfers at 27 and 28.5 ms, backward ending at
 * 29: 2 ms). The means, and a file that is no trace. */
/* predict on the three-layer profile test_exchange.c works out by hand (2 workers, a link of
 * 1000 bytes/s and 0.5 s; one server, partitions of 2500 bytes): every method's step to 1e-9
 * through the command line (options after the profile), and bad input refused with exit 2. With
 * 2500-byte partitions ByteScheduler's allreduce cuts layer 1 in two (2500 + 500): layer 1's sums
 * are back at 15 instead of 14, and the period grows from 13.5 to 14.5. */
static void test_predict_the_worked_case(void **state)
{
    (void)state;
    char profile[4096];
    tu_fixture(profile, sizeof profile, "profiles/three-layers.json");
    struct tu_result r;
    run_analyze((char *[]){"predict", profile, "--gpus-per-node", "1", "--nodes", "1,2", "--inter", "0.008mbit:0.5s",
                           "--servers", "1", "--partition-bytes", "2500", "--format", "json", NULL}, &r);
    assert_int_equal(r.status, 0);
    json_error_t jerr;
    json_t *rows = json_loads(r.out, 0, &jerr);
    assert_non_null(rows);
    assert_int_equal(json_array_size(rows), 14);
    struct expected_step {
        const char *method;
        double two;   /* seconds a step at 2 workers; 1 worker: 8.6 for all */
    };
    const struct expected_step expected[] = {{"bsp-a2a", 15.6}, {"wfbp-a2a", 14.6}, {"mg-wfbp", 13.6}, {"bytescheduler-a2a", 14.5},
                    {"bsp-ps", 27.6}, {"wfbp-ps", 24.6}, {"bytescheduler-ps", 22.5}};
    for (size_t i = 0; i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        const struct expected_step *e = &expected[i / 2];
        int gpus = (int)json_integer_value(json_object_get(row, "gpus"));
        double step = json_number_value(json_object_get(row, "step_seconds"));
        assert_string_equal(json_string_value(json_object_get(row, "method")), e->method);
        assert_int_equal(gpus, i % 2 ? 2 : 1);
        assert_true(fabs(step - (gpus == 1 ? 8.6 : e->two)) < 1e-9);
        assert_true(fabs(json_number_value(json_object_get(row, "samples_per_second")) - gpus / step) < 1e-6);
    }
    json_decref(rows);
    tu_result_free(&r);
    /* the seeds' table: a row per method, a column per GPU count */
    run_analyze((char *[]){"predict", "--nodes", "1,2,4", profile, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| Model | BS | Method | 4 GPUs | 8 GPUs | 16 GPUs |"));
    assert_true(tu_contains(r.out, "| three | 1 | bytescheduler-ps |"));
    tu_result_free(&r);
    const char *bad[][3] = {{"--inter", "fast", "--inter \"fast\": expected BANDWIDTH"},
                            {"--methods", "byteps", "unknown method \"byteps\""},
                            {"--nodes", "0", "--nodes \"0\""},
                            {"--format", "xml", "--format \"xml\""}};
    for (int i = 0; i < 4; i++) {
        run_analyze((char *[]){"predict", profile, (char *)bad[i][0], (char *)bad[i][1], NULL}, &r);
        assert_int_equal(r.status, 2);
        assert_true(tu_contains(r.err, bad[i][2]));
        tu_result_free(&r);
    }
    /* beside measured runs: two bsp-a2a runs of the model at 2 workers (0.130 and 0.126 samples/s,
     * mean 0.128) against 2 / 15.6 = 0.12821: +0.2%; the LeNet run and the other tag left out */
    char runs[4096];
    tu_fixture(runs, sizeof runs, "profiles/three-layers-runs.jsonl");
    run_analyze((char *[]){"predict", profile, "--records", runs, "--gpus-per-node", "1", "--inter", "0.008mbit:0.5s",
                           "--tag", "slow", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| bsp-a2a | slow | 2 | 2 | 0.1 +- 0.0 | 0.1 | +0.2% |"));
    assert_true(tu_contains(r.out, "1 of 1 cells within 15%"));
    assert_false(tu_contains(r.out, "fast"));
    tu_result_free(&r);
    run_analyze((char *[]){"predict", "/nonexistent.json", NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/nonexistent.json"));
    tu_result_free(&r);
}

/* predict --inter COMMBENCH.json: the file's measured allreduce times, not its fitted line. The
 * fixture's rows lie on the worked case's link (an allreduce of n bytes on 2 ranks 1 + n / 1000 s:
 * a message of m bytes 0.5 + m / 1000) while its fit says alpha 100 s, beta 1 s a byte: the
 * predictions are the worked case's (bsp-a2a 15.6 s at 2 workers); with --line, the fit's:
 * F + B + (100 + 6000) + U = 6108.6 s; with --dilate 2 the times halve (bsp-a2a: 8 + 3.5 + 0.6).
 * --allreduce FILE (2 ranks measured at 2 + n / 1000 s) replaces the composed allreduce at that
 * size: bsp-a2a 4 + 4 + 8 + 0.6 = 16.6; wfbp-a2a sends layer 2 (2000 bytes, 4 s) from 1 to 5,
 * layer 1 (3000) to 10, layer 0 (1000) to 13: 4 + 13 + 0.6 = 17.6; the servers do not use it. */
static void test_predict_reads_a_measured_link(void **state)
{
    (void)state;
    char profile[4200], link[4200], allreduce[4200];
    tu_fixture(profile, sizeof profile, "profiles/three-layers.json");
    tu_fixture(link, sizeof link, "profiles/three-layers-link.json");
    tu_fixture(allreduce, sizeof allreduce, "profiles/three-layers-allreduce2.json");
    const struct {
        const char *option, *value, *method;
        double two;
    } cases[] = {{NULL, NULL, "bsp-a2a", 15.6}, {NULL, NULL, "wfbp-a2a", 14.6}, {NULL, NULL, "bsp-ps", 27.6},
                 {"--line", NULL, "bsp-a2a", 6108.6}, {"--dilate", "2", "bsp-a2a", 12.1},
                 {"--allreduce", allreduce, "bsp-a2a", 16.6}, {"--allreduce", allreduce, "wfbp-a2a", 17.6},
                 {"--allreduce", allreduce, "bsp-ps", 27.6}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct tu_result r;
        char *argv[] = {"predict", profile, "--gpus-per-node", "1", "--nodes", "2", "--inter", link, "--servers", "1",
                        "--partition-bytes", "2500", "--format", "json", "--methods", (char *)cases[i].method,
                        (char *)cases[i].option, (char *)cases[i].value, NULL};
        run_analyze(argv, &r);
        assert_int_equal(r.status, 0);
        json_error_t jerr;
        json_t *rows = json_loads(r.out, 0, &jerr);
        assert_non_null(rows);
        double step = json_number_value(json_object_get(json_array_get(rows, 0), "step_seconds"));
        if (fabs(step - cases[i].two) >= 1e-9)
            print_error("%s %s: %.12f, expected %.12f\n", cases[i].method, cases[i].option ? cases[i].option : "",
                        step, cases[i].two);
        assert_true(fabs(step - cases[i].two) < 1e-9);
        json_decref(rows);
        tu_result_free(&r);
    }
    struct tu_result r;   /* a link's file is not an allreduce over a job's ranks when its op is not */
    run_analyze((char *[]){"predict", profile, "--allreduce", profile, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--allreduce"));
    assert_true(tu_contains(r.err, "expected dtrain-commbench --json of the allreduce"));
    tu_result_free(&r);
}

/* predict --against: a hand-made method table's rows (those starting with --row, their method a
 * known one) measured beside predicted at each GPU count, and how many within 15%. */
static void test_predict_against_a_method_table(void **state)
{
    (void)state;
    char profile[4200], table[4200];
    tu_fixture(profile, sizeof profile, "profiles/three-layers.json");
    tu_fixture(table, sizeof table, "methods-table/three.md");
    struct tu_result r;
    run_analyze((char *[]){"predict", profile, "--rate", "100", "--batch", "10", "--gpus-per-node", "2", "--inter",
                           "1gbit:50us", "--against", table, "--row", "three, 10, 1GbE,", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| bsp-a2a | 2 | 190.000 +- 2.00 | 200.0 | +5.3% |"));
    assert_true(tu_contains(r.out, "| wfbp-ps | 4 | 300.000 +- 5.00 | 398.8 | +32.9% |"));
    assert_null(strstr(r.out, "horovod"));   /* a method the model does not know is left out */
    assert_null(strstr(r.out, "150.000"));   /* another connection's row */
    assert_true(tu_contains(r.out, "3 of 4 cells within 15%"));
    tu_result_free(&r);
    run_analyze((char *[]){"predict", profile, "--against", table, "--row", "nothing", NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no row of"));
    tu_result_free(&r);
    /* --dilate K: a link measured K times slower is the real one at K times its speed */
    struct tu_result fast;
    run_analyze((char *[]){"predict", profile, "--rate", "100", "--batch", "10", "--inter", "1gbit:50us", "--dilate",
                           "2", NULL}, &r);
    run_analyze((char *[]){"predict", profile, "--rate", "100", "--batch", "10", "--inter", "2gbit:25us", NULL}, &fast);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, fast.out);
    tu_result_free(&r);
    tu_result_free(&fast);
}

static void test_timeline_sums(void **state)
{
    (void)state;
    char file[4200];
    tu_fixture(file, sizeof file, "timeline/wfbp.rank0.json");
    struct tu_result r;
    run_analyze((char *[]){"timeline", file, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| rank 0 on gn01 | 2 | 11.000 | 3.000 | 5.500 | 1.500 | 1.000 | 2.5 | 3.000 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"timeline", file, "--format", "csv", NULL}, &r);   /* options after the file, CSV */
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"rank 0 on gn01\",2,11.000,3.000,5.500,1.500,1.000,2.5,3.000\n"));
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
        cmocka_unit_test(test_audit_of_notebooks),
        cmocka_unit_test(test_audit_of_method_tables),
        cmocka_unit_test(test_table_of_records),
        cmocka_unit_test(test_mixed_records_make_separate_experiments),
        cmocka_unit_test(test_fixed_steps_speedup_by_samples_per_second),
        cmocka_unit_test(test_table_corrects_hand_made_tables),
        cmocka_unit_test(test_torn_record_lines),
        cmocka_unit_test(test_written_table_passes_the_audit),
        cmocka_unit_test(test_throughput_of_logs),
        cmocka_unit_test(test_throughput_reads_any_names),
        cmocka_unit_test(test_plot_renders_pictures),
        cmocka_unit_test(test_plot_draws_tables_notebooks_and_method_tables),
        cmocka_unit_test(test_timeline_sums),
        cmocka_unit_test(test_predict_the_worked_case),
        cmocka_unit_test(test_predict_against_a_method_table),
        cmocka_unit_test(test_predict_reads_a_measured_link),
        cmocka_unit_test(test_a_resumed_run_is_counted_from_its_resume),
    };
    return cmocka_run_group_tests_name("analyze", tests, NULL, NULL);
}
