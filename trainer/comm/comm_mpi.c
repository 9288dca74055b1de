/* comm_mpi.c - the transport over MPI (see comm.h). Each comm holds its own MPI_Comm (the world's
 * is MPI_COMM_WORLD, a split's its own); counts above INT_MAX go in pieces. */
#include "trainer/comm/comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(MPI_Request) <= sizeof(((struct comm_request *)0)->handle), "an MPI_Request fits a comm_request");

struct mpi_state {
    MPI_Comm comm;
};

static MPI_Comm mpi_comm_of(const struct comm *c)
{
    return ((const struct mpi_state *)c->state)->comm;
}

static int mpi_error(struct dt_err *err, const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return dt_fail(err, "%s failed: %.*s", what, len, text);
}

/* The largest piece of the rest of count that one MPI call takes. */
static int int_chunk(size_t count, size_t done)
{
    return count - done > INT_MAX ? INT_MAX : (int)(count - done);
}

static int mpi_allreduce(struct comm *c, float *buf, size_t count, enum comm_op op, struct dt_err *err)
{
    for (size_t done = 0; done < count;) {
        int n = int_chunk(count, done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, buf + done, n, MPI_FLOAT, MPI_SUM, mpi_comm_of(c));
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Allreduce", rc);
        done += (size_t)n;
    }
    if (op == COMM_AVG)
        comm_scale(buf, count, c->world);
    return 0;
}

/* A request kept in the caller's storage. */
static int keep_request(MPI_Request r, struct comm_request *req)
{
    memset(req, 0, sizeof *req);
    memcpy(req->handle, &r, sizeof r);
    return 0;
}

/* One request per call: a buffer above INT_MAX floats (8 GiB) is refused rather than split, so
 * that a request stays one MPI_Request. */
static int mpi_iallreduce_sum(struct comm *c, float *buf, size_t count, struct comm_request *req, struct dt_err *err)
{
    if (count > INT_MAX)
        return dt_fail(err, "MPI_Iallreduce of %zu floats: more than one call takes", count);
    MPI_Request r;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, MPI_FLOAT, MPI_SUM, mpi_comm_of(c), &r);
    return rc == MPI_SUCCESS ? keep_request(r, req) : mpi_error(err, "MPI_Iallreduce", rc);
}

static int mpi_test_all(struct comm *c, struct comm_request *reqs, int n, bool *done, struct dt_err *err)
{
    (void)c;
    int flag = 1, rc = MPI_SUCCESS;
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        MPI_Request r;
        int one;
        memcpy(&r, reqs[i].handle, sizeof r);
        rc = MPI_Test(&r, &one, MPI_STATUS_IGNORE);   /* a completed one becomes MPI_REQUEST_NULL */
        memcpy(reqs[i].handle, &r, sizeof r);
        flag = flag && one;
    }
    *done = flag;
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Test", rc);
}

static int mpi_wait_all(struct comm *c, struct comm_request *reqs, int n, struct dt_err *err)
{
    (void)c;
    for (int i = 0; i < n; i++) {
        MPI_Request r;
        memcpy(&r, reqs[i].handle, sizeof r);
        int rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        memcpy(reqs[i].handle, &r, sizeof r);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Wait", rc);
    }
    return 0;
}

static int mpi_broadcast(struct comm *c, void *buf, size_t bytes, int root, struct dt_err *err)
{
    for (size_t done = 0; done < bytes;) {
        int n = int_chunk(bytes, done);
        int rc = MPI_Bcast((char *)buf + done, n, MPI_BYTE, root, mpi_comm_of(c));
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Bcast", rc);
        done += (size_t)n;
    }
    return 0;
}

static int mpi_allgather(struct comm *c, const void *mine, size_t bytes, void *all, struct dt_err *err)
{
    if (bytes > INT_MAX)
        return dt_fail(err, "allgather of %zu bytes per rank is too large", bytes);
    int rc = MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, mpi_comm_of(c));
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Allgather", rc);
}

static int mpi_sum_long(struct comm *c, long *value, struct dt_err *err)
{
    int rc = MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_LONG, MPI_SUM, mpi_comm_of(c));
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Allreduce", rc);
}

