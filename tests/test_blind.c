/* test_blind.c - the blind protocol: dtrain-analyze predict --save writes a planned grid's
 * predictions with the time they were made, and dtrain-analyze compare holds them against the runs
 * that came after (each cell's error, the mean absolute error, the worst cell, the best method at
 * each job size), leaving out runs that started before the predictions and runs of another tag or
 * layout; and both refuse files that are not what they should be. The profile is test_exchange's
 * hand-worked three-layer case: at 2 workers bsp-a2a takes 15.6 s a step, mg-wfbp 13.6 s and
 * bsp-ps (a server of its own) 33.1 s, one sample each worker. And bench/link_check.sh, which
 * tells make blind where this machine does not run the shaped link as the studies did. */
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

#include "common/atomic_file.h"
#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* A completed run of the three-layer model, batch 1, as dtrain-train records it. */
static void add_run(FILE *f, const char *method, int world, int nodes, const char *options, const char *tag,
                    double rate, const char *start)
{
    char hosts[256] = "";
    for (int i = 0; i < world; i++)   /* the block distribution: rank i on node i x nodes / world */
        snprintf(hosts + strlen(hosts), sizeof hosts - strlen(hosts), "%s\"gn%02d\"", i ? "," : "",
                 i * nodes / world + 1);
    fprintf(f,
            "{\"record_version\":2,\"dtrain_version\":\"0.1.0\",\"job_id\":\"7\",\"job_name\":\"blind\",\"step_id\":\"0\","
            "\"nodelist\":\"gn[01-0%d]\",\"nodes\":%d,\"gpus_per_node\":0,\"world_size\":%d,\"hostnames\":[%s],"
            "\"model\":\"three\","
            "\"dataset\":\"fashion-mnist\",\"optimizer\":\"adam\",\"lr\":0.01,\"batch_per_replica\":1,\"epochs\":1,"
            "\"steps_per_rank\":60,\"comm\":\"%s\",\"backend\":\"cpu\",\"threads\":1,\"runtime_seconds\":60.0,"
            "\"peak_data_per_sec\":%g,\"final_data_per_sec\":%g,\"epochs_run\":[],\"start_time\":\"%s\","
            "\"end_time\":\"%s\",\"exit_state\":\"completed\",\"error\":\"\",\"resumed\":0,\"tag\":\"%s\","
            "\"comm_options\":\"%s\"}\n",
            nodes, nodes, world, hosts, method, rate, rate, start, start, tag, options);
}

struct blind_dir {
    char dir[64], plan[128], other[128], records[128], profile[4096];
};

/* Predictions for bsp-a2a, mg-wfbp and bsp-ps at 2 workers one a node (tag t), and bsp-a2a alone
 * (tag u), saved; then the runs. */
