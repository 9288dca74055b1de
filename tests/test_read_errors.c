/* test_read_errors.c - a read error is not the end of a file. The analyzer's readers took EIO for
 * the end: a records file that failed at a line boundary tabled the runs before it and exited 0,
 * one that failed mid-line blamed "a torn last line", and the table parsers said nothing. Here a
 * stream (fopencookie) hands out the first bytes of a real input, then fails with EIO. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis/inputs.h"
#include "common/dt_error.h"
#include "formats/method_table.h"
#include "formats/table.h"
#include "analysis/throughput.h"
#include "tests/testutil.h"

/* A stream of text that fails with EIO once fail_at bytes have been read. */
struct failing {
    const char *text;
    size_t length, at, fail_at;
};

static ssize_t failing_read(void *cookie, char *buffer, size_t size)
{
    struct failing *s = cookie;
    if (s->at >= s->fail_at) {
        errno = EIO;
        return -1;
    }
    size_t end = s->fail_at < s->length ? s->fail_at : s->length;   /* past the text: its end */
    size_t n = end - s->at < size ? end - s->at : size;
    memcpy(buffer, s->text + s->at, n);
    s->at += n;
    return (ssize_t)n;
}

static FILE *open_failing(struct failing *s)
{
    cookie_io_functions_t io = {.read = failing_read};
    FILE *f = fopencookie(s, "r", io);
    assert_non_null(f);
    return f;
}

/* The byte just after the end of the line-th line of text. */
static size_t after_line(const char *text, int line)
{
    const char *at = text;
    for (int i = 0; i < line; i++)
        at = strchr(at, '\n') + 1;
    return (size_t)(at - text);
}

/* read_records_from over text failing at fail_at; what it wrote to stderr into said. */
static void read_failing(const char *text, size_t fail_at, struct record_set *set, char *said, size_t size)
{
    struct failing s = {.text = text, .length = strlen(text), .fail_at = fail_at};
    char log[] = "/tmp/dtrain-test-read-XXXXXX";
    int fd = mkstemp(log), saved = dup(STDERR_FILENO);
    assert_true(fd >= 0 && saved >= 0);
    fflush(stderr);
    dup2(fd, STDERR_FILENO);
    FILE *f = open_failing(&s);
    read_records_from(f, "runs.jsonl", set);
    fclose(f);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, said, size - 1, 0);
    said[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(log);
}

static void test_records_read_error_is_said_and_counted(void **state)
{
    (void)state;
    char path[4096], said[4096];
    tu_fixture(path, sizeof path, "records/runs.jsonl");
    char *text = tu_read_file(path);
    assert_non_null(text);
    struct record_set three = {0}, at_boundary = {0}, mid_line = {0};
    /* the first three lines as a file of their own, read cleanly: what EIO after them must match,
     * with one more line counted as not read */
    char clean[65536];
    snprintf(clean, sizeof clean, "%.*s", (int)after_line(text, 3), text);
    read_failing(clean, strlen(clean) + 1000000, &three, said, sizeof said);
    read_failing(text, after_line(text, 3), &at_boundary, said, sizeof said);
    print_message("EIO after line 3: %s", said);
    assert_int_equal(at_boundary.count, three.count);
    assert_int_equal(at_boundary.lines_skipped, three.lines_skipped + 1);
    assert_true(tu_contains(said, "runs.jsonl: a read error after line 3 (Input/output error)"));
    read_failing(text, after_line(text, 2) + 40, &mid_line, said, sizeof said);
    print_message("EIO 40 bytes into line 3: %s", said);
    assert_true(tu_contains(said, "(cut short by a read error)"));
    assert_null(strstr(said, "torn"));
    assert_true(tu_contains(said, "runs.jsonl: a read error after line 3 (Input/output error)"));
    assert_true(mid_line.lines_skipped >= 2);
    free_records(&three), free_records(&at_boundary), free_records(&mid_line);
    free(text);
}

static void test_table_read_error_fails_the_parse(void **state)
{
    (void)state;
    const char *text = "| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |\n"
                       "|---|---|---|---|---|---|---|---|\n"
                       "| 1 | 1 | 1 | 64 | 938 | 0:01:40 | - | gn01 |\n"
                       "| 2 | 1 | 1 | 64 | 469 | 0:00:55 | - | gn[01-02] |\n";
    struct failing s = {.text = text, .length = strlen(text), .fail_at = after_line(text, 3)};
    FILE *f = open_failing(&s);
    struct table_set set = {0};
    struct dt_err err = {0};
    assert_int_equal(table_parse_stream(f, "lab.md", &set, &err), -1);
    fclose(f);
    print_message("%s\n", err.msg);
    assert_true(tu_contains(err.msg, "lab.md: a read error after line 3 (Input/output error)"));
    table_set_free(&set);
}

/* A method comparison table cut by EIO: the parse fails, naming the file and the last line read. */
static void test_method_table_read_error_fails_the_parse(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "methods-table/three.md");
    char *text = tu_read_file(path);
    assert_non_null(text);
    struct failing s = {.text = text, .length = strlen(text), .fail_at = after_line(text, 5)};
    FILE *f = open_failing(&s);
    struct method_set set = {0};
    struct dt_err err = {0};
    assert_int_equal(method_table_parse(f, "three.md", &set, &err), -1);
    fclose(f);
    print_message("%s\n", err.msg);
    assert_true(tu_contains(err.msg, "three.md: a read error after line 5 (Input/output error)"));
    method_set_free(&set);
    free(text);
}

/* A notebook cut by EIO: the runs before it kept, the error said (it read as a shorter notebook,
 * silently, before). */
static void test_notebook_read_error_is_said(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "notebooks/two-nodes.md");
    char *text = tu_read_file(path);
    assert_non_null(text);
    struct failing s = {.text = text, .length = strlen(text), .fail_at = after_line(text, 17)};
    FILE *f = open_failing(&s);
    struct log_runs runs = {0};
    struct dt_err err = {0};
    assert_int_equal(throughput_read(f, "two-nodes.md", &runs, &err), -1);
    fclose(f);
    print_message("%s\n", err.msg);
    assert_true(tu_contains(err.msg, "two-nodes.md: a read error after line 17 (Input/output error)"));
    assert_int_equal(runs.count, 2);   /* gpu3-95.2 and gpu7-61.5, read before it */
    free(runs.runs);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_read_error_is_said_and_counted),
        cmocka_unit_test(test_table_read_error_fails_the_parse),
        cmocka_unit_test(test_method_table_read_error_fails_the_parse),
        cmocka_unit_test(test_notebook_read_error_is_said),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
