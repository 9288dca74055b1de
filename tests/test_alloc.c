/* test_alloc.c - reading allocations from real and synthetic environments, and the checks of a
 * request against them (what a rank is given: test_exports.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/alloc.h"
#include "launcher/launch.h"
#include "tests/testutil.h"

static void load_fixture(struct allocation *a, const char *fixture)
{
    struct tu_env env = {0};
    tu_env_load(&env, fixture);
    struct dt_err err;
    if (alloc_from_env(a, env.vars, &err) < 0) {
        print_error("%s: %s\n", fixture, err.msg);
        fail();
    }
    tu_env_free(&env);
}

/* Loads a fixture with one variable changed (value NULL: removed); returns alloc_from_env's rc. */
static int load_changed(struct allocation *a, const char *fixture, const char *name, const char *value,
                        struct dt_err *err)
{
    struct tu_env env = {0};
    tu_env_load(&env, fixture);
    if (value)
        tu_env_set(&env, name, value);
    else
        tu_env_unset(&env, name);
    int rc = alloc_from_env(a, env.vars, err);
    tu_env_free(&env);
    return rc;
}

static void test_tasks_per_node_form(void **state)
{
    (void)state;
    int counts[16];
    struct dt_err err;
    assert_int_equal(alloc_parse_tasks_per_node("2(x3),1", counts, 16, &err), 4);
    assert_int_equal(counts[0], 2);
    assert_int_equal(counts[2], 2);
    assert_int_equal(counts[3], 1);
    assert_int_equal(alloc_parse_tasks_per_node("4", counts, 16, &err), 1);
    assert_int_equal(alloc_parse_tasks_per_node("1,2(x2),3(x1)", counts, 16, &err), 4);
    assert_int_equal(counts[3], 3);
    static const char *const bad[] = {"", "2(x3", "2(3)", "2(x)", "x", "2,,1", "0", "-1", "2(x0)", "2(x3),", "1 ,2", "2(x-1)"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (alloc_parse_tasks_per_node(bad[i], counts, 16, &err) != -1)
            print_error("\"%s\" was accepted\n", bad[i]);
        assert_int_equal(alloc_parse_tasks_per_node(bad[i], counts, 16, &err), -1);
        assert_non_null(strstr(err.msg, "character") ? err.msg : strstr(err.msg, "describes"));
    }
    assert_int_equal(alloc_parse_tasks_per_node("2(x17)", counts, 16, &err), -1);
    assert_non_null(strstr(err.msg, "more than 16 nodes"));
}

static void test_captured_srun_steps(void **state)
{
    (void)state;
    struct allocation a;
    load_fixture(&a, "srun_N2x2_task0.env");
    assert_int_equal(a.source, ALLOC_SLURM);
    assert_string_equal(a.job_id, "4");
    assert_string_equal(a.nodelist, "gn[01-02]");
    assert_int_equal(a.num_nodes, 2);
    assert_int_equal(a.world_size, 4);
    assert_int_equal(a.rank, 0);
    assert_int_equal(a.node_rank, 0);
    assert_int_equal(a.local_rank, 0);
    assert_int_equal(a.local_size, 2);
    assert_string_equal(a.hostname, "gn01");
    assert_int_equal(a.gpus_on_node, -1);     /* no GPU request: none of the variables */
    assert_int_equal(a.cpus_on_node, 2);
    alloc_free(&a);

    load_fixture(&a, "srun_N2x2_task3.env");
    assert_int_equal(a.rank, 3);
    assert_int_equal(a.node_rank, 1);
    assert_int_equal(a.local_rank, 1);
    assert_string_equal(a.hostname, "gn02");
    alloc_free(&a);

    load_fixture(&a, "sbatch_gpus2_step_task2.env");
    assert_int_equal(a.source, ALLOC_SLURM);
    assert_int_equal(a.rank, 2);
    assert_int_equal(a.node_rank, 1);
    assert_int_equal(a.local_rank, 0);
    assert_int_equal(a.gpus_on_node, 2);
    assert_string_equal(a.gpus_var, "SLURM_GPUS_ON_NODE");
    assert_int_equal(a.num_visible_gpus, 2);
    assert_int_equal(a.num_gpu_ids, 2);
    assert_int_equal(a.gpu_ids[1], 1);
    alloc_free(&a);
}

