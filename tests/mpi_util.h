/* mpi_util.h - what the MPI tests (test_mpi.c, test_mpi_jobs.c) share: Open MPI's mpirun found on
 * PATH, a scratch directory per program, the environment every mpirun needs, and training runs
 * whose parameters are compared bit for bit. */
#ifndef MPI_UTIL_H
#define MPI_UTIL_H

#include <stddef.h>

#include "tests/testutil.h"

extern char mpi_dir[];       /* the program's scratch directory (mpi_setup makes it) */
extern char mpirun_path[];   /* Open MPI's mpirun, once require_mpirun found it */

/* End the test as skipped where mpirun (and, for the second, Debian's Fashion-MNIST) is missing. */
void require_mpirun(void);
void require_mpirun_and_fashion_mnist(void);

/* cmocka group set-up and tear-down: the scratch directory. */
int mpi_setup(void **state);
int mpi_teardown(void **state);

/* The environment every mpirun of these tests needs (root allowed, shared memory only, no leak
 * check of Open MPI's own allocations). */
void mpi_environment(struct tu_env *env);

/* Runs a shell script of mpirun commands in mpi_environment; it must exit 0 (else the script and
 * its output are printed and the test fails). */
void run_mpi_script(const char *script, struct tu_result *r);

/* Runs a shell script that ends by printing "status S after M ms"; returns S and M. */
void run_timed(const char *script, struct tu_result *r, int *status, long *ms);

/* dtrain-train on ranks ranks (1: alone, else through mpirun and dtrain) with the options common
 * and extra, its parameters written to mpi_dir/out.rankR; it must succeed. */
void train_with(int ranks, const char *common, const char *batch, const char *out, const char *extra,
                struct tu_result *r);
/* 12 steps of LeNet on Fashion-MNIST. */
void train(int ranks, const char *batch, const char *out, const char *extra, struct tu_result *r);

/* A parameter file of mpi_dir (free it); two of them equal, bit for bit. */
float *read_params(const char *name, size_t *count);
void assert_same_params(const char *name, const char *other);

#endif