static int mpi_min_max(struct comm *c, unsigned long long value, unsigned long long *lo, unsigned long long *hi,
                       struct dt_err *err)
{
    int rc = MPI_Allreduce(&value, lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, mpi_comm_of(c));
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&value, hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, mpi_comm_of(c));
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Allreduce", rc);
}

static int mpi_send(struct comm *c, const void *buf, size_t bytes, int peer, int tag, struct dt_err *err)
{
    for (size_t done = 0; done < bytes;) {
        int n = int_chunk(bytes, done);
        int rc = MPI_Send((const char *)buf + done, n, MPI_BYTE, peer, tag, mpi_comm_of(c));
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Send", rc);
        done += (size_t)n;
    }
    return 0;
}

static int mpi_recv(struct comm *c, void *buf, size_t bytes, int peer, int tag, struct dt_err *err)
{
    for (size_t done = 0; done < bytes;) {
        int n = int_chunk(bytes, done);
        int rc = MPI_Recv((char *)buf + done, n, MPI_BYTE, peer, tag, mpi_comm_of(c), MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Recv", rc);
        done += (size_t)n;
    }
    return 0;
}

/* One request per call: a message above INT_MAX bytes is refused rather than split. */
static int mpi_isend(struct comm *c, const void *buf, size_t bytes, int peer, int tag, struct comm_request *req,
                     struct dt_err *err)
{
    if (bytes > INT_MAX)
        return dt_fail(err, "MPI_Isend of %zu bytes: more than one call takes", bytes);
    MPI_Request r;
    int rc = MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, mpi_comm_of(c), &r);
    return rc == MPI_SUCCESS ? keep_request(r, req) : mpi_error(err, "MPI_Isend", rc);
}

static int mpi_irecv(struct comm *c, void *buf, size_t bytes, int peer, int tag, struct comm_request *req,
                     struct dt_err *err)
{
    if (bytes > INT_MAX)
        return dt_fail(err, "MPI_Irecv of %zu bytes: more than one call takes", bytes);
    MPI_Request r;
    int rc = MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, tag, mpi_comm_of(c), &r);
    return rc == MPI_SUCCESS ? keep_request(r, req) : mpi_error(err, "MPI_Irecv", rc);
}

static void mpi_abort(struct comm *c, int status)
{
    (void)c;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);   /* the whole job, whichever comm saw the failure */
}

static int mpi_split(struct comm *c, int color, int key, struct comm **sub, struct dt_err *err);

static void mpi_destroy(struct comm *c)
{
    if (!c)
        return;
    struct mpi_state *s = c->state;
    if (s->comm != MPI_COMM_WORLD)
        MPI_Comm_free(&s->comm);
    free(c);   /* the comm and its state are one allocation */
}

static void mpi_finalize(struct comm *c)
{
    mpi_destroy(c);
    MPI_Finalize();
}

/* A comm over mpi_comm, with its state in the same allocation. */
static struct comm *mpi_wrap(MPI_Comm mpi_comm, const char *hostname, bool thread_safe)
{
    struct {
        struct comm table;
        struct mpi_state state;
    } *both = calloc(1, sizeof *both);
    if (!both)
        return NULL;
    both->state.comm = mpi_comm;
    struct comm *c = &both->table;
    *c = (struct comm){.name = "mpi", .state = &both->state, .allreduce = mpi_allreduce,
                       .iallreduce_sum = mpi_iallreduce_sum, .test_all = mpi_test_all, .wait_all = mpi_wait_all,
                       .broadcast = mpi_broadcast, .allgather = mpi_allgather, .sum_long = mpi_sum_long,
                       .min_max_u64 = mpi_min_max, .send = mpi_send, .recv = mpi_recv, .isend = mpi_isend, .irecv = mpi_irecv, .split = mpi_split,
                       .destroy = mpi_destroy, .abort = mpi_abort, .finalize = mpi_finalize};
    c->thread_safe = thread_safe;
    MPI_Comm_rank(mpi_comm, &c->rank);
    MPI_Comm_size(mpi_comm, &c->world);
    snprintf(c->hostname, sizeof c->hostname, "%s", hostname);
    return c;
}

