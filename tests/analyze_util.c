/* analyze_util.c - the analyzer's tests' helpers (analyze_util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/analyze_util.h"

void run_analyze(char **args, struct tu_result *r)
{
    assert_int_equal(tu_run_tool("dtrain-analyze", args, r), 0);
}

void fixture(char *path, size_t size, const char *name)
{
    char relative[512];
    snprintf(relative, sizeof relative, "tables/%s", name);
    tu_fixture(path, size, relative);
}

/* The fixture's records without its broken line (records/runs.jsonl has one on purpose). */
void clean_records(char *out, size_t size)
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

/* Writes the fixture's first record changed: job shape, steps, runtime, and one field set to a
 * JSON value (NULL: none). */
void write_record2(FILE *out, int nodes, int ranks, long steps, double runtime, const char *key, json_t *value,
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

void write_record(FILE *out, int nodes, int ranks, long steps, double runtime, const char *key, json_t *value)
{
    write_record2(out, nodes, ranks, steps, runtime, key, value, NULL, NULL);
}

/* A resumed run's runtime is of the steps after its resume (resumed_at_step): 2 ranks, 938 steps,
 * resumed after step 469, 25 s for the last 469 steps against the baseline's 100 s for 1876. By
 * runtime the speedup would read 4.00; by the samples of the timed part (469 x 2 x 64 = 60032 in
 * 25 s against 120064 in 100 s) it is 2.00, and the table says why it goes by samples/s. */

/* How many lines of text contain needle. */
int lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char copy[2048];
        snprintf(copy, sizeof copy, "%.*s", (int)(len < sizeof copy ? len : sizeof copy - 1), line);
        n += strstr(copy, needle) != NULL;
    }
    return n;
}

/* The audit of a copy of fixture whose text `from` is overwritten by `slip` (no longer than it):
 * it exits 1 with one finding, which says `expected`. */
void assert_planted_slip_found(const char *fixture, const char *from, const char *slip, const char *expected)
{
    char path[4096], planted[] = "/tmp/dtrain-test-published-XXXXXX";
    tu_fixture(path, sizeof path, fixture);
    char *text = tu_read_file(path);
    assert_non_null(text);
    char *cell = strstr(text, from);
    assert_non_null(cell);
    memcpy(cell, slip, strlen(slip));
    int fd = mkstemp(planted);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tu_write_file(planted, text), 0);
    free(text);
    struct tu_result r;
    run_analyze((char *[]){"audit", planted, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    assert_true(tu_contains(r.out, expected));
    tu_result_free(&r);
    unlink(planted);
}
