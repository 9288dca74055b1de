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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_long_trace_is_summed_step_by_step),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
