/* test_dtrain_record.c - dtrain-record: a user's own program's runs, recorded by the job that ran
 * them, come out of `dtrain-analyze table` as dtrain-train's do; a failure says what happened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"

static void run_record_tool(const char *file, const char *runtime, const char *nodes, const char *status, const char *log)
{
    struct tu_result r;
    char *args[] = {"--record", (char *)file, "--program", "python3 -u ./train.py --epochs 1", "--runtime",
                    (char *)runtime, "-N", (char *)nodes, "-g", "1", "--nodelist", strcmp(nodes, "1") ? "gn[01-02]" : "gn01",
                    "--status", (char *)status, log ? "--log" : NULL, (char *)log, NULL};
    assert_int_equal(tu_run_tool("dtrain-record", args, &r), 0);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
}

/* Two repeats on 1 node, two on 2, one killed: the table averages the four and leaves the failure out. */
static void test_program_runs_make_the_table(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-record-XXXXXX", file[128], log[128];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/records.jsonl", dir);
    snprintf(log, sizeof log, "%s/step.log", dir);
    FILE *f = fopen(log, "w");
    assert_non_null(f);
    fputs("epoch 1 of my own format\nStep10: 150.00 data/sec\nStep20: 200.00 data/sec\n", f);
    fclose(f);
    run_record_tool(file, "100", "1", "0", log);
    run_record_tool(file, "102", "1", "0", NULL);
    run_record_tool(file, "52", "2", "0", NULL);
    run_record_tool(file, "50", "2", "0", NULL);
    run_record_tool(file, "3", "2", "137", NULL);
    char *text = tu_read_file(file);
    assert_non_null(text);
    assert_true(tu_contains(text, "\"model\":\"train.py\""));
    assert_true(tu_contains(text, "\"hostnames\":[\"gn01\",\"gn02\"]"));
    assert_true(tu_contains(text, "\"steps_per_rank\":20,"));
    assert_true(tu_contains(text, "\"peak_data_per_sec\":200.0"));
    assert_true(tu_contains(text, "\"exit_state\":\"failed\",\"error\":\"killed by signal 9 (KILL)"));
    free(text);
    struct tu_result r;
    assert_int_equal(tu_run_tool("dtrain-analyze", (char *[]){"table", file, NULL}, &r), 0);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, "4 runs read, 1 not completed"));
    assert_true(tu_contains(r.out, "| **2** | **1** |"));
    assert_true(tu_contains(r.out, "| **1.98** |"));   /* 101 / 51 */
    /* a program's runs know no epochs or batch size: "-", and the table passes its own audit
     * (Epoch 0 and Batchsize 0 failed it: "is not a whole number above 0") */
    assert_true(tu_contains(r.out, "| **2** | **1** | **-** | **-** | **-** |"));
    char written[160];
    snprintf(written, sizeof written, "%s/table.md", dir);
    FILE *t = fopen(written, "w");
    assert_non_null(t);
    fputs(r.out, t);
    fclose(t);
    tu_result_free(&r);
    assert_int_equal(tu_run_tool("dtrain-analyze", (char *[]){"audit", written, NULL}, &r), 0);
    assert_true(tu_contains(r.out, "; 0 findings"));
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

static void test_statuses_are_explained_and_input_checked(void **state)
{
    (void)state;
    struct tu_result r;
    assert_int_equal(tu_run_tool("dtrain-record", (char *[]){"--explain-status", "2", NULL}, &r), 0);
    assert_true(tu_contains(r.out, "a usage error"));
    tu_result_free(&r);
    assert_int_equal(tu_run_tool("dtrain-record", (char *[]){"--explain-status", "3", NULL}, &r), 0);
    assert_true(tu_contains(r.out, "a stalled rank ended the step (dtrain --watch"));
    tu_result_free(&r);
    char nowhere[64];   /* a path of this run's own: another user's /tmp/x made the check fail */
    snprintf(nowhere, sizeof nowhere, "/tmp/dtrain-test-unwritten-%d.jsonl", (int)getpid());
    assert_int_equal(tu_run_tool("dtrain-record", (char *[]){"--record", nowhere, "--program", "p", NULL}, &r), 0);
    assert_int_equal(r.status, 2);   /* no --runtime */
    assert_true(tu_contains(r.err, "--runtime SECONDS are needed"));
    tu_result_free(&r);
    assert_int_equal(tu_run_tool("dtrain-record", (char *[]){"--record", nowhere, "--program", "p", "--runtime", "1",
                                                             "-N", "2", "-g", "4", "-n", "3", NULL}, &r), 0);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "more than the 3 ranks"));
    tu_result_free(&r);
    assert_int_equal(access(nowhere, F_OK), -1);   /* nothing written */
}

