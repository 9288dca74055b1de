/* scaling_settings.h - a published table whose rows are several settings, split into one scaling
 * table a setting: "| Benchmark | System | GPUs | Performance (ns/day) |" holds two benchmarks on
 * two machines, and a speedup is one setting's own (one benchmark on one machine at two job
 * sizes), never one machine's over another's. The splitting half of scaling_table.c. */
#ifndef SCALING_SETTINGS_H
#define SCALING_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/scaling_table.h"

/* Whether a column of kind SCALING_OTHER, by its header, can name a setting: not a date, a note or
 * a link ("Date", "Notes", "Source"), which differ between the runs of one setting. */
bool scaling_names_setting(const char *header);

/* Whether a column of kind SCALING_OTHER says when a row ran ("Date", "Day", "Submitted"). */
bool scaling_names_date(const char *header);

/* The setting a row's cells name, into key: the text of each setting column (t's column[c].setting)
 * whose cell is words, not a number ("Puhti", "`gromacs-stmv.sh`", "A100-80GB", "TF32"), joined by
 * ", "; "" where none does. Such a column is marked worded. The row's date cells follow after a
 * unit separator (0x1f), for scaling_settings_by_date. */
void scaling_row_setting(struct scaling_table *t, char **cells, int n, char *key, size_t size);

/* A row key's setting: the length of its text before its date and its other cells. */
size_t scaling_key_setting_length(const char *key);

/* Column c's text among a row key's other cells (those scaling_row_setting kept for
 * scaling_series.c), into out; "" where it has none. */
void scaling_key_cell(const char *key, int c, char *out, size_t size);

/* Rows of one setting that ran a job size more than once on different days ("DDP, synthetic,
 * mahti" at 1, 4 and 8 GPUs in May and again in September) are that setting on each day: each
 * day's series is its own scaling, not repeats of one. Rewrites t's row settings so (and drops
 * the dates of the rest). 0, or -1 out of memory. */
int scaling_settings_by_date(struct scaling_table *t);

/* Whether t's rows name more than one setting (words that only label each run, one a job size,
 * are not settings). */
bool scaling_settings_differ(const struct scaling_table *t);

/* t's rows, one table a setting in the order they first appear, each titled by its setting, into
 * parts (appended); a setting at fewer than two job sizes has no scaling and is left out, counted
 * in *left_out. t keeps its rows. 0, or -1 out of memory. */
int scaling_split_settings(const struct scaling_table *t, struct scaling_set *parts, int *left_out);

/* Whether row r prints a ratio of 1 (its Speedup 1.00x): a table's reference run, which other
 * settings' ratios may be over ("Baseline" at 1 GPU, the others' speedups over it). */
bool scaling_row_prints_one(const struct scaling_table *t, int r);

#endif
