/* comm_check.c - the MPI transport's operations, run under mpirun by test_mpi (3 ranks): a split
 * into sub-communicators, allreduce on each, non-blocking sums with test and wait, send and
 * receive, blocking and not, each checked against the values it must give, and comm_mpi_init's
 * Open MPI settings (Rabenseifner's non-blocking allreduce, two TCP connections a pair of ranks;
 * comm_mpi.c says why) set where the environment chose none, left where it did. Prints
 * "comm check: ok" on rank 0 and exits 0, or names the rank and what differed and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/comm/comm.h"

static int failures;

static void expect_value(struct comm *world, int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "comm check: rank %d: %s\n", world->rank, what);
        failures++;
    }
}

/* Ranks of the same parity form a sub-communicator; its allreduce sums their world ranks. */
static void check_split(struct comm *world, struct dt_err *err)
{
    struct comm *part;
    if (world->split(world, world->rank % 2, world->rank, &part, err) < 0) {
        expect_value(world, 0, err->msg);
        return;
    }
    int want_size = 0;
    float want_sum = 0;
    for (int r = world->rank % 2; r < world->world; r += 2)
        want_size++, want_sum += (float)r;
    expect_value(world, part->world == want_size, "split: the part's size");
    expect_value(world, part->rank == world->rank / 2, "split: the rank within the part");
    float value = (float)world->rank;
    expect_value(world, part->allreduce(part, &value, 1, COMM_SUM, err) == 0 && value == want_sum, "split: allreduce sum");
    value = (float)world->rank;
    expect_value(world, part->allreduce(part, &value, 1, COMM_AVG, err) == 0 && value == want_sum / (float)want_size,
           "split: allreduce average");
    part->destroy(part);
}

/* Two non-blocking sums in flight at once, tested, then waited for; a's length divides by neither
 * 2 nor 3, so Rabenseifner's reduce-scatter splits it unevenly. */
static void check_nonblocking(struct comm *world, struct dt_err *err)
{
    enum { A_COUNT = 100003 };
    float *a = malloc(A_COUNT * sizeof *a), b[3];
    if (!a) {
        expect_value(world, 0, "out of memory");
        return;
    }
    for (int i = 0; i < A_COUNT; i++)
        a[i] = (float)(world->rank + i);
    for (int i = 0; i < 3; i++)
        b[i] = 1.0f;
    struct comm_request reqs[2];
    bool done;
    expect_value(world, world->iallreduce_sum(world, a, A_COUNT, &reqs[0], err) == 0, "iallreduce_sum a");
    expect_value(world, world->iallreduce_sum(world, b, 3, &reqs[1], err) == 0, "iallreduce_sum b");
    expect_value(world, world->test_all(world, reqs, 2, &done, err) == 0, "test_all");
    expect_value(world, world->wait_all(world, reqs, 2, err) == 0, "wait_all");
    expect_value(world, world->test_all(world, reqs, 2, &done, err) == 0 && done, "test_all after wait_all: done");
    float ranks = (float)(world->world * (world->world - 1) / 2);
    for (int i = 0; i < A_COUNT; i++)
        if (a[i] != ranks + (float)(world->world * i)) {
            expect_value(world, 0, "iallreduce_sum: a wrong sum");
            break;
        }
    expect_value(world, b[0] == (float)world->world && b[2] == (float)world->world, "iallreduce_sum: b");
    free(a);
}

/* One of comm_mpi_init's Open MPI settings: OMPI_MCA_<name> holds its default after the init unless
 * this run's environment had chosen a value before (then that one, untouched), and where Open MPI
 * has the control variable (a component this run loaded) it reads the same. Other MPIs have no such
 * variable: only the environment is checked. */
static void check_mca_default(struct comm *world, const char *name, const char *chosen_before, int fallback)
{
    char env_name[128];
    snprintf(env_name, sizeof env_name, "OMPI_MCA_%s", name);
    int want = chosen_before ? atoi(chosen_before) : fallback;
    const char *now = getenv(env_name);
    if (!now || atoi(now) != want)
        fprintf(stderr, "comm check: rank %d: %s is %s, not %d\n", world->rank, env_name, now ? now : "unset", want);
    expect_value(world, now && atoi(now) == want, env_name);
    int provided, index, count, value = -1;
    MPI_T_cvar_handle handle;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_cvar_get_index(name, &index) == MPI_SUCCESS &&
        MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) == MPI_SUCCESS) {
        int rc = count == 1 ? MPI_T_cvar_read(handle, &value) : MPI_ERR_OTHER;
        MPI_T_cvar_handle_free(&handle);
        if (rc != MPI_SUCCESS || value != want)
            fprintf(stderr, "comm check: rank %d: %s is %d, not %d\n", world->rank, name, value, want);
        expect_value(world, rc == MPI_SUCCESS && value == want, name);
    }
    MPI_T_finalize();
}

/* Around a ring: each rank sends its rank to the next and receives the one before. Even ranks send
 * first, odd ones receive first, so blocking calls cannot all wait at once. */
static void check_point_to_point(struct comm *world, struct dt_err *err)
{
    int next = (world->rank + 1) % world->world, prev = (world->rank + world->world - 1) % world->world;
    long mine = 1000 + world->rank, got = -1;
    int rc;
    if (world->rank % 2 == 0)
        rc = world->send(world, &mine, sizeof mine, next, 7, err) || world->recv(world, &got, sizeof got, prev, 7, err);
    else
        rc = world->recv(world, &got, sizeof got, prev, 7, err) || world->send(world, &mine, sizeof mine, next, 7, err);
    expect_value(world, rc == 0 && got == 1000 + prev, "send/recv around the ring");
    /* the same without waiting: both posted at once, then waited for together */
    struct comm_request reqs[2];
    got = -1;
    rc = world->irecv(world, &got, sizeof got, prev, 8, &reqs[0], err) ||
         world->isend(world, &mine, sizeof mine, next, 8, &reqs[1], err) || world->wait_all(world, reqs, 2, err);
    expect_value(world, rc == 0 && got == 1000 + prev, "isend/irecv around the ring");
}

int main(int argc, char **argv)
{
    struct dt_err err;
    /* what this run's environment chose before comm_mpi_init, which must leave it */
    const char *algorithm = getenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm");
    const char *links = getenv("OMPI_MCA_btl_tcp_links");
    char *algorithm_before = algorithm ? strdup(algorithm) : NULL, *links_before = links ? strdup(links) : NULL;
    struct comm *world = comm_mpi_init(&argc, &argv, true, &err);
    if (!world) {
        fprintf(stderr, "comm check: %s\n", err.msg);
        return 1;
    }
    check_split(world, &err);
    check_nonblocking(world, &err);
    check_mca_default(world, "coll_libnbc_iallreduce_algorithm", algorithm_before, 3);   /* Rabenseifner */
    check_mca_default(world, "btl_tcp_links", links_before, 2);
    free(algorithm_before), free(links_before);
    if (world->world > 1)
        check_point_to_point(world, &err);
    long failed = failures;
    expect_value(world, world->sum_long(world, &failed, &err) == 0, "sum_long");
    if (world->rank == 0 && failed == 0)
        printf("comm check: ok (%d ranks)\n", world->world);
    world->finalize(world);
    return failed ? 1 : 0;
}
