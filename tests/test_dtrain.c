/* test_dtrain.c - the `dtrain` binary end to end: dry runs, exec, checks, local mode. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"

/* Runs dtrain with args (NULL-terminated) in the environment of `fixture` (NULL: none) plus PATH. */
static void run_dtrain(const char *fixture, struct tu_env *extra, struct tu_result *r, ...)
{
    char *argv[32] = {(char *)tu_bin("dtrain")};
    int argc = 1;
    va_list ap;
    va_start(ap, r);
    for (char *arg; (arg = va_arg(ap, char *)) && argc < 31;)
        argv[argc++] = arg;
    va_end(ap);
    struct tu_env env = {0};
    tu_env_basics(&env);
    if (fixture)
        tu_env_load(&env, fixture);
    for (size_t i = 0; extra && i < extra->count; i++) {
        char *eq = strchr(extra->vars[i], '=');
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - extra->vars[i]), extra->vars[i]);
        tu_env_set(&env, name, eq + 1);
    }
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

/* A topology fixture of the project (tests/fixtures/topo/NAME). */
static char *fixture_topology(const char *name)
{
    static char paths[4][4096];
    static int next;
    char *path = paths[next++ % 4], relative[512];
    snprintf(relative, sizeof relative, "topo/%s", name);
    tu_fixture(path, sizeof paths[0], relative);
    return path;
}

static int count_lines(const char *text)
{
    int lines = 0;
    for (; *text; text++)
        lines += *text == '\n';
    return lines;
}

/* One meaning per short option across the tools: every "-X, --long" of every tool's
 * --help (and sbatch/sweep's) is read, and a letter that stands for two long options fails. */
static void test_a_short_option_means_one_thing_everywhere(void **state)
{
    (void)state;
    char sweep[4200];
    tu_fixture(sweep, sizeof sweep, "../../sbatch/sweep");
    const char *tools[] = {"dtrain", "dtrain-train", "dtrain-topo", "dtrain-hostlist", "dtrain-commbench",
                           "dtrain-analyze", "dtrain-rankinfo", "dtrain-check", "dtrain-record", sweep};
    char meaning[128][64] = {{0}}, owner[128][64] = {{0}};
    int pairs = 0;
    for (size_t t = 0; t < sizeof tools / sizeof tools[0]; t++) {
        char *argv[] = {t + 1 < sizeof tools / sizeof tools[0] ? (char *)tu_bin(tools[t]) : "/bin/sh", NULL, NULL, NULL};
        argv[1] = t + 1 < sizeof tools / sizeof tools[0] ? "--help" : sweep;
        argv[2] = t + 1 < sizeof tools / sizeof tools[0] ? NULL : "--help";
        struct tu_env env = {0};
        tu_env_basics(&env);
        struct tu_result r;
        assert_int_equal(tu_run(argv, env.vars, &r), 0);
        tu_env_free(&env);
        assert_int_equal(r.status, 0);
        for (const char *at = r.out; (at = strstr(at, ", --")) != NULL; at += 4) {
            if (at - r.out < 2 || at[-2] != '-' || !isalpha((unsigned char)at[-1]) ||
                (at - r.out >= 3 && !isspace((unsigned char)at[-3])))
                continue;
            unsigned char letter = (unsigned char)at[-1];
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(at + 4, " =\n.,)["), at + 4);
            if (meaning[letter][0] && strcmp(meaning[letter], name) != 0)
                fail_msg("-%c is --%s in %s but --%s in %s", letter, meaning[letter], owner[letter], name, tools[t]);
            snprintf(meaning[letter], sizeof meaning[letter], "%s", name);
            snprintf(owner[letter], sizeof owner[letter], "%s", strrchr(tools[t], '/') ? strrchr(tools[t], '/') + 1 : tools[t]);
            pairs++;
        }
        tu_result_free(&r);
    }
    assert_true(pairs > 20);   /* the helps were read */
}

static void test_help_and_usage_errors(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain(NULL, NULL, &r, "--help", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Examples:"));
    assert_true(tu_contains(r.out, "srun --mpi=pmix dtrain --nodes 2 --gpus-per-node 4"));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--version", NULL);
    assert_true(tu_contains(r.out, "dtrain 0."));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--nodes", "2", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no PROGRAM given"));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--gpus-per-node", "four", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--gpus-per-node \"four\""));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--bogus", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    tu_result_free(&r);
}

