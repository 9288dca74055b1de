/* scaling_table.h - scaling tables as vendors and papers publish them: a GPU (or node) count
 * column, one or more throughput columns ("Throughput - TF32", "Mixed precision img/s", "Frames/s
 * with TF32") or time-to-train columns, and the ratios worked out from them: strong or weak scaling
 * of a column over the counts ("TF32 Strong Scaling", "Multi-GPU weak scaling with FP32"), one
 * column over another ("Throughput speedup (TF32 to mixed precision)", "Speed-up with mixed
 * precision"), efficiency. Cells carry units and suffixes ("938 img/s", "7.72 x", "1,022,722",
 * "~14 hours"); every number keeps the size of its last printed digit so that a check can allow
 * for the rounding of what it was worked out from. A file may hold several, each named by the
 * heading above it; a table whose rows name several settings (benchmarks, machines) is one table
 * a setting (scaling_settings.h). Tables of the reference form (#Nodes, #GPUs, Runtime) are table.h's. */
#ifndef SCALING_TABLE_H
#define SCALING_TABLE_H

#include <stdbool.h>

#include "common/dt_error.h"

#define SCALING_MAX_COLUMNS 24

enum scaling_kind {
    SCALING_COUNT,        /* GPUs or nodes: the rows' job sizes */
    SCALING_RATE,         /* a throughput: more is faster */
    SCALING_TIME,         /* a time to train: less is faster */
    SCALING_OVER_COUNTS,  /* a rate's (or time's) ratio to the smallest job's: strong or weak scaling */
    SCALING_ACROSS,       /* one rate column over another in the same row: a speedup between them */
    SCALING_EFFICIENCY,   /* a scaling ratio over the count's ratio */
    SCALING_OTHER         /* read past: batch sizes, accuracy, settings */
};

struct scaling_column {
    char name[128];            /* the header as written, bold markers removed */
    enum scaling_kind kind;
    int of;                    /* OVER_COUNTS, EFFICIENCY: the rate or time column; ACROSS: the
                                  column divided by ("TF32" in "TF32 to mixed precision"); -1 unknown */
    int to;                    /* ACROSS: the column divided ("mixed precision"); -1 unknown */
    char why[160];             /* when of or to is -1: why the column could not be tied */
    bool per_device;           /* RATE: a device's share ("Throughput (T/s/GPU)"): the job's is it
                                  times the job size */
    bool from_heading;         /* RATE, TIME: so because the heading above says what the table's
                                  columns (releases, settings) hold */
    double clock;              /* TIME: the seconds a clock cell's last part counts (60 under a
                                  header that says [h:mm]); 1 */
    double header_seconds;     /* TIME: the seconds of the unit its header names for plain numbers
                                  ("Time to train (Hrs)": 3600), 0 for none */
    bool setting;              /* OTHER: its words may name a row's setting ("System", "Benchmark") */
    bool worded;               /* setting: some row's cell is words, not a number ("Puhti") */
    bool dated;                /* OTHER: it says when a row ran ("Date") */
};

struct scaling_cell {
    double value;              /* NAN when empty, "-", approximate ("~14 hours") or not a number;
                                  a range's middle ("24-26 hours", "1.7-1.8x") */
    double unit;               /* of its last printed digit, in value's units: 0.01 for "7.72 x";
                                  a range's width and that digit: value +- unit / 2 holds it */
    double low, high;          /* a range's ends as printed; both 0 for a single number */
};

struct scaling_table {
    char title[256];           /* the nearest heading above it ("" for none) */
    int line;                  /* of its header row */
    int columns, count_column; /* count_column: the GPUs (or nodes) column */
    char count_noun[16];       /* what it counts ("GPUs", "nodes"), by its header or its cells */
    bool count_in_cells;       /* the count column's header does not say (a "Configuration" of "2 GPUs") */
    bool sizes_in_header;      /* a row of a table with a column a job size (scaling_transposed.h) */
    struct scaling_column column[SCALING_MAX_COLUMNS];
    int rows;
    int baselines;             /* after the rows, other settings' runs at its smallest job size (a
                                  part of a table of several: scaling_settings.h), for audit to say
                                  where a ratio is over one of them; not the table's rows */
    int *row_line;             /* rows + baselines of them */
    char **row_setting;        /* rows of them: the setting a row's words name ("Puhti, adh"), or "" */
    bool one_setting;          /* the rows of one setting of a table whose rows name several */
    struct scaling_cell *cell; /* (rows + baselines) x columns, row-major */
};

struct scaling_set {
    struct scaling_table *tables;
    int count;
    char why_not[320];         /* a table left out whole ("its rows are of several settings ..."), */
    int why_not_line;          /* and the line of its header */
};

/* Appends the scaling tables of a Markdown file: tables with a count column and at least one
 * ratio or efficiency column worked out from a rate or time column. 0, or -1 with err when the
 * file cannot be read. */
int scaling_parse_file(const char *path, struct scaling_set *set, struct dt_err *err);

/* Why a file with a table in it holds no scaling table, where the reason is the scaling form's:
 * job sizes and ratios ("Strong scaling efficiency") without the throughput or time they came
 * from. Whether there was one, said in why. */
bool scaling_why_not_read(const char *path, char *why, size_t size);

/* Appends t to set (set then holds its arrays). 0, or -1 out of memory. */
int scaling_set_add(struct scaling_set *set, const struct scaling_table *t);

/* Frees a table's arrays (its rows' and its baselines'), not t itself. */
void scaling_table_free(struct scaling_table *t);

void scaling_set_free(struct scaling_set *set);

/* The row of the table's smallest job: of those with a number above 0 in column c, or of all its
 * rows where c < 0; -1 where there is none. The job a ratio over the counts is over. */
int scaling_smallest_job(const struct scaling_table *t, int c);

/* The two cells of column of a ratio over the counts at row r is worked out from, against the
 * row q it is over, faster over slower (a time's q over r); a device's share ("Images/sec/GPU")
 * times its row's job size, the job's rate. */
void scaling_over_counts_cells(const struct scaling_table *t, int of, int r, int q, struct scaling_cell *num,
                               struct scaling_cell *den);

static inline const struct scaling_cell *scaling_at(const struct scaling_table *t, int row, int column)
{
    return &t->cell[row * t->columns + column];
}

#endif