static void test_uneven_tasks_per_node(void **state)
{
    (void)state;
    struct allocation a;
    load_fixture(&a, "synthetic_2x3_1_rank6.env");
    assert_int_equal(a.num_nodes, 4);
    assert_int_equal(a.world_size, 7);
    assert_int_equal(a.node_rank, 3);
    assert_int_equal(a.local_size, 1);
    assert_int_equal(a.tasks_per_node[0], 2);
    assert_int_equal(a.tasks_per_node[3], 1);
    alloc_free(&a);
    load_fixture(&a, "synthetic_2x3_1_rank3.env");
    assert_int_equal(a.node_rank, 1);
    assert_int_equal(a.local_rank, 1);
    assert_int_equal(a.local_size, 2);
    alloc_free(&a);
}

static void test_mpirun_variables_win_over_orted_step(void **state)
{
    (void)state;
    struct allocation a;
    load_fixture(&a, "mpirun_in_slurm_rank5.env");
    assert_int_equal(a.source, ALLOC_MPIRUN);
    assert_int_equal(a.rank, 5);              /* not SLURM_PROCID=1 of the orted step */
    assert_int_equal(a.world_size, 8);
    assert_int_equal(a.local_rank, 1);        /* not SLURM_LOCALID=0 */
    assert_int_equal(a.local_size, 2);
    assert_int_equal(a.num_nodes, 4);
    assert_int_equal(a.node_rank, 2);         /* gn03 in the job's gn[01-04], not SLURM_NODEID=1 */
    assert_string_equal(a.nodelist, "gn[01-04]");
    alloc_free(&a);

    load_fixture(&a, "mpirun_on_second_node_rank1.env");   /* on one of the job's two nodes */
    assert_int_equal(a.source, ALLOC_MPIRUN);
    assert_int_equal(a.num_nodes, 1);
    assert_int_equal(a.node_rank, 0);         /* not gn02's index 1 in the job's gn[01-02] */
    assert_string_equal(a.nodelist, "gn02");  /* the world's one node, not the job's list */
    alloc_free(&a);

    load_fixture(&a, "mpirun_on_two_of_four_nodes_rank0.env");   /* gn[03-04] of gn[01-04] */
    assert_int_equal(a.num_nodes, 2);
    assert_int_equal(a.node_rank, 0);         /* not gn03's index 2 in the job */
    assert_null(a.nodelist);                  /* which two nodes, mpirun's variables do not say */
    alloc_free(&a);

    load_fixture(&a, "mpirun_local_rank1.env");
    assert_int_equal(a.source, ALLOC_MPIRUN);
    assert_false(a.in_slurm_job);
    assert_int_equal(a.rank, 1);
    assert_int_equal(a.num_nodes, 1);
    assert_int_equal(a.node_rank, 0);
    alloc_free(&a);
}

static void test_torch_and_local_sources(void **state)
{
    (void)state;
    struct allocation a;
    load_fixture(&a, "torchrun_rank3.env");
    assert_int_equal(a.source, ALLOC_TORCH);
    assert_int_equal(a.rank, 3);
    assert_int_equal(a.local_rank, 1);
    assert_int_equal(a.num_nodes, 2);
    assert_int_equal(a.node_rank, 1);
    alloc_free(&a);

    /* A batch script is a job without a step: dtrain is the launcher on this node. */
    load_fixture(&a, "sbatch_batchscript.env");
    assert_int_equal(a.source, ALLOC_LOCAL);
    assert_true(a.in_slurm_job);
    assert_string_equal(a.job_id, "5");
    assert_int_equal(a.num_nodes, 1);
    assert_int_equal(a.gpus_on_node, 2);
    alloc_free(&a);

    char *empty[] = {NULL};
    struct dt_err err;
    assert_int_equal(alloc_from_env(&a, empty, &err), 0);
    assert_int_equal(a.source, ALLOC_LOCAL);
    assert_false(a.in_slurm_job);
    assert_int_equal(a.world_size, 1);
    alloc_free(&a);
}

