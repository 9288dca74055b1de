/* test_slow_cost.c - dtrain-analyze nodes says what each run's slowest rank cost, from the
 * records' compute time a step of every rank (tests/fixtures/slow-rank/records.jsonl, three runs
 * of 4 ranks on gn01-gn04, worked by hand below), and which node cost the most; a record whose
 * compute times do not match its ranks is refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/record.h"
#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* Run 101: 20.0, 20.5, 40.0, 21.0 ms a step, 1000 steps, 60 s: the others' median 20.5, so gn03's
 * rank cost 1000 x 19.5 ms = 19.5 s: 40.5 s without it (32.5%). Run 102: 10, 10, 15, 10 ms, 2000
 * steps, 50 s: 10 s (20%). Run 103: gn02 1 ms slower, 1000 steps: 1 s of 20 (5%). gn03: 29.5 of
 * the 30.5 s (97%). */
static void test_nodes_tells_what_the_slowest_rank_cost(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "slow-rank/records.jsonl");
    struct tu_result r;
    run_analyze((char *[]){"nodes", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 101 | 4 | 2 | gn03 | 40.0 ms | 20.5 ms | 60.0 s | 40.5 s | 32% |"));
    assert_true(tu_contains(r.out, "| 102 | 4 | 2 | gn03 | 15.0 ms | 10.0 ms | 50.0 s | 40.0 s | 20% |"));
    assert_true(tu_contains(r.out, "| 103 | 4 | 1 | gn02 | 11.0 ms | 10.0 ms | 20.0 s | 19.0 s | 5% |"));
    assert_true(tu_contains(r.out, "Most of it: gn03, 29.5 s of the 30.5 s its runs would have saved (97%)."));
    tu_result_free(&r);
    run_analyze((char *[]){"nodes", "--format", "csv", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "101,4,2,gn03,40.000,20.500,60.0,40.5,32.5\n"));
    tu_result_free(&r);
}

/* rank_compute_us read back whole microseconds to ms; a list that is not one a rank is refused. */
static void test_rank_compute_times_are_read_back(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "slow-rank/records.jsonl");
    char *text = tu_read_file(path);
    assert_non_null(text);
    text[strcspn(text, "\n")] = '\0';
    struct run_record rec;
    struct dt_err err;
    assert_int_equal(record_parse(text, &rec, &err), 0);
    assert_non_null(rec.rank_compute_read);
    assert_float_equal(rec.rank_compute_read[1], 20.5, 1e-12);
    record_free(&rec);
    char *list = strstr(text, "[20000,20500,40000,21000]");
    assert_non_null(list);
    memcpy(list, "[20000,20500,40000]      ", 25);   /* 3 times for 4 ranks */
    assert_int_equal(record_parse(text, &rec, &err), -1);
    assert_true(tu_contains(err.msg, "\"rank_compute_us\" is not a list of world_size (4) times"));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nodes_tells_what_the_slowest_rank_cost),
        cmocka_unit_test(test_rank_compute_times_are_read_back),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
