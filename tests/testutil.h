/* testutil.h - what the tests share: running a tool with a given environment, env fixtures. */
#ifndef TESTUTIL_H
#define TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* Captured output is cut at this size; no test needs more. */
#define TU_OUTPUT_MAX (1 << 20)

struct tu_result {
    int status;          /* exit status, or 128 + signal */
    char *out;           /* stdout, NUL-terminated (free with tu_result_free) */
    char *err;           /* stderr */
    long elapsed_ms;
};

/* Runs argv with the environment envp (NULL: inherit), waits, captures both streams. */
int tu_run(char *const *argv, char *const *envp, struct tu_result *result);
void tu_result_free(struct tu_result *result);

/* Runs the built tool with args (NULL-terminated, at most 30) and this process's PATH and HOME
 * only; 0, or -1 when it could not be started. */
int tu_run_tool(const char *tool, char *const *args, struct tu_result *result);

/* A file's text (at most TU_OUTPUT_MAX bytes), NUL-terminated; NULL when it cannot be read. The
 * caller frees it. */
char *tu_read_file(const char *path);

/* Writes text to path (created or truncated). 0, or -1 when the file cannot be written. */
int tu_write_file(const char *path, const char *text);

/* Full path of a built tool: $DTRAIN_TEST_BIN/name. */
const char *tu_bin(const char *name);

/* An environment being assembled for a test: NAME=value strings, NULL-terminated. */
struct tu_env {
    char **vars;
    size_t count;
};

/* Adds the lines of a fixture file (NAME=value; '#' comments) from $DTRAIN_FIXTURES/env/. */
void tu_env_load(struct tu_env *env, const char *fixture);
/* Sets NAME=value, replacing an earlier value of NAME. */
void tu_env_set(struct tu_env *env, const char *name, const char *value);
void tu_env_unset(struct tu_env *env, const char *name);
/* PATH and HOME from this process, so programs can be found. */
void tu_env_basics(struct tu_env *env);
void tu_env_free(struct tu_env *env);

/* Expands a hostlist expression and joins the names with ' ' (scontrol's shape); NULL when the
 * expression is rejected. The caller frees the string. */
char *tu_expand_joined(const char *expr);

/* The path of a file below the project's fixtures: tests/fixtures, or $DTRAIN_FIXTURES when the
 * suite runs from elsewhere. */
void tu_fixture(char *path, size_t size, const char *relative);

/* The path of a file below the shared documents (../shared, exported by tests/run.sh as
 * $DTRAIN_SHARED); false when they are not beside the checkout. */
bool tu_shared(char *path, size_t size, const char *relative);

/* Whether this test was built with ThreadSanitizer (make tsan): its instrumentation slows every
 * rank several times over, so a test that holds a rate or a bound in time to what the code alone
 * gives runs its check in the ASan build and, here, looks for races only (said in its output). */
bool tu_under_thread_sanitizer(void);

/* Removes a test's scratch directory and everything in it (rm -rf); 0 when it is gone. */
int tu_remove_tree(const char *dir);

/* Does `haystack` contain `needle`? (cmocka's assert gives poor messages for strstr). */
bool tu_contains(const char *haystack, const char *needle);

/* How many times `needle` starts in `haystack` (overlapping ones too); 0 for NULL. */
int tu_count(const char *haystack, const char *needle);

/* Whether `actual` is what the golden file tests/golden/NAME holds, the fixtures' folder written
 * there as $FIXTURES (so the file does not depend on where the checkout is). A difference is
 * printed with the first line that differs. DTRAIN_UPDATE_GOLDEN=1 writes the file instead: a
 * changed output fails until its golden file is updated on purpose (make golden). */
bool tu_golden(const char *name, const char *actual);

/* Ends the running cmocka test as skipped, saying why (printf-style): the one way a test that
 * cannot run here (no GPU, no PyTorch, no root, no ../shared) ends, so the summary counts it under
 * SKIPPED and never as passed. The test file includes cmocka.h before this header is used. */
#define tu_skip(...)                                                                                                   \
    do {                                                                                                               \
        print_message("SKIP: " __VA_ARGS__);                                                                           \
        print_message("\n");                                                                                           \
        skip();                                                                                                        \
    } while (0)

#endif
