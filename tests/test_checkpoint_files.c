/* test_checkpoint_files.c - the checkpoint file and its directory: a bit flipped anywhere rejects a
 * file without touching the run's state; a killed save's temporary is removed; and what another
 * user or another run can put beside the files: planted links are never written through, another
 * run's checkpoints do not make a save delete itself, only the user's regular files are loaded
 * (a forged one, a FIFO, more names than a fixed list held), a directory others may write is
 * refused, and a second job on a directory in use stops with a clear error. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/atomic_file.h"
#include "trainer/loop/checkpoint.h"
#include "formats/record.h"
#include "tests/testutil.h"

static char dir[] = "/tmp/dtrain-test-ckptfiles-XXXXXX";

static int files_setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int files_teardown(void **state)
{
    (void)state;
    return tu_remove_tree(dir);
}

/* A fresh subdirectory of the test's own (0700) directory: its path in sub. */
static void subdir_path(char *sub, size_t size, const char *name)
{
    snprintf(sub, size, "%s/%s", dir, name);
    assert_int_equal(mkdir(sub, 0755), 0);
}

static bool file_holds(const char *path, const char *text)
{
    char *held = tu_read_file(path);
    bool same = held && strcmp(held, text) == 0;
    free(held);
    return same;
}

static bool is_regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* A small checkpoint of 10 parameters, 4 buffers and Adam's moments, values from seed. */
struct small {
    float params[10], buffers[4], m[10], v[10];
    struct checkpoint ck;
};

static void small_fill(struct small *s, float seed)
{
    for (int i = 0; i < 10; i++)
        s->params[i] = seed + i, s->m[i] = seed * 2 + i, s->v[i] = seed * 3 + i;
    for (int i = 0; i < 4; i++)
        s->buffers[i] = seed * 4 + i;
    s->ck = (struct checkpoint){.step = 40, .resumed = 1, .fingerprint = 0xfeed, .num_params = 10, .num_buffers = 4,
                                .params = s->params, .buffers = s->buffers, .opt_m = s->m, .opt_v = s->v,
                                .opt_step = 40};
}

/* Flips one bit of byte `at` of the file. */
static void flip_byte(const char *path, long at)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

/* A flipped bit in the header's step, opt_step or resume count, or in the payload, makes the file
 * invalid, and a rejected file leaves the run's state as it was (not half-loaded). The intact file
 * loads whole. */
static void test_a_damaged_checkpoint_changes_nothing(void **state)
{
    (void)state;
    char sub[4200], path[4300];
    snprintf(sub, sizeof sub, "%s/bits", dir);
    snprintf(path, sizeof path, "%s/ckpt-40.dtc", sub);
    /* header: magic 8, format 4, has_v 4, then step (16), opt_step (24), ..., resumed; payload after */
    long offsets[] = {16, 24, 16 + 5 * 8, 80, 120};
    for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
        struct small saved, live;
        struct dt_err err;
        small_fill(&saved, 1.0f);
        assert_int_equal(checkpoint_save(sub, &saved.ck, &err), 0);
        flip_byte(path, offsets[k]);
        small_fill(&live, 7.0f);
        live.ck.step = 0;
        assert_int_equal(checkpoint_load_newest(sub, &live.ck, &err), 0);   /* none valid */
        struct small fresh;
        small_fill(&fresh, 7.0f);
        assert_memory_equal(live.params, fresh.params, sizeof live.params);
        assert_memory_equal(live.m, fresh.m, sizeof live.m);
        assert_memory_equal(live.v, fresh.v, sizeof live.v);
        assert_memory_equal(live.buffers, fresh.buffers, sizeof live.buffers);
        assert_int_equal(live.ck.step, 0);
        unlink(path);
    }
    struct small saved, live;
    struct dt_err err;
    small_fill(&saved, 1.0f);
    assert_int_equal(checkpoint_save(sub, &saved.ck, &err), 0);
    small_fill(&live, 7.0f);
    assert_int_equal(checkpoint_load_newest(sub, &live.ck, &err), 1);
    assert_memory_equal(live.params, saved.params, sizeof live.params);
    assert_memory_equal(live.v, saved.v, sizeof live.v);
    assert_int_equal(live.ck.step, 40);
    assert_int_equal(live.ck.resumed, 1);
}

