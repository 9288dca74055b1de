/* test_cluster_env.c - tests/cluster/env.sh sourced as a user would: from the repository root, from
 * another folder by a POSIX sh (which cannot know the sourced file's path: it says so and returns
 * 1 at once, where srun then retried /etc/slurm/slurm.conf for a minute), and from anywhere with
 * DTRAIN_CLUSTER_ENV_FROM. Needs no cluster: only what the file sets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/testutil.h"

/* Runs script under /bin/sh in dir; r gets its output. */
static void run_sh_in(const char *dir, const char *script, struct tu_result *r)
{
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    char cd[4200], path[4200];
    snprintf(cd, sizeof cd, "cd '%s' && %s", dir, script);
    argv[2] = cd;
    snprintf(path, sizeof path, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    char *envp[] = {path, NULL};
    assert_int_equal(tu_run(argv, envp, r), 0);
}

static void test_env_sh_from_anywhere(void **state)
{
    (void)state;
    char root[2048], env[2100], script[4400];
    assert_non_null(getcwd(root, sizeof root));   /* the tests run from the repository root */
    snprintf(env, sizeof env, "%s/tests/cluster/env.sh", root);
    struct tu_result r;
    run_sh_in(root, ". tests/cluster/env.sh && echo \"conf=$SLURM_CONF\"", &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "conf=/") && tu_contains(r.out, "/etc/slurm.conf"));
    tu_result_free(&r);

    snprintf(script, sizeof script, ". '%s'; echo \"status=$? conf=${SLURM_CONF:-none}\"", env);
    run_sh_in("/", script, &r);
    assert_true(tu_contains(r.out, "status=1 conf=none"));
    assert_true(tu_contains(r.err, "no cluster.conf.sh beside tests/cluster/env.sh (from /)"));
    assert_true(tu_contains(r.err, "DTRAIN_CLUSTER_ENV_FROM="));
    tu_result_free(&r);

    snprintf(script, sizeof script, "DTRAIN_CLUSTER_ENV_FROM='%s'; . '%s' && echo \"conf=$SLURM_CONF\"", env, env);
    run_sh_in("/", script, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "/etc/slurm.conf"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_sh_from_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