static void test_malformed_variables_are_named(void **state)
{
    (void)state;
    static const struct { const char *name, *value, *says; } cases[] = {
        {"SLURM_PROCID", "x", "SLURM_PROCID=\"x\""},
        {"SLURM_PROCID", NULL, "SLURM_PROCID is not set"},
        {"SLURM_PROCID", "4", "not below the step's 4 tasks"},
        {"SLURM_NODEID", "2", "not below the step's 2 nodes"},
        {"SLURM_LOCALID", "2", "gives node 0 only 2 tasks"},
        {"SLURM_STEP_NODELIST", "gn[03-07-09]", "SLURM_STEP_NODELIST: invalid hostlist \"gn[03-07-09]\""},
        {"SLURM_STEP_NUM_NODES", "3", "SLURM_STEP_NUM_NODES=3 but SLURM_STEP_NODELIST=gn[01-02] names 2 nodes"},
        {"SLURM_STEP_TASKS_PER_NODE", "2(x3)", "describes more than 2 nodes"},
        {"SLURM_STEP_TASKS_PER_NODE", "3,2", "describes 5 tasks on 2 nodes, but the step has 4 tasks"},
        {"SLURM_STEP_TASKS_PER_NODE", "4", "describes 4 tasks on 1 nodes, but the step has 4 tasks on 2 nodes"},
        {"SLURM_STEP_TASKS_PER_NODE", "2(x2", "expected \"(xN)\""},
        {"SLURM_STEP_NUM_TASKS", "5", "describes 4 tasks on 2 nodes, but the step has 5 tasks"},
        {"SLURM_GPUS_ON_NODE", "two", "SLURM_GPUS_ON_NODE=\"two\""},
        {"CUDA_VISIBLE_DEVICES", "0,,1", "CUDA_VISIBLE_DEVICES=\"0,,1\""},
        {"SLURM_STEP_GPUS", "0,a", "SLURM_STEP_GPUS=\"0,a\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct allocation a;
        struct dt_err err;
        int rc = load_changed(&a, "srun_N2x2_task0.env", cases[i].name, cases[i].value, &err);
        if (rc != -1 || !strstr(err.msg, cases[i].says))
            print_error("%s=%s: rc %d, message \"%s\", want \"%s\"\n", cases[i].name,
                        cases[i].value ? cases[i].value : "(unset)", rc, rc ? err.msg : "", cases[i].says);
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err.msg, cases[i].says));
    }
}

/* Runs launch_check on a fixture; returns its rc and leaves the message in err. */
static int check_alloc(const char *fixture, int nodes, int gpus, int ranks, bool *announce, struct dt_err *err)
{
    struct allocation a;
    load_fixture(&a, fixture);
    struct launch_request req = {.nodes = nodes, .gpus_per_node = gpus, .ranks = ranks};
    int rc = launch_check(&req, &a, announce, err);
    alloc_free(&a);
    return rc;
}