/* What a save killed before its rename left (ckpt-N.dtc.tmp.PID of another process) is removed; a
 * checkpoint and other files stay. */
static void test_stale_temporary_files_are_removed(void **state)
{
    (void)state;
    char sub[4200], path[4400];
    snprintf(sub, sizeof sub, "%s/stale", dir);
    struct small saved;
    struct dt_err err;
    small_fill(&saved, 1.0f);
    assert_int_equal(checkpoint_save(sub, &saved.ck, &err), 0);
    const char *names[] = {"ckpt-80.dtc.tmp.999999", "ckpt-40.dtc", "notes.txt"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        FILE *f = fopen(path, "ab");
        assert_non_null(f);
        fclose(f);
    }
    checkpoint_remove_stale(sub);
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        assert_int_equal(access(path, F_OK) == 0, i > 0);
    }
}

/* Runs fn in a child that SIGALRM ends after 10 s: a hang fails the test instead of hanging it.
 * Returns the child's exit status (fn's return value), or -1 when it was killed. */
static int within_10s(int (*fn)(const char *), const char *arg)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(10);
        _exit(fn(arg));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int fill_hello(FILE *out, const void *arg)
{
    (void)arg;
    return fputs("hello\n", out) < 0 ? -1 : 0;
}

/* Another user, in a shared directory, plants the names dtrain writes (the checkpoint temporary
 * ckpt-N.dtc.tmp.PID, atomic_write's PATH.tmp, the output itself) as links to a file of theirs:
 * nothing is written through a link; the outputs end as the user's own regular files. */
static void test_planted_links_are_not_written_through(void **state)
{
    (void)state;
    char sub[4200], victim[4300], link[4400], out[4400];
    subdir_path(sub, sizeof sub, "planted");
    snprintf(victim, sizeof victim, "%s/victim", sub);
    assert_int_equal(tu_write_file(victim, "root's\n"), 0);
    snprintf(link, sizeof link, "%s/ckpt-40.dtc.tmp.%d", sub, (int)getpid());
    assert_int_equal(symlink(victim, link), 0);
    snprintf(out, sizeof out, "%s/params.bin.tmp", sub);
    assert_int_equal(symlink(victim, out), 0);
    struct small saved;
    struct dt_err err;
    small_fill(&saved, 1.0f);
    assert_int_equal(checkpoint_save(sub, &saved.ck, &err), 0);
    snprintf(out, sizeof out, "%s/params.bin", sub);
    assert_int_equal(atomic_write(out, fill_hello, NULL, &err), 0);
    assert_true(file_holds(victim, "root's\n"));
    assert_true(file_holds(out, "hello\n") && is_regular(out));
    /* the output's own name planted: the rename replaces the link, the victim is untouched */
    unlink(out);
    assert_int_equal(symlink(victim, out), 0);
    assert_int_equal(atomic_write(out, fill_hello, NULL, &err), 0);
    assert_true(file_holds(victim, "root's\n") && is_regular(out));
    /* appended and streamed outputs (records, timelines) refuse a link, naming it */
    snprintf(out, sizeof out, "%s/trace.json", sub);
    assert_int_equal(symlink(victim, out), 0);
    assert_int_equal(open_output(out, O_WRONLY | O_TRUNC, "--timeline", &err), -1);
    assert_non_null(strstr(err.msg, "--timeline"));
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_true(file_holds(victim, "root's\n"));
}

/* Another run's checkpoints at higher steps (another model: another fingerprint) used to be counted
 * by pruning, so every save deleted the file it had just written. Now only this run's are counted:
 * its newest two stay, and the other run's files are not touched. */
