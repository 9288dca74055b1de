/* comm_mpi.c - the collectives over MPI (see comm.h). Gradients are averaged with one
 * MPI_Allreduce over the whole flat buffer (the BSP method); counts above INT_MAX go in pieces. */
#include "comm.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mpi_error(struct dt_err *err, const char *what, int code)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, text, &len);
    return dt_fail(err, "%s failed: %.*s", what, len, text);
}

static void divide_by_world(const struct comm *c, float *buf, size_t count)
{
    float scale = 1.0f / (float)c->world;
    for (size_t i = 0; i < count; i++)
        buf[i] *= scale;
}

static int mpi_allreduce_mean(struct comm *c, float *buf, size_t count, struct dt_err *err)
{
    for (size_t done = 0; done < count;) {
        int n = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        int rc = MPI_Allreduce(MPI_IN_PLACE, buf + done, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Allreduce of the gradients", rc);
        done += (size_t)n;
    }
    divide_by_world(c, buf, count);
    return 0;
}

/* The MPI_Iallreduce requests of one backward pass (WFBP). */
static struct {
    MPI_Request *requests;
    int count, cap;
} sums;

static int mpi_start_sum(struct comm *c, float *buf, size_t count, struct dt_err *err)
{
    (void)c;
    for (size_t done = 0; done < count;) {
        int n = count - done > INT_MAX ? INT_MAX : (int)(count - done);
        if (sums.count == sums.cap) {
            int cap = sums.cap ? 2 * sums.cap : 64;
            MPI_Request *grown = realloc(sums.requests, (size_t)cap * sizeof *grown);
            if (!grown)
                return dt_fail(err, "out of memory");
            sums.requests = grown, sums.cap = cap;
        }
        int rc = MPI_Iallreduce(MPI_IN_PLACE, buf + done, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD,
                                &sums.requests[sums.count]);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Iallreduce of a layer's gradients", rc);
        sums.count++;
        done += (size_t)n;
    }
    return 0;
}

static int mpi_progress(struct comm *c, struct dt_err *err)
{
    (void)c;
    int all_done, rc = sums.count ? MPI_Testall(sums.count, sums.requests, &all_done, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Testall of the gradient exchange", rc);
}

static int mpi_finish_mean(struct comm *c, float *buf, size_t count, struct dt_err *err)
{
    int rc = MPI_Waitall(sums.count, sums.requests, MPI_STATUSES_IGNORE);
    sums.count = 0;
    if (rc != MPI_SUCCESS)
        return mpi_error(err, "MPI_Waitall of the gradient exchange", rc);
    divide_by_world(c, buf, count);
    return 0;
}

static int mpi_broadcast(struct comm *c, void *buf, size_t bytes, int root, struct dt_err *err)
{
    (void)c;
    for (size_t done = 0; done < bytes;) {
        int n = bytes - done > INT_MAX ? INT_MAX : (int)(bytes - done);
        int rc = MPI_Bcast((char *)buf + done, n, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            return mpi_error(err, "MPI_Bcast", rc);
        done += (size_t)n;
    }
    return 0;
}

static int mpi_allgather(struct comm *c, const void *mine, size_t bytes, void *all, struct dt_err *err)
{
    (void)c;
    if (bytes > INT_MAX)
        return dt_fail(err, "allgather of %zu bytes per rank is too large", bytes);
    int rc = MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Allgather", rc);
}

static int mpi_sum_long(struct comm *c, long *value, struct dt_err *err)
{
    (void)c;
    int rc = MPI_Allreduce(MPI_IN_PLACE, value, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Allreduce", rc);
}

static int mpi_min_max(struct comm *c, unsigned long long value, unsigned long long *lo, unsigned long long *hi,
                       struct dt_err *err)
{
    (void)c;
    int rc = MPI_Allreduce(&value, lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = MPI_Allreduce(&value, hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : mpi_error(err, "MPI_Allreduce", rc);
}

static void mpi_abort(struct comm *c, int status)
{
    (void)c;
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
}

static void mpi_finalize(struct comm *c)
{
    (void)c;
    free(sums.requests);
    MPI_Finalize();
}

struct comm *comm_mpi_init(int *argc, char ***argv, struct dt_err *err)
{
    static struct comm mpi = {
        .name = "mpi", .allreduce_mean = mpi_allreduce_mean, .start_sum = mpi_start_sum, .progress = mpi_progress,
        .finish_mean = mpi_finish_mean, .broadcast = mpi_broadcast, .allgather = mpi_allgather,
        .sum_long = mpi_sum_long, .min_max_u64 = mpi_min_max, .abort = mpi_abort, .finalize = mpi_finalize,
    };
    int rc = MPI_Init(argc, argv);
    if (rc != MPI_SUCCESS) {
        dt_fail(err, "MPI_Init failed (under srun, Debian's Open MPI needs --mpi=pmix)");
        return NULL;
    }
    /* Errors come back as codes, so a failing collective can name itself before aborting the job. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi.world);
    int len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(name, &len);
    snprintf(mpi.hostname, sizeof mpi.hostname, "%.*s", len, name);
    return &mpi;
}