static void plan_and_run(struct blind_dir *b)
{
    snprintf(b->dir, sizeof b->dir, "/tmp/dtrain-test-blind-XXXXXX");
    assert_non_null(mkdtemp(b->dir));
    snprintf(b->plan, sizeof b->plan, "%s/plan-t.json", b->dir);
    snprintf(b->other, sizeof b->other, "%s/plan-u.json", b->dir);
    snprintf(b->records, sizeof b->records, "%s/records.jsonl", b->dir);
    tu_fixture(b->profile, sizeof b->profile, "profiles/three-layers.json");
    struct tu_result r;
    run_analyze((char *[]){"predict", b->profile, "--gpus-per-node", "1", "--nodes", "2", "--inter", "0.008mbit:0.5s",
                           "--servers", "1", "--partition-bytes", "2500", "--methods", "bsp-a2a,mg-wfbp,bsp-ps",
                           "--tag", "t", "--save", b->plan, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| three | 1 | bsp-a2a | 0.1 |"));   /* the table, printed as ever */
    tu_result_free(&r);
    run_analyze((char *[]){"predict", b->profile, "--gpus-per-node", "1", "--nodes", "2", "--inter", "0.008mbit:0.5s",
                           "--methods", "bsp-a2a", "--tag", "u", "--save", b->other, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    FILE *f = fopen(b->records, "w");
    assert_non_null(f);
    const char *after = "2099-01-01T00:00:00Z";
    add_run(f, "bsp-a2a", 2, 2, "", "t", 0.15, after);
    add_run(f, "bsp-a2a", 2, 2, "", "t", 0.17, after);
    add_run(f, "bsp-a2a", 2, 2, "", "t", 9.0, "2020-01-01T00:00:00Z");      /* before the prediction: left out */
    add_run(f, "mg-wfbp", 2, 2, "", "t", 0.141, after);
    add_run(f, "bsp-ps", 3, 3, "servers=1", "t", 0.06, after);
    add_run(f, "bsp-ps", 4, 2, "servers=colocated", "t", 9.0, after);       /* another layout */
    add_run(f, "mg-wfbp", 2, 1, "", "t", 9.0, after);                        /* 2 workers on one node */
    add_run(f, "bsp-a2a", 2, 2, "", "u", 0.5, after);
    fclose(f);
}

static void test_saved_predictions_say_when_and_how_each_job_runs(void **state)
{
    (void)state;
    struct blind_dir b;
    plan_and_run(&b);
    json_error_t jerr;
    json_t *root = json_load_file(b.plan, 0, &jerr);
    assert_non_null(root);
    assert_string_equal(json_string_value(json_object_get(root, "format")), "dtrain-predictions");
    assert_string_equal(json_string_value(json_object_get(root, "tag")), "t");
    assert_int_equal(strlen(json_string_value(json_object_get(root, "made"))), 20);   /* 2026-11-27T20:31:00Z */
    json_t *cells = json_object_get(root, "cells");
    assert_int_equal(json_array_size(cells), 3);
    json_t *ps = json_array_get(cells, 2);
    assert_string_equal(json_string_value(json_object_get(ps, "method")), "bsp-ps");
    assert_int_equal(json_integer_value(json_object_get(ps, "servers")), 1);
    assert_true(json_is_false(json_object_get(ps, "colocated")));
    assert_float_equal(json_number_value(json_object_get(ps, "step_seconds")), 33.1, 1e-9);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(cells, 0), "servers")), 0);
    json_decref(root);
    tu_remove_tree(b.dir);
}

static void test_compare_reports_errors_worst_and_best_method(void **state)
{
    (void)state;
    struct blind_dir b;
    plan_and_run(&b);
    struct tu_result r;
    run_analyze((char *[]){"compare", "--predictions", b.plan, b.records, "--predictions", b.other, NULL}, &r);
    assert_int_equal(r.status, 0);
    /* 2/15.6 = 0.1282 against 0.16, the mean of two (the run of 2020 and the other tag's left out) */
    assert_true(tu_contains(r.out, "| bsp-a2a | 2 | 2 | 0.1 | 0.2 +- 0.0 | 2 | -19.9% |"));
    assert_true(tu_contains(r.out, "| mg-wfbp | 2 | 2 | 0.1 | 0.1 +- 0.0 | 1 | +4.3% |"));   /* 2/13.6 vs 0.141 */
    assert_true(tu_contains(r.out, "| bsp-ps (1 server) | 2 | 2 | 0.1 | 0.1 +- 0.0 | 1 | +0.7% |"));
    assert_true(tu_contains(r.out, "Best at 2 GPUs: predicted mg-wfbp, but bsp-a2a ran fastest (mg-wfbp ran 12% below "
                                   "it; one run of either: the runs cannot tell): missed."));
    assert_true(tu_contains(r.out, "Error: mean absolute error 8.3% over 3 cells; worst bsp-a2a at 2 GPUs (-19.9%); 2 "
                                   "of 3 within 15%; the best method picked at 0 of 1 job size (of the misses, 1 where "
                                   "the runs do not separate the two methods)."));
    /* tag u: 0.1282 against 0.5 */
    assert_true(tu_contains(r.out, "| bsp-a2a | 2 | 2 | 0.1 | 0.5 +- 0.0 | 1 | -74.4% |"));
    assert_true(tu_contains(r.out, "Best at 2 GPUs: bsp-a2a, predicted and measured."));
    assert_true(tu_contains(r.out, "All settings: mean absolute error 24.8% over 4 cells; worst bsp-a2a at 2 GPUs "
                                   "(-74.4%); 2 of 4 within 15%; the best method picked at 1 of 2 job sizes (of the "
                                   "misses, 1 where the runs do not separate the two methods)."));
    assert_true(tu_contains(r.err, "1 run started before these predictions were made"));
    tu_result_free(&r);
    tu_remove_tree(b.dir);
}

/* A missed best method says whether the runs separate the two: the 95% interval of their rates'
 * ratio above 1 (runs 0.160, 0.161 against 0.140, 0.141), or containing 1 (0.160, 0.165 against
 * 0.150, 0.170: 1.6% apart, each pair's spread far wider). */
static void compare_two_runs_each(struct blind_dir *b, double fast0, double fast1, double slow0, double slow1,
                                  const char *expected)
{
    FILE *f = fopen(b->records, "w");
    assert_non_null(f);
    add_run(f, "bsp-a2a", 2, 2, "", "t", fast0, "2099-01-01T00:00:00Z");
    add_run(f, "bsp-a2a", 2, 2, "", "t", fast1, "2099-01-01T00:00:00Z");
    add_run(f, "mg-wfbp", 2, 2, "", "t", slow0, "2099-01-01T00:00:00Z");
    add_run(f, "mg-wfbp", 2, 2, "", "t", slow1, "2099-01-01T00:00:00Z");
    fclose(f);
    struct tu_result r;
    run_analyze((char *[]){"compare", "--predictions", b->plan, b->records, NULL}, &r);
    assert_int_equal(r.status, 0);
    if (!tu_contains(r.out, expected))
        print_error("expected \"%s\" in\n%s\n", expected, r.out);
    assert_true(tu_contains(r.out, expected));
    tu_result_free(&r);
}

static void test_a_miss_says_whether_the_runs_separate_the_methods(void **state)
{
    (void)state;
    struct blind_dir b;
    plan_and_run(&b);
    compare_two_runs_each(&b, 0.160, 0.161, 0.140, 0.141, "(mg-wfbp ran 12% below it; the 95% interval of their "
                          "rates' ratio, 1.08-1.21, lies above 1): missed.");
    compare_two_runs_each(&b, 0.160, 0.165, 0.150, 0.170, "contains 1: the runs do not separate them): missed.");
    compare_two_runs_each(&b, 0.160, 0.165, 0.150, 0.170, "the best method picked at 0 of 1 job size (of the misses, 1 "
                          "where the runs do not separate the two methods).");
    tu_remove_tree(b.dir);
}

static void test_compare_refuses_what_is_not_a_prediction(void **state)
{
    (void)state;
    struct blind_dir b;
    plan_and_run(&b);
    struct tu_result r;
    run_analyze((char *[]){"compare", "--predictions", b.records, b.records, NULL}, &r);   /* a record file */
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "records.jsonl"));
    tu_result_free(&r);
    char *text = tu_read_file(b.plan), bad[160];
    assert_non_null(text);
    char *workers = strstr(text, "\"workers\"");
    assert_non_null(workers);
    memcpy(workers, "\"wrkers\" ", 9);   /* the first cell loses its job size */
    snprintf(bad, sizeof bad, "%s/bad.json", b.dir);
    assert_int_equal(tu_write_file(bad, text), 0);
    free(text);
    run_analyze((char *[]){"compare", "--predictions", bad, b.records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "bad.json: cell 1: \"workers\" is missing"));
    tu_result_free(&r);
    snprintf(bad, sizeof bad, "%s/none.json", b.dir);
    run_analyze((char *[]){"compare", "--predictions", bad, b.records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "none.json"));
    tu_result_free(&r);
    run_analyze((char *[]){"compare", b.records, NULL}, &r);   /* no predictions */
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--predictions FILE"));
    tu_result_free(&r);
    /* runs of none of the planned jobs: nothing to hold the predictions against */
    FILE *f = fopen(b.records, "w");
    assert_non_null(f);
    add_run(f, "bsp-a2a", 2, 2, "", "other", 0.16, "2099-01-01T00:00:00Z");
    fclose(f);
    run_analyze((char *[]){"compare", "--predictions", b.plan, b.records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.out, "| bsp-a2a | 2 | 2 | 0.1 | not run | 0 | - |"));
    assert_true(tu_contains(r.err, "no predicted cell has a run after its prediction"));
    tu_result_free(&r);
    /* --save beside --records: one is before the runs, the other after */
    run_analyze((char *[]){"predict", b.profile, "--save", b.plan, "--records", b.records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "dtrain-analyze compare"));
    tu_result_free(&r);
    tu_remove_tree(b.dir);
}

