/* method_table.h - hand-made method comparison tables in the reference form (004_*.txt): a Markdown
 * table whose header names a METHOD column, an optional Baseline (the 1-GPU throughput) and one
 * column per GPU count ("1 GPU", "4 GPUs"), each cell "mean +- std" of the repeats' throughput:
 *   | DNN | BS | CONNECTION | METHOD | Baseline | 1 GPU | 4 GPUs | ...
 *   | ResNet-50 | 64 | 10GbE with TCP/IP | BSP-A2A | 253.1 | 925.020 +- 4.42 | ...
 * Each row keeps its line and how many value cells it really has, so an audit can see a header
 * with more GPU columns than its rows have values. */
#ifndef METHOD_TABLE_H
#define METHOD_TABLE_H

#include <stdbool.h>
#include <stdio.h>

#include "common/dt_error.h"

#define METHOD_MAX_COLUMNS 16

struct method_cell {
    double mean, std;
    bool single;               /* one figure, no spread written ("253.1"): std 0, not measured */
    char text[48];             /* as written: "925.020 +- 4.42" */
};

struct method_row {
    int line;
    char label[256];           /* the key cells joined: "ResNet-50, 64, 10GbE with TCP/IP, BSP-A2A" */
    double baseline;           /* NAN without a Baseline column (or a 1 GPU column of single figures) */
    int values;                /* value cells the row has */
    struct method_cell cell[METHOD_MAX_COLUMNS];
};

struct method_table {
    int line;                  /* of its header */
    int columns;               /* GPU columns of the header */
    int gpus[METHOD_MAX_COLUMNS];
    struct method_row *rows;
    int count;
};

struct method_set {
    struct method_table *tables;
    int count, rows_read, lines_skipped;
    char skipped[8][160];      /* the first few skipped lines, "file:line: why" */
};

/* Appends the method tables of a stream; name is what messages call it. Returns 0, or -1 with
 * err out of memory. */
int method_table_parse(FILE *f, const char *name, struct method_set *set, struct dt_err *err);

void method_set_free(struct method_set *set);

#endif
