/* table_columns.h - the columns of a hand-made result table as labs name them ("#Nodes",
 * "Nodes", "GPUs/node", "Time (s)", "Wall time", ...), and one row's cells read by them. The
 * reading half of table.c: it finds the tables, this reads what they say. */
#ifndef TABLE_COLUMNS_H
#define TABLE_COLUMNS_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/table.h"

enum column { COL_NODES, COL_GPUS, COL_EPOCH, COL_BATCH, COL_STEPS, COL_RUNTIME, COL_SPEEDUP, COL_NODELIST, COL_EFFICIENCY,
              COLS };

/* How one table wrote its columns. */
struct table_layout {
    int at[COLS];              /* the cell of each column; -1 where the table has none */
    char name[COLS][48];       /* each column's header as written, for messages */
    char separator;            /* '|' Markdown; ',' or ';' CSV (';' comes with decimal commas) */
    double runtime_scale;      /* seconds per unit of a plain-number Runtime: 1, 60 or 3600 as the
                                * header says ("Time (s)", "(min)", "(h)"); 0 when it names no unit */
    double runtime_clock;      /* seconds the last part of a clock Runtime counts: 1 (H:MM:SS, MM:SS),
                                * 60 under "[h:m]", 3600 under "[d:h]" */
};

/* Whether cells[0..n) are a header row: one naming at least the nodes, the GPUs and the runtime,
 * in any of their usual names. Fills layout (separator aside). */
bool table_header(char **cells, int n, struct table_layout *layout);

/* For a header table_header refused: which of the nodes, GPUs and runtime it lacks, each with the
 * closest column it does have ("it lacks the runtime (Runtime, Time (s), Wall time) (the closest
 * it has: \"Walltime [node-h]\")") into why. */
void table_header_lacks(char **cells, int n, char *why, size_t size);

/* Reads row from cells by layout. Returns true, or false with why ("Runtime (column 6) is empty",
 * "... "1h" is not H:MM:SS, MM:SS, D-HH:MM:SS or a number of seconds"); row->nodes and row->gpus are set as far as they
 * could be read, so a skipped row still names its configuration. */
bool table_read_row(char **cells, int n, const struct table_layout *layout, struct result_row *row, char *why,
                    size_t size);

/* A runtime cell: a clock, H:MM:SS or MM:SS (either with a fraction of a second) with its last
 * part counting clock seconds (1; 60 under "[h:m]"), Slurm's D-HH:MM:SS, or a plain number times
 * scale (0: seconds). Returns seconds, or -1; *unit gets the seconds of its last printed digit. */
double table_runtime(const char *text, double scale, double clock, double *unit);

#endif