/* --servers is the servers' layout: the allreduce methods are predicted the same under any of it
 * (colocated servers once made ByteScheduler-A2A's pulls share a link with its pushes). */
static void test_servers_layout_leaves_allreduce_methods_alone(void **state)
{
    (void)state;
    char profile[4096];
    tu_fixture(profile, sizeof profile, "profiles/three-layers.json");
    const char *layouts[] = {"1", "colocated"};
    char *out[2];
    for (int i = 0; i < 2; i++) {
        struct tu_result r;
        run_analyze((char *[]){"predict", profile, "--gpus-per-node", "1", "--nodes", "2,4", "--inter",
                               "0.008mbit:0.5s", "--nodes-per-link", "2", "--servers", (char *)layouts[i], "--methods",
                               "bsp-a2a,wfbp-a2a,mg-wfbp,bytescheduler-a2a", "--format", "csv", NULL}, &r);
        assert_int_equal(r.status, 0);
        out[i] = strdup(r.out);
        tu_result_free(&r);
    }
    assert_string_equal(out[0], out[1]);
    free(out[0]), free(out[1]);
}

/* bench/link_check.sh FILE LINK 4, run as blind.sh runs it. */
static void run_link_check(const char *file, const char *link, struct tu_result *r)
{
    char fixtures[4096], script[4200];
    tu_fixture(fixtures, sizeof fixtures, "");
    snprintf(script, sizeof script, "%s/../../bench/link_check.sh", fixtures);
    assert_int_equal(tu_run((char *[]){"/bin/sh", script, (char *)file, (char *)link, "4", NULL}, NULL, r), 0);
}

