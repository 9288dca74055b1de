/* test_hostlist_scontrol.c - differential test: our hostlists against Slurm's own scontrol.
 *
 * `scontrol show hostnames EXPR` and `scontrol show hostlist NAMES` need no running daemon when
 * SLURM_CONF points at a minimal slurm.conf, which this test writes. Never run a Slurm client
 * without SLURM_CONF: it then looks the controller up in DNS. Expressions are generated from a
 * fixed seed, so every run checks the same cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/hostlist.h"
#include "tests/testutil.h"
#include "tests/testutil.h"

#define GENERATED_CASES 400

static char scontrol[4096];
static char conf_path[4096];
static char conf_dir[64];

/* ---------- running scontrol ---------- */

static bool find_scontrol(void)
{
    const char *path = getenv("PATH");
    char dirs[8192];
    snprintf(dirs, sizeof dirs, "%s", path ? path : "/usr/bin:/bin");
    for (char *dir = strtok(dirs, ":"); dir; dir = strtok(NULL, ":")) {
        snprintf(scontrol, sizeof scontrol, "%s/scontrol", dir);
        if (access(scontrol, X_OK) == 0)
            return true;
    }
    return false;
}

static int scontrol_setup(void **state)
{
    (void)state;
    if (!find_scontrol())
        return 0;
    snprintf(conf_dir, sizeof conf_dir, "/tmp/dtrain-test-slurmconf-XXXXXX");
    if (!mkdtemp(conf_dir))
        return -1;
    snprintf(conf_path, sizeof conf_path, "%s/slurm.conf", conf_dir);
    FILE *f = fopen(conf_path, "w");
    if (!f)
        return -1;
    fputs("ClusterName=hosttest\nSlurmctldHost=localhost\nNodeName=gn01 CPUs=1 State=UNKNOWN\n"
          "PartitionName=p Nodes=gn01 Default=YES\n", f);
    fclose(f);
    return 0;
}

static int scontrol_teardown(void **state)
{
    (void)state;
    if (conf_path[0]) {
        unlink(conf_path);
        rmdir(conf_dir);
    }
    return 0;
}

/* Runs `scontrol show WHAT ARG`; returns stdout with newlines as spaces (trimmed), or NULL when
 * scontrol rejected the input (it exits 0 and says "Invalid hostlist" on stderr). */
static char *scontrol_show(const char *what, const char *arg)
{
    char *argv[] = {scontrol, "show", (char *)what, (char *)arg, NULL};
    struct tu_env env = {0};
    tu_env_set(&env, "SLURM_CONF", conf_path);
    tu_env_set(&env, "PATH", "/usr/bin:/bin");
    struct tu_result r;
    assert_int_equal(tu_run(argv, env.vars, &r), 0);
    tu_env_free(&env);
    char *answer = NULL;
    if (!strstr(r.err, "Invalid hostlist") && !strstr(r.err, "error")) {
        answer = strdup(r.out);
        for (char *c = answer; *c; c++)
            if (*c == '\n')
                *c = ' ';
        size_t len = strlen(answer);
        while (len && answer[len - 1] == ' ')
            answer[--len] = '\0';
    } else if (r.err[0] && !strstr(r.err, "Invalid hostlist")) {
        print_message("scontrol said: %s", r.err);
    }
    tu_result_free(&r);
    return answer;
}

/* ---------- generating expressions ---------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static unsigned random_below(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static void put_text(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put_text(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

/* small: keep products of two groups far below our cap (Slurm caps only single ranges). */
static void gen_range(char *buf, size_t size, bool small)
{
    unsigned width = random_below(4);          /* 0: no padding */
    unsigned lo = random_below(4) == 0 ? random_below(1200) : random_below(40);
    unsigned hi = lo + (random_below(3) == 0 ? 0 : random_below(!small && random_below(5) == 0 ? 300 : 12));
    put_text(buf, size, "%0*u", (int)(width ? width : 1), lo);
    if (hi != lo || random_below(4) == 0)
        put_text(buf, size, "-%u", hi);
}

static void gen_element(char *buf, size_t size)
{
    static const char *const prefixes[] = {"gn", "node", "rack1-gn", "a.b", "x", "n-", "cn-01-", "login", ""};
    put_text(buf, size, "%s", prefixes[random_below(sizeof prefixes / sizeof prefixes[0])]);
    if (random_below(6) == 0) {              /* a plain name, maybe with digits */
        if (random_below(2) || !buf[0] || buf[strlen(buf) - 1] == ',')   /* never an empty element */
            put_text(buf, size, "%0*u", (int)random_below(4) + 1, random_below(200));
        return;
    }
    int groups = random_below(8) == 0 ? 2 : 1;
    for (int g = 0; g < groups; g++) {
        if (g > 0)
            put_text(buf, size, "%s", random_below(2) ? "-" : "");
        put_text(buf, size, "[");
        int ranges = 1 + (int)random_below(3);
        for (int r = 0; r < ranges; r++) {
            if (r)
                put_text(buf, size, ",");
            gen_range(buf, size, groups > 1);
        }
        put_text(buf, size, "]");
    }
}

static void gen_expression(char *buf, size_t size)
{
    buf[0] = '\0';
    int elements = 1 + (int)random_below(3);
    for (int e = 0; e < elements; e++) {
        if (e)
            put_text(buf, size, ",");
        gen_element(buf, size);
    }
}

/* Breaks a valid expression in a way both parsers must reject (not one where we deliberately
 * differ from Slurm: those are in test_deliberate_differences). */
