/* test_timeline_sum.c - dtrain-analyze timeline's sums over a long trace: each step's phases read
 * once (a scan of every event for every step took 89 s for 4,000 steps and never ended for 16,000),
 * and a step's sums hold only the spans that begin inside it, the next step's first span beginning
 * the microsecond it ends included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/timeline_sum.h"
#include "tests/testutil.h"

/* A trace of steps of 1 ms back to back: forward 0.3, backward 0.4, a transfer from 0.5 to 0.7,
 * exchange wait 0.2, update 0.1. */
static void write_trace(const char *path, int steps)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"args\":{\"name\":\"rank 0\"}}", f);
    for (int s = 0; s < steps; s++) {
        double t = s * 1000.0;
        fprintf(f, ",{\"cat\":\"step\",\"name\":\"step %d\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":1000}", s, t);
        fprintf(f, ",{\"cat\":\"step\",\"name\":\"forward\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":300}", t);
        fprintf(f, ",{\"cat\":\"step\",\"name\":\"backward\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":400}", t + 300);
        fprintf(f, ",{\"cat\":\"exchange\",\"name\":\"iallreduce\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":200}", t + 500);
        fprintf(f, ",{\"cat\":\"step\",\"name\":\"exchange\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":200}", t + 700);
        fprintf(f, ",{\"cat\":\"step\",\"name\":\"update\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":100}", t + 900);
    }
    fputs("]\n", f);
    assert_int_equal(fclose(f), 0);
}

static void test_a_long_trace_is_summed_step_by_step(void **state)
{
    (void)state;
    char path[] = "/tmp/dtrain-test-trace-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    write_trace(path, 16000);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct timeline_sum sum;
    struct dt_err err;
    assert_int_equal(timeline_sum_file(path, &sum, &err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    unlink(path);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    print_message("16,000 steps summed in %.2f s\n", took);
    assert_int_equal(sum.steps, 16000);
    assert_string_equal(sum.process, "rank 0");
    assert_float_equal(sum.forward, 0.3, 1e-9);   /* not the next step's forward too */
    assert_float_equal(sum.backward, 0.4, 1e-9);
    assert_float_equal(sum.exchange, 0.2, 1e-9);
    assert_float_equal(sum.update, 0.1, 1e-9);
    assert_float_equal(sum.transfers, 1.0, 1e-9);
    assert_float_equal(sum.overlap, 0.2, 1e-9);
    /* not a speed measurement: a bound no linear pass comes near (0.4 s here) and the quadratic
     * one could not meet (about 25 minutes) */
    assert_true(took < 60);
    timeline_sum_free(&sum);
}

/* Two ranks' traces of one run, each on its own clock with its wall origin: rank 1 opened its
 * trace 0.5 s after rank 0 and starts layer 0's transfer with it, layer 1's 2 ms and layer 2's
 * 4 ms after it, every step. */
static void write_rank(const char *path, int rank, double wall_origin, double ts_shift)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\","
            "\"wall_origin\":%.6f}}", rank, rank, wall_origin);
    for (int s = 0; s < 10; s++) {
        double t = s * 100000.0 + ts_shift;
        fprintf(f, ",{\"cat\":\"step\",\"name\":\"step %d\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":100000}", s, t);
        for (int layer = 0; layer < 3; layer++)
            fprintf(f, ",{\"cat\":\"transfer\",\"name\":\"allreduce L%d.0\",\"ph\":\"X\",\"ts\":%.0f,\"dur\":500}",
                    layer, t + 1000.0 * layer + (rank ? 2000.0 * layer : 0));
    }
    fputs("]\n", f);
    assert_int_equal(fclose(f), 0);
}

static void test_ranks_start_lag_on_one_clock(void **state)
{
    (void)state;
    char a[] = "/tmp/dtrain-test-lag0-XXXXXX", b[] = "/tmp/dtrain-test-lag1-XXXXXX";
    int fa = mkstemp(a), fb = mkstemp(b);
    assert_true(fa >= 0 && fb >= 0);
    close(fa), close(fb);
    write_rank(a, 0, 1000.0, 0);
    write_rank(b, 1, 1000.5, -500000.0);   /* 0.5 s later by the wall clock: the same moment 0.5 s earlier */
    struct timeline_sum sums[2];
    struct dt_err err;
    assert_int_equal(timeline_sum_file(a, &sums[0], &err), 0);
    assert_int_equal(timeline_sum_file(b, &sums[1], &err), 0);
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    assert_non_null(out);
    const char *paths[] = {"r0", "r1"};
    timeline_sum_print(out, paths, sums, 2, false);
    fclose(out);
    assert_true(tu_contains(text, "transfers start behind the first trace's, median / p90 ms |"));
    assert_true(tu_contains(text, "| 0.000 | -"));
    assert_true(tu_contains(text, "| 2.000 / 4.000 |"));
    free(text);
    timeline_sum_free(&sums[0]), timeline_sum_free(&sums[1]);
    unlink(a), unlink(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_long_trace_is_summed_step_by_step),
        cmocka_unit_test(test_ranks_start_lag_on_one_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
