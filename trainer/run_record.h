/* run_record.h - what dtrain-train appends to --record FILE: the record of a finished run (every
 * rank's host, gathered), of a failed one (written by the rank that saw it fail, without the
 * others), of a hung one (the watchdog's) and of a job step that ended before any rank could write
 * (--record-failure). The format is formats/record.h's; this file fills it from the run. */
#ifndef RUN_RECORD_H
#define RUN_RECORD_H

#include "trainer/comm/comm.h"
#include "common/dt_error.h"
#include "trainer/loop/train.h"

/* --record, --tag and --record-failure as given (path NULL: no record is written). */
struct record_settings {
    const char *path;
    const char *tag;
    const char *failure_text;
};

/* Whether the file can be appended to: rank 0 asks before training, so that a wrong path ends the
 * job before the run it would record. 0, or -1 with err naming the file. */
int run_record_writable(const char *path, struct dt_err *err);

/* Every rank's host name is gathered (a collective: every rank calls it), then rank 0 appends the
 * record of the run; error NULL for a run that completed. 0, or -1 with err. */
int run_record_write(const struct record_settings *s, struct comm *comm, const struct train_config *cfg,
                     const struct train_result *res, long start, const char *error, struct dt_err *err);

/* The record of a multi-rank run that failed, written by a rank that saw it fail: no collective
 * (the other ranks may be dead, hung or about to be killed). Errors are printed. */
void run_record_failure(const struct record_settings *s, struct comm *comm, const struct train_config *cfg,
                        const struct train_result *res, long start, const char *error);

/* --record-failure: a failed record of the run cfg describes, its shape from the launcher's
 * variables (WORLD_SIZE, DTRAIN_NODELIST, ...). No MPI. Returns the exit status. */
int run_record_lost(const struct record_settings *s, const struct train_config *cfg);

/* What the watchdog's hook needs to record a hung run. */
struct stall_record {
    const struct record_settings *settings;
    struct comm *comm;
    const struct train_config *cfg;
    long start;
};

/* The hook (watchdog.h) that records a stall; ctx is a struct stall_record that outlives the run. */
struct stall_hook run_record_stall_hook(struct stall_record *ctx);

#endif