static void test_dry_run_of_captured_srun_task(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain("srun_N2x2_task3.env", NULL, &r, "--nodes", "2", "--gpus-per-node", "0", "--dry-run", "--",
               "train", "--arg", "two words", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "# rank 3 of 4: node 1 of 2 (gn02), local rank 1 of 2; launcher slurm, job 4 step 0"));
    assert_true(tu_contains(r.out, "export RANK=3\n"));
    assert_true(tu_contains(r.out, "export WORLD_SIZE=4\n"));
    assert_true(tu_contains(r.out, "export LOCAL_RANK=1\n"));
    assert_true(tu_contains(r.out, "export LOCAL_WORLD_SIZE=2\n"));
    assert_true(tu_contains(r.out, "export NODE_RANK=1\n"));
    assert_true(tu_contains(r.out, "export MASTER_ADDR=gn01\n"));
    assert_true(tu_contains(r.out, "export MASTER_PORT=61244\n"));   /* job 4 x 61 + step 0 */
    assert_true(tu_contains(r.out, "export DTRAIN_NODELIST='gn[01-02]'\n"));
    assert_true(tu_contains(r.out, "exec train --arg 'two words'\n"));
    tu_result_free(&r);
}

static void test_dry_run_of_synthetic_layouts(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain("synthetic_2x3_1_rank6.env", NULL, &r, "--nodes", "4", "--dry-run", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "export RANK=6\n"));
    assert_true(tu_contains(r.out, "export LOCAL_WORLD_SIZE=1\n"));
    assert_true(tu_contains(r.out, "export NODE_RANK=3\n"));
    assert_true(tu_contains(r.out, "export MASTER_ADDR=gn01\n"));
    tu_result_free(&r);

    run_dtrain("mpirun_in_slurm_rank5.env", NULL, &r, "--nodes", "4", "--gpus-per-node", "0", "--dry-run", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "launcher mpirun"));
    assert_true(tu_contains(r.out, "export RANK=5\n"));
    assert_true(tu_contains(r.out, "export LOCAL_RANK=1\n"));
    assert_true(tu_contains(r.out, "export NODE_RANK=2\n"));
    assert_true(tu_contains(r.out, "export MASTER_PORT=61550\n"));   /* job 9 x 61 + step 1 (mpirun's) */
    tu_result_free(&r);

    run_dtrain("torchrun_rank3.env", NULL, &r, "--dry-run", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "launcher torch"));
    assert_true(tu_contains(r.out, "export NODE_RANK=1\n"));   /* from GROUP_RANK */
    assert_null(strstr(r.out, "MASTER_ADDR"));   /* dtrain cannot know it: the launcher's passes through */
    tu_result_free(&r);
    run_dtrain("torchrun_rank3.env", NULL, &r, "--", "sh", "-c", "echo $MASTER_ADDR:$MASTER_PORT $RANK", NULL);
    assert_string_equal(r.out, "10.0.0.1:29500 3\n");
    tu_result_free(&r);
}

static void test_exec_keeps_environment_and_status(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain("sbatch_gpus2_step_task2.env", NULL, &r, "--nodes", "2", "--gpus-per-node", "2", "--topology",
               fixture_topology("2s-8gpu-8hca-pcie-switches.xml"), "--", "sh", "-c", "echo \"$PMIX_RANK $PMIX_NAMESPACE $RANK $LOCAL_RANK $CUDA_VISIBLE_DEVICES $DTRAIN_GPU\"; exit 7",
               NULL);
    assert_int_equal(r.status, 7);
    assert_string_equal(r.out, "2 slurm.pmix.5.0 2 0 0,1 0\n");
    assert_string_equal(r.err, "");
    tu_result_free(&r);
}

static void test_missing_program_is_127(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain("srun_N2x2_task0.env", NULL, &r, "--", "no-such-program-dtrain", NULL);
    assert_int_equal(r.status, 127);
    assert_true(tu_contains(r.err, "no-such-program-dtrain: command not found"));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--", "/nonexistent/prog", NULL);
    assert_int_equal(r.status, 127);
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--", "/etc/passwd", NULL);   /* exists, not executable */
    assert_int_equal(r.status, 126);
    tu_result_free(&r);
}