/* bench/link_check.sh on a link's measurement: a machine that ran the shaped link at 53-61% of its
 * rate from 2 MB up (a real measurement, kept) is named as distorting it, with its worst size and
 * the share; so is one whose largest size passes where a middle one does not (worked by hand);
 * one at the studies' 7.0 ms a MiB (worked by hand) is not; a missing file or a LINK that is no
 * rate is said. */
static void test_link_check_names_a_machine_that_distorts_the_link(void **state)
{
    (void)state;
    char distorted[4096], studied[4096], mid_sizes[4096];
    tu_fixture(distorted, sizeof distorted, "commbench/link-distorted-5gbit.out");
    tu_fixture(mid_sizes, sizeof mid_sizes, "commbench/link-mid-sizes-5gbit.out");
    tu_fixture(studied, sizeof studied, "commbench/link-as-studied-5gbit.out");
    struct tu_result r;
    run_link_check(distorted, "5gbit", &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "this machine distorts the shaped link: a 4194304-byte allreduce of 2 ranks "
                                   "across the link ran at 0.083 GB/s busbw, 53% of the shaped 0.156"));
    tu_result_free(&r);
    run_link_check(mid_sizes, "5gbit", &r);   /* the largest size at 89%, 2 MiB at 50%: the worst told */
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "a 2097152-byte allreduce of 2 ranks across the link ran at 0.078 GB/s busbw, 50%"));
    tu_result_free(&r);
    run_link_check(studied, "5gbit", &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "allreduces of 1 MiB to 67108864 bytes at 96% of the shaped rate or more, 4096 "
                                   "bytes in 0.14 ms"));
    tu_result_free(&r);
    run_link_check(studied, "10gbit", &r);   /* the same numbers against twice the rate: 48% */
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "48% of the shaped 0.312"));
    tu_result_free(&r);
    run_link_check("/nonexistent/ours-5gbit.1.out", "5gbit", &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "cannot read /nonexistent/ours-5gbit.1.out"));
    tu_result_free(&r);
    run_link_check(studied, "fast", &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "LINK \"fast\""));
    tu_result_free(&r);
}

/* Writes text to dir/name, the folders of name on the way made (dir exists). */
static void put_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    assert_true(snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path);
    assert_int_equal(make_parent_dirs(path), 0);
    assert_int_equal(tu_write_file(path, text), 0);
}

/* bench/blind.sh BINDIR OUTDIR with SETTINGS=- (nothing run: the halves summed from what OUTDIR
 * holds), the environment's NULL-ended pairs (name, value, ...) added. */
