/* test_checkpoint.c - interrupted by SIGUSR1 (Slurm's warning) and resumed, a run ends with exactly
 * the parameters of an uninterrupted one; a torn checkpoint is passed over; records of runs that
 * failed or were lost. The checkpoint files themselves: test_checkpoint_files.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "trainer/loop/checkpoint.h"
#include "formats/record.h"
#include "tests/testutil.h"

static char dir[] = "/tmp/dtrain-test-ckpt-XXXXXX";

#define TRAIN "--model lenet --dataset synthetic --max-steps 40 --log-every 5 --eval-every 0 --quiet --batch-size 32"

static int checkpoint_setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int checkpoint_teardown(void **state)
{
    (void)state;
    return tu_remove_tree(dir);
}

static void run_shell(const char *script, struct tu_result *r)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct tu_env env = {0};
    tu_env_basics(&env);
    /* the sanitized trainer is MPI-initialised alone: MPI's plug-ins' memory is not ours to check */
    tu_env_set(&env, "ASAN_OPTIONS", "abort_on_error=1:detect_leaks=0");
    assert_int_equal(tu_run(argv, env.vars, r), 0);
    tu_env_free(&env);
}

static bool same_file(const char *a, const char *b)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cmp -s %s/%s %s/%s", dir, a, dir, b);
    return system(cmd) == 0;
}

static void test_interrupted_and_resumed_equals_uninterrupted(void **state)
{
    (void)state;
    const char *bin = tu_bin("dtrain-train");
    char script[4096];
    struct tu_result r;
    snprintf(script, sizeof script, "%s " TRAIN " --params-out %s/full", bin, dir);
    run_shell(script, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);

    /* SIGUSR1 once training is under way: checkpoint, stop, 128 + SIGUSR1 */
    snprintf(script, sizeof script,
             "%s " TRAIN " --checkpoint %s/ck --record %s/runs.jsonl > %s/out & pid=$!; "
             "while ! grep -q Step %s/out; do sleep 0.01; done; kill -USR1 $pid; wait $pid; echo \"status $?\"",
             bin, dir, dir, dir, dir);
    run_shell(script, &r);
    assert_true(tu_contains(r.out, "status 138"));
    assert_true(tu_contains(r.err, "stopped by a signal at step"));
    tu_result_free(&r);

    snprintf(script, sizeof script, "%s " TRAIN " --checkpoint %s/ck --resume --record %s/runs.jsonl --params-out %s/resumed",
             bin, dir, dir, dir);
    run_shell(script, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, "resumed at step"));
    tu_result_free(&r);
    assert_true(same_file("full.rank0", "resumed.rank0"));   /* bitwise */

    /* the two records: interrupted, then completed with one resume */
    char path[4200], line[2][65536];
    snprintf(path, sizeof path, "%s/runs.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line[0], sizeof line[0], f));
    assert_non_null(fgets(line[1], sizeof line[1], f));
    fclose(f);
    struct run_record first, second;
    struct dt_err err;
    assert_int_equal(record_parse(line[0], &first, &err), 0);
    assert_int_equal(record_parse(line[1], &second, &err), 0);
    assert_string_equal(first.exit_state, "interrupted");
    assert_int_equal(first.resumed, 0);
    assert_string_equal(second.exit_state, "completed");
    assert_int_equal(second.resumed, 1);
    assert_int_equal(second.steps_per_rank, 40);
    record_free(&first);
    record_free(&second);
}

static void test_torn_checkpoint_is_passed_over(void **state)
{
    (void)state;
    const char *bin = tu_bin("dtrain-train");
    char script[4096];
    struct tu_result r;
    /* checkpoints at 10 and 20; the newest is then cut short, as by a crash mid-write */
    snprintf(script, sizeof script,
             "%s " TRAIN " --max-steps 20 --checkpoint %s/torn --checkpoint-every 10 > /dev/null && "
             "truncate -s -100 %s/torn/ckpt-20.dtc && "
             "%s " TRAIN " --checkpoint %s/torn --resume --params-out %s/after-torn",
             bin, dir, dir, bin, dir, dir);
    run_shell(script, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, "passing over"));
    assert_true(tu_contains(r.err, "ckpt-20.dtc: torn, damaged or of another run"));
    assert_true(tu_contains(r.err, "resumed at step 10"));
    tu_result_free(&r);
    assert_true(same_file("full.rank0", "after-torn.rank0"));
}