static void test_mismatch_stops_every_rank_with_one_message(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain("srun_N2x2_task0.env", NULL, &r, "--nodes", "4", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "dtrain: --nodes 4, but this step runs on 2 nodes"));
    assert_true(tu_contains(r.err, "sbatch --nodes=4"));
    assert_int_equal(count_lines(r.err), 1);
    tu_result_free(&r);
    run_dtrain("srun_N2x2_task3.env", NULL, &r, "--nodes", "4", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.err, "");   /* only rank 0 speaks */
    tu_result_free(&r);
    run_dtrain("sbatch_gpus2_step_task2.env", NULL, &r, "--nodes", "2", "--gpus-per-node", "4", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--gpus-per-node 4, but Slurm gave gn02 2 GPUs"));
    tu_result_free(&r);
}

static void test_values_the_user_set_are_kept(void **state)
{
    (void)state;
    struct tu_env extra = {0};
    tu_env_set(&extra, "MASTER_ADDR", "head.example");
    struct tu_result r;
    run_dtrain("srun_N2x2_task0.env", &extra, &r, "--verbose", "--", "sh", "-c", "echo $MASTER_ADDR", NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "head.example\n");
    assert_true(tu_contains(r.err, "keeping MASTER_ADDR=head.example that was already set (dtrain would set gn01)"));
    tu_result_free(&r);
    run_dtrain("srun_N2x2_task0.env", &extra, &r, "--", "true", NULL);
    assert_string_equal(r.err, "");   /* without --verbose, a kept MASTER_ADDR is not worth a line */
    tu_result_free(&r);
    tu_env_set(&extra, "RANK", "9");
    run_dtrain("srun_N2x2_task0.env", &extra, &r, "--", "sh", "-c", "echo $RANK", NULL);
    assert_string_equal(r.out, "9\n");
    assert_true(tu_contains(r.err, "keeping RANK=9"));   /* an identity variable: always said */
    tu_result_free(&r);
    tu_env_free(&extra);
}

static void test_local_mode_starts_labelled_ranks(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain(NULL, NULL, &r, "--ranks", "3", "--label", "--", "sh", "-c",
               "echo \"hello $RANK/$WORLD_SIZE local $LOCAL_RANK/$LOCAL_WORLD_SIZE at $MASTER_ADDR\"; "
               "echo \"err $RANK\" >&2; printf 'no newline'",
               NULL);
    assert_int_equal(r.status, 0);
    for (int rank = 0; rank < 3; rank++) {
        char line[128];
        snprintf(line, sizeof line, "%d: hello %d/3 local %d/3 at 127.0.0.1\n", rank, rank, rank);
        assert_true(tu_contains(r.out, line));
        snprintf(line, sizeof line, "%d: no newline\n", rank);
        assert_true(tu_contains(r.out, line));
        snprintf(line, sizeof line, "%d: err %d\n", rank, rank);
        assert_true(tu_contains(r.err, line));
    }
    tu_result_free(&r);

    run_dtrain(NULL, NULL, &r, "--gpus-per-node", "2", "--topology", fixture_topology("2s-8gpu-8hca-pcie-switches.xml"),
               "--dry-run", "--", "prog", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "export RANK=1\n"));
    assert_true(tu_contains(r.out, "export DTRAIN_GPU=1\n"));
    assert_true(tu_contains(r.out, "launcher local"));
    tu_result_free(&r);
}

