/* test_dtrain_hints.c - dtrain where a user's habits come from elsewhere: a CPU mask given by
 * taskset or a cgroup, mpirun's options given to dtrain, an MPI program in an srun step without
 * PMIx, a heterogeneous step under PMIx from a Slurm whose srun can hang in it. */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"

/* Runs argv with the basic environment, a fixture's variables (NULL: none) and one more (NULL: none). */
static void run_with(const char *fixture, const char *extra_name, const char *extra_value, char **argv,
                     struct tu_result *r)
{
    struct tu_env env = {0};
    tu_env_basics(&env);
    if (fixture)
        tu_env_load(&env, fixture);
    if (extra_name)
        tu_env_set(&env, extra_name, extra_value);
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

static int count_occurrences(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Under taskset -c LAST, both ranks run on LAST: the plan's cores are cut to the mask dtrain was
 * given, and a rank whose cores are all outside it shares the mask's. */
static void test_binding_stays_inside_the_given_cpus(void **state)
{
    (void)state;
    cpu_set_t mask;
    assert_int_equal(sched_getaffinity(0, sizeof mask, &mask), 0);
    int last = -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &mask))
            last = c;
    if (CPU_COUNT(&mask) < 2) {
        tu_skip("one CPU: a mask narrower than the machine needs two");
        return;
    }
    const char *taskset = access("/usr/bin/taskset", X_OK) == 0 ? "/usr/bin/taskset" : "/bin/taskset";
    if (access(taskset, X_OK) != 0) {
        tu_skip("no taskset (util-linux)");
        return;
    }
    char cpu[16], expected[64];
    snprintf(cpu, sizeof cpu, "%d", last);
    snprintf(expected, sizeof expected, "Cpus_allowed_list:\t%d\n", last);
    for (int ranks = 1; ranks <= 2; ranks++) {
        char count[4];
        snprintf(count, sizeof count, "%d", ranks);
        struct tu_result r;
        run_with(NULL, NULL, NULL, (char *[]){(char *)taskset, "-c", cpu, (char *)tu_bin("dtrain"), "--ranks", count, "--",
                                             "grep", "Cpus_allowed_list", "/proc/self/status", NULL}, &r);
        assert_int_equal(r.status, 0);
        print_message("%d rank(s) under taskset -c %d:\n%s", ranks, last, r.out);
        assert_int_equal(count_occurrences(r.out, expected), ranks);
        tu_result_free(&r);
    }
}

/* "dtrain -np 2" (getopt reads -n "p") and mpirun's long options are pointed at mpirun. */
static void test_mpirun_options_are_pointed_at(void **state)
{
    (void)state;
    const char *options[][2] = {{"-np", "2"}, {"--map-by", "node"}, {"--hostfile", "hosts"}};
    for (int i = 0; i < 3; i++) {
        struct tu_result r;
        run_with(NULL, NULL, NULL, (char *[]){(char *)tu_bin("dtrain"), (char *)options[i][0], (char *)options[i][1],
                                             "true", NULL}, &r);
        assert_int_equal(r.status, 2);
        char said[64];
        snprintf(said, sizeof said, "%s is mpirun's option, not dtrain's", options[i][0]);
        assert_true(tu_contains(r.err, said));
        assert_true(tu_contains(r.err, "dtrain --ranks N -- PROGRAM"));
        tu_result_free(&r);
    }
    struct tu_result r;   /* a plain bad count stays a plain message */
    run_with(NULL, NULL, NULL, (char *[]){(char *)tu_bin("dtrain"), "--ranks", "x", "true", NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--ranks \"x\" is not a number"));
    tu_result_free(&r);
}

/* An srun step without --mpi=pmix running a program that loads MPI (an ELF linked to it, a Python
 * script importing mpi4py) is warned before Open MPI's "OPAL ERROR: Unreachable"; with PMIx, or
 * with a program without MPI, nothing is said. */
