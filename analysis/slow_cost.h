/* slow_cost.h - what a run's slowest rank cost it: a data-parallel step ends when its slowest rank
 * has computed (the exchange waits for it), so from the compute time a step of every rank (run
 * records' rank_compute_us) the run would have taken steps x (slowest - the others' median) less
 * with the slowest rank at the others' pace; the node of the slowest rank holds that cost. */
#ifndef SLOW_COST_H
#define SLOW_COST_H

#include <stdbool.h>
#include <stdio.h>

#include "formats/record.h"

/* Prints, for every run whose record kept its ranks' compute times, what its slowest rank cost
 * and without it how long the run would have taken, then the node that cost the most over all of
 * them. Markdown, or CSV with csv. Returns how many runs it could tell of (0: printed nothing). */
int slow_cost_print(FILE *out, const struct run_record *runs, int count, bool csv);

#endif