static void test_one_failing_rank_ends_the_others_within_2s(void **state)
{
    (void)state;
    struct tu_result r;
    /* Timed: the fastest of up to 3 tries must end within 2 s (the ranks sleep 30 s), so that a
     * machine busy with other work for a moment does not fail the test. */
    long fastest = 1L << 30;
    for (int attempt = 0; attempt < 3 && fastest >= 2000; attempt++) {
        run_dtrain(NULL, NULL, &r, "--ranks", "3", "--", "sh", "-c",
                   "if [ \"$RANK\" = 1 ]; then exit 3; fi; exec sleep 30", NULL);
        assert_int_equal(r.status, 3);
        assert_true(tu_contains(r.err, "dtrain: rank 1 (pid "));
        assert_true(tu_contains(r.err, "exited with status 3; stopping the other 2 rank(s)"));
        print_message("failing rank: the job ended after %ld ms\n", r.elapsed_ms);
        fastest = r.elapsed_ms < fastest ? r.elapsed_ms : fastest;
        tu_result_free(&r);
    }
    assert_true(fastest < 2000);

    /* A rank that ignores SIGTERM is killed after the grace period, still within 2 s. */
    fastest = 1L << 30;
    for (int attempt = 0; attempt < 3 && fastest >= 2000; attempt++) {
        run_dtrain(NULL, NULL, &r, "--ranks", "2", "--", "sh", "-c",
                   "trap '' TERM; if [ \"$RANK\" = 0 ]; then exit 5; fi; sleep 30", NULL);
        assert_int_equal(r.status, 5);
        print_message("rank ignoring SIGTERM: the job ended after %ld ms\n", r.elapsed_ms);
        fastest = r.elapsed_ms < fastest ? r.elapsed_ms : fastest;
        tu_result_free(&r);
    }
    assert_true(fastest < 2000);

    /* Killed by a signal: 128 + signal, as a shell reports it. */
    run_dtrain(NULL, NULL, &r, "--ranks", "2", "--", "sh", "-c",
               "if [ \"$RANK\" = 1 ]; then kill -SEGV $$; fi; exec sleep 30", NULL);
    assert_int_equal(r.status, 128 + 11);
    assert_true(tu_contains(r.err, "rank 1 (pid "));
    assert_true(tu_contains(r.err, "killed by signal 11"));
    tu_result_free(&r);
}

static void test_signals_are_forwarded_to_every_rank(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-signal-XXXXXX";
    assert_non_null(mkdtemp(dir));
    /* Each rank says it is ready and waits; the wrapper waits for both, then sends SIGTERM to
     * dtrain only. The ranks' traps answer it and exit 0, so dtrain does too. */
    char script[2048];
    snprintf(script, sizeof script,
             "%s --ranks 2 --label -- sh -c 'trap \"echo got TERM; exit 0\" TERM; touch %s/ready.$RANK; "
             "while :; do sleep 0.05; done' & pid=$!; "
             "while [ ! -e %s/ready.0 ] || [ ! -e %s/ready.1 ]; do sleep 0.02; done; "
             "kill -TERM $pid; wait $pid; echo \"dtrain exited $?\"",
             tu_bin("dtrain"), dir, dir, dir);
    char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct tu_env env = {0};
    tu_env_basics(&env);
    struct tu_result r;
    assert_int_equal(tu_run(argv, env.vars, &r), 0);
    assert_true(tu_contains(r.out, "0: got TERM\n"));
    assert_true(tu_contains(r.out, "1: got TERM\n"));
    assert_true(tu_contains(r.out, "dtrain exited 0\n"));
    tu_result_free(&r);
    tu_env_free(&env);
    assert_int_equal(tu_remove_tree(dir), 0);
}

static void test_local_mode_outside_slurm_rejects_several_nodes(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain(NULL, NULL, &r, "--nodes", "2", "--ranks", "2", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no Slurm allocation here"));
    tu_result_free(&r);
    run_dtrain("sbatch_batchscript.env", NULL, &r, "--nodes", "2", "--gpus-per-node", "2", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "outside an srun step"));
    tu_result_free(&r);
}

/* The value after `key ` in a dtrain-rankinfo line. */
static void env_field(const char *line, const char *key, char *out, size_t size)
{
    char pattern[64];
    snprintf(pattern, sizeof pattern, " %s ", key);
    const char *at = strstr(line, pattern);
    assert_non_null(at);
    at += strlen(pattern);
    snprintf(out, size, "%.*s", (int)strcspn(at, " \n"), at);
}

