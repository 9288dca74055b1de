/* test_analyze.c - dtrain-analyze audit: the seeds' bigMNIST document (when ../shared is there)
 * and the project's own tables with one of each error; H:MM:SS. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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
    const char *dir = getenv("DTRAIN_FIXTURES");
    snprintf(path, size, "%s/tables/%s", dir ? dir : "tests/fixtures", name);
}

static void test_durations(void **state)
{
    (void)state;
    assert_int_equal(duration_parse("14:36:52"), 14 * 3600 + 36 * 60 + 52);
    assert_int_equal(duration_parse("0:51:27"), 51 * 60 + 27);
    assert_int_equal(duration_parse("123:00:01"), 123 * 3600 + 1);
    const char *bad[] = {"", "1:2:3", "1:60:00", "1:00:60", "x:00:00", "1:00", "1:00:00 ", "-1:00:00"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(duration_parse(bad[i]), -1);
    char out[24];
    duration_format(15 * 3600 + 20 * 60 + 10.4, out);
    assert_string_equal(out, "15:20:10");
}

static void test_audit_finds_every_error_of_the_seeds_bigmnist_table(void **state)
{
    (void)state;
    const char *shared = getenv("DTRAIN_SHARED");
    if (!shared) {
        print_message("SKIP: ../shared/seeds not present\n");
        skip();
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/seeds/003_b04018c01c393b57.txt", shared);
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

static void test_audit_of_own_tables(void **state)
{
    (void)state;
    char path[4096];
    struct tu_result r;
    fixture(path, sizeof path, "clean.md");
    audit(path, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "audit: 1 table, 7 rows read, 0 lines skipped; 0 findings"));
    tu_result_free(&r);

    fixture(path, sizeof path, "broken.md");
    audit(path, &r);
    assert_int_equal(r.status, 1);
    const char *expected[] = {
        ".md:8: Avg runtime 0:58:00 of 1 node x 1 GPU is not the mean of its 3 runs (1:00:00)",
        ".md:9: Epoch 0, but the other runs of 2 nodes x 1 GPU have 2",
        ".md:10: node list is malformed: invalid hostlist \"gn[03-05-07]\": a second '-' in one range",
        ".md:11: 2 nodes, but the node list gn04 names 1",
        ".md:13: speedup 2.5 of 2 nodes x 1 GPU does not follow from the runtimes: 0:58:00 / 0:30:00 = 1.93",
        ".md:14: 625 steps, but 60000 samples / (batch 64 x 2 GPUs) make 469 an epoch",
        "audit: 1 table, 11 rows read, 1 lines skipped; 7 findings",
    };
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
        assert_true(tu_contains(r.out, expected[i]));
    assert_true(tu_contains(r.err, "broken.md:16: Runtime is not H:MM:SS"));   /* skipped, and said */
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_audit_finds_every_error_of_the_seeds_bigmnist_table),
        cmocka_unit_test(test_audit_of_own_tables),
    };
    return cmocka_run_group_tests_name("analyze", tests, NULL, NULL);
}
