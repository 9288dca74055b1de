/* comm.h - how the ranks of a data-parallel job talk: a small table of collectives the training
 * loop calls, filled by MPI (comm_mpi.c) or, for one process, by comm_single(). NCCL and the
 * other exchange methods (PS, MG-WFBP, ByteScheduler) are further tables; WFBP uses start_sum. */
#ifndef COMM_H
#define COMM_H

#include <stddef.h>

#include "dt_error.h"

struct comm {
    const char *name;              /* "mpi" or "single" */
    int rank, world;
    char hostname[256];
    void *state;

    /* buf = the mean of every rank's buf (the BSP gradient exchange). */
    int (*allreduce_mean)(struct comm *c, float *buf, size_t count, struct dt_err *err);
    /* WFBP's exchange, in pieces of buf: start_sum begins piece = the sum of every rank's piece
     * without waiting (ranks start the same pieces in the same order); progress lets those under
     * way advance (MPI moves them only inside its calls); finish_mean waits for all of them, every
     * piece of buf[0, count) having been started, and divides buf by the world size. */
    int (*start_sum)(struct comm *c, float *buf, size_t count, struct dt_err *err);
    int (*progress)(struct comm *c, struct dt_err *err);
    int (*finish_mean)(struct comm *c, float *buf, size_t count, struct dt_err *err);
    /* Every rank's buf = root's. */
    int (*broadcast)(struct comm *c, void *buf, size_t bytes, int root, struct dt_err *err);
    /* all[r * bytes ...] = rank r's mine, on every rank. */
    int (*allgather)(struct comm *c, const void *mine, size_t bytes, void *all, struct dt_err *err);
    /* *value = the sum over ranks. */
    int (*sum_long)(struct comm *c, long *value, struct dt_err *err);
    /* *lo, *hi = the least and greatest value over ranks (replica checks). */
    int (*min_max_u64)(struct comm *c, unsigned long long value, unsigned long long *lo, unsigned long long *hi,
                       struct dt_err *err);
    /* Ends the whole job now, every rank, with this status. */
    void (*abort)(struct comm *c, int status);
    void (*finalize)(struct comm *c);
};

/* One process, no launcher: collectives are identities. */
struct comm *comm_single(void);

/* MPI_Init (under srun --mpi=pmix, mpirun, or alone as a world of 1). NULL with err on failure. */
struct comm *comm_mpi_init(int *argc, char ***argv, struct dt_err *err);

#endif
