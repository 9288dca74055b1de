/* test_exports.c - what the launcher exports for a rank (RANK ... MASTER_ADDR, MASTER_PORT,
 * DTRAIN_*), read from saved environments (tests/fixtures/env), and the --dry-run script that
 * prints them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/alloc.h"
#include "launcher/launch.h"
#include "tests/testutil.h"

/* What the launcher makes of one rank's environment: its allocation, place and exports. */
struct rank_view {
    struct allocation a;
    struct rank_place place;
    struct rank_exports e;
};

/* A launch that asks nothing of the allocation (dtrain with no options). */
static const struct launch_request any_request = {.nodes = -1, .gpus_per_node = 0, .ranks = -1};

static void view_of(const struct tu_env *env, const struct launch_request *req, struct rank_view *v)
{
    struct dt_err err;
    assert_int_equal(alloc_from_env(&v->a, env->vars, &err), 0);
    v->place = launch_place_of(&v->a);
    launch_exports(req, &v->a, &v->place, 0, env->vars, &v->e);
}

static void view_free(struct rank_view *v)
{
    launch_exports_free(&v->e);
    alloc_free(&v->a);
}

static void test_exports_of_a_slurm_rank(void **state)
{
    (void)state;
    struct tu_env env = {0};
    tu_env_load(&env, "sbatch_gpus2_step_task2.env");
    struct launch_request req = {.nodes = 2, .gpus_per_node = 2, .ranks = -1};
    struct rank_view v;
    view_of(&env, &req, &v);
    assert_string_equal(launch_export_value(&v.e, "RANK"), "2");
    assert_string_equal(launch_export_value(&v.e, "WORLD_SIZE"), "4");
    assert_string_equal(launch_export_value(&v.e, "LOCAL_RANK"), "0");
    assert_string_equal(launch_export_value(&v.e, "LOCAL_WORLD_SIZE"), "2");
    assert_string_equal(launch_export_value(&v.e, "NODE_RANK"), "1");
    assert_string_equal(launch_export_value(&v.e, "MASTER_ADDR"), "gn01");
    assert_string_equal(launch_export_value(&v.e, "MASTER_PORT"), "61305");   /* 61000 + (5 x 61 + step 0) % 4536 */
    assert_string_equal(launch_export_value(&v.e, "DTRAIN_NODELIST"), "gn[01-02]");
    assert_string_equal(launch_export_value(&v.e, "DTRAIN_GPUS_PER_NODE"), "2");
    view_free(&v);

    /* A value the user set is kept, and marked so. */
    tu_env_set(&env, "MASTER_PORT", "12345");
    view_of(&env, &req, &v);
    assert_string_equal(launch_export_value(&v.e, "MASTER_PORT"), "12345");
    assert_non_null(launch_export_find(&v.e, "MASTER_PORT")->user_value);
    view_free(&v);
    tu_env_free(&env);
}

/* mpirun on some of a Slurm job's nodes: MASTER_ADDR and DTRAIN_NODELIST are the world's (its one
 * node), or not made up from the job's list (whose first node is no node of a 2-node world on
 * gn[03-04]); DTRAIN_NODES is the world's. */
static void test_exports_of_mpirun_on_some_of_the_job(void **state)
{
    (void)state;
    const char *fixtures[] = {"mpirun_on_second_node_rank1.env", "mpirun_on_two_of_four_nodes_rank0.env"};
    const char *master[] = {"gn02", NULL}, *nodelist[] = {"gn02", NULL}, *nodes[] = {"1", "2"};
    for (int i = 0; i < 2; i++) {
        struct tu_env env = {0};
        tu_env_load(&env, fixtures[i]);
        struct rank_view v;
        view_of(&env, &any_request, &v);
        const char *addr = launch_export_value(&v.e, "MASTER_ADDR");
        const char *list = launch_export_value(&v.e, "DTRAIN_NODELIST");
        if (master[i])
            assert_string_equal(addr, master[i]);
        else
            assert_null(addr);
        if (nodelist[i])
            assert_string_equal(list, nodelist[i]);
        else
            assert_null(list);
        assert_string_equal(launch_export_value(&v.e, "DTRAIN_NODES"), nodes[i]);
        view_free(&v);
        tu_env_free(&env);
    }
}

static void test_master_port_is_the_same_on_every_rank(void **state)
{
    (void)state;
    const char *fixtures[] = {"srun_N2x2_task0.env", "srun_N2x2_task3.env"};
    char ports[2][16];
    for (int i = 0; i < 2; i++) {
        struct tu_env env = {0};
        tu_env_load(&env, fixtures[i]);
        tu_env_set(&env, "SLURM_JOB_ID", "123456");
        struct rank_view v;
        view_of(&env, &any_request, &v);
        snprintf(ports[i], sizeof ports[i], "%s", launch_export_value(&v.e, "MASTER_PORT"));
        view_free(&v);
        tu_env_free(&env);
    }
    assert_string_equal(ports[0], ports[1]);
    assert_int_equal(atoi(ports[0]), 61000 + (123456L * 61 + 0) % 4536);   /* step 0 */
    assert_true(atoi(ports[0]) > 60999 && atoi(ports[0]) <= 65535);   /* above the ephemeral range */
}

/* Two steps of one job running at once on a node (srun ... & srun ...) get different ports: the
 * same port made one step's rank join the other step's rank 0. */
