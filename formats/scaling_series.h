/* scaling_series.h - a published table that lists one setting's job sizes more than once: several
 * series under one header, told apart by a column that is not a setting's name ("Sequence length"
 * 128, then 512: 1 and 8 GPUs each; a batch size). Each series is read as its own scaling, its
 * smallest job its own baseline; titled by the columns that tell the series apart. The last step
 * of scaling_settings.h's keys. */
#ifndef SCALING_SERIES_H
#define SCALING_SERIES_H

#include "formats/scaling_table.h"

/* Within each setting of t (its rows' keys), a new series begins at a row whose job size the
 * current series already has; where a setting has several, each row's key gains its series' label
 * ("Sequence length 512"; "rows from line N" where no column tells them apart). Every key is then
 * its setting alone (the other cells scaling_row_setting kept dropped). 0, or -1 out of memory. */
int scaling_settings_by_series(struct scaling_table *t);

#endif
