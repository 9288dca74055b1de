/* test_run_record.c - what dtrain-train's record says of a spare's takeover: how long training
 * stood still, from the failure's time the sbatch template hands over (DTRAIN_FAILED_AT, to the
 * millisecond) to the first step after the resume. Whole seconds on both sides, and the run's end
 * less its training time, once made a 5 s stand-still read 0 s or vanish (a cluster test failed
 * on it about one time in ten). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "trainer/run_record.h"
#include "tests/testutil.h"

static double wall_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* The record of a completed run that began training started_after seconds after the failure
 * (negative: before it, as a skewed clock would have it); its text, to be freed. */
static char *record_after_failure(double started_after, double run_seconds)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/dtrain-test-run-record-%d.jsonl", (int)getpid());
    unlink(path);
    double started = wall_now() - run_seconds;
    char failed[32];
    snprintf(failed, sizeof failed, "%.3f", started - started_after);
    setenv("DTRAIN_REPLACED", "gn03 by gn04 (a rank killed)", 1);
    setenv("DTRAIN_FAILED_AT", failed, 1);
    struct train_config cfg = {.model = "lenet", .dataset = "synthetic", .optimizer = "adam", .backend = "cpu",
                               .batch = 32, .max_steps = 10, .threads = 1};
    /* a run of run_seconds whose last minutes went to an evaluation: the start is its own fact */
    struct train_result res = {.steps = 10, .seconds = run_seconds / 3, .started_at = started, .resumed = 1};
    struct record_settings settings = {.path = path, .tag = "", .failure_text = NULL};
    struct dt_err err = {0};
    int rc = run_record_write(&settings, comm_single(), &cfg, &res, (long)started, NULL, &err);
    if (rc != 0)
        fail_msg("run_record_write: %s", err.msg);
    char *text = tu_read_file(path);
    assert_non_null(text);
    unlink(path);
    char lock[80];
    snprintf(lock, sizeof lock, "%s.lock", path);
    unlink(lock);
    unsetenv("DTRAIN_REPLACED");
    unsetenv("DTRAIN_FAILED_AT");
    return text;
}

static void test_stand_still_to_the_second(void **state)
{
    (void)state;
    const double after[] = {5.4, 0.4, 1.6, 47.2};
    const char *said[] = {"stood still 5 s", "stood still 0 s", "stood still 2 s", "stood still 47 s"};
    for (size_t i = 0; i < sizeof after / sizeof after[0]; i++) {
        char *text = record_after_failure(after[i], 30);
        if (!strstr(text, said[i]))
            fail_msg("started %.1f s after the failure, the record says: %s", after[i], text);
        free(text);
    }
}

/* The failure's time is the batch host's clock, the start rank 0's: under a second's skew is none;
 * more is not believed (no stand-still said rather than a false one). */
static void test_a_skewed_clock(void **state)
{
    (void)state;
    char *text = record_after_failure(-0.4, 10);
    assert_non_null(strstr(text, "\"replaced\":\"gn03 by gn04 (a rank killed); training stood still 0 s"));
    free(text);
    text = record_after_failure(-3, 10);
    assert_non_null(strstr(text, "\"replaced\":\"gn03 by gn04 (a rank killed)\""));
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stand_still_to_the_second),
        cmocka_unit_test(test_a_skewed_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