/* A step of more ranks than nodes: each rank's node as Slurm's block distribution places it (they
 * were all "" before), so `nodes` can tell one set of nodes from another in a swept program's runs:
 * 1 x 1 on gn01 and on gn02, 2 x 2 on both. */
static void test_hostnames_by_block_distribution(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-record-XXXXXX", file[128];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/records.jsonl", dir);
    static const char *const steps[][4] = {
        {"2", "4", "gn[01-02]", "50"}, {"2", "5", "gn[01-02]", "48"}, {"1", "1", "gn01", "100"}, {"1", "1", "gn02", "140"},
        {"1", "1", "gn01", "101"}, {"1", "1", "gn02", "139"},
    };
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        struct tu_result r;
        char *args[] = {"--record", file, "--program", "./bench.sh", "--runtime", (char *)steps[k][3], "-N",
                        (char *)steps[k][0], "-n", (char *)steps[k][1], "--nodelist", (char *)steps[k][2], "--status",
                        "0", NULL};
        assert_int_equal(tu_run_tool("dtrain-record", args, &r), 0);
        assert_int_equal(r.status, 0);
        tu_result_free(&r);
    }
    char *text = tu_read_file(file);
    assert_non_null(text);
    assert_true(tu_contains(text, "\"hostnames\":[\"gn01\",\"gn01\",\"gn02\",\"gn02\"]"));
    assert_true(tu_contains(text, "\"hostnames\":[\"gn01\",\"gn01\",\"gn01\",\"gn02\",\"gn02\"]"));
    free(text);
    struct tu_result r;
    assert_int_equal(tu_run_tool("dtrain-analyze", (char *[]){"nodes", file, NULL}, &r), 0);
    assert_null(strstr(r.err, "no configuration was run on two different sets of nodes"));
    assert_true(tu_contains(r.out, "| gn02 |"));
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A program's step that spares took over (the template's --replaced): the record says where and
 * why, and the table counts the run once; a record without it carries no such field. */
static void test_replaced_nodes_are_recorded(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-record-XXXXXX", file[128];
    assert_non_null(mkdtemp(dir));
    snprintf(file, sizeof file, "%s/records.jsonl", dir);
    const char *why = "gn02 by gn04 (a stalled rank: stopped); the step started again 9 s after the failure";
    char *with[] = {"--record", file, "--program", "python3 t.py", "--runtime", "40", "-N", "3", "--nodelist",
                    "gn[01,03-04]", "--replaced", (char *)why, NULL};
    char *without[] = {"--record", file, "--program", "python3 t.py", "--runtime", "38", "-N", "3", "--nodelist",
                       "gn[01-03]", NULL};
    struct tu_result r;
    assert_int_equal(tu_run_tool("dtrain-record", with, &r), 0);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    assert_int_equal(tu_run_tool("dtrain-record", without, &r), 0);
    tu_result_free(&r);
    char *text = tu_read_file(file);
    assert_non_null(text);
    assert_true(tu_contains(text, "\"replaced\":\"gn02 by gn04 (a stalled rank: stopped); the step started again 9 s"));
    assert_true(tu_contains(text, "\"hostnames\":[\"gn01\",\"gn03\",\"gn04\"]"));
    const char *second = strchr(text, '\n');
    assert_non_null(second);
    assert_null(strstr(second, "replaced"));
    free(text);
    assert_int_equal(tu_run_tool("dtrain-analyze", (char *[]){"table", "--baseline", "3x1", file, NULL}, &r), 0);
    assert_true(tu_contains(r.err, "table: 2 runs read"));
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_runs_make_the_table),
        cmocka_unit_test(test_statuses_are_explained_and_input_checked),
        cmocka_unit_test(test_hostnames_by_block_distribution),
        cmocka_unit_test(test_replaced_nodes_are_recorded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