static void test_request_must_match_allocation(void **state)
{
    (void)state;
    struct dt_err err;
    bool announce;
    assert_int_equal(check_alloc("sbatch_gpus2_step_task2.env", 2, 2, -1, &announce, &err), 0);
    assert_int_equal(check_alloc("srun_N2x2_task0.env", 2, 0, -1, &announce, &err), 0);
    assert_int_equal(check_alloc("srun_N2x2_task0.env", -1, -1, -1, &announce, &err), 0);

    /* asked 4 nodes, the step has 2: both numbers and the option that fixes it; rank 0 says it */
    assert_int_equal(check_alloc("srun_N2x2_task0.env", 4, 0, -1, &announce, &err), -1);
    assert_true(announce);
    assert_true(tu_contains(err.msg, "--nodes 4, but this step runs on 2 nodes"));
    assert_true(tu_contains(err.msg, "--nodes=4"));
    assert_int_equal(check_alloc("srun_N2x2_task3.env", 4, 0, -1, &announce, &err), -1);
    assert_false(announce);   /* the other ranks stop quietly */

    /* asked 4 GPUs per node, Slurm gave 2 */
    assert_int_equal(check_alloc("sbatch_gpus2_step_task2.env", 2, 4, -1, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "--gpus-per-node 4, but Slurm gave gn02 2 GPUs (SLURM_GPUS_ON_NODE)"));
    assert_true(tu_contains(err.msg, "sbatch --gpus-per-node=4"));
    assert_true(announce);   /* task 2 is local rank 0 on gn02 */

    /* tasks per node != GPUs per node */
    assert_int_equal(check_alloc("sbatch_gpus2_step_task2.env", 2, 1, -1, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "runs 2 tasks on gn01"));
    assert_true(tu_contains(err.msg, "srun --ntasks-per-node=1"));

    /* GPUs asked where Slurm gave none */
    assert_int_equal(check_alloc("srun_N2x2_task0.env", 2, 2, -1, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "Slurm gave gn01 no GPUs"));
    assert_true(tu_contains(err.msg, "--gpus-per-node=2"));
}

static void test_gpu_count_checked_per_node(void **state)
{
    (void)state;
    struct allocation a;
    struct dt_err err;
    assert_int_equal(load_changed(&a, "sbatch_gpus2_step_task2.env", "SLURM_GPUS_ON_NODE", "1", &err), 0);
    struct launch_request req = {.nodes = 2, .gpus_per_node = 2, .ranks = -1};
    bool announce;
    assert_int_equal(launch_check(&req, &a, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "Slurm gave gn02 1 GPUs (SLURM_GPUS_ON_NODE)"));
    assert_true(announce);   /* local rank 0 of the node that lacks them says so */
    alloc_free(&a);
}

static void test_local_mode_checks(void **state)
{
    (void)state;
    struct allocation a;
    char *empty[] = {NULL};
    struct dt_err err;
    assert_int_equal(alloc_from_env(&a, empty, &err), 0);
    bool announce;
    struct launch_request req = {.nodes = 2, .gpus_per_node = 0, .ranks = -1};
    assert_int_equal(launch_check(&req, &a, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "no Slurm allocation"));
    req = (struct launch_request){.nodes = 1, .gpus_per_node = 2, .ranks = 3};
    assert_int_equal(launch_check(&req, &a, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "--ranks 3 and --gpus-per-node 2 disagree"));
    req = (struct launch_request){.nodes = 1, .gpus_per_node = 2, .ranks = -1};
    assert_int_equal(launch_check(&req, &a, &announce, &err), 0);
    assert_int_equal(launch_local_ranks(&req), 2);
    alloc_free(&a);

    load_fixture(&a, "sbatch_batchscript.env");
    req = (struct launch_request){.nodes = 2, .gpus_per_node = 2, .ranks = -1};
    assert_int_equal(launch_check(&req, &a, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "outside an srun step"));
    assert_true(tu_contains(err.msg, "srun --nodes=2"));
    alloc_free(&a);

    load_fixture(&a, "srun_N2x2_task0.env");
    req = (struct launch_request){.nodes = -1, .gpus_per_node = -1, .ranks = 2};
    assert_int_equal(launch_check(&req, &a, &announce, &err), -1);
    assert_true(tu_contains(err.msg, "--ranks 2 is for local mode"));
    alloc_free(&a);
}

/* The srun fixtures were transcribed from shared/notes/slurm-cluster.md; when the notes are
 * beside the checkout (CI has them), every NAME=value recorded there for task 0 must match. */