static void run_blind_sums(const char *outdir, const char *const *pairs, struct tu_result *r)
{
    char fixtures[4096], script[4200], bindir[4096];
    tu_fixture(fixtures, sizeof fixtures, "");
    snprintf(script, sizeof script, "%s/../../bench/blind.sh", fixtures);
    snprintf(bindir, sizeof bindir, "%s", tu_bin("dtrain-analyze"));
    *strrchr(bindir, '/') = '\0';
    struct tu_env env = {0};
    tu_env_basics(&env);
    tu_env_set(&env, "SETTINGS", "-");
    for (; pairs[0]; pairs += 2)
        tu_env_set(&env, pairs[0], pairs[1]);
    assert_int_equal(tu_run((char *[]){"/bin/sh", script, bindir, (char *)outdir, NULL}, env.vars, r), 0);
    tu_env_free(&env);
}

/* bench/blind.sh's sums over what OUTDIR holds (SETTINGS naming none of the grid: nothing run):
 * each half under its own header, a setting whose link this machine distorted named there and
 * left out of the sum; a half with every setting left out says so instead of summing nothing. */
static void test_blind_sums_each_half_naming_what_it_leaves_out(void **state)
{
    (void)state;
    struct blind_dir b;
    plan_and_run(&b);
    char *plan = tu_read_file(b.plan), *records = tu_read_file(b.records);
    assert_non_null(plan), assert_non_null(records);
    put_file(b.dir, "grid.txt", "tune  one  three.json  1  1  4  5gbit  2:1\ntune  two  three.json  1  1  4  5gbit  2:1\n");
    put_file(b.dir, "one/predictions.json", plan), put_file(b.dir, "one/dir/runs/records.jsonl", records);
    put_file(b.dir, "two/predictions.json", plan), put_file(b.dir, "two/dir/runs/records.jsonl", records);
    put_file(b.dir, "one/distorted", "this machine distorts the shaped link: planted");
    free(plan), free(records);
    char grid[200];
    snprintf(grid, sizeof grid, "%s/grid.txt", b.dir);
    const char *const pairs[] = {"HALVES", "tune check", "GRID", grid, NULL};
    struct tu_result r;
    run_blind_sums(b.dir, pairs, &r);
    assert_int_equal(r.status, 0);
    const char *header = strstr(r.out, "## the tune half\nleft out of the tune half: one (this machine distorts the "
                                       "shaped link: planted)\n## three, batch 1, tag t");
    assert_non_null(header);
    assert_true(tu_contains(header, "/two/predictions.json"));
    assert_false(tu_contains(r.out, "/one/predictions.json"));
    assert_false(tu_contains(r.out, "the check half"));   /* no setting of it here */
    tu_result_free(&r);
    put_file(b.dir, "two/distorted", "this machine distorts the shaped link: planted too");
    run_blind_sums(b.dir, pairs, &r);
    assert_true(tu_contains(r.out, "left out of the tune half: two (this machine distorts the shaped link: planted "
                                   "too)\nno setting of the tune half left to sum"));
    tu_result_free(&r);
    tu_remove_tree(b.dir);
}

/* DILATE replaces every setting's dilation: one that is not a number above 0 is refused by name
 * before anything runs; an OUTDIR holding no setting yet sums nothing, without an error. */
static void test_blind_refuses_a_dilation_that_is_not_a_number(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-blind-dilate-XXXXXX";
    assert_non_null(mkdtemp(dir));
    const char *bad[] = {"abc", "0", "0.0", "-2", "1.5.", "8x"};
    struct tu_result r;
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        run_blind_sums(dir, (const char *const[]){"DILATE", bad[i], NULL}, &r);
        assert_int_equal(r.status, 2);
        assert_true(tu_contains(r.err, "DILATE \"") && tu_contains(r.err, bad[i]));
        tu_result_free(&r);
    }
    run_blind_sums(dir, (const char *const[]){"DILATE", "8", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_false(tu_contains(r.out, "## the")), assert_false(tu_contains(r.err, "unable to open"));
    tu_result_free(&r);
    tu_remove_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saved_predictions_say_when_and_how_each_job_runs),
        cmocka_unit_test(test_compare_reports_errors_worst_and_best_method),
        cmocka_unit_test(test_a_miss_says_whether_the_runs_separate_the_methods),
        cmocka_unit_test(test_compare_refuses_what_is_not_a_prediction),
        cmocka_unit_test(test_servers_layout_leaves_allreduce_methods_alone),
        cmocka_unit_test(test_link_check_names_a_machine_that_distorts_the_link),
        cmocka_unit_test(test_blind_sums_each_half_naming_what_it_leaves_out),
        cmocka_unit_test(test_blind_refuses_a_dilation_that_is_not_a_number),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
