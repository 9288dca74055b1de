/* scaling_audit.h - published scaling tables (formats/scaling_table.h) checked: every scaling,
 * speedup and efficiency cell worked out again from the throughputs or times it was made from,
 * allowing for the rounding of each printed number; and shown as speedup tables. */
#ifndef SCALING_AUDIT_H
#define SCALING_AUDIT_H

#include <stdio.h>

#include "analysis/audit.h"
#include "formats/scaling_table.h"

/* Appends to out a finding for every ratio or efficiency cell that does not follow from its
 * columns beyond the rounding of what is printed; to notes, a column whose ratios are over another
 * run at the baseline's job size where the table ran it twice. Returns 0, or -1 out of memory. */
int scaling_audit(const struct scaling_table *t, struct audit *out, struct audit *notes);

/* How the table was read, for the reader to check: "GPUs counts the jobs; TF32 Strong Scaling:
 * Throughput - TF32 over its 1-GPU row; ..." into text. */
void scaling_describe(const struct scaling_table *t, char *text, size_t size);

/* The table as speedup tables, one per throughput or time column: GPUs, the column, speedup
 * over the smallest job, efficiency (speedup over the count's ratio). */
void scaling_print(FILE *out, const struct scaling_table *t, const char *path);

#endif
