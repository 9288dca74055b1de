/* inputs.c - what the analyzer reads (see inputs.h): record files, trainer logs, directories
 * walked for them. */
#include "inputs.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "table.h"

/* A file whose first non-blank character is '{' holds run records (NUL bytes count as blank: a
 * crash's zero-filled tail may precede the next record). */
bool inputs_hold_records(const char *path)
{
    FILE *f = fopen(path, "r");
    int c = ' ';
    while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0'))
        ;
    if (f)
        fclose(f);
    return c == '{';
}

/* A record, or a torn write's fragment with a whole record glued after it (record files written
 * before appends checked the file's last byte have these): the fragment is reported, the record
 * kept. */
static int parse_line(const char *line, const char *path, int number, struct record_set *set, struct run_record *r,
                      struct dt_err *err)
{
    if (record_parse(line, r, err) == 0)
        return 0;
    const char *glued = strstr(line + 1, "{\"record_version\"");
    struct dt_err glued_err;
    if (!glued || record_parse(glued, r, &glued_err) < 0)
        return -1;
    if (set->lines_skipped++ < 8)
        fprintf(stderr, "dtrain-analyze: skipped %s:%d: %zu bytes of a torn record before a whole one\n", path, number,
                (size_t)(glued - line));
    return 0;
}

void read_records(const char *path, struct record_set *set)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dtrain-analyze: %s: cannot open\n", path);
        set->lines_skipped++;
        return;
    }
    char *buffer = NULL;
    size_t size = 0;
    int number = 0;
    ssize_t got;
    while ((got = getline(&buffer, &size, f)) > 0) {
        number++;
        char *line = buffer;
        size_t zeros = 0;   /* a crash's zero-filled tail: the record after it is still read */
        while ((ssize_t)zeros < got && buffer[zeros] == '\0')
            zeros++;
        line += zeros;
        if (zeros > 0 && set->lines_skipped++ < 8)
            fprintf(stderr, "dtrain-analyze: skipped %s:%d: %zu NUL bytes (a zero-filled tail a crash left)\n", path,
                    number, zeros);
        if (line[strspn(line, " \t\r\n")] == '\0')
            continue;
        struct run_record r;
        struct dt_err err;
        if (parse_line(line, path, number, set, &r, &err) < 0) {
            if (set->lines_skipped++ < 8)
                fprintf(stderr, "dtrain-analyze: skipped %s:%d: %s%s\n", path, number, err.msg,
                        line[strlen(line) - 1] != '\n' ? " (a torn last line: a write that did not finish)" : "");
            continue;
        }
        if (strcmp(r.exit_state, "completed") != 0) {
            set->not_completed++;
            record_free(&r);
            continue;
        }
        if (set->count == set->cap) {
            int cap = set->cap ? set->cap * 2 : 64;
            struct run_record *grown = realloc(set->runs, (size_t)cap * sizeof *grown);
            if (!grown) {
                fprintf(stderr, "dtrain-analyze: %s:%d: out of memory, the rest of the file is not read\n", path,
                        number);
                set->lines_skipped++;
                record_free(&r);
                break;
            }
            set->runs = grown, set->cap = cap;
        }
        set->runs[set->count++] = r;
    }
    free(buffer);
    fclose(f);
}

void free_records(struct record_set *set)
{
    for (int i = 0; i < set->count; i++)
        record_free(&set->runs[i]);
    free(set->runs);
}

void read_log(const char *path, struct log_runs *set)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dtrain-analyze: %s: cannot open\n", path);
        return;
    }
    if (throughput_read(f, path, set) < 0)
        fprintf(stderr, "dtrain-analyze: %s: out of memory\n", path);
    fclose(f);
}

/* nftw passes no context, so the file reader and its set wait here. */
static void (*walk_reader)(const char *path, void *set);
static void *walk_set;
static bool walking;   /* the file came from a directory, not from the command line */
static bool read_own;     /* audit checks what dtrain-analyze wrote too; the others pass it over */
static int own_outputs;   /* files dtrain-analyze wrote, passed over in directories */
static char first_own[256];

bool inputs_walking(void)
{
    return walking;
}

static int walk_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode))
        return 0;   /* a FIFO or a device in a directory would hang the reader or mean nothing */
    if (!read_own && table_is_analyzer_output(path)) {
        if (own_outputs++ == 0)
            snprintf(first_own, sizeof first_own, "%s", path);
    } else
        walk_reader(path, walk_set);
    return 0;
}

void inputs_read_own_outputs(void)
{
    read_own = true;
}

/* Each FILE read, each DIR walked recursively; what dtrain-analyze itself wrote (its first line says
 * so) is passed over in a directory and refused by name. Returns 0, or 2 for a path that does not
 * exist or is such a file. */
int read_inputs(char **paths, int count, void (*reader)(const char *, void *), void *set)
{
    walk_reader = reader, walk_set = set, own_outputs = 0;
    for (int i = 0; i < count; i++) {
        struct stat st;
        if (stat(paths[i], &st) < 0) {
            fprintf(stderr, "dtrain-analyze: %s: %s\n", paths[i], strerror(errno));
            return 2;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            fprintf(stderr, "dtrain-analyze: %s: not a regular file or a directory (a FIFO or a device): not read\n",
                    paths[i]);
            return 2;
        }
        if (!read_own && !S_ISDIR(st.st_mode) && table_is_analyzer_output(paths[i])) {
            fprintf(stderr, "dtrain-analyze: %s: a table dtrain-analyze wrote (its first line says so), already "
                    "computed from its runs: give the run records or the hand-made table it came from\n", paths[i]);
            return 2;
        }
        if (S_ISDIR(st.st_mode)) {
            walking = true;
            nftw(paths[i], walk_file, 16, FTW_PHYS);
            walking = false;
        }
        else
            reader(paths[i], set);
    }
    if (own_outputs)
        fprintf(stderr, "dtrain-analyze: passed over %d file%s dtrain-analyze wrote (%s%s)\n", own_outputs,
                own_outputs == 1 ? "" : "s", first_own, own_outputs > 1 ? ", ..." : "");
    return 0;
}

/* In a directory, only the files that hold records: a sweep's directory also has its jobs' outputs. */
static void records_reader(const char *path, void *set)
{
    struct record_set *records = set;
    if (walking && !inputs_hold_records(path))
        records->other_files++;
    else
        read_records(path, records);
}

/* The completed runs of the record files and directories paths[0..count), with the summary line
 * every command ends with. Returns 0, or 2 when there is nothing to work on; the caller frees set
 * either way. */
int load_records(const char *command, char **paths, int count, struct record_set *set)
{
    if (count == 0)
        return fprintf(stderr, "dtrain-analyze: %s needs record files or directories\n", command), 2;
    if (read_inputs(paths, count, records_reader, set) != 0)
        return 2;
    fprintf(stderr, "%s: %d runs read, %d not completed (left out), %d lines skipped", command, set->count,
            set->not_completed, set->lines_skipped);
    if (set->other_files)
        fprintf(stderr, "; %d files without records passed over", set->other_files);
    fputc('\n', stderr);
    if (set->count == 0)
        return fputs("dtrain-analyze: no completed run in the input\n", stderr), 2;
    return 0;
}

