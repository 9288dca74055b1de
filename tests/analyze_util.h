/* analyze_util.h - what the analyzer's tests share: running dtrain-analyze, the project's table
 * fixtures, and run records written from the fixture's first one with some fields changed. */
#ifndef ANALYZE_UTIL_H
#define ANALYZE_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "tests/testutil.h"

/* Runs dtrain-analyze with args (NULL-terminated); fails the test when it cannot start. */
void run_analyze(char **args, struct tu_result *r);

/* The path of tests/fixtures/tables/NAME. */
void fixture(char *path, size_t size, const char *name);

/* Copies the fixture records without their broken line to a new temporary file, named in out. */
void clean_records(char *out, size_t size);

/* A line of the fixture's first record with the job's shape (nodes, ranks, steps a rank, runtime)
 * and up to two fields more set (key NULL: none), written to out. */
void write_record2(FILE *out, int nodes, int ranks, long steps, double runtime, const char *key, json_t *value,
                   const char *key2, json_t *value2);
/* How many lines of text contain needle. */
int lines_with(const char *text, const char *needle);

void write_record(FILE *out, int nodes, int ranks, long steps, double runtime, const char *key, json_t *value);

/* The audit of a copy of fixture (tests/fixtures/FIXTURE) whose text `from` is overwritten by
 * `slip` (no longer than it), in a file of its own: it exits 1 with one finding, which says
 * `expected`. */
void assert_planted_slip_found(const char *fixture, const char *from, const char *slip, const char *expected);

#endif