static void test_steps_running_at_once_get_their_own_ports(void **state)
{
    (void)state;
    int port[3];
    const char *steps[] = {"0", "1", "2"};
    for (int i = 0; i < 3; i++) {
        struct tu_env env = {0};
        tu_env_load(&env, "srun_N2x2_task0.env");
        tu_env_set(&env, "SLURM_STEP_ID", steps[i]);
        tu_env_set(&env, "SLURM_STEPID", steps[i]);
        struct rank_view v;
        view_of(&env, &any_request, &v);
        port[i] = atoi(launch_export_value(&v.e, "MASTER_PORT"));
        view_free(&v);
        tu_env_free(&env);
    }
    assert_true(port[0] != port[1] && port[1] != port[2] && port[0] != port[2]);
    assert_int_equal(port[1], port[0] + 1);
}

/* A fixture's environment with the step spread over `nodes` nodes named by `name_of`, this task
 * being task 0 on the first. */
static void spread_step(struct tu_env *env, int nodes, char *list, size_t size)
{
    size_t used = 0;
    for (int n = 0; n < nodes; n++)   /* a different prefix each: nothing folds */
        used += (size_t)snprintf(list + used, size - used, "%s%c%c%dn", n ? "," : "", 'a' + n % 26, 'a' + n / 26 % 26, n);
    char count[16], per_node[32], first[32];
    snprintf(count, sizeof count, "%d", nodes);
    snprintf(per_node, sizeof per_node, "1(x%d)", nodes);
    snprintf(first, sizeof first, "aa0n");
    const char *const lists[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"};
    for (int i = 0; i < 3; i++)
        tu_env_set(env, lists[i], list);
    const char *const counts[] = {"SLURM_STEP_NUM_NODES", "SLURM_NNODES", "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_NPROCS"};
    for (int i = 0; i < 5; i++)
        tu_env_set(env, counts[i], count);
    tu_env_set(env, "SLURM_STEP_TASKS_PER_NODE", per_node);
    tu_env_set(env, "SLURM_TASKS_PER_NODE", per_node);
    tu_env_set(env, "SLURMD_NODENAME", first);
    tu_env_set(env, "SLURM_PROCID", "0");
    tu_env_set(env, "SLURM_NODEID", "0");
    tu_env_set(env, "SLURM_LOCALID", "0");
}

/* A node list longer than any buffer is exported whole, and one too long for the
 * environment is an error, never a shorter list that names other nodes. */
static void test_long_node_lists_are_never_cut(void **state)
{
    (void)state;
    static char list[400000];
    const int sizes[] = {200, 25000};
    for (int i = 0; i < 2; i++) {
        struct tu_env env = {0};
        tu_env_load(&env, "srun_N2x2_task3.env");
        spread_step(&env, sizes[i], list, sizeof list);
        struct rank_view v;
        view_of(&env, &any_request, &v);
        assert_int_equal(v.a.num_nodes, sizes[i]);
        struct dt_err err;
        if (i == 0) {
            assert_true(strlen(list) > 1024);
            assert_int_equal(launch_exports_check(&v.e, &err), 0);
            assert_string_equal(launch_export_value(&v.e, "DTRAIN_NODELIST"), list);
        } else {
            assert_true(strlen(list) > LAUNCH_MAX_ENV_STRING);
            assert_int_equal(launch_exports_check(&v.e, &err), -1);
            assert_non_null(strstr(err.msg, "DTRAIN_NODELIST would be"));
            assert_int_equal(launch_apply(&v.e, &err), -1);
        }
        view_free(&v);
        tu_env_free(&env);
    }
}

/* Whatever the variables hold, the dry-run script runs nothing but its exec: a
 * newline in a kept value's comment is printed as \x0a. The script is run to see. */
static void test_dry_run_lines_cannot_run_commands(void **state)
{
    (void)state;
    char marker[64], script[64], name[160];
    snprintf(marker, sizeof marker, "/tmp/dtrain-test-injected-%d", (int)getpid());
    snprintf(script, sizeof script, "/tmp/dtrain-test-dryrun-%d.sh", (int)getpid());
    snprintf(name, sizeof name, "name\ntouch %s #", marker);
    struct tu_env env = {0};
    tu_env_load(&env, "srun_N2x2_task3.env");
    tu_env_set(&env, "SLURM_JOB_NAME", name);
    tu_env_set(&env, "DTRAIN_JOB_NAME", "kept'\nalso");   /* kept, so dtrain's value goes in a comment */
    struct rank_view v;
    view_of(&env, &any_request, &v);
    FILE *out = fopen(script, "w");
    assert_non_null(out);
    launch_print(out, &v.a, &v.place, &v.e, (char *[]){"sh", "-c", "test \"$DTRAIN_JOB_NAME\" = \"$(printf 'kept\\047\\nalso')\"", NULL});
    fclose(out);
    unlink(marker);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "sh %s", script);
    assert_int_equal(system(cmd), 0);   /* the kept value arrives whole */
    assert_int_equal(access(marker, F_OK), -1);   /* and nothing else ran */
    unlink(script);
    view_free(&v);
    tu_env_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exports_of_a_slurm_rank),
        cmocka_unit_test(test_exports_of_mpirun_on_some_of_the_job),
        cmocka_unit_test(test_master_port_is_the_same_on_every_rank),
        cmocka_unit_test(test_steps_running_at_once_get_their_own_ports),
        cmocka_unit_test(test_long_node_lists_are_never_cut),
        cmocka_unit_test(test_dry_run_lines_cannot_run_commands),
    };
    return cmocka_run_group_tests_name("exports", tests, NULL, NULL);
}
