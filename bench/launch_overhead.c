/* launch_overhead.c - what dtrain adds to starting a program: whole-process wall time of
 * `dtrain ... -- true` against bare `true`, run interleaved so machine noise hits both alike;
 * with the node's topology cache emptied before every run (cold) and kept (cached); and 16
 * ranks starting at once on an empty cache.
 * Usage: launch_overhead PATH/TO/dtrain [RUNS]     (make bench) */
#include <dirent.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static char cache_var[4200] = "DTRAIN_TOPO_CACHE=";
static char cache_dir[] = "/tmp/dtrain-bench-topocache-XXXXXX";

/* A 2-node x 2-task srun step, task 3 (as recorded on the project's test cluster). */
static char *slurm_step_env[] = {
    "SLURM_JOB_ID=4", "SLURM_STEP_ID=0", "SLURMD_NODENAME=gn02", "SLURM_STEP_NODELIST=gn[01-02]",
    "SLURM_JOB_NODELIST=gn[01-02]", "SLURM_STEP_NUM_NODES=2", "SLURM_STEP_NUM_TASKS=4",
    "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_PROCID=3", "SLURM_LOCALID=1", "SLURM_NODEID=1",
    "SLURM_CPUS_ON_NODE=2", "PATH=/usr/bin:/bin", cache_var, NULL,
};
static char *plain_env[] = {"PATH=/usr/bin:/bin", cache_var, NULL};

struct subject {
    const char *label;
    char **argv;
    char **envp;
    int cold;          /* empty the topology cache before each run */
    double *ms;
};

static void empty_cache(void)
{
    DIR *dir = opendir(cache_dir);
    for (struct dirent *e; dir && (e = readdir(dir));) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
        if (e->d_name[0] != '.')
            unlink(path);
    }
    if (dir)
        closedir(dir);
}

/* Starts `copies` processes at once and waits for all; the wall time in ms. */
static double run_together(char **argv, char **envp, int copies)
{
    struct timespec t0, t1;
    pid_t pids[64];
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < copies; i++)
        if (posix_spawnp(&pids[i], argv[0], NULL, NULL, argv, envp) != 0) {
            fprintf(stderr, "launch_overhead: cannot start %s\n", argv[0]);
            exit(1);
        }
    for (int i = 0; i < copies; i++) {
        int status;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "launch_overhead: %s failed\n", argv[0]);
            exit(1);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
}

static double run_once(char **argv, char **envp)
{
    return run_together(argv, envp, 1);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile_of(double *sorted, int n, double p)
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
    if (!mkdtemp(cache_dir))
        return perror("mkdtemp"), 1;
    strcat(cache_var, cache_dir);
    char *bare[] = {"true", NULL};
    char *local[] = {dtrain, "--gpus-per-node", "0", "--", "true", NULL};
    char *step[] = {dtrain, "--nodes", "2", "--gpus-per-node", "0", "--", "true", NULL};
    char *two[] = {dtrain, "--ranks", "2", "--", "true", NULL};
    struct subject subjects[] = {
        {"`true` (bare)", bare, plain_env, 0, NULL},
        {"`dtrain --gpus-per-node 0 -- true`, topology cached", local, plain_env, 0, NULL},
        {"`dtrain --gpus-per-node 0 -- true`, topology discovered (cold cache)", local, plain_env, 1, NULL},
        {"`dtrain --nodes 2 --gpus-per-node 0 -- true`, in a srun step, cached", step, slurm_step_env, 0, NULL},
        {"`dtrain --ranks 2 -- true`, local mode (fork 2, supervise), cached", two, plain_env, 0, NULL},
    };
    int n = (int)(sizeof subjects / sizeof subjects[0]);
    for (int s = 0; s < n; s++)
        subjects[s].ms = calloc((size_t)runs, sizeof(double));
    for (int s = 0; s < n; s++)   /* warm the page cache */
        run_once(subjects[s].argv, subjects[s].envp);
    for (int r = 0; r < runs; r++)
        for (int s = 0; s < n; s++) {
            if (subjects[s].cold)
                empty_cache();
            subjects[s].ms[r] = run_once(subjects[s].argv, subjects[s].envp);
        }

    printf("launch overhead: %d interleaved runs each, whole-process wall time\n\n", runs);
    printf("| command | median ms | p90 ms | median / bare `true` |\n|---|---|---|---|\n");
    double base = 0;
    for (int s = 0; s < n; s++) {
        qsort(subjects[s].ms, (size_t)runs, sizeof(double), by_value);
        double median = percentile_of(subjects[s].ms, runs, 0.5);
        if (s == 0)
            base = median;
        printf("| %s | %.3f | %.3f | %.2fx (+%.3f ms) |\n", subjects[s].label, median,
               percentile_of(subjects[s].ms, runs, 0.9), median / base, median - base);
        free(subjects[s].ms);
    }
    /* 16 ranks of one node starting together: one discovers under the lock, 15 read its export. */
    int rounds = runs / 10 > 5 ? runs / 10 : 5;
    double *cold16 = calloc((size_t)rounds, sizeof(double)), *true16 = calloc((size_t)rounds, sizeof(double));
    for (int r = 0; r < rounds; r++) {
        empty_cache();
        cold16[r] = run_together(local, plain_env, 16);
        true16[r] = run_together(bare, plain_env, 16);
    }
    qsort(cold16, (size_t)rounds, sizeof(double), by_value);
    qsort(true16, (size_t)rounds, sizeof(double), by_value);
    double c = percentile_of(cold16, rounds, 0.5), t = percentile_of(true16, rounds, 0.5);
    printf("\n16 ranks started at once, empty cache: %.2f ms for all (16 x `true`: %.2f ms), "
           "%.2f ms per rank over `true` (%d rounds)\n", c, t, (c - t) / 16, rounds);
    empty_cache();
    rmdir(cache_dir);
    free(cold16);
    free(true16);
    return 0;
}