/* On this machine: what each rank reads of its own affinity and memory policy is the plan. */
static void test_ranks_run_where_the_plan_says(void **state)
{
    (void)state;
    struct tu_result plan, ranks;
    run_dtrain(NULL, NULL, &plan, "--plan", "--ranks", "2", NULL);
    assert_int_equal(plan.status, 0);
    run_dtrain(NULL, NULL, &ranks, "--ranks", "2", "--label", "--", tu_bin("dtrain-rankinfo"), NULL);
    assert_int_equal(ranks.status, 0);
    for (int r = 0; r < 2; r++) {
        /* plan row: "rank GPU busid NIC netdev NUMA cpus" */
        char row_start[16], numa[256], cpus[256], got_cpus[256], got_mem[256], want_mem[300];
        snprintf(row_start, sizeof row_start, "\n%d ", r);
        const char *row = strstr(plan.out, row_start);
        assert_non_null(row);
        char f[7][256];
        assert_int_equal(sscanf(row + 1, "%255s %255s %255s %255s %255s %255s %255s", f[0], f[1], f[2], f[3], f[4], f[5], f[6]), 7);
        snprintf(numa, sizeof numa, "%s", f[5]);
        snprintf(cpus, sizeof cpus, "%s", f[6]);
        char prefix[16];
        snprintf(prefix, sizeof prefix, "%d: rank ", r);
        const char *line = strstr(ranks.out, prefix);
        assert_non_null(line);
        env_field(line, "cpus", got_cpus, sizeof got_cpus);
        env_field(line, "mem", got_mem, sizeof got_mem);
        snprintf(want_mem, sizeof want_mem, "bind:%s", numa);
        print_message("rank %d: plan cpus %s numa %s; the rank reads cpus %s mem %s\n", r, cpus, numa, got_cpus, got_mem);
        assert_string_equal(got_cpus, cpus);
        assert_string_equal(got_mem, want_mem);
    }
    tu_result_free(&plan);
    tu_result_free(&ranks);

    /* --no-bind leaves the inherited affinity and the default memory policy */
    run_dtrain(NULL, NULL, &ranks, "--no-bind", "--", tu_bin("dtrain-rankinfo"), NULL);
    char got_mem[64];
    env_field(ranks.out, "mem", got_mem, sizeof got_mem);
    assert_string_equal(got_mem, "default");
    tu_result_free(&ranks);
}

static void test_binding_reports_and_visibility(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain(NULL, NULL, &r, "--report-bindings", "--ranks", "2", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, " rank 0 local 0: gpu - nic - numa "));
    assert_true(tu_contains(r.err, " rank 1 local 1: gpu - nic - numa "));
    tu_result_free(&r);

    run_dtrain("sbatch_gpus2_step_task2.env", NULL, &r, "--gpus-per-node", "2", "--gpu-visibility", "isolate",
               "--topology", fixture_topology("2s-8gpu-8hca-pcie-switches.xml"), "--", "sh", "-c",
               "echo $CUDA_VISIBLE_DEVICES $DTRAIN_GPU $DTRAIN_GPU_BUSID $UCX_NET_DEVICES $CUDA_DEVICE_ORDER", NULL);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.out, "0 0 0000:12:00.0 mlx5_7:1 PCI_BUS_ID\n");   /* task 2 = local rank 0 on gn02 */
    tu_result_free(&r);

    run_dtrain(NULL, NULL, &r, "--plan", "--json", "--gpus-per-node", "2", "--topology",
               fixture_topology("2s-8gpu-8hca-pcie-switches.xml"), NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"nccl_ib_hca\": \"mlx5_7:1,mlx5_6:1,"));
    assert_true(tu_contains(r.out, "\"gpu_busid\": \"0000:22:00.0\""));
    assert_true(tu_contains(r.out, "\"cpus\": \"8-15\""));
    tu_result_free(&r);
}

