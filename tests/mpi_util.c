/* mpi_util.c - what the MPI tests share (mpi_util.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/mpi_util.h"

char mpi_dir[] = "/tmp/dtrain-test-mpi-XXXXXX";
char mpirun_path[4096];

static bool find_mpirun(void)
{
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    for (char *d = strtok(dirs, ":"); d; d = strtok(NULL, ":")) {
        snprintf(mpirun_path, sizeof mpirun_path, "%s/mpirun", d);
        if (access(mpirun_path, X_OK) == 0)
            return true;
    }
    return false;
}

/* Ends the test as skipped, with a visible line, where Open MPI's mpirun_path is not installed. */
void require_mpirun(void)
{
    if (find_mpirun())
        return;
    tu_skip("mpirun missing");
}

/* The same, also where Debian's Fashion-MNIST is not installed. */
void require_mpirun_and_fashion_mnist(void)
{
    if (find_mpirun() && access("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz", R_OK) == 0)
        return;
    tu_skip("mpirun or Fashion-MNIST missing (make deps installs both)");
}

int mpi_setup(void **state)
{
    (void)state;
    return mkdtemp(mpi_dir) ? 0 : -1;
}

int mpi_teardown(void **state)
{
    (void)state;
    return tu_remove_tree(mpi_dir);
}

/* The environment every mpirun_path of these tests needs. */
void mpi_environment(struct tu_env *env)
{
    tu_env_basics(env);
    tu_env_set(env, "OMPI_ALLOW_RUN_AS_ROOT", "1");           /* CI runs as root */
    tu_env_set(env, "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    tu_env_set(env, "OMPI_MCA_btl", "self,vader");             /* one machine: shared memory only */
    /* Open MPI's and PMIx's plug-ins keep allocations until exit and are unloaded before the leak
     * check can name them; the trainer's own memory is leak-checked in-process by test_train.
     * Address and undefined-behaviour checks stay on. */
    tu_env_set(env, "ASAN_OPTIONS", "abort_on_error=1:detect_leaks=0");
}

/* Runs a shell script in mpi_environment; *r has its exit status and output. */
static void run_in_mpi_environment(const char *script, struct tu_result *r)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct tu_env env = {0};
    mpi_environment(&env);
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

void run_mpi_script(const char *script, struct tu_result *r)
{
    run_in_mpi_environment(script, r);
    if (r->status != 0)
        print_error("%s\nexit %d\n%s%s", script, r->status, r->out, r->err);
    assert_int_equal(r->status, 0);
}

/* Runs a shell script that ends by printing "status S after M ms"; returns S and M. */
void run_timed(const char *script, struct tu_result *r, int *status, long *ms)
{
    run_in_mpi_environment(script, r);
    const char *at = strstr(r->out, "status ");
    assert_int_equal(sscanf(at ? at : "", "status %d after %ld ms", status, ms), 2);
}

/* Runs dtrain-train (through mpirun_path when ranks > 1) with common training options plus extra. */
/* dtrain-train on ranks ranks (1: alone, else through mpirun_path and dtrain) with the options common
 * and extra, its parameters written to mpi_dir/out.rankR; it must succeed. */
void train_with(int ranks, const char *common, const char *batch, const char *out, const char *extra,
                       struct tu_result *r)
{
    char cmd[8192];
    if (ranks > 1)
        snprintf(cmd, sizeof cmd, "%s --oversubscribe -np %d %s --gpus-per-node 0 -- %s %s --batch-size %s "
                 "--params-out %s/%s %s", mpirun_path, ranks, tu_bin("dtrain"), tu_bin("dtrain-train"), common, batch, mpi_dir,
                 out, extra);
    else
        snprintf(cmd, sizeof cmd, "%s %s --batch-size %s --params-out %s/%s %s", tu_bin("dtrain-train"), common,
                 batch, mpi_dir, out, extra);
    run_mpi_script(cmd, r);
}

/* 12 steps of LeNet on Fashion-MNIST. */
void train(int ranks, const char *batch, const char *out, const char *extra, struct tu_result *r)
{
    train_with(ranks, "--model lenet --dataset fashion-mnist --optimizer adam --lr 0.001 --max-steps 12 "
               "--log-every 4 --eval-every 0 --quiet", batch, out, extra, r);
}

float *read_params(const char *name, size_t *count)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", mpi_dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    rewind(f);
    float *p = malloc((size_t)bytes);
    assert_int_equal(fread(p, 1, (size_t)bytes, f), (size_t)bytes);
    fclose(f);
    *count = (size_t)bytes / sizeof(float);
    return p;
}

/* Two runs' parameter files hold the same parameters, bit for bit. */
void assert_same_params(const char *name, const char *other)
{
    size_t n1, n2;
    float *p1 = read_params(name, &n1), *p2 = read_params(other, &n2);
    assert_int_equal(n2, n1);
    assert_memory_equal(p1, p2, n1 * sizeof(float));
    free(p1), free(p2);
}