static void test_pruning_counts_only_this_runs_checkpoints(void **state)
{
    (void)state;
    char sub[4200], path[4400];
    subdir_path(sub, sizeof sub, "prune");
    struct small other, mine;
    struct dt_err err;
    small_fill(&other, 5.0f);
    other.ck.fingerprint = 0xbeef;
    for (long step = 4000; step <= 8000; step += 4000) {
        other.ck.step = other.ck.opt_step = step;
        assert_int_equal(checkpoint_save(sub, &other.ck, &err), 0);
    }
    small_fill(&mine, 1.0f);
    for (long step = 10; step <= 30; step += 10) {
        mine.ck.step = mine.ck.opt_step = step;
        assert_int_equal(checkpoint_save(sub, &mine.ck, &err), 0);
    }
    long present[] = {20, 30, 4000, 8000}, gone[] = {10};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", sub, present[i]);
        assert_true(is_regular(path));
    }
    snprintf(path, sizeof path, "%s/ckpt-%ld.dtc", sub, gone[0]);
    assert_int_equal(access(path, F_OK), -1);
    struct small live;
    small_fill(&live, 7.0f);
    assert_int_equal(checkpoint_load_newest(sub, &live.ck, &err), 1);
    assert_int_equal(live.ck.step, 30);
}

static int load_from(const char *sub)
{
    struct small live;
    struct dt_err err;
    small_fill(&live, 7.0f);
    live.ck.step = 0;
    return checkpoint_load_newest(sub, &live.ck, &err) == 1 ? (int)live.ck.step : 255;
}

/* A FIFO named like the newest checkpoint used to hang --resume before the watchdog started; a
 * thousand checkpoint-named files hid the real one (only 64 names were tried). */
static void test_a_fifo_or_many_names_do_not_hide_the_checkpoint(void **state)
{
    (void)state;
    char sub[4200], path[4400];
    subdir_path(sub, sizeof sub, "fifo");
    struct small saved;
    struct dt_err err;
    small_fill(&saved, 1.0f);
    assert_int_equal(checkpoint_save(sub, &saved.ck, &err), 0);
    snprintf(path, sizeof path, "%s/ckpt-999999.dtc", sub);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(within_10s(load_from, sub), 40);
    unlink(path);
    for (int i = 0; i < 1000; i++) {
        snprintf(path, sizeof path, "%s/ckpt-%d.dtc", sub, 1000 + i);
        assert_int_equal(tu_write_file(path, "junk"), 0);
    }
    assert_int_equal(within_10s(load_from, sub), 40);
}

/* A checkpoint another user forged (its CRC and fingerprint need no secret) in a shared sticky
 * directory: passed over, and the user's own older one loaded. A directory anyone may write and
 * that is not sticky: refused with the reason, for loading and for a run's lock alike. */
static void test_only_the_users_own_checkpoints_are_trusted(void **state)
{
    (void)state;
    if (geteuid() != 0)
        tu_skip("a file of another user needs root to make (chown)");
    char sub[4200], path[4400];
    subdir_path(sub, sizeof sub, "shared");
    assert_int_equal(chmod(sub, 01777), 0);
    struct small mine, forged;
    struct dt_err err;
    small_fill(&mine, 1.0f);
    assert_int_equal(checkpoint_save(sub, &mine.ck, &err), 0);
    small_fill(&forged, 0.0f);
    forged.ck.step = forged.ck.opt_step = 400;
    assert_int_equal(checkpoint_save(sub, &forged.ck, &err), 0);
    snprintf(path, sizeof path, "%s/ckpt-400.dtc", sub);
    assert_int_equal(chown(path, 65534, 65534), 0);
    assert_int_equal(load_from(sub), 40);
    /* the other user's leftover temporary is theirs to remove, not ours */
    snprintf(path, sizeof path, "%s/ckpt-80.dtc.tmp.999999.abcdef", sub);
    assert_int_equal(tu_write_file(path, ""), 0);
    assert_int_equal(chown(path, 65534, 65534), 0);
    checkpoint_remove_stale(sub);
    assert_int_equal(access(path, F_OK), 0);
    /* writable by all, not sticky: anyone could swap the files */
    assert_int_equal(chmod(sub, 0777), 0);
    struct small live;
    small_fill(&live, 7.0f);
    assert_int_equal(checkpoint_load_newest(sub, &live.ck, &err), -1);
    assert_non_null(strstr(err.msg, sub));
    assert_non_null(strstr(err.msg, "may be written by other users"));
    assert_int_equal(live.params[0], 7.0f);
    assert_int_equal(checkpoint_lock(sub, &err), -1);
    assert_non_null(strstr(err.msg, "not sticky"));
}