static void test_fixtures_match_the_recorded_cluster_notes(void **state)
{
    (void)state;
    char path[4096];
    bool shared = tu_shared(path, sizeof path, "notes/slurm-cluster.md");
    FILE *notes = shared ? fopen(path, "r") : NULL;
    if (!notes) {
        tu_skip("%s not present", shared ? path : "../shared/notes/slurm-cluster.md");
    }
    struct tu_env fixture = {0};
    tu_env_load(&fixture, "srun_N2x2_task0.env");
    char line[4096];
    bool in_block = false;
    int checked = 0;
    while (fgets(line, sizeof line, notes)) {
        if (strstr(line, "Task 0 of the direct srun"))
            in_block = true;
        else if (in_block && strncmp(line, "```", 3) == 0 && checked > 0)
            break;
        if (!in_block || strncmp(line, "```", 3) == 0)
            continue;
        for (char *tok = strtok(line, " \t\n"); tok; tok = strtok(NULL, " \t\n")) {
            char *eq = strchr(tok, '=');
            if (!eq || eq == tok || strchr(tok, '<'))
                continue;   /* "/" separators and <placeholders> */
            *eq = '\0';
            const char *ours = NULL;
            for (size_t i = 0; i < fixture.count; i++)
                if (strncmp(fixture.vars[i], tok, strlen(tok)) == 0 && fixture.vars[i][strlen(tok)] == '=')
                    ours = fixture.vars[i] + strlen(tok) + 1;
            if (!ours || strcmp(ours, eq + 1) != 0)
                print_error("%s: notes say \"%s\", fixture has \"%s\"\n", tok, eq + 1, ours ? ours : "(missing)");
            assert_non_null(ours);
            assert_string_equal(ours, eq + 1);
            checked++;
        }
    }
    fclose(notes);
    tu_env_free(&fixture);
    print_message("%d recorded variables match the fixture\n", checked);
    assert_true(checked >= 40);
}

/* Slurm variables that contradict each other are refused, naming the variable. */
static void test_slurm_identity_is_checked(void **state)
{
    (void)state;
    static const struct {
        const char *name, *value, *expected;
    } cases[] = {
        {"SLURM_PROCID", "0", "SLURM_PROCID=0 on SLURM_NODEID=1: task 0 runs on the step's first node"},
        {"SLURMD_NODENAME", "gn09", "SLURMD_NODENAME=gn09 is not in SLURM_STEP_NODELIST=gn[01-02]"},
        {"SLURMD_NODENAME", "gn01", "SLURMD_NODENAME=gn01 is node 0 of SLURM_STEP_NODELIST=gn[01-02], but SLURM_NODEID=1"},
        {"SLURMD_NODENAME", "gn02\necho injected", "SLURMD_NODENAME=\"gn02\necho injected\" is not a node name"},
        {"SLURM_JOB_ID", "4; rm", "SLURM_JOB_ID=\"4; rm\" is not a Slurm id"},
        {"SLURM_JOB_ID", "123456789012345678901234567890123", "is not a Slurm id (1 to 31 digits)"},
        {"SLURM_STEP_ID", "", "SLURM_STEP_ID=\"\" is not a Slurm id"},
        {"SLURM_STEP_ID", "0\n", "SLURM_STEP_ID=\"0\n\" is not a Slurm id"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct allocation a;
        struct dt_err err;
        int rc = load_changed(&a, "srun_N2x2_task3.env", cases[i].name, cases[i].value, &err);
        if (rc == 0 || !strstr(err.msg, cases[i].expected))
            print_error("%s=%s: rc %d, \"%s\"\n", cases[i].name, cases[i].value, rc, rc ? err.msg : "accepted");
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err.msg, cases[i].expected));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tasks_per_node_form),
        cmocka_unit_test(test_captured_srun_steps),
        cmocka_unit_test(test_uneven_tasks_per_node),
        cmocka_unit_test(test_mpirun_variables_win_over_orted_step),
        cmocka_unit_test(test_torch_and_local_sources),
        cmocka_unit_test(test_malformed_variables_are_named),
        cmocka_unit_test(test_request_must_match_allocation),
        cmocka_unit_test(test_gpu_count_checked_per_node),
        cmocka_unit_test(test_local_mode_checks),
        cmocka_unit_test(test_fixtures_match_the_recorded_cluster_notes),
        cmocka_unit_test(test_slurm_identity_is_checked),
    };
    return cmocka_run_group_tests_name("allocation", tests, NULL, NULL);
}