/* --record into a directory that does not exist: refused at once, naming the path, before any
 * training (no Step line), exit 2 (issue: the result of a whole run was lost at its end). */
static void test_an_unwritable_record_is_refused_before_training(void **state)
{
    (void)state;
    char script[8192];
    snprintf(script, sizeof script, "%s " TRAIN " --record %s/no/such/dir/runs.jsonl", tu_bin("dtrain-train"), dir);
    struct tu_result r;
    run_shell(script, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/no/such/dir/runs.jsonl: cannot open it: No such file or directory"));
    assert_false(tu_contains(r.out, "Step"));
    tu_result_free(&r);
}

/* --record-failure: the batch script's record of a job step srun ended before any rank could
 * write (a rank killed outright): nothing trains, the record has the run's settings and shape. */
static void test_a_lost_run_is_recorded_by_its_script(void **state)
{
    (void)state;
    char script[8192];
    snprintf(script, sizeof script,
             "DTRAIN_JOB_ID=42 DTRAIN_NODELIST='gn[01-04]' DTRAIN_NODES=4 WORLD_SIZE=4 %s --model lenet --batch-size 16 "
             "--record %s/lost.jsonl --record-failure 'the job step ended with status 137' && "
             "%s --record-failure x; echo \"refused $?\"", tu_bin("dtrain-train"), dir, tu_bin("dtrain-train"));
    struct tu_result r;
    run_shell(script, &r);
    assert_false(tu_contains(r.out, "Step"));
    assert_true(tu_contains(r.out, "refused 2"));
    assert_true(tu_contains(r.err, "--record-failure TEXT writes to the --record FILE"));
    tu_result_free(&r);
    char path[4200];
    snprintf(path, sizeof path, "%s/lost.jsonl", dir);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[8192];
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    struct run_record rec;
    struct dt_err err;
    assert_int_equal(record_parse(line, &rec, &err), 0);
    assert_string_equal(rec.exit_state, "failed");
    assert_string_equal(rec.error, "the job step ended with status 137");
    assert_string_equal(rec.job_id, "42");
    assert_int_equal(rec.world_size, 4);
    assert_int_equal(rec.nodes, 4);
    assert_string_equal(rec.hostnames[3], "gn04");
    assert_int_equal(rec.batch_per_replica, 16);
    record_free(&rec);
}

/* The trainer's options: bad numbers refused at parse time with the right reason (exit 2),
 * a batch larger than the data refused before training, --max-steps alone runs exactly that many
 * steps across epochs, and Ctrl-C (SIGINT) stops a checkpointing run as SIGTERM does. */
static void test_trainer_options_are_checked(void **state)
{
    (void)state;
    const char *bin = tu_bin("dtrain-train");
    static const struct {
        const char *options, *expected;
    } refused[] = {
        {"--lr nan", "--lr \"nan\": expected a positive number up to 1000"},
        {"--lr 0", "--lr \"0\": expected a positive number up to 1000"},
        {"--momentum -0.5", "--momentum \"-0.5\": expected a number from 0 to 1000"},
        {"--weight-decay inf", "--weight-decay \"inf\": expected a number from 0 to 1000"},
        {"--model mlp --batch-size 100000", "--batch-size 100000 x 1 rank is 100000 samples a step, more than the 60000"},
        {"--gpu-transport tcp", "--gpu-transport \"tcp\": expected nccl or host"},
        {"--gpu-transport nccl", "--gpu-transport nccl needs --device cuda"},
    };
    char script[16384];
    struct tu_result r;
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        snprintf(script, sizeof script, "%s --dataset synthetic --max-steps 1 --quiet %s", bin, refused[i].options);
        run_shell(script, &r);
        if (r.status != 2 || !tu_contains(r.err, refused[i].expected))
            print_error("%s: exit %d, %s\n", refused[i].options, r.status, r.err);
        assert_int_equal(r.status, 2);
        assert_true(tu_contains(r.err, refused[i].expected));
        tu_result_free(&r);
    }
    /* 70 steps of 1000 samples: one epoch of 60000 is 60 steps; --max-steps alone goes on */
    snprintf(script, sizeof script, "%s --model mlp --dataset synthetic --batch-size 1000 --max-steps 70 --log-every 10 "
             "--eval-every 0 --quiet", bin);
    run_shell(script, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Step70: "));
    assert_true(tu_contains(r.err, "70 steps in"));
    tu_result_free(&r);
    snprintf(script, sizeof script, "%s --model mlp --dataset synthetic --batch-size 1000 --max-steps 70 --epochs 1 "
             "--log-every 10 --eval-every 0 --quiet", bin);   /* both given: whichever ends first */
    run_shell(script, &r);
    assert_true(tu_contains(r.err, "60 steps in"));
    assert_true(tu_contains(r.err, "--max-steps 70 and --epochs 1: --epochs ends the run first"));   /* said at start */
    tu_result_free(&r);
}

/* --export-run for PyTorch, a text model's rate in tokens, and SIGINT's interrupted record. */
static void test_export_tokens_and_sigint(void **state)
{
    (void)state;
    const char *bin = tu_bin("dtrain-train");
    char script[16384];
    struct tu_result r;
    /* --export-run: the initial weights and the encoded text for PyTorch (bench/seq_accuracy.py),
     * sizes as meta.json says; refused for data that has no tokens to write */
    char text_dir[4200];
    tu_fixture(text_dir, sizeof text_dir, "text");
    snprintf(script, sizeof script, "%s --model transformer:1x16x2 --dataset tsv --data %s --batch-size 1 --seq-len 8 "
             "--export-run %s/export && cat %s/export/meta.json && stat -c '%%n %%s' %s/export/params.f32 "
             "%s/export/train.ids %s/export/train.labels", bin, text_dir, dir, dir, dir, dir, dir);
    run_shell(script, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, "wrote the initial parameters and the data to"));
    long params = -1, count = -1;
    const char *at = strstr(r.out, "\"params\": ");
    assert_non_null(at);
    params = strtol(at + 10, NULL, 10);
    assert_non_null(at = strstr(r.out, "\"train\": "));
    count = strtol(at + 9, NULL, 10);
    char expect[256];
    snprintf(expect, sizeof expect, "params.f32 %ld\n", params * 4);
    assert_true(params > 0 && tu_contains(r.out, expect));
    snprintf(expect, sizeof expect, "train.ids %ld\n", count * 8 * 4);   /* int32, 8 tokens each */
    assert_true(count == 2 && tu_contains(r.out, expect));
    tu_result_free(&r);
    snprintf(script, sizeof script, "%s --model transformer:1x16x2 --dataset synthetic-text:50x8 --export-run %s/x",
             bin, dir);
    run_shell(script, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--export-run writes a text dataset's tokens"));
    tu_result_free(&r);
    /* a text model's rate in tokens too, in the summary and the record (as the reference AllReduce-against-PS table gives BERT's words/s) */
    snprintf(script, sizeof script, "%s --model transformer:1x16x2 --dataset synthetic-text:50x8 --batch-size 4 "
             "--max-steps 3 --eval-every 0 --quiet --record %s/text.jsonl && grep -o '\"tokens_per_sec\":[0-9]*' "
             "%s/text.jsonl", bin, dir, dir);
    run_shell(script, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.err, " tokens/s, "));
    assert_true(tu_contains(r.out, "\"tokens_per_sec\":"));
    assert_null(strstr(r.out, "\"tokens_per_sec\":0\n"));
    tu_result_free(&r);
    snprintf(script, sizeof script,
             "%s " TRAIN " --checkpoint %s/int --record %s/int.jsonl > %s/int.out & pid=$!; "
             "while ! grep -q Step %s/int.out; do sleep 0.01; done; kill -INT $pid; wait $pid; echo \"status $?\"",
             bin, dir, dir, dir, dir);
    run_shell(script, &r);
    assert_true(tu_contains(r.out, "status 130"));
    tu_result_free(&r);
    snprintf(script, sizeof script, "grep -c '\"exit_state\":\"interrupted\"' %s/int.jsonl", dir);
    run_shell(script, &r);
    assert_true(tu_contains(r.out, "1"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_interrupted_and_resumed_equals_uninterrupted),
        cmocka_unit_test(test_torn_checkpoint_is_passed_over),
        cmocka_unit_test(test_an_unwritable_record_is_refused_before_training),
        cmocka_unit_test(test_a_lost_run_is_recorded_by_its_script),
        cmocka_unit_test(test_trainer_options_are_checked),
        cmocka_unit_test(test_export_tokens_and_sigint),
    };
    return cmocka_run_group_tests_name("checkpoint", tests, checkpoint_setup, checkpoint_teardown);
}
