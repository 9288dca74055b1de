/* audit.h - recomputing a hand-made result table and listing what does not add up. */
#ifndef AUDIT_H
#define AUDIT_H

#include <stdio.h>

#include "formats/method_table.h"
#include "formats/table.h"
#include "analysis/throughput.h"

struct finding {
    int line;
    char text[512];
};

struct audit {
    struct finding *items;
    int count;
};

/* Checks one table:
 *   - each Avg row against the mean, the median and every trimmed mean of its runs;
 *   - each speedup against baseline runtime / runtime (1 node x 1 GPU is the baseline), to the
 *     precision it is printed with;
 *   - each run's node list: well-formed, and naming #Nodes hosts;
 *   - epochs and steps: the same within a configuration, and steps matching the dataset size
 *     (MNIST 60,000, bigMNIST 7,200,000, from the title) over batch x GPUs, within 1.
 * Appends findings to out. Returns 0, or -1 out of memory. */
int audit_table(const struct result_table *table, struct audit *out);

/* Checks the runs of a notebook (the reference experiments' 000/001: "### lm1-160.70-1.96x, baseline: 81.84" over
 * Step lines): the heading's figure against the peak of its Step lines, and its speedup against
 * figure / baseline, each to the precision it is printed with. Returns the runs that carry a
 * figure (0: not a notebook), or -1 out of memory. */
int audit_notebook(const struct log_runs *runs, struct audit *out);

/* Checks a method comparison table (methods x GPUs, as the reference comparison's): a header with more GPU columns than its rows
 * have values (and which reading the Baselines support), values faster than GPUs x Baseline by
 * more than their std, spreads of zero, rows whose values copy another's. Returns 0, or -1 out of
 * memory. */
int audit_method_table(const struct method_table *table, struct audit *out);

/* How many columns right of where they are written a method table's values belong: where the
 * header has more GPU columns than the rows have values, the reading the Baselines support (the
 * reference experiments' 004: 1). 0 when the table is read as written. */
int audit_method_shift(const struct method_table *t);

/* The GPU count value k of row r was measured at, read with shift. 0 when none. */
int audit_method_gpus(const struct method_table *t, const struct method_row *r, int k, int shift);

/* The samples of an epoch of the dataset a table's title names: MNIST 60,000, bigMNIST 7,200,000;
 * 0 for a title that names neither. */
long audit_dataset_size(const char *title);

/* One finding more at line, printf-style. 0, or -1 out of memory. */
int audit_add(struct audit *a, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

void audit_free(struct audit *a);

#endif
