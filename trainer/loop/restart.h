/* restart.h - what a run saves and starts again from: checkpoints of the whole state (rank 0
 * writes, every rank resumes from rank 0's read), and the final parameters of --params-out. */
#ifndef RESTART_H
#define RESTART_H

#include "trainer/loop/run.h"

/* Rank 0 reads the newest valid checkpoint of cfg->checkpoint_dir and every rank takes its values.
 * Returns the step to continue after (0: none found; *resumed is then untouched) or -1 with err. */
long restart_resume(struct run *r, const struct train_config *cfg, int *resumed, struct dt_err *err);

/* The whole state after `step`, into cfg->checkpoint_dir (written by rank 0). 0 or -1 with err. */
int restart_save(struct run *r, const struct train_config *cfg, long step, int resumed, struct dt_err *err);

/* The final parameters, raw float32, to PREFIX.rankR, atomically. 0 or -1 with err. */
int restart_write_params(struct run *r, const char *prefix, struct dt_err *err);

#endif
