/* inputs.c - what the analyzer reads (see inputs.h): record files, trainer logs, directories
 * walked for them. */
#include "analysis/inputs.h"

#include <errno.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/table.h"

/* A file whose first non-blank line is a record's beginning ('{' and its "record_version" member on
 * that line) holds run records (NUL bytes count as blank: a crash's zero-filled tail may precede
 * the next record). Other JSON beside them (dtrain-check's report, a profile: pretty-printed, a
 * lone '{' on its first line) is not. */
bool inputs_hold_records(const char *path)
{
    FILE *f = fopen(path, "r");
    int c = ' ';
    while (f && (c = fgetc(f)) != EOF && (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0'))
        ;
    char line[256] = "";
    if (f && c == '{' && !fgets(line, sizeof line, f))
        line[0] = '\0';
    if (f)
        fclose(f);
    return c == '{' && strstr(line, "\"record_version\"") != NULL;
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

/* Every record line read, by a digest of its text: the same record twice (a file and its backup,
 * a copy in another folder) is one run, and averaging it twice would weigh it double. A line is
 * kept as its length and two 64-bit hashes (FNV-1a and a multiply-rotate one), 20 bytes, not its
 * text: a 1 GB records file needed 3.7 GB to be tabled when every line's text was kept. Two lines
 * alike in length and both hashes are taken for one; for lines that differ, the chance is about
 * 2^-128 a pair. Open addressing, at most half full; a length of 0 marks an empty slot. */
struct seen_lines {
    uint64_t *fnv, *mix;
    uint32_t *length;
    size_t slots, used;
};

static uint64_t fnv1a(const char *text, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)text[i]) * 1099511628211ull;
    return h;
}

static uint64_t multiply_rotate(const char *text, size_t len)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    for (size_t i = 0; i < len; i++) {
        h = (h + (unsigned char)text[i]) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return h;
}

/* The table at twice its slots (256 at first). 0, or -1 when out of memory. */
static int grow_seen_lines(struct seen_lines *s)
{
    size_t slots = s->slots ? 2 * s->slots : 256;
    struct seen_lines bigger = {calloc(slots, sizeof *bigger.fnv), calloc(slots, sizeof *bigger.mix),
                                calloc(slots, sizeof *bigger.length), slots, s->used};
    if (!bigger.fnv || !bigger.mix || !bigger.length)
        return free(bigger.fnv), free(bigger.mix), free(bigger.length), -1;
    for (size_t i = 0; i < s->slots; i++)
        if (s->length[i]) {
            size_t j = s->fnv[i] & (bigger.slots - 1);
            while (bigger.length[j])
                j = (j + 1) & (bigger.slots - 1);
            bigger.fnv[j] = s->fnv[i], bigger.mix[j] = s->mix[i], bigger.length[j] = s->length[i];
        }
    free(s->fnv), free(s->mix), free(s->length);
    *s = bigger;
    return 0;
}

/* Whether text (len bytes, 1 to 2^32 - 1) is in *table (made when NULL); if not, it is put there.
 * -1: out of memory. */
static int seen_before(struct seen_lines **table, const char *text, size_t len)
{
    struct seen_lines *s = *table;
    if (!s && !(s = *table = calloc(1, sizeof *s)))
        return -1;
    if (len == 0 || len > UINT32_MAX)
        return 0;   /* (no record line is either: counted, not compared) */
    if (2 * (s->used + 1) > s->slots && grow_seen_lines(s) < 0)
        return -1;
    uint64_t fnv = fnv1a(text, len), mix = multiply_rotate(text, len);
    size_t j = fnv & (s->slots - 1);
    for (; s->length[j]; j = (j + 1) & (s->slots - 1))
        if (s->fnv[j] == fnv && s->mix[j] == mix && s->length[j] == len)
            return 1;
    s->fnv[j] = fnv, s->mix[j] = mix, s->length[j] = (uint32_t)len, s->used++;
    return 0;
}

static void free_seen_lines(struct seen_lines **table)
{
    struct seen_lines *s = *table;
    if (s)
        free(s->fnv), free(s->mix), free(s->length), free(s);
    *table = NULL;
}

/* A record line read before is counted once, and said to be a copy. */
static bool is_copy(struct record_set *set, const char *line, const char *path, int number)
{
    size_t len = strlen(line);
    while (len > 0 && strchr(" \t\r\n", line[len - 1]))
        len--;
    if (seen_before(&set->seen, line, len) != 1)
        return false;   /* (out of memory: counted, as before the check) */
    if (set->copies++ < 8)
        fprintf(stderr, "dtrain-analyze: skipped %s:%d: the same record as one read before (a copy): counted once\n",
                path, number);
    return true;
}

void read_records(const char *path, struct record_set *set)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dtrain-analyze: %s: cannot open\n", path);
        set->lines_skipped++;
        return;
    }
    read_records_from(f, path, set);
    fclose(f);
}

