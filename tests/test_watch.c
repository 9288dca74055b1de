/* test_watch.c - dtrain --watch: /proc sampling of a real process, the stall decision worked by
 * hand, the report lines, and two watched ranks on this machine (as mpirun would start them) where
 * one is stopped, one sleeps in a read, or both finish. */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/gpu_busy.h"
#include "launcher/proc_progress.h"
#include "launcher/stall.h"
#include "launcher/watch_channel.h"
#include "tests/testutil.h"

static void test_stat_line_with_odd_command_names(void **state)
{
    (void)state;
    char st;
    long group;
    unsigned long long own, reaped;
    const char *line = "4242 (a b) (c)) T 1 4242 4242 0 -1 4194304 10 0 0 0 150 25 7 3 20 0 1 0 100 0 0";
    assert_int_equal(proc_parse_stat(line, &st, &group, &own, &reaped), 0);
    assert_int_equal(st, 'T');
    assert_int_equal(group, 4242);
    assert_int_equal(own, 175);
    assert_int_equal(reaped, 10);
    assert_int_equal(proc_parse_stat("4242 no parenthesis S 1 2", &st, &group, &own, &reaped), -1);
    assert_int_equal(proc_parse_stat("4242 (x) S 1", &st, &group, &own, &reaped), -1);
}

/* A child in its own group that sleeps: asleep, then stopped, then gone. */
static void test_sample_a_real_process(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setpgid(0, 0);
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    struct timespec pause = {0, 100000000};
    nanosleep(&pause, NULL);
    struct proc_sample s;
    char text[128];
    assert_int_equal(proc_sample_group("/proc", pid, &s), 1);
    assert_int_equal(s.state, 'S');
    assert_false(s.any_stopped);
    proc_describe(&s, text, sizeof text);
    assert_true(tu_contains(text, "asleep"));
    kill(pid, SIGSTOP);
    for (int i = 0; i < 50 && (proc_sample_group("/proc", pid, &s), s.state != 'T'); i++)
        nanosleep(&pause, NULL);
    proc_describe(&s, text, sizeof text);
    assert_string_equal(text, "stopped (SIGSTOP or a debugger)");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_int_equal(proc_sample_group("/proc", pid, &s), 0);
    proc_describe(&s, text, sizeof text);
    assert_string_equal(text, "gone");
    assert_int_equal(proc_sample_group("/nonexistent-proc", 1, &s), 0);
}

static struct watched_rank reported_rank(int rank, double last, const char *state)
{
    struct watched_rank r = {.rank = rank, .reported = true, .last_progress_s = last};
    snprintf(r.host, sizeof r.host, "gn0%d", rank + 1);
    snprintf(r.state, sizeof r.state, "%s", state);
    return r;
}

/* Worked by hand: at 100 s with a 10 s threshold. */
static void test_the_rank_that_stopped_first_is_named(void **state)
{
    (void)state;
    struct watched_rank r[4] = {reported_rank(0, 99.5, "running"), reported_rank(1, 95.0, "asleep in futex_wait_queue"),
                                reported_rank(2, 89.0, "stopped (SIGSTOP or a debugger)"), reported_rank(3, 99.0, "running")};
    struct stall_verdict v;
    stall_decide(r, 4, 98.9, 10, &v);
    assert_int_equal(v.num_named, 0);             /* rank 2: 9.9 s, under the threshold */
    stall_decide(r, 4, 100, 10, &v);
    assert_int_equal(v.num_named, 1);
    assert_int_equal(v.named[0], 2);
    assert_true(v.stalled_for_s > 10.99 && v.stalled_for_s < 11.01);
    char text[1024];
    stall_describe(r, 4, 100, &v, text, sizeof text);
    assert_string_equal(text, "rank 2 on gn03 has made no progress for 11.0 s (stopped (SIGSTOP or a debugger)); "
                              "the others (rank 0, 1, 3) went on until 0.5 s ago");
    /* rank 1, asleep in a futex 0.5 s after rank 2 stopped, is a waiter: rank 2 alone is named */
    r[1].last_progress_s = 89.5;
    stall_decide(r, 4, 100, 10, &v);
    assert_int_equal(v.num_named, 1);
    assert_int_equal(v.named[0], 2);
    /* two waiters alone, 0.5 s apart, the others spinning: named together, in the order they
     * stopped, once they have waited the threshold twice (the first alone waits for the others) */
    r[2].last_progress_s = 89.0;
    snprintf(r[2].state, sizeof r[2].state, "asleep in futex_do_wait");
    stall_decide(r, 4, 100, 10, &v);
    assert_int_equal(v.num_named, 0);
    r[0].last_progress_s = r[3].last_progress_s = 109.0;   /* spinning, as MPI's waiters do */
    stall_decide(r, 4, 108.9, 10, &v);
    assert_int_equal(v.num_named, 0);
    stall_decide(r, 4, 109.1, 10, &v);
    assert_int_equal(v.num_named, 2);
    assert_int_equal(v.named[0], 2);
    assert_int_equal(v.named[1], 1);
    /* under gloo the peers of a rank asleep in a read sleep in their collective too, some of them
     * a sample or two before it: the first waiter to stall waits for the others; the reader is
     * named once it has stalled as long, and the waiters are not */
    struct watched_rank g[3] = {reported_rank(0, 88.0, "asleep in futex_do_wait"), reported_rank(1, 89.7, "asleep in anon_pipe_read"),
                                reported_rank(2, 89.6, "asleep in futex_do_wait")};
    stall_decide(g, 3, 98.5, 10, &v);
    assert_int_equal(v.num_named, 0);
    stall_decide(g, 3, 99.8, 10, &v);
    assert_int_equal(v.num_named, 1);
    assert_int_equal(v.named[0], 1);
    assert_int_equal(stall_suspicion(&g[1]), 2);
    assert_int_equal(stall_suspicion(&g[2]), 0);
    struct watched_rank stopped = reported_rank(3, 0, "stopped (SIGSTOP or a debugger)");
    assert_int_equal(stall_suspicion(&stopped), 4);
}

