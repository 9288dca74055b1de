/* comm.h - the transport between the ranks of a job: collectives, non-blocking sums, point to
 * point and sub-communicators, as a table filled by MPI (comm_mpi.c), NCCL for device buffers
 * (comm_nccl.c) or, for one process, comm_single(). A transport knows nothing of gradients or
 * methods: how gradients are exchanged (BSP, WFBP, ...) is exchange/'s. It keeps no file statics:
 * each comm carries its own state, so several (a world and its splits) live side by side. */
#ifndef COMM_H
#define COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dt_error.h"

/* An allreduce's reduction. MPI has no average: its COMM_AVG is the sum, then comm_scale. */
enum comm_op { COMM_SUM, COMM_AVG };

/* A non-blocking operation under way, storage owned by the caller (an array of them costs no
 * allocation per layer); the transport keeps its own handle inside. */
struct comm_request {
    uint64_t handle[2];
    /* Device transports: 0, or the mark_ready mark whose point of the compute stream the
     * operation waits for (set by the caller before the call; host transports ignore it). */
    int ready_mark;
};

struct comm {
    const char *name;              /* "mpi", "nccl" or "single" */
    int rank, world;
    char hostname[256];
    void *state;
    /* Where the float buffers of allreduce and iallreduce live: true for NCCL (device memory). */
    bool device_buffers;
    /* Two threads may call it at once, each on its own comm (MPI_THREAD_MULTIPLE): what a
     * communication thread beside the rank's own needs (exchange/comm_thread.h). */
    bool thread_safe;
    /* iallreduce_sum leaves the mean, not the sum (NCCL's ncclAvg: a host cannot scale device
     * memory); false: the caller divides (comm_scale, exchange_mean). */
    bool sums_are_means;

    /* buf = op over every rank's buf, in place. */
    int (*allreduce)(struct comm *c, float *buf, size_t count, enum comm_op op, struct dt_err *err);
    /* Starts buf = the sum of every rank's buf without waiting; every rank starts the same
     * operations in the same order. *req is the caller's until test_all or wait_all completes it.
     * NULL where the transport has none. */
    int (*iallreduce_sum)(struct comm *c, float *buf, size_t count, struct comm_request *req, struct dt_err *err);
    /* *done = whether all n have completed; lets those under way advance (MPI moves them only
     * inside its calls). Completed ones may be tested again. */
    int (*test_all)(struct comm *c, struct comm_request *reqs, int n, bool *done, struct dt_err *err);
    /* Waits for all n. */
    int (*wait_all)(struct comm *c, struct comm_request *reqs, int n, struct dt_err *err);
    /* Every rank's buf = root's. */
    int (*broadcast)(struct comm *c, void *buf, size_t bytes, int root, struct dt_err *err);
    /* all[r * bytes ...] = rank r's mine, on every rank. */
    int (*allgather)(struct comm *c, const void *mine, size_t bytes, void *all, struct dt_err *err);
    /* *value = the sum over ranks. */
    int (*sum_long)(struct comm *c, long *value, struct dt_err *err);
    /* *lo, *hi = the least and greatest value over ranks (replica checks). */
    int (*min_max_u64)(struct comm *c, unsigned long long value, unsigned long long *lo, unsigned long long *hi,
                       struct dt_err *err);
    /* Point to point, blocking: bytes from this rank to peer / into buf from peer, matched by tag. */
    int (*send)(struct comm *c, const void *buf, size_t bytes, int peer, int tag, struct dt_err *err);
    int (*recv)(struct comm *c, void *buf, size_t bytes, int peer, int tag, struct dt_err *err);
    /* The same, started without waiting: the buffer is the caller's until test_all or wait_all
     * completes the request. NULL where the transport has none. */
    int (*isend)(struct comm *c, const void *buf, size_t bytes, int peer, int tag, struct comm_request *req,
                 struct dt_err *err);
    int (*irecv)(struct comm *c, void *buf, size_t bytes, int peer, int tag, struct comm_request *req,
                 struct dt_err *err);
    /* A new comm of the ranks that passed the same color, ranked by key (MPI_Comm_split); every
     * rank of c must call it. Free it with destroy. */
    int (*split)(struct comm *c, int color, int key, struct comm **sub, struct dt_err *err);
    /* Device transports: what the compute stream has queued so far makes final the buffer a later
     * non-blocking operation with ready_mark `mark` (1 or more) reads, which then waits for exactly
     * this point, not for all compute queued by the time it starts (a communication thread starts
     * it later). Called on the rank's thread. NULL on host transports (a buffer is final when
     * handed over). */
    int (*mark_ready)(struct comm *c, int mark, struct dt_err *err);
    /* Returns when every operation this comm started has completed (timing an asynchronous
     * device transport). NULL where every call completes before it returns. */
    int (*drain)(struct comm *c, struct dt_err *err);
    /* Frees a comm made by split (the world is ended by finalize). */
    void (*destroy)(struct comm *c);
    /* Ends the whole job now, every rank, with this status. */
    void (*abort)(struct comm *c, int status);
    /* A failure the transport found on its own, outside any call (NCCL's: a peer died while this
     * rank's kernels wait for it, so the stream never finishes): -1 with err, else 0. Called from
     * the watchdog's thread. NULL where every failure comes back from a call. */
    int (*health)(struct comm *c, struct dt_err *err);
    void (*finalize)(struct comm *c);
};

/* buf *= 1 / world: the average from a sum, as every host-side mean in dtrain computes it (one
 * rounding, the same on every rank). */
static inline void comm_scale(float *buf, size_t count, int world)
{
    float scale = 1.0f / (float)world;
    for (size_t i = 0; i < count; i++)
        buf[i] *= scale;
}

/* One process, no launcher: collectives are identities. */
struct comm *comm_single(void);

/* MPI_Init (under srun --mpi=pmix, mpirun, or alone as a world of 1); with threads, asking for
 * MPI_THREAD_MULTIPLE (comm->thread_safe says whether MPI gave it). NULL with err on failure. */
struct comm *comm_mpi_init(int *argc, char ***argv, bool threads, struct dt_err *err);

#endif
