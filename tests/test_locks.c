/* test_locks.c - locks no other user can take. Another user who could read a records file held a
 * shared flock on it and every append waited forever; anyone who could open a checkpoint directory
 * held its flock and every run on it stopped; a sticky directory of another user was trusted with
 * checkpoints its owner could remove. Here user nobody (setpriv, as root) does each of these. */
#include <errno.h>
#include <stdbool.h>
#include <sys/file.h>
#include <fcntl.h>
#include <setjmp.h>
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

#include "common/lock_file.h"
#include "formats/record.h"
#include "tests/testutil.h"
#include "trainer/loop/checkpoint.h"

static char dir[] = "/tmp/dtrain-test-locks-XXXXXX";

/* Starts `command` as user nobody in the background; returns its pid (ours, by pid). */
static pid_t as_nobody(const char *command)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        execlp("setpriv", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "sh", "-c", command,
               (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* User nobody takes flock on path (shared or exclusive) and keeps it; returns its pid once the lock
 * is held for certain (our own non-blocking try on path fails), within 10 s. */
static pid_t nobody_holds(const char *path, bool shared)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "exec flock %s %s sleep 60", shared ? "-s" : "", path);
    pid_t holder = as_nobody(cmd);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(fd >= 0);
    int tries = 0;
    while (flock(fd, LOCK_EX | LOCK_NB) == 0 && tries++ < 1000) {
        flock(fd, LOCK_UN);
        usleep(10 * 1000);
    }
    close(fd);
    assert_true(tries < 1000);   /* held: what follows runs against a taken lock */
    return holder;
}

static void stop_child(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

static bool can_plant(void)
{
    if (geteuid() != 0 || system("setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null") != 0 ||
        system("command -v flock >/dev/null") != 0) {
        tu_skip("another user's locks need root, setpriv and flock");
        return false;
    }
    return true;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int locks_setup(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    return chmod(dir, 0755);   /* others may read it, as a shared run directory */
}

static int locks_teardown(void **state)
{
    (void)state;
    return tu_remove_tree(dir);
}

/* A reader holding a shared lock on the records file does not hold up an append. */
static void test_a_reader_cannot_hold_the_records(void **state)
{
    (void)state;
    if (!can_plant())
        return;
    char path[256];
    snprintf(path, sizeof path, "%s/runs.jsonl", dir);
    assert_int_equal(tu_write_file(path, ""), 0);
    assert_int_equal(chmod(path, 0644), 0);
    pid_t reader = nobody_holds(path, true);
    struct run_record r = {.world_size = 1, .nodes = 1};
    char host[] = "gn01", *hosts[] = {host}, nodelist[] = "gn01";
    r.hostnames = hosts, r.nodelist = nodelist;
    snprintf(r.exit_state, sizeof r.exit_state, "completed");
    snprintf(r.version, sizeof r.version, "0.1.0");
    struct dt_err err;
    double t0 = now_seconds();
    int rc = record_append(path, &r, &err);
    double took = now_seconds() - t0;
    stop_child(reader);
    if (rc != 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    print_message("appended in %.3f s while another user held a shared lock on the records\n", took);
    assert_true(took < 5);
    struct stat st;
    snprintf(path, sizeof path, "%s/runs.jsonl.lock", dir);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

/* A lock file planted by another user is refused, named; one held too long by the user's own
 * process is waited for within the bound and said. */
static void test_a_planted_or_held_lock_file_is_said(void **state)
{
    (void)state;
    char path[256], cmd[512];
    struct dt_err err;
    snprintf(path, sizeof path, "%s/held.lock", dir);
    int first = lock_file_take(path, 0, "the test's file", &err);
    assert_true(first >= 0);
    double t0 = now_seconds();
    assert_int_equal(lock_file_take(path, 0.3, "the test's file", &err), LOCK_HELD);
    assert_true(now_seconds() - t0 >= 0.3);
    assert_true(tu_contains(err.msg, "the test's file is locked by another of your processes"));
    close(first);
    if (!can_plant())
        return;
    assert_int_equal(chmod(dir, 01777), 0);
    snprintf(cmd, sizeof cmd, "touch %s/planted.lock", dir);
    pid_t planter = as_nobody(cmd);
    waitpid(planter, NULL, 0);
    snprintf(path, sizeof path, "%s/planted.lock", dir);
    assert_int_equal(lock_file_take(path, 0, "the records", &err), LOCK_FAILED);
    assert_true(tu_contains(err.msg, "belongs to uid 65534, not to you"));
    assert_int_equal(chmod(dir, 0755), 0);
}

/* Anyone who can open the checkpoint directory once held its lock; now the lock is a file only
 * the user can open. A sticky directory owned by another user is not trusted. */
static void test_checkpoint_directories_are_the_users(void **state)
{
    (void)state;
    if (!can_plant())
        return;
    char ckpt[256];
    snprintf(ckpt, sizeof ckpt, "%s/ckpt", dir);
    assert_int_equal(mkdir(ckpt, 0755), 0);
    pid_t holder = nobody_holds(ckpt, false);
    struct dt_err err;
    int fd = checkpoint_lock(ckpt, &err);
    stop_child(holder);
    if (fd < 0)
        print_error("%s\n", err.msg);
    assert_true(fd >= 0);
    close(fd);
    char theirs[256];
    snprintf(theirs, sizeof theirs, "%s/theirs", dir);
    assert_int_equal(mkdir(theirs, 01777), 0);
    assert_int_equal(chown(theirs, 65534, 65534), 0);
    assert_int_equal(checkpoint_lock(theirs, &err), -1);
    assert_true(tu_contains(err.msg, "belongs to uid 65534"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_reader_cannot_hold_the_records),
        cmocka_unit_test(test_a_planted_or_held_lock_file_is_said),
        cmocka_unit_test(test_checkpoint_directories_are_the_users),
    };
    return cmocka_run_group_tests(tests, locks_setup, locks_teardown);
}
