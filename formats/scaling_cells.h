/* scaling_cells.h - the cells of published scaling tables as they are printed: "938 img/s",
 * "1,022,722", "7.72 x", "93%", "299.5 ms", "2h 18min", ranges ("24-26 hours", "1.7-1.8x"), job
 * sizes in words ("2 GPUs"), clocks ("1:02:03", sacct's "1-04:00:00"),
 * and what a time column's header says of its clock. The reading half of scaling_table.c. */
#ifndef SCALING_CELLS_H
#define SCALING_CELLS_H

#include <stdbool.h>

#include "formats/scaling_table.h"

/* A cell of a column of kind, its value in the column's units (a time in seconds, a percentage as
 * a fraction) and the size of its last printed digit; clock: the seconds a clock's last part
 * counts (scaling_header_clock). NAN where it holds no number, or an approximate one ("~14 hours"). */
struct scaling_cell scaling_read_cell(const char *text, enum scaling_kind kind, double clock);

/* A cell of a measure column: as scaling_read_cell, a plain number of a time in the unit its header
 * names (header_seconds, scaling_header_seconds': "14.5" under "(Hrs)"), in seconds. */
struct scaling_cell scaling_read_measure(const char *text, enum scaling_kind kind, double clock, double header_seconds);

/* The seconds a clock cell's last part counts by its header: 60 for "Time to train [h:mm]", 3600
 * for "(d:h)"; 1 where the header names no clock ("(90E)", "(Hrs)"); 0 where it names a resource's
 * hours ("Walltime [node-h]", "(GPU-hours)"): a cost, not a time. */
double scaling_header_clock(const char *header);

/* The seconds of the unit a time column's header names in brackets ("Time to train (Hrs)": 3600,
 * "[min]": 60), which its plain numbers are in; 0 where it names none (or a clock's parts). */
double scaling_header_seconds(const char *header);

/* Whether a cell is a job size by its own text ("1 GPU", "**2 GPUs**", "4 nodes", "8x A100"), and
 * what it counts ("GPUs", "nodes", "workers", "ranks") into noun. */
bool scaling_cell_is_count(const char *cell, const char **noun);

/* What a / b may be, each printed to its last digit (half of it either way): lo, hi, and the ratio
 * of the printed numbers into mid. False when either is missing or b is not above 0. */
bool scaling_ratio_range(const struct scaling_cell *a, const struct scaling_cell *b, double *lo, double *hi,
                         double *mid);

/* Whether printed, to its last digit, may be a value between lo and hi. */
bool scaling_cell_within(const struct scaling_cell *printed, double lo, double hi);

/* Whether a cell is a throughput by its own text: a number with a rate's unit ("1078 img/s",
 * "2,300 samples/sec", "45 fps"). */
bool scaling_cell_is_rate(const char *cell);

/* Whether a cell is a time by its own text: a number with a time unit ("299.5 ms", "2h 18min",
 * "40 s") or a clock ("1:02:03"). */
bool scaling_cell_is_time(const char *cell);

/* Whether a job-size cell names a run on one without a number ("Sequential", "Serial", "seq"):
 * the reference a parallel sweep's speedups are often over, beside "1 worker". */
bool scaling_cell_is_serial(const char *cell);

#endif