static void test_bad_topology_input_stops_before_exec(void **state)
{
    (void)state;
    struct tu_result r;
    run_dtrain(NULL, NULL, &r, "--topology", "/nonexistent/node.xml", "--", "sh", "-c", "echo ran", NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_true(tu_contains(r.err, "topology file /nonexistent/node.xml: No such file or directory"));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--topology", "/etc/passwd", "--", "sh", "-c", "echo ran", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/etc/passwd"));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "--gpus-per-node", "9", "--topology", fixture_topology("2s-8gpu-8hca-pcie-switches.xml"),
               "--", "sh", "-c", "echo ran", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--gpus-per-node 9, but"));
    assert_true(tu_contains(r.err, "has 8 GPUs: run where there are GPUs"));   /* and the fix */
    assert_true(tu_contains(r.err, "--gpus-per-node 0"));
    tu_result_free(&r);
    struct tu_env extra = {0};
    tu_env_set(&extra, "SLURM_STEP_GPUS", "0,9");
    run_dtrain("sbatch_gpus2_step_task2.env", &extra, &r, "--gpus-per-node", "2", "--topology",
               fixture_topology("2s-8gpu-8hca-pcie-switches.xml"), "--", "sh", "-c", "echo ran", NULL);
    assert_int_equal(r.status, 2);
    assert_string_equal(r.out, "");
    assert_true(tu_contains(r.err, "Slurm gave this step GPU 9"));
    tu_result_free(&r);
    tu_env_free(&extra);
    run_dtrain(NULL, NULL, &r, "--nic", "mlx9_9", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--nic mlx9_9: no such network device"));
    tu_result_free(&r);
}

/* --gpus-per-node auto: each node runs one rank per GPU it was given, 3 on gn01 and 2 on gn02 in
 * one step; -g 2 names the node and the fix; a node whose tasks and GPUs differ is named; without
 * -g a node given GPUs says none is bound; locally, auto is the GPUs CUDA may see or hwloc finds. */
static void test_uneven_allocations_with_gpus_per_node_auto(void **state)
{
    (void)state;
    char *topology = fixture_topology("2s-8gpu-8hca-pcie-switches.xml");
    struct tu_result r;
    run_dtrain("srun_n5_gpus3+2_task0.env", NULL, &r, "-g", "auto", "-t", topology, "--dry-run", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "export DTRAIN_GPUS_PER_NODE=3\n") && tu_contains(r.out, "export LOCAL_WORLD_SIZE=3\n"));
    assert_true(tu_contains(r.out, "export DTRAIN_GPU_BUSID=0000:12:00.0\n"));
    tu_result_free(&r);
    run_dtrain("srun_n5_gpus3+2_task4.env", NULL, &r, "-g", "auto", "-t", topology, "--dry-run", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "export DTRAIN_GPUS_PER_NODE=2\n") && tu_contains(r.out, "export WORLD_SIZE=5\n"));
    assert_true(tu_contains(r.out, "export DTRAIN_GPU=0\n"));   /* it sees its own GPU only */
    assert_true(tu_contains(r.out, "export DTRAIN_GPU_BUSID=0000:22:00.0\n"));
    tu_result_free(&r);

    run_dtrain("srun_n5_gpus3+2_task0.env", NULL, &r, "-g", "2", "-t", topology, "--", "true", NULL);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "this step runs 3 tasks on gn01") && tu_contains(r.err, "--gpus-per-node auto"));
    tu_result_free(&r);
    struct tu_env fewer = {0};
    tu_env_set(&fewer, "SLURM_GPUS_ON_NODE", "2");
    run_dtrain("srun_n5_gpus3+2_task0.env", &fewer, &r, "-g", "auto", "-t", topology, "--", "true", NULL);
    tu_env_free(&fewer);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "runs 3 tasks on gn01 (SLURM_STEP_TASKS_PER_NODE=3,2) and Slurm gave it 2 GPUs"));
    tu_result_free(&r);
    run_dtrain("srun_n5_gpus3+2_task0.env", NULL, &r, "-t", topology, "--dry-run", "--", "true", NULL);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, "Slurm gave gn01 3 GPUs (SLURM_GPUS_ON_NODE), but no --gpus-per-node asks"));
    assert_true(tu_contains(r.out, "export DTRAIN_GPUS_PER_NODE=0\n"));
    tu_result_free(&r);

    run_dtrain(NULL, NULL, &r, "-g", "auto", "--plan", "-t", topology, NULL);
    assert_true(r.status == 0 && tu_contains(r.out, ": 8 local ranks"));
    tu_result_free(&r);
    struct tu_env two = {0};
    tu_env_set(&two, "CUDA_VISIBLE_DEVICES", "0,1");
    run_dtrain(NULL, &two, &r, "-g", "auto", "--plan", "-t", topology, NULL);
    tu_env_free(&two);
    assert_true(r.status == 0 && tu_contains(r.out, ": 2 local ranks"));
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "-g", "auto", "--plan", "-t", fixture_topology("2s-cpuonly-1eth.xml"), NULL);
    assert_true(r.status == 0 && tu_contains(r.out, ": 1 local ranks"));   /* no GPU: one CPU rank */
    tu_result_free(&r);
    run_dtrain(NULL, NULL, &r, "-g", "most", "--", "true", NULL);
    assert_true(r.status == 2 && tu_contains(r.err, "--gpus-per-node \"most\" is not auto or a number"));
    tu_result_free(&r);
}