static int mpi_split(struct comm *c, int color, int key, struct comm **sub, struct dt_err *err)
{
    MPI_Comm part;
    int rc = MPI_Comm_split(mpi_comm_of(c), color, key, &part);
    if (rc != MPI_SUCCESS)
        return mpi_error(err, "MPI_Comm_split", rc);
    MPI_Comm_set_errhandler(part, MPI_ERRORS_RETURN);
    if (!(*sub = mpi_wrap(part, c->hostname, c->thread_safe))) {
        MPI_Comm_free(&part);
        return dt_fail(err, "out of memory");
    }
    return 0;
}

/* Open MPI settings dtrain's exchanges want, set before MPI_Init (which reads them) unless this
 * run's environment chose its own; other MPIs ignore them.
 *
 * coll_libnbc_iallreduce_algorithm 3: Open MPI's non-blocking allreduce takes, by default, for
 * fewer than 4 ranks or any in-place sum (every one of ours), a binomial reduce to rank 0 and a
 * broadcast back: each byte crosses the link twice, one crossing after the other, and rank 0 holds
 * the sum a whole message time before the others, which then start their next step late.
 * Rabenseifner's reduce-scatter and allgather sends each rank's share once each way on every link
 * at the same time. Measured on the test cluster (ResNet-50 emulated, 2 workers over a 10 Gbit/s
 * link dilated 16x, 2026-11-24): WFBP 324 -> 481 samples/s, ByteScheduler 379 -> 459 (means of 3).
 *
 * btl_tcp_links 2: over TCP Open MPI keeps one connection a pair of ranks by default, and a large
 * message in each direction at once (every allreduce's steps, a push beside a pull) then ran either
 * both ways together or one after the other, at exactly twice the wire time (the second
 * rendezvous' go-ahead waiting behind the first message's data on the one connection): MPI_Sendrecv
 * of 16 MB across a 1.25 Gbit/s shaped link 112 ms or 223 ms, at random, and the 2-rank allreduce
 * at 52-68% of the link's rate from 1 MB up. Two connections a pair: 113-130 ms, never 223, the
 * allreduce at 75-97% (2026-11-29, docs/studies/2026-11-28-allreduces-started-apart.md). */
static void comm_mpi_defaults(void)
{
    setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
    setenv("OMPI_MCA_btl_tcp_links", "2", 0);
}

struct comm *comm_mpi_init(int *argc, char ***argv, bool threads, struct dt_err *err)
{
    /* Only runs that have a communication thread ask for threads: the others keep MPI's cheaper
     * single-threaded paths. */
    int provided = MPI_THREAD_SINGLE;
    comm_mpi_defaults();
    int rc = threads ? MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) : MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
        dt_fail(err, "MPI_Init failed (under srun, Debian's Open MPI needs --mpi=pmix)");
        return NULL;
    }
    /* Errors come back as codes, so a failing collective can name itself before aborting the job. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME + 1];
    MPI_Get_processor_name(name, &len);
    name[len] = '\0';
    struct comm *world = mpi_wrap(MPI_COMM_WORLD, name, provided == MPI_THREAD_MULTIPLE);
    if (!world) {
        dt_fail(err, "out of memory");
        MPI_Finalize();
        return NULL;
    }
    /* dtrain's local mode starts copies of a program, not an MPI job: each copy would be a world of
     * one and train alone (and record itself as a run of one rank) */
    const char *launched = getenv("WORLD_SIZE");
    if (world->world == 1 && launched && atoi(launched) > 1) {
        dt_fail(err, "WORLD_SIZE=%s, but MPI sees 1 rank: this is one of %s copies dtrain started in local mode, "
                "not an MPI job; start MPI programs with mpirun -np %s dtrain ... (or srun --mpi=pmix dtrain ...)",
                launched, launched, launched);
        world->destroy(world);
        MPI_Finalize();
        return NULL;
    }
    return world;
}
