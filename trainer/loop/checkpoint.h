/* checkpoint.h - saving and resuming a training run: parameters, batch-norm statistics, the
 * optimizer's state and the step reached (which fixes the data position: each epoch's order is a
 * function of the seed and the epoch). A resumed run ends bitwise equal to an uninterrupted one. */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "dt_error.h"

/* Checkpoints a directory keeps: the newest and one before it, in case the newest is torn. */
#define CHECKPOINT_KEEP 2

struct checkpoint {
    long step;                 /* steps completed */
    int resumed;               /* how many times the run had been resumed before this save */
    uint64_t fingerprint;      /* of the model and optimizer shape: a checkpoint of another run is refused */
    size_t num_params, num_buffers;
    float *params, *buffers;   /* views, not owned */
    float *opt_m, *opt_v;      /* Adam's moments (v NULL for SGD) */
    long opt_step;
};

/* Writes DIR/ckpt-STEP.dtc atomically (temporary file, fsync, rename, fsync of the directory) and
 * removes all but the newest CHECKPOINT_KEEP. Returns 0 or -1 with err naming the file. */
int checkpoint_save(const char *dir, const struct checkpoint *ck, struct dt_err *err);

/* Loads the newest valid checkpoint of DIR whose fingerprint and sizes match ck's into ck's
 * buffers (torn, damaged, foreign or older-format files are skipped, and ck's buffers are left as
 * they were unless one is loaded). Returns 1 when one was loaded, 0 when there is
 * none, -1 with err when DIR cannot be read. */
int checkpoint_load_newest(const char *dir, struct checkpoint *ck, struct dt_err *err);

/* Removes DIR's ckpt-*.dtc.tmp.PID files other than this process's: writes a killed earlier
 * attempt of the run left behind (rank 0 calls it before its first save). */
void checkpoint_remove_stale(const char *dir);

#endif
