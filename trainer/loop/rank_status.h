/* rank_status.h - where each rank is, readable by the others while a collective hangs. The loop
 * notes its phase (loading data, forward, backward, the exchange, the update, a checkpoint, an
 * evaluation) and step as it goes, in memory; the watchdog's thread writes it once a second to a
 * small file of its own in a directory every rank of the job uses. When no step has finished for a
 * while, any rank reads every rank's file and says which ranks have not reached the step the others
 * wait in, what they are doing and for how long: the stuck rank named, not the one whose watchdog
 * fired first (Horovod's stall check, without a collective, which would hang too). */
#ifndef RANK_STATUS_H
#define RANK_STATUS_H

#include <stdatomic.h>
#include <stddef.h>

#include "trainer/comm/comm.h"
#include "common/dt_error.h"

enum rank_phase {
    PHASE_STARTING, PHASE_DATA, PHASE_FORWARD, PHASE_BACKWARD, PHASE_EXCHANGE, PHASE_UPDATE, PHASE_CHECKPOINT,
    PHASE_EVALUATION, PHASE_FINISHED, PHASE_COUNT
};

struct rank_status {
    _Atomic int phase;
    _Atomic long step;
    _Atomic long since_ms;     /* when the phase began: wall-clock ms, comparable across nodes */
    int rank, world;           /* among the workers: the files' numbers */
    int world_rank;            /* as messages name ranks */
    char host[64];
    char dir[512];             /* the job's status directory; "" when none could be made */
    int fd;                    /* this rank's file, -1 when none */
};

/* Makes or joins the job's status directory: rank 0 makes one below parent (NULL: $TMPDIR or /tmp)
 * and tells the others its name (a broadcast, at start, while nothing hangs); each rank opens its
 * file there. A rank whose node cannot reach the directory (another node's /tmp) makes the same
 * name on its own; ranks on other nodes are then missing from what this rank reads. 0, or -1 with
 * err (the run goes on without statuses: the caller says so). */
int rank_status_open(struct rank_status *s, struct comm *comm, int world_rank, const char *parent, struct dt_err *err);

/* The loop is now in phase at step (cheap: atomic stores and a clock read). */
void rank_status_set(struct rank_status *s, enum rank_phase phase, long step);

/* The same step, a new phase (NULL s: nothing). */
void rank_status_phase(struct rank_status *s, enum rank_phase phase);

/* Writes this rank's status to its file (the watchdog's thread, once a second). */
void rank_status_write(const struct rank_status *s);

/* What every rank's file says, in words: the ranks behind the others ("rank 2 on gn02 is loading
 * data of step 5 for 3.2 s") and those waiting ("ranks 0, 1, 3 wait in the exchange of step 5"),
 * and the ranks whose file was not found. Into text; "" when nothing can be read. */
void rank_status_describe(const struct rank_status *s, char *text, size_t size);

/* Removes this rank's file (and the directory, when it is the last). Nothing for a status never
 * opened (a zeroed struct included). */
void rank_status_close(struct rank_status *s);

/* Before a stalled job is ended: rank 0 removes every rank's file and the directory (the others
 * may be killed before they could), the others their own. */
void rank_status_remove_all(struct rank_status *s);

#endif
