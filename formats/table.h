/* table.h - hand-made result tables as labs write them. The reference form (003_*.txt) is a
 * Markdown table with the columns #Nodes, #GPUs, Epoch, Batchsize, Steps, Runtime, Speedup,
 * Node(s), one row per run and bold Avg rows, under a "# Title" heading. Labs vary it: other names
 * for each column (table_columns.c), runtimes as H:MM:SS, MM:SS or seconds (or minutes, hours, as
 * the header says), no Speedup column or Avg rows, CSV with ',' or with ';' and decimal commas, a
 * spreadsheet's byte-order mark, CRLF lines. Only the nodes, the GPUs and the runtime are needed.
 * Parsed with every row's line number, so an audit can point at it. */
#ifndef TABLE_H
#define TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/dt_error.h"

struct result_row {
    int line;                 /* 1-based, in the file */
    int nodes, gpus, epoch, batch;
    long steps;
    double runtime;           /* seconds */
    char runtime_text[32];
    double runtime_unit;      /* seconds of its last printed digit: 1 for "0:51:27", 0.1 for "95.2" */
    bool runtime_plain;       /* a plain number, not a clock time */
    double speedup;           /* NAN when the cell is "-" or empty */
    double speedup_unit;      /* of its last printed digit: 0.01 for "0.64" */
    double efficiency;        /* speedup / GPUs as the table gives it (a fraction); NAN where it does not */
    double efficiency_unit;   /* of its last printed digit, as a fraction: 0.01 for "0.93" and for "93%" */
    char nodelist[256];       /* as written; "Avg" rows have none */
    bool avg;                 /* the row summarises the runs above it */
    unsigned unknown;         /* the count columns whose cell says "-" (1 << enum column): not known,
                                 read as 0 and checked against nothing */
};

struct result_table {
    char title[256];          /* the nearest "#" heading above it */
    int line;                 /* of its header row */
    struct result_row *rows;
    int count;
    bool has_epoch, has_batch, has_steps, has_speedup, has_nodelist;   /* the optional columns it has */
    bool seconds_assumed;     /* plain-number runtimes under a header naming no unit */
    bool gpus_total;          /* its GPUs column held the job's total (its header said so, or more than a
                                 node holds on every node of a row): read as per node, GPUs / Nodes */
    struct unread_row { int line, nodes, gpus; } unread[16];   /* rows not read, of a known configuration */
    int unread_count;
};

struct table_set {
    struct result_table *tables;
    int count;
    int rows_read, lines_skipped;
    char skipped[8][480];     /* the first few skipped lines, "file:line: why" */
};

/* Appends the tables of a file. Rows that cannot be read are counted and described, not dropped
 * silently. Returns 0, or -1 with err when the file cannot be read. */
int table_parse_file(const char *path, struct table_set *set, struct dt_err *err);

/* The same from an open stream; name is what messages call it. */
int table_parse_stream(FILE *f, const char *name, struct table_set *set, struct dt_err *err);

/* Why a file no table was read from was not read: its first Markdown table's header, which of the
 * nodes, the GPUs and the runtime it lacks and the closest column it has ("its table on line 3:
 * it lacks the runtime (...) (the closest it has: \"Walltime [node-h]\")"). False when it has no
 * Markdown table at all. */
bool table_why_not_read(const char *path, char *why, size_t size);

void table_set_free(struct table_set *set);

/* The first line of every table dtrain-analyze prints, Markdown or CSV ("<!-- dtrain-analyze
 * table ... -->", "# dtrain-analyze table ..."): a folder read again passes such a file over, so
 * a sweep's own table.md is never read back as a hand-made table and "corrected". */
void table_mark(FILE *out, const char *command, bool csv);

/* Whether the file at path begins with that line. */
bool table_is_analyzer_output(const char *path);

/* Splits a Markdown row ("| a | **b** |") into trimmed cells, bold markers removed, in place.
 * Returns the count (at most max). */
int table_cells(char *line, char **cells, int max);

/* A CSV line into trimmed cells split at separator: "a","b ""c""" quoting as RFC 4180 has it, in
 * place. How many. */
int table_csv_cells(char *line, char separator, char **cells, int max);

#endif