static void test_finished_silent_and_lost_ranks(void **state)
{
    (void)state;
    struct watched_rank r[3] = {reported_rank(0, 99.0, "running"), reported_rank(1, 10.0, ""), reported_rank(2, 50.0, "")};
    r[1].finished = true;     /* its program ended long ago: not a stall */
    r[2].reported = false;    /* its watcher never reached rank 0's: warned about, not judged */
    struct stall_verdict v;
    stall_decide(r, 3, 100, 10, &v);
    assert_int_equal(v.num_named, 0);
    r[2].lost = true;         /* but a connection that closes is a rank gone */
    stall_decide(r, 3, 100, 10, &v);
    assert_int_equal(v.num_named, 1);
    char text[1024];
    stall_describe(r, 3, 100, &v, text, sizeof text);
    assert_true(tu_contains(text, "rank 2 on gn03 has made no progress for 50.0 s (gone: its watcher's connection"));
}

static void test_report_lines(void **state)
{
    (void)state;
    struct watch_report r;
    assert_int_equal(channel_parse("progress 3 1500 gn04 asleep in pipe_read", &r), 0);
    assert_false(r.done);
    assert_int_equal(r.rank, 3);
    assert_int_equal(r.age_ms, 1500);
    assert_string_equal(r.host, "gn04");
    assert_string_equal(r.state, "asleep in pipe_read");
    assert_int_equal(channel_parse("done 2 0", &r), 0);
    assert_true(r.done);
    assert_int_equal(r.rank, 2);
    assert_int_equal(channel_parse("done 2 0 extra", &r), -1);
    assert_int_equal(channel_parse("progress -1 5 gn01 x", &r), -1);
    assert_int_equal(channel_parse("progress 1 -5 gn01 x", &r), -1);
    assert_int_equal(channel_parse("hello", &r), -1);
    assert_int_equal(channel_parse("", &r), -1);
}

/* One watched rank without a launcher: status, signal and output as the program's; options checked. */
static void test_one_rank_passes_everything_through(void **state)
{
    (void)state;
    struct tu_result r;
    char *exit7[] = {"--watch", "--", "sh", "-c", "echo out; echo err >&2; exit 7", NULL};
    assert_int_equal(tu_run_tool("dtrain", exit7, &r), 0);
    assert_int_equal(r.status, 7);
    assert_string_equal(r.out, "out\n");
    assert_string_equal(r.err, "err\n");
    tu_result_free(&r);
    char *killed[] = {"--watch", "--", "sh", "-c", "kill -USR1 $$", NULL};
    assert_int_equal(tu_run_tool("dtrain", killed, &r), 0);
    assert_int_equal(r.status, 128 + SIGUSR1);
    tu_result_free(&r);
    char *zero[] = {"--watch", "--watch-stall", "0", "--", "true", NULL};
    assert_int_equal(tu_run_tool("dtrain", zero, &r), 0);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--watch-stall \"0\" is not a number of seconds from 1"));
    tu_result_free(&r);
    char *nan_text[] = {"--watch-stall", "nan", "--watch", "--", "true", NULL};
    assert_int_equal(tu_run_tool("dtrain", nan_text, &r), 0);
    assert_int_equal(r.status, 2);
    tu_result_free(&r);
    char *local[] = {"--watch", "--ranks", "2", "--", "true", NULL};
    assert_int_equal(tu_run_tool("dtrain", local, &r), 0);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--watch watches the ranks a launcher started"));
    tu_result_free(&r);
}

