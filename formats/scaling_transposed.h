/* scaling_transposed.h - scaling tables printed the other way round: a row a model (or setting),
 * a column a job size, the measure said by the corner cell or the line above:
 *
 *     Number of samples trained per second
 *     | model \ num_node * num_gpus | 1*1  | 1*8   | 4*8   |
 *     | megatron bert 345m          | 44.7 | 137.9 | 339.0 |
 *
 * Each row is read as a scaling table of its own (job sizes, the measure), titled by its label.
 * The other half of scaling_table.c's reading. */
#ifndef SCALING_TRANSPOSED_H
#define SCALING_TRANSPOSED_H

#include <stdbool.h>

#include "formats/scaling_table.h"

struct transposed {
    int sizes;                              /* job-size columns, 1 .. sizes */
    double size[SCALING_MAX_COLUMNS];       /* each one's job size (nodes x GPUs where written so) */
    char noun[16];                          /* what they count ("GPUs", "nodes") */
    enum scaling_kind kind;                 /* the cells: SCALING_RATE or SCALING_TIME */
    char measure[128];                      /* what the cells are, as said ("samples trained per second") */
    double header_seconds;                  /* a time's unit as the measure names it ("(min)": 60), or 0 */
    char title[256];                        /* the heading or line above */
    int line;                               /* of the header row */
};

/* Whether a Markdown header row is such a table's: one label column, then two or more job sizes
 * ("1*8", "2x4", "8 GPUs", "2 nodes"; plain numbers where the corner names what they count), the
 * measure named by the corner cell or, failing it, by the caption (the text line above) or the
 * heading. Fills tt. */
bool scaling_transposed_header(char *header, const char *caption, const char *heading, int line,
                               struct transposed *tt);

/* A data row of such a table appended to set as a scaling table of its own, where it has a number
 * at two job sizes or more ("OOM", blank cells skipped). 0, or -1 out of memory. */
int scaling_transposed_row(const struct transposed *tt, char *row, int line, struct scaling_set *set);

#endif