static void break_expression(char *buf, size_t size)
{
    char *bracket = strchr(buf, '[');
    switch (random_below(4)) {
    case 0:   /* a second dash: gn[03-07-09] */
        if (bracket) {
            char rest[512];
            snprintf(rest, sizeof rest, "%s", bracket + 1);
            snprintf(bracket + 1, size - (size_t)(bracket + 1 - buf), "3-5-%s", rest);
            return;
        }
        break;
    case 1:   /* a letter in a range */
        if (bracket) {
            bracket[1] = 'q';
            return;
        }
        break;
    case 2:   /* a backwards range */
        if (bracket) {
            char rest[512];
            snprintf(rest, sizeof rest, "%s", bracket + 1);
            snprintf(bracket + 1, size - (size_t)(bracket + 1 - buf), "9-2,%s", rest);
            return;
        }
        break;
    }
    put_text(buf, size, "[1-2]tail");   /* text after the last ']' */
}

/* ---------- the tests ---------- */

static void test_expansion_agrees_with_scontrol(void **state)
{
    (void)state;
    if (!conf_path[0])
        tu_skip("scontrol (Debian slurm-client) is not installed");
    int compared = 0, rejected = 0;
    for (int i = 0; i < GENERATED_CASES; i++) {
        char expr[1024];
        gen_expression(expr, sizeof expr);
        bool broken = i % 4 == 3;
        if (broken)
            break_expression(expr, sizeof expr);
        char *theirs = scontrol_show("hostnames", expr);
        char *ours = tu_expand_joined(expr);
        if ((theirs == NULL) != (ours == NULL) || (theirs && strcmp(theirs, ours) != 0)) {
            print_error("case %d: \"%s\"\n  scontrol: %s\n  dtrain:   %s\n", i, expr,
                        theirs ? theirs : "(rejected)", ours ? ours : "(rejected)");
            fail();
        }
        rejected += theirs == NULL;
        compared++;
        free(theirs);
        free(ours);
    }
    print_message("compared %d expressions with scontrol, %d rejected by both\n", compared, rejected);
    assert_true(rejected >= GENERATED_CASES / 5);   /* the invalid quarter really was exercised */
}

static void test_folding_agrees_with_scontrol(void **state)
{
    (void)state;
    if (!conf_path[0])
        tu_skip("scontrol (Debian slurm-client) is not installed");
    for (int i = 0; i < GENERATED_CASES; i++) {
        /* A list of names in a mixed order: runs, gaps, duplicates, padding changes. */
        struct hostlist list;
        hostlist_init(&list);
        static const char *const prefixes[] = {"gn", "gn0", "n", "rack1-gn", "login"};
        int names = 1 + (int)random_below(12);
        for (int k = 0; k < names; k++) {
            char name[64];
            unsigned base = random_below(3) == 0 ? random_below(200) : random_below(14);
            snprintf(name, sizeof name, "%s%0*u", prefixes[random_below(5)], (int)random_below(4), base);
            assert_int_equal(hostlist_push(&list, name, strlen(name), NULL), 0);
            if (random_below(2) && k + 1 < names) {   /* often continue a run */
                snprintf(name, sizeof name, "%s%0*u", prefixes[0], (int)random_below(3) + 1, base + 1);
                assert_int_equal(hostlist_push(&list, name, strlen(name), NULL), 0);
                k++;
            }
        }
        char joined[4096] = "";
        for (size_t k = 0; k < list.count; k++)
            put_text(joined, sizeof joined, "%s%s", k ? "," : "", hostlist_nth(&list, k));
        char *theirs = scontrol_show("hostlist", joined);
        char *ours = hostlist_compress(&list);
        if (!theirs || strcmp(theirs, ours) != 0) {
            print_error("case %d: %s\n  scontrol: %s\n  dtrain:   %s\n", i, joined, theirs ? theirs : "(rejected)", ours);
            fail();
        }
        free(theirs);
        free(ours);
        hostlist_free(&list);
    }
}

/* Where dtrain rejects what Slurm 22.05 silently turns into something else (see hostlist.h). */
static void test_deliberate_differences(void **state)
{
    (void)state;
    if (!conf_path[0])
        tu_skip("scontrol (Debian slurm-client) is not installed");
    static const struct { const char *expr, *slurm; } cases[] = {
        {"gn[01-", "gn]"},          /* unclosed bracket: Slurm invents the name "gn]" */
        {"gn[1-2,3", "gn] 3"},
        {"gn1]", "gn1]"},           /* stray ']' kept in the name */
        {"gn[ 1-2]", "gn01 gn02"},  /* strtoul skips the blank and counts it as padding */
        {"gn[+1-2]", "gn01 gn02"},
        {"gn[18446744073709551616]", "gn18446744073709551615"},   /* saturates */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *theirs = scontrol_show("hostnames", cases[i].expr);
        assert_non_null(theirs);
        assert_string_equal(theirs, cases[i].slurm);   /* if Slurm changes, revisit hostlist.h */
        assert_null(tu_expand_joined(cases[i].expr));     /* we refuse with a positional error */
        free(theirs);
    }
    /* An empty expression: Slurm prints nothing and succeeds; we say there are no names. */
    char *theirs = scontrol_show("hostnames", "");
    assert_non_null(theirs);
    assert_string_equal(theirs, "");
    assert_null(tu_expand_joined(""));
    free(theirs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expansion_agrees_with_scontrol),
        cmocka_unit_test(test_folding_agrees_with_scontrol),
        cmocka_unit_test(test_deliberate_differences),
    };
    return cmocka_run_group_tests_name("hostlist vs scontrol", tests, scontrol_setup, scontrol_teardown);
}