/* NVML where there is none, or no GPU: not read, said why, nothing held (the GPU machine's run,
 * bench/gpu_device_run.sh, checks it reads a real GPU). */
static void test_gpu_not_read_without_nvml_or_gpu(void **state)
{
    (void)state;
    struct gpu_busy g;
    char why[128];
    assert_int_equal(gpu_busy_open(&g, "", why, sizeof why), -1);
    assert_string_equal(why, "no GPU bound to this rank");
    assert_int_equal(gpu_busy_percent(&g), -1);
    if (gpu_busy_open(&g, "0000:ff:1f.7", why, sizeof why) == 0) {   /* NVML here: no such GPU */
        gpu_busy_close(&g);
        fail_msg("NVML opened a GPU at 0000:ff:1f.7");
    }
    assert_true(tu_contains(why, "NVML"));
    assert_int_equal(gpu_busy_percent(&g), -1);
    gpu_busy_close(&g);   /* closing what never opened: nothing */
}

/* ---------- two watched ranks on this machine ---------- */

static char job_id[64];

/* dtrain --watch as rank `rank` of 2 started by mpirun (its variables), its program `script`,
 * stdin from in_fd, output to files under dir; returns its pid. */
static pid_t start_rank(int rank, const char *script, int in_fd, const char *dir, const char *extra_option)
{
    char rank_text[8], out[512], err[512];
    snprintf(rank_text, sizeof rank_text, "%d", rank);
    snprintf(out, sizeof out, "%s/rank%d.out", dir, rank);
    snprintf(err, sizeof err, "%s/rank%d.err", dir, rank);
    struct tu_env env = {0};
    tu_env_basics(&env);
    tu_env_set(&env, "OMPI_COMM_WORLD_RANK", rank_text);
    tu_env_set(&env, "OMPI_COMM_WORLD_SIZE", "2");
    tu_env_set(&env, "OMPI_COMM_WORLD_LOCAL_RANK", rank_text);
    tu_env_set(&env, "OMPI_COMM_WORLD_LOCAL_SIZE", "2");
    tu_env_set(&env, "OMPI_MCA_ess_base_jobid", job_id);
    tu_env_set(&env, "MASTER_ADDR", "127.0.0.1");
    char *argv[] = {(char *)tu_bin("dtrain"), "--gpus-per-node", "0", "--no-bind", "--watch", "--watch-stall", "2",
                    (char *)extra_option, "--", "sh", "-c", (char *)script, NULL};
    if (!extra_option[0])
        memmove(&argv[7], &argv[8], 5 * sizeof argv[0]);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(in_fd, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        execve(argv[0], argv, env.vars);
        _exit(127);
    }
    tu_env_free(&env);
    return pid;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

static int wait_status(pid_t pid)
{
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static const char *const printing = "i=0; while [ $i -lt 60 ]; do echo step $i; i=$((i+1)); sleep 0.2; done";

/* Rank `stalled`'s program (0 or 1) stalls the way `stall` makes it, the other's prints; rank 0's
 * watcher names the stalled one (itself too) and ends the step. */
static void stalled_rank_is_named(int stalled, const char *stall, const char *expected_state)
{
    char dir[] = "/tmp/dtrain-test-watch-XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    snprintf(job_id, sizeof job_id, "watch-%d-%s", (int)getpid(), dir + strlen(dir) - 6);
    int never[2];   /* the stalled rank's stdin: held open, never written */
    assert_int_equal(pipe(never), 0);
    char report[600], report_option[640];
    snprintf(report, sizeof report, "%s/stall.json", dir);
    snprintf(report_option, sizeof report_option, "--watch-report=%s", report);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t r0 = start_rank(0, stalled == 0 ? stall : printing, never[0], dir, report_option);
    pid_t r1 = start_rank(1, stalled == 1 ? stall : printing, never[0], dir, "");
    int status0 = wait_status(r0);
    double took = seconds_since(&t0);
    kill(r1, SIGTERM);   /* as srun ends the step's other tasks */
    int status1 = wait_status(r1);
    close(never[0]);
    close(never[1]);
    snprintf(path, sizeof path, "%s/rank0.err", dir);
    char *err0 = tu_read_file(path);
    char *json = tu_read_file(report);
    print_message("rank 0 (%.1f s, status 0x%x): %s", took, status0, err0 ? err0 : "(none)");
    assert_true(WIFEXITED(status0) && WEXITSTATUS(status0) == 3);
    assert_true(took < 1.0 + 2 + 10);   /* named within 10 s past the threshold */
    assert_non_null(err0);
    char named[64], others[64], json_start[64];
    snprintf(named, sizeof named, "dtrain: watch: rank %d on ", stalled);
    snprintf(others, sizeof others, "the others (rank %d) went on", !stalled);
    snprintf(json_start, sizeof json_start, "{\"rank\":%d,\"stalled_s\":", stalled);
    assert_true(tu_contains(err0, named));
    assert_true(tu_contains(err0, expected_state));
    assert_true(tu_contains(err0, others));
    assert_non_null(json);
    assert_true(tu_contains(json, json_start));
    assert_true(WIFSIGNALED(status1) && WTERMSIG(status1) == SIGTERM);   /* died as its program did */
    free(err0);
    free(json);
    assert_int_equal(tu_remove_tree(dir), 0);
}

static void test_a_stopped_rank_is_named(void **state)
{
    (void)state;
    stalled_rank_is_named(1, "echo start; sleep 0.5; kill -STOP $$; echo never", "stopped (SIGSTOP or a debugger)");
}

/* Rank 0 itself stopped: its watcher judges its own program like the others'. */
static void test_rank_0_stopped_is_named(void **state)
{
    (void)state;
    stalled_rank_is_named(0, "echo start; sleep 0.5; kill -STOP $$; echo never", "stopped (SIGSTOP or a debugger)");
}

static void test_a_rank_asleep_in_a_read_is_named(void **state)
{
    (void)state;
    stalled_rank_is_named(1, "echo start; exec cat", "asleep");
}

/* Both programs end well, rank 1's 3 s before rank 0's (past the 2 s threshold): no stall, each
 * rank's status and output passed through. */
static void test_no_alarm_when_ranks_finish(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-watch-XXXXXX", path[600];
    assert_non_null(mkdtemp(dir));
    snprintf(job_id, sizeof job_id, "watch-%d-%s", (int)getpid(), dir + strlen(dir) - 6);
    int in = open("/dev/null", O_RDONLY);
    pid_t r0 = start_rank(0, "i=0; while [ $i -lt 20 ]; do echo step $i; i=$((i+1)); sleep 0.2; done; exit 0", in,
                          dir, "");
    pid_t r1 = start_rank(1, "echo one; echo two >&2; sleep 0.5; exit 5", in, dir, "");
    int status1 = wait_status(r1), status0 = wait_status(r0);
    close(in);
    assert_true(WIFEXITED(status1) && WEXITSTATUS(status1) == 5);
    assert_true(WIFEXITED(status0) && WEXITSTATUS(status0) == 0);
    snprintf(path, sizeof path, "%s/rank0.err", dir);
    char *err0 = tu_read_file(path);
    snprintf(path, sizeof path, "%s/rank1.out", dir);
    char *out1 = tu_read_file(path);
    snprintf(path, sizeof path, "%s/rank1.err", dir);
    char *err1 = tu_read_file(path);
    assert_string_equal(err0, "");
    assert_string_equal(out1, "one\n");
    assert_string_equal(err1, "two\n");
    free(err0);
    free(out1);
    free(err1);
    assert_int_equal(tu_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_line_with_odd_command_names),
        cmocka_unit_test(test_sample_a_real_process),
        cmocka_unit_test(test_the_rank_that_stopped_first_is_named),
        cmocka_unit_test(test_finished_silent_and_lost_ranks),
        cmocka_unit_test(test_report_lines),
        cmocka_unit_test(test_one_rank_passes_everything_through),
        cmocka_unit_test(test_gpu_not_read_without_nvml_or_gpu),
        cmocka_unit_test(test_a_stopped_rank_is_named),
        cmocka_unit_test(test_a_rank_asleep_in_a_read_is_named),
        cmocka_unit_test(test_rank_0_stopped_is_named),
        cmocka_unit_test(test_no_alarm_when_ranks_finish),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
