/* launch_overhead.c - what dtrain adds to starting a program: whole-process wall time of
 * `dtrain ... -- true` against bare `true`, run interleaved so machine noise hits both alike.
 * Usage: launch_overhead PATH/TO/dtrain [RUNS]     (make bench) */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

/* A 2-node x 2-task srun step, task 3 (as recorded on the project's test cluster). */
static char *slurm_step_env[] = {
    "SLURM_JOB_ID=4", "SLURM_STEP_ID=0", "SLURMD_NODENAME=gn02", "SLURM_STEP_NODELIST=gn[01-02]",
    "SLURM_JOB_NODELIST=gn[01-02]", "SLURM_STEP_NUM_NODES=2", "SLURM_STEP_NUM_TASKS=4",
    "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_PROCID=3", "SLURM_LOCALID=1", "SLURM_NODEID=1",
    "SLURM_CPUS_ON_NODE=2", "PATH=/usr/bin:/bin", NULL,
};
static char *plain_env[] = {"PATH=/usr/bin:/bin", NULL};

struct subject {
    const char *label;
    char **argv;
    char **envp;
    double *ms;
};

static double run_once(char **argv, char **envp)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, envp) != 0) {
        fprintf(stderr, "launch_overhead: cannot start %s\n", argv[0]);
        exit(1);
    }
    int status;
    waitpid(pid, &status, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "launch_overhead: %s failed\n", argv[0]);
        exit(1);
    }
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *sorted, int n, double p)
{
    return sorted[(int)(p * (n - 1) + 0.5)];
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: launch_overhead PATH/TO/dtrain [RUNS]\n", stderr);
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 400;
    if (runs < 10)
        runs = 10;
    char *dtrain = argv[1];
    char *bare[] = {"true", NULL};
    char *local[] = {dtrain, "--gpus-per-node", "0", "--", "true", NULL};
    char *step[] = {dtrain, "--nodes", "2", "--gpus-per-node", "0", "--", "true", NULL};
    char *two[] = {dtrain, "--ranks", "2", "--", "true", NULL};
    struct subject subjects[] = {
        {"`true` (bare)", bare, plain_env, NULL},
        {"`dtrain --gpus-per-node 0 -- true`, no Slurm (exec)", local, plain_env, NULL},
        {"`dtrain --nodes 2 --gpus-per-node 0 -- true`, in a srun step (exec)", step, slurm_step_env, NULL},
        {"`dtrain --ranks 2 -- true`, local mode (fork 2, supervise)", two, plain_env, NULL},
    };
    int n = (int)(sizeof subjects / sizeof subjects[0]);
    for (int s = 0; s < n; s++)
        subjects[s].ms = calloc((size_t)runs, sizeof(double));
    for (int s = 0; s < n; s++)   /* warm the page cache */
        run_once(subjects[s].argv, subjects[s].envp);
    for (int r = 0; r < runs; r++)
        for (int s = 0; s < n; s++)
            subjects[s].ms[r] = run_once(subjects[s].argv, subjects[s].envp);

    printf("launch overhead: %d interleaved runs each, whole-process wall time\n\n", runs);
    printf("| command | median ms | p90 ms | median / bare `true` |\n|---|---|---|---|\n");
    double base = 0;
    for (int s = 0; s < n; s++) {
        qsort(subjects[s].ms, (size_t)runs, sizeof(double), by_value);
        double median = percentile(subjects[s].ms, runs, 0.5);
        if (s == 0)
            base = median;
        printf("| %s | %.3f | %.3f | %.2fx (+%.3f ms) |\n", subjects[s].label, median,
               percentile(subjects[s].ms, runs, 0.9), median / base, median - base);
        free(subjects[s].ms);
    }
    return 0;
}
