/* inputs.h - what dtrain-analyze reads: run-record files (JSON lines, completed runs kept, the
 * rest counted), trainer logs, and directories walked recursively for either. Messages about
 * what was skipped go to standard error, naming file and line. */
#ifndef INPUTS_H
#define INPUTS_H

#include <stdbool.h>
#include <stdio.h>

#include "formats/record.h"
#include "analysis/throughput.h"

struct record_set {
    struct run_record *runs;
    int count, cap, lines_skipped, not_completed;
    int other_files;   /* files of a walked directory that hold no records (job outputs, tables) */
    int copies;        /* records read before (a backup's, a file given twice): counted once */
    struct seen_lines *seen;   /* every record line read, to tell a copy (inputs.c's) */
};

/* Whether the file's first non-blank character is '{' (it holds run records). */
bool inputs_hold_records(const char *path);

/* The completed runs of the record files and directories paths[0..count), with the summary line
 * every command ends with ("COMMAND: N runs read, ..."). Returns 0, or 2 when there is nothing to
 * work on; the caller frees set either way. */
int load_records(const char *command, char **paths, int count, struct record_set *set);
/* One record file's completed runs into set. */
void read_records(const char *path, struct record_set *set);
/* The same from an open stream (path names it in messages); a read error is said and counted. */
void read_records_from(FILE *f, const char *path, struct record_set *set);
void free_records(struct record_set *set);

/* A trainer log's runs into set (throughput.h). */
void read_log(const char *path, struct log_runs *set);

/* Whether the file the reader has now came from a walked directory (not named on the command line). */
bool inputs_walking(void);

/* Each FILE given to reader, each DIR walked recursively. A file dtrain-analyze wrote (its first
 * line says so: table_mark) is passed over in a DIR and refused as a FILE, unless
 * inputs_read_own_outputs was called. Returns 0, or 2 for a path that does not exist or is refused. */
void inputs_read_own_outputs(void);   /* audit: checking the analyzer's own tables is a use */
int read_inputs(char **paths, int count, void (*reader)(const char *, void *), void *set);

#endif