/* A second job given a directory in use stops with a clear error; it used to start by removing
 * the first one's save in flight. Once the first lets go, the directory is free again. */
static void test_a_second_job_on_a_directory_in_use_is_refused(void **state)
{
    (void)state;
    char sub[4200], path[4400];
    snprintf(sub, sizeof sub, "%s/locked/made", dir);   /* made on the way, parents too */
    struct dt_err err;
    int first = checkpoint_lock(sub, &err);
    assert_true(first >= 0);
    snprintf(path, sizeof path, "%s/ckpt-80.dtc.tmp.%d.XXXXXX", sub, (int)getpid() + 1);
    assert_int_equal(tu_write_file(path, "the first job's save in flight"), 0);
    int second = checkpoint_lock(sub, &err);
    assert_int_equal(second, -1);
    assert_non_null(strstr(err.msg, "in use by another running job"));
    assert_non_null(strstr(err.msg, sub));
    assert_int_equal(access(path, F_OK), 0);
    close(first);
    second = checkpoint_lock(sub, &err);
    assert_true(second >= 0);
    close(second);
}

static int append_a_record(const char *path)
{
    char *host = "gn01";
    struct run_record rec = {.world_size = 1, .nodes = 1, .hostnames = &host};
    snprintf(rec.exit_state, sizeof rec.exit_state, "completed");
    struct dt_err err;
    int rc = record_append(path, &rec, &err);
    return rc < 0 && strstr(err.msg, path) ? 3 : rc == 0 ? 0 : 4;
}

/* --record naming a FIFO with no reader used to block the run before its watchdog started; now
 * it is refused at once, named. */
static void test_a_records_fifo_is_refused_not_waited_on(void **state)
{
    (void)state;
    char sub[4200], path[4400];
    subdir_path(sub, sizeof sub, "recfifo");
    snprintf(path, sizeof path, "%s/runs.jsonl", sub);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(within_10s(append_a_record, path), 3);
}

/* 64 KiB of text: more than a 4 KiB file-size limit lets through. */
static int fill_lots(FILE *out, const void *arg)
{
    (void)arg;
    for (int i = 0; i < 4096; i++)
        if (fputs("0123456789abcde\n", out) < 0)
            return -1;
    return 0;
}

/* A whole-file write that fails says why (EFBIG here, ENOSPC on a full disk: it said only "cannot
 * write FILE") and leaves neither the file nor its temporary. */
static void test_a_failed_write_says_why(void **state)
{
    (void)state;
    char out[4200];
    snprintf(out, sizeof out, "%s/big.json", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit limit = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
        setrlimit(RLIMIT_FSIZE, &limit);
        struct dt_err err;
        int rc = atomic_write(out, fill_lots, NULL, &err);
        _exit(rc < 0 && strstr(err.msg, strerror(EFBIG)) ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char pattern[4300];
    snprintf(pattern, sizeof pattern, "%s*", out);   /* the file, or its PATH.tmp.PID.XXXXXX */
    glob_t found;
    assert_int_equal(glob(pattern, 0, NULL, &found), GLOB_NOMATCH);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_failed_write_says_why),
        cmocka_unit_test(test_a_damaged_checkpoint_changes_nothing),
        cmocka_unit_test(test_stale_temporary_files_are_removed),
        cmocka_unit_test(test_planted_links_are_not_written_through),
        cmocka_unit_test(test_pruning_counts_only_this_runs_checkpoints),
        cmocka_unit_test(test_a_fifo_or_many_names_do_not_hide_the_checkpoint),
        cmocka_unit_test(test_only_the_users_own_checkpoints_are_trusted),
        cmocka_unit_test(test_a_second_job_on_a_directory_in_use_is_refused),
        cmocka_unit_test(test_a_records_fifo_is_refused_not_waited_on),
    };
    return cmocka_run_group_tests_name("checkpoint files", tests, files_setup, files_teardown);
}