/* A read that failed (EIO) is not the end of the file: said with its reason and counted as a line
 * not read, so the table that follows says it is of the rest and its command exits 2. */
static void said_read_error(FILE *f, int reason, const char *path, int lines, struct record_set *set)
{
    if (!ferror(f))
        return;
    fprintf(stderr, "dtrain-analyze: %s: a read error after line %d (%s): the rest of the file is not read\n", path,
            lines, strerror(reason));
    set->lines_skipped++;
}

void read_records_from(FILE *f, const char *path, struct record_set *set)
{
    char *buffer = NULL;
    size_t size = 0;
    int number = 0;
    ssize_t got;
    int reason = 0;   /* a read error's errno, kept from when it happened (later calls overwrite errno) */
    while ((got = getline(&buffer, &size, f)) > 0) {
        number++;
        if (!reason && ferror(f))   /* a line cut short by the error */
            reason = errno;
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
                        line[strlen(line) - 1] == '\n' ? ""
                        : ferror(f) ? " (cut short by a read error)"
                                    : " (a torn last line: a write that did not finish)");
            continue;
        }
        if (is_copy(set, line, path, number)) {   /* a record read before, in this file or another */
            record_free(&r);
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
    if (!reason)
        reason = errno;
    said_read_error(f, reason, path, number, set);
    free(buffer);
    /* the array fitted to its runs: grown by doubling, up to half of it was never used (a million
     * runs: 300 MB); the next file's first run grows it again */
    struct run_record *fitted = set->count > 0 && set->count < set->cap
                                    ? realloc(set->runs, (size_t)set->count * sizeof *set->runs) : NULL;
    if (fitted)
        set->runs = fitted, set->cap = set->count;
}

void free_records(struct record_set *set)
{
    for (int i = 0; i < set->count; i++)
        record_free(&set->runs[i]);
    free(set->runs);
    free_seen_lines(&set->seen);
}

void read_log(const char *path, struct log_runs *set)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "dtrain-analyze: %s: cannot open\n", path);
        return;
    }
    struct dt_err err;
    if (throughput_read(f, path, set, &err) < 0)
        fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
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

static struct seen_lines *files_read;   /* device:inode of each file read */

/* Whether the file was read already in this run (named twice, or given and inside a folder given,
 * or a hard link): said, and not read again. */
static bool read_already(const char *path, const struct stat *st)
{
    char id[64];
    int len = snprintf(id, sizeof id, "%ju:%ju", (uintmax_t)st->st_dev, (uintmax_t)st->st_ino);
    if (seen_before(&files_read, id, (size_t)len) != 1)
        return false;
    fprintf(stderr, "dtrain-analyze: %s: read already (the same file was given or found before): not read again\n",
            path);
    return true;
}

/* An empty lock file the tools keep beside what they guard (runs.jsonl.lock, a checkpoint
 * directory's .dtrain-lock: common/lock_file.h): nothing to read, and nothing to report. */
static bool is_lock_file(const char *path, const struct stat *st)
{
    size_t len = strlen(path);
    return st->st_size == 0 && ((len >= 5 && strcmp(path + len - 5, ".lock") == 0) ||
                                (len >= 12 && strcmp(path + len - 12, "/.dtrain-lock") == 0));
}

static int walk_file(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode) || is_lock_file(path, st))
        return 0;   /* a FIFO or a device in a directory would hang the reader or mean nothing */
    if (read_already(path, st))
        return 0;
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
        } else if (!read_already(paths[i], &st))
            reader(paths[i], set);
    }
    free_seen_lines(&files_read);
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
    if (set->copies)
        fprintf(stderr, "; %d copies of records read before, counted once", set->copies);
    fputc('\n', stderr);
    if (set->count == 0)
        return fputs("dtrain-analyze: no completed run in the input\n", stderr), 2;
    return 0;
}

