/* checkpoint.h - saving and resuming a training run: parameters, batch-norm statistics, the
 * optimizer's state and the step reached (which fixes the data position: each epoch's order is a
 * function of the seed and the epoch). A resumed run ends bitwise equal to an uninterrupted one. */
#ifndef CHECKPOINT_H
#define CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "common/dt_error.h"

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

/* Writes DIR/ckpt-STEP.dtc atomically (a new owner-only temporary file, fsync, rename, fsync of
 * the directory) and removes this run's older checkpoints but the newest CHECKPOINT_KEEP (files of
 * other runs or users are not counted and not touched). Returns 0 or -1 with err naming the file. */
int checkpoint_save(const char *dir, const struct checkpoint *ck, struct dt_err *err);

/* Loads the newest valid checkpoint of DIR whose fingerprint and sizes match ck's into ck's
 * buffers (torn, damaged, foreign or older-format files are skipped, and ck's buffers are left as
 * they were unless one is loaded). Only regular files of this user's are read (a link, a FIFO or
 * another user's file is passed over, said on stderr), and only from a directory no other user
 * may write unless it is sticky: a forged checkpoint needs no secret, only a place to put it. Returns 1 when one was loaded, 0 when there is
 * none, -1 with err when DIR cannot be read. */
int checkpoint_load_newest(const char *dir, struct checkpoint *ck, struct dt_err *err);

/* Takes DIR for this run (rank 0, before anything else touches it): makes it, checks that no other
 * user can write checkpoints into it (see checkpoint_load_newest) and holds an exclusive flock on
 * it, so a second job given the same directory stops with a clear error instead of deleting this
 * one's save in flight. Returns the fd that holds the lock (closed, or the process ending, frees
 * it), -2 when the file system cannot lock (warned, run goes on), -1 with err. */
int checkpoint_lock(const char *dir, struct dt_err *err);

/* Removes DIR's ckpt-*.dtc.tmp.PID* files of this user's other than this process's: writes a killed earlier
 * attempt of the run left behind (rank 0 calls it before its first save). */
void checkpoint_remove_stale(const char *dir);

#endif
