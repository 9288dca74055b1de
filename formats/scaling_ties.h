/* scaling_ties.h - a published scaling table's ratio columns tied to the columns they were worked
 * out from: a speedup between two columns ("TF32 to mixed precision"), a ratio or efficiency over
 * the job sizes of a throughput or a time. The tying half of scaling_table.c. */
#ifndef SCALING_TIES_H
#define SCALING_TIES_H

#include "formats/scaling_table.h"

/* Ties every ratio column of t (its `of`, `to`, and `why` where it cannot), once its rows are read:
 * "(X to Y)" by the words each side shares with a column's; "with Y" beside two measures; a plain
 * "Speedup" or "Efficiency" over the job sizes of the measure its printed ratios hold to (the
 * more precise of those they hold to in most rows); a "Scalability" that never passes 1 per job,
 * an efficiency; a speedup between columns turned where more of its ratios hold the other way. */
void scaling_tie_columns(struct scaling_table *t);

#endif
