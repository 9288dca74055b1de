/* test_record.c - run records: written and read back, bad lines named, concurrent writers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "record.h"
#include "testutil.h"

static char path[64];

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/dtrain-test-record-%d.jsonl", (int)getpid());
    unlink(path);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

/* A record of `world` ranks on hosts gn01.. (two ranks a host). */
static void sample(struct run_record *r, int world, char (*hosts)[256], double *seconds, double *accuracy)
{
    memset(r, 0, sizeof *r);
    snprintf(r->job_id, sizeof r->job_id, "4711");
    snprintf(r->job_name, sizeof r->job_name, "sweep \"quoted\" name");
    snprintf(r->tag, sizeof r->tag, "1gbit");
    snprintf(r->step_id, sizeof r->step_id, "0");
    snprintf(r->nodelist, sizeof r->nodelist, "gn[01-02]");
    r->nodes = (world + 1) / 2, r->gpus_per_node = 2, r->world_size = world;
    for (int i = 0; i < world; i++)
        snprintf(hosts[i], 256, "gn%02d", i / 2 + 1);
    r->hostnames = hosts;
    snprintf(r->model, sizeof r->model, "resnet18");
    snprintf(r->dataset, sizeof r->dataset, "bigmnist");
    snprintf(r->optimizer, sizeof r->optimizer, "adam");
    snprintf(r->backend, sizeof r->backend, "cpu");
    snprintf(r->comm, sizeof r->comm, "allreduce");
    r->batch_per_replica = 512, r->epochs = 10, r->threads = 4, r->lr = 0.04, r->steps_per_rank = 35158;
    r->runtime_seconds = 14812.5, r->peak_data_per_sec = 5000.25, r->final_data_per_sec = 4900.5;
    r->epochs_done = 2;
    seconds[0] = 1480.25, seconds[1] = 1479.5, accuracy[0] = -1, accuracy[1] = 0.98125;
    r->epoch_seconds = seconds, r->epoch_accuracy = accuracy;
    snprintf(r->start_time, sizeof r->start_time, "2026-11-21T09:00:00Z");
    snprintf(r->end_time, sizeof r->end_time, "2026-11-21T13:07:00Z");
    snprintf(r->exit_state, sizeof r->exit_state, "completed");
    snprintf(r->version, sizeof r->version, "0.1.0");
}

static char *read_file(void)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    rewind(f);
    char *text = calloc(1, (size_t)size + 1);
    assert_int_equal(fread(text, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    return text;
}

static void test_record_round_trip(void **state)
{
    (void)state;
    char hosts[4][256];
    double seconds[2], accuracy[2];
    struct run_record r, back;
    sample(&r, 4, hosts, seconds, accuracy);
    struct dt_err err;
    assert_int_equal(record_append(path, &r, &err), 0);
    assert_int_equal(record_append(path, &r, &err), 0);
    char *text = read_file();
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    assert_non_null(strchr(nl + 1, '\n'));   /* two lines, one record each */
    *nl = '\0';
    int parsed = record_parse(text, &back, &err);
    if (parsed < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(parsed, 0);
    assert_string_equal(back.job_name, "sweep \"quoted\" name");
    assert_string_equal(back.nodelist, "gn[01-02]");
    assert_string_equal(back.tag, "1gbit");
    assert_int_equal(back.world_size, 4);
    assert_string_equal(back.hostnames[3], "gn02");
    assert_int_equal(back.steps_per_rank, 35158);
    assert_int_equal(back.epochs_done, 2);
    assert_true(back.epoch_accuracy[0] < 0);   /* not evaluated: null */
    assert_float_equal(back.epoch_accuracy[1], 0.98125, 1e-12);
    assert_float_equal(back.peak_data_per_sec, 5000.25, 1e-9);
    assert_string_equal(back.exit_state, "completed");
    record_free(&back);
    free(text);
}

static void test_bad_record_lines_name_the_field(void **state)
{
    (void)state;
    struct run_record r;
    struct dt_err err;
    assert_int_equal(record_parse("not json", &r, &err), -1);
    assert_true(tu_contains(err.msg, "not a JSON object"));
    assert_int_equal(record_parse("{\"record_version\": 2}", &r, &err), -1);
    assert_true(tu_contains(err.msg, "record_version 2 is not 1"));
    char hosts[2][256];
    double seconds[2], accuracy[2];
    sample(&r, 2, hosts, seconds, accuracy);
    struct dt_err werr;
    assert_int_equal(record_append(path, &r, &werr), 0);
    char *text = read_file();
    /* break one field after the other */
    static const struct { const char *from, *to, *says; } breaks[] = {
        {"\"world_size\":2", "\"world_size\":\"2\"", "\"world_size\" is missing or not an integer"},
        {"\"model\":\"resnet18\"", "\"model\":18", "\"model\" is missing or not a string"},
        {"\"hostnames\":[\"gn01\",\"gn01\"]", "\"hostnames\":[\"gn01\"]", "not a list of world_size (2) names"},
        {"\"runtime_seconds\":", "\"runtime\":", "\"runtime_seconds\" is missing"},
    };
    for (size_t i = 0; i < sizeof breaks / sizeof breaks[0]; i++) {
        char *at = strstr(text, breaks[i].from);
        assert_non_null(at);
        char *line = calloc(1, strlen(text) + 64);
        memcpy(line, text, (size_t)(at - text));
        strcat(line, breaks[i].to);
        strcat(line, at + strlen(breaks[i].from));
        assert_int_equal(record_parse(line, &r, &err), -1);
        assert_true(tu_contains(err.msg, breaks[i].says));
        free(line);
    }
    free(text);
}

static void test_concurrent_writers_never_tear_a_line(void **state)
{
    (void)state;
    enum { WRITERS = 8, EACH = 40, WORLD = 1500 };   /* lines of ~20 KB */
    static char hosts[WORLD][256];
    double seconds[2], accuracy[2];
    struct run_record r;
    sample(&r, WORLD, hosts, seconds, accuracy);
    for (int w = 0; w < WRITERS; w++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            struct dt_err err;
            snprintf(r.job_id, sizeof r.job_id, "%d", w);
            for (int i = 0; i < EACH; i++)
                if (record_append(path, &r, &err) < 0)
                    _exit(1);
            _exit(0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status;
        wait(&status);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    char *text = read_file(), *save = NULL;
    int lines = 0, per_writer[WRITERS] = {0};
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        struct run_record back;
        struct dt_err err;
        int parsed = record_parse(line, &back, &err);
        if (parsed < 0)
            print_error("line %d: %s\n", lines + 1, err.msg);
        assert_int_equal(parsed, 0);
        per_writer[atoi(back.job_id)]++;
        record_free(&back);
        lines++;
    }
    assert_int_equal(lines, WRITERS * EACH);
    for (int w = 0; w < WRITERS; w++)
        assert_int_equal(per_writer[w], EACH);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_record_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_record_lines_name_the_field, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_writers_never_tear_a_line, setup, teardown),
    };
    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