static void test_srun_step_without_pmix_is_warned(void **state)
{
    (void)state;
    char *mpi_program[] = {(char *)tu_bin("dtrain"), "--", (char *)tu_bin("dtrain-commbench"), "--help", NULL};
    char *plain_program[] = {(char *)tu_bin("dtrain"), "--", "true", NULL};
    struct tu_result r;
    run_with("srun_N2x2_task0.env", NULL, NULL, mpi_program, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, "dtrain-commbench loads MPI, but this srun step has no PMIx"));
    assert_true(tu_contains(r.err, "srun --mpi=pmix"));
    tu_result_free(&r);
    run_with("srun_N2x2_task0.env", "SLURM_MPI_TYPE", "pmix", mpi_program, &r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "PMIx"));
    tu_result_free(&r);
    run_with("srun_N2x2_task0.env", NULL, NULL, plain_program, &r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "PMIx"));
    tu_result_free(&r);
    /* a Python script that imports mpi4py (MPI_Init runs at the import), run as python3 SCRIPT and
     * as ./SCRIPT; one that only mentions it in a comment is not warned */
    char dir[] = "/tmp/dtrain-test-mpi4py-XXXXXX", script[128], other[128];
    assert_non_null(mkdtemp(dir));
    snprintf(script, sizeof script, "%s/train.py", dir);
    snprintf(other, sizeof other, "%s/plain.py", dir);
    assert_int_equal(tu_write_file(script, "#!/bin/true\nimport os\nfrom mpi4py import MPI\n"), 0);
    assert_int_equal(tu_write_file(other, "#!/bin/true\n# no mpi4py here, we use torch.distributed\nimport os\n"), 0);
    assert_int_equal(chmod(script, 0755), 0);
    assert_int_equal(chmod(other, 0755), 0);
    char *runs_python[] = {(char *)tu_bin("dtrain"), "--", "python3", script, NULL};
    char *direct[] = {(char *)tu_bin("dtrain"), "--", script, NULL};
    char *plain_script[] = {(char *)tu_bin("dtrain"), "--", other, NULL};
    char *const *warned[] = {runs_python, direct}, *const *quiet[] = {plain_script};
    for (int i = 0; i < 2; i++) {
        run_with("srun_N2x2_task0.env", NULL, NULL, (char **)warned[i], &r);
        if (!tu_contains(r.err, "train.py loads MPI, but this srun step has no PMIx"))
            print_error("case %d: %s\n", i, r.err);
        assert_true(tu_contains(r.err, "train.py loads MPI, but this srun step has no PMIx"));
        tu_result_free(&r);
    }
    run_with("srun_N2x2_task0.env", NULL, NULL, (char **)quiet[0], &r);
    assert_null(strstr(r.err, "PMIx"));
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* Rank 0 of a heterogeneous step under PMIx is warned once that srun of Slurm before 24.11 can hang
 * there, naming the fix; the version is srun's own (a stand-in srun first in PATH says which). A
 * 24.11 srun, a step without PMIx, another rank or a step of one component hear nothing. */
static void het_step_run(const char *srun_says, const char *fixture, const char *mpi_type, struct tu_result *r)
{
    char dir[] = "/tmp/dtrain-test-srun-XXXXXX", srun[128], path[4096], text[128];
    assert_non_null(mkdtemp(dir));
    snprintf(srun, sizeof srun, "%s/srun", dir);
    snprintf(text, sizeof text, "#!/bin/sh\necho '%s'\n", srun_says);
    assert_int_equal(tu_write_file(srun, text), 0);
    assert_int_equal(chmod(srun, 0755), 0);
    snprintf(path, sizeof path, "%s:%s", dir, getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    struct tu_env env = {0};
    tu_env_basics(&env);
    tu_env_load(&env, fixture);
    tu_env_set(&env, "PATH", path);
    if (mpi_type)
        tu_env_set(&env, "SLURM_MPI_TYPE", mpi_type);
    char *argv[] = {(char *)tu_bin("dtrain"), "--gpus-per-node", "0", "--", "true", NULL};
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
    assert_int_equal(tu_remove_tree(dir), 0);
}

static void test_het_step_under_old_pmix_is_warned(void **state)
{
    (void)state;
    struct tu_result r;
    het_step_run("slurm-wlm 22.05.8", "srun_het_3+2_task0.env", "pmix", &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(count_occurrences(r.err, "heterogeneous step (srun A : B) under srun --mpi=pmix from Slurm 22.05"), 1);
    assert_true(tu_contains(r.err, "Prevent multiple abort agents"));
    tu_result_free(&r);
    het_step_run("slurm 23.11.4", "srun_het_3+2_task0.env", "pmix_v4", &r);
    assert_true(tu_contains(r.err, "from Slurm 23.11: srun older than 24.11"));
    tu_result_free(&r);
    het_step_run("not a version", "srun_het_3+2_task0.env", "pmix", &r);
    assert_true(tu_contains(r.err, "from a Slurm of unknown version"));
    tu_result_free(&r);
    const char *quiet[][3] = {{"slurm 24.11.0", "srun_het_3+2_task0.env", "pmix"},
                              {"slurm 25.05.1", "srun_het_3+2_task0.env", "pmix"},
                              {"slurm-wlm 22.05.8", "srun_het_3+2_task0.env", "none"},
                              {"slurm-wlm 22.05.8", "srun_het_3+2_task3.env", "pmix"},
                              {"slurm-wlm 22.05.8", "srun_N2x2_task0.env", "pmix"}};
    for (size_t i = 0; i < sizeof quiet / sizeof quiet[0]; i++) {
        het_step_run(quiet[i][0], quiet[i][1], quiet[i][2], &r);
        if (strstr(r.err, "heterogeneous"))
            print_error("case %zu warned: %s\n", i, r.err);
        assert_null(strstr(r.err, "heterogeneous"));
        tu_result_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binding_stays_inside_the_given_cpus),
        cmocka_unit_test(test_mpirun_options_are_pointed_at),
        cmocka_unit_test(test_srun_step_without_pmix_is_warned),
        cmocka_unit_test(test_het_step_under_old_pmix_is_warned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