/* Rank 0 checks the MASTER_PORT it was given is free on its host, and says so when another
 * process listens there (a step of another job); a user's own MASTER_PORT is left alone. */
static void test_a_taken_master_port_is_said(void **state)
{
    (void)state;
    int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    assert_true(fd >= 0);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int port = 61000 + (4 * 61 + 0) % 4536;   /* job 4, step 0: srun_N2x2_task0.env */
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 1) < 0) {
        close(fd);
        tu_skip("port %d is in use on this machine already: the test cannot take it", port);
    }
    struct tu_result r;
    run_dtrain("srun_N2x2_task0.env", NULL, &r, "--gpus-per-node", "0", "--", "true", NULL);
    assert_int_equal(r.status, 2);
    char said[128];
    snprintf(said, sizeof said, "MASTER_PORT %d is taken on gn01", port);
    assert_true(tu_contains(r.err, said));
    tu_result_free(&r);
    struct tu_env own = {0};
    tu_env_set(&own, "MASTER_PORT", "12345");
    run_dtrain("srun_N2x2_task0.env", &own, &r, "--gpus-per-node", "0", "--", "true", NULL);
    tu_env_free(&own);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    close(fd);
}

/* dtrain's MPI tools started as local copies (dtrain --ranks 2 -- dtrain-train) refuse at once:
 * each would be a world of one. */
static void test_mpi_tools_refuse_to_run_as_copies(void **state)
{
    (void)state;
    struct tu_env quiet = {0};
    tu_env_set(&quiet, "ASAN_OPTIONS", "detect_leaks=0");   /* Open MPI's own allocations at exit */
    struct tu_result r;
    run_dtrain(NULL, &quiet, &r, "--ranks", "2", "--", tu_bin("dtrain-train"), "--model", "lenet", "--dataset",
               "synthetic", "--max-steps", "2", "--quiet", NULL);
    tu_env_free(&quiet);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "WORLD_SIZE=2, but MPI sees 1 rank"));
    assert_true(tu_contains(r.err, "mpirun -np 2 dtrain"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_help_and_usage_errors),
        cmocka_unit_test(test_a_short_option_means_one_thing_everywhere),
        cmocka_unit_test(test_dry_run_of_captured_srun_task),
        cmocka_unit_test(test_dry_run_of_synthetic_layouts),
        cmocka_unit_test(test_exec_keeps_environment_and_status),
        cmocka_unit_test(test_missing_program_is_127),
        cmocka_unit_test(test_mismatch_stops_every_rank_with_one_message),
        cmocka_unit_test(test_values_the_user_set_are_kept),
        cmocka_unit_test(test_local_mode_starts_labelled_ranks),
        cmocka_unit_test(test_one_failing_rank_ends_the_others_within_2s),
        cmocka_unit_test(test_signals_are_forwarded_to_every_rank),
        cmocka_unit_test(test_local_mode_outside_slurm_rejects_several_nodes),
        cmocka_unit_test(test_ranks_run_where_the_plan_says),
        cmocka_unit_test(test_binding_reports_and_visibility),
        cmocka_unit_test(test_bad_topology_input_stops_before_exec),
        cmocka_unit_test(test_uneven_allocations_with_gpus_per_node_auto),
        cmocka_unit_test(test_a_taken_master_port_is_said),
        cmocka_unit_test(test_mpi_tools_refuse_to_run_as_copies),
    };
    return cmocka_run_group_tests_name("dtrain", tests, NULL, NULL);
}
