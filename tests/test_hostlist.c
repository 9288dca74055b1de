/* test_hostlist.c - the hostlist spec: expansions, positional errors, folding, limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/dt_parse.h"
#include "common/hostlist.h"
#include "tests/testutil.h"

/* Expands expr (which must be valid) and joins the names with ' '. */
static char *expand_joined(const char *expr)
{
    char *joined = tu_expand_joined(expr);
    if (!joined)
        print_error("unexpected error for \"%s\"\n", expr);
    assert_non_null(joined);
    return joined;
}

static void test_expands_slurm_syntax(void **state)
{
    (void)state;
    static const struct { const char *expr, *names; } cases[] = {
        {"gn[01-05]", "gn01 gn02 gn03 gn04 gn05"},
        {"gn[01-02,07-08]", "gn01 gn02 gn07 gn08"},
        {"gn[02,05]", "gn02 gn05"},
        {"gn01,gn[03-04],login1", "gn01 gn03 gn04 login1"},
        {"gn[009-011]", "gn009 gn010 gn011"},           /* width of the low bound */
        {"gn[1-10]", "gn1 gn2 gn3 gn4 gn5 gn6 gn7 gn8 gn9 gn10"},
        {"gn[01-3]", "gn01 gn02 gn03"},
        {"gn[1-003]", "gn1 gn2 gn3"},                     /* only the low bound's width counts */
        {"rack[1-2]-gn[01-02]", "rack1-gn01 rack1-gn02 rack2-gn01 rack2-gn02"},
        {"gn[1-2][3-4]", "gn13 gn14 gn23 gn24"},
        {"a.b-c[1-2]", "a.b-c1 a.b-c2"},
        {"node-1.cluster", "node-1.cluster"},
        {"[1-2]", "1 2"},
        {"gn[01-02],gn[01-02]", "gn01 gn02 gn01 gn02"},  /* order and duplicates kept */
        {"gn[03,01]", "gn03 gn01"},
        {"a,,b", "a b"},                                  /* empty elements skipped, as in Slurm */
        {"gn[1-2],", "gn1 gn2"},
        {"a b\tc", "a b c"},                              /* blanks separate, as in Slurm */
        {"gn[7]", "gn7"},
        {"x[0-0]", "x0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = expand_joined(cases[i].expr);
        if (strcmp(got, cases[i].names) != 0)
            print_error("%s: got \"%s\", want \"%s\"\n", cases[i].expr, got, cases[i].names);
        assert_string_equal(got, cases[i].names);
        free(got);
    }
}

static void test_malformed_names_expression_and_position(void **state)
{
    (void)state;
    static const struct { const char *expr, *reason; int position; } cases[] = {
        {"gn[03-07-09]", "a second '-'", 9},    /* from the reference bigMNIST table */
        {"gn[5-1]", "backwards", 4},
        {"gn[01-", "unclosed '['", 7},
        {"gn[a-b]", "found 'a'", 4},
        {"gn[1-b]", "found 'b'", 6},
        {"gn[]", "empty range", 4},
        {"gn[1,]", "empty range", 6},
        {"gn[,1]", "empty range", 4},
        {"gn[[1]]", "'[' inside brackets", 4},
        {"gn1]", "']' without a matching '['", 4},
        {"gn[1-2]]", "']' without a matching '['", 8},
        {"gn[01-02]x", "text after the last ']'", 10},
        {"gn[0-3]a[1-2]b", "text after the last ']'", 14},
        {"gn[1-2 ]", "found ' '", 7},
        {"gn[ 1-2]", "found ' '", 4},
        {"gn[+1-2]", "found '+'", 4},
        {"gn[-1]", "found '-'", 4},
        {"gn[1--2]", "found '-'", 6},
        {"gn[1-2,3", "unclosed '['", 9},
        {"n[0-999999999]", "the limit is 65536", 3},
        {"n[0-1234567890123456789]", "more than 18 digits", 5},
        {"a\x01" "b", "control character", 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hostlist list;
        hostlist_init(&list);
        struct dt_err err;
        assert_int_equal(hostlist_expand(cases[i].expr, &list, &err), -1);
        char where[64];
        snprintf(where, sizeof where, "at character %d", cases[i].position);
        if (!strstr(err.msg, cases[i].reason) || !strstr(err.msg, where) || !strstr(err.msg, cases[i].expr))
            print_error("%s: message \"%s\" lacks \"%s\" / \"%s\"\n", cases[i].expr, err.msg, cases[i].reason, where);
        assert_non_null(strstr(err.msg, cases[i].reason));
        assert_non_null(strstr(err.msg, where));
        assert_non_null(strstr(err.msg, cases[i].expr));
        assert_int_equal(list.count, 0);
        hostlist_free(&list);
    }
}

static void test_empty_expression_is_an_error(void **state)
{
    (void)state;
    const char *empties[] = {"", ",", " , ", NULL};
    for (int i = 0; i < 4; i++) {
        struct hostlist list;
        hostlist_init(&list);
        struct dt_err err;
        assert_int_equal(hostlist_expand(empties[i], &list, &err), -1);
        assert_non_null(strstr(err.msg, "no host names"));
        hostlist_free(&list);
    }
}

static void test_failed_expansion_leaves_list_unchanged(void **state)
{
    (void)state;
    struct hostlist list;
    hostlist_init(&list);
    struct dt_err err;
    assert_int_equal(hostlist_expand("a1,a2", &list, &err), 0);
    assert_int_equal(hostlist_expand("b[1-3],c[2-1]", &list, &err), -1);
    assert_int_equal(list.count, 2);
    assert_int_equal(hostlist_expand("d", &list, &err), 0);
    assert_string_equal(hostlist_nth(&list, 2), "d");
    assert_null(hostlist_nth(&list, 3));
    hostlist_free(&list);
}

static void test_limits_stop_huge_expansions(void **state)
{
    (void)state;
    struct hostlist list;
    hostlist_init(&list);
    struct dt_err err;
    /* Slurm's own per-range limit: 65536 names pass, 65537 do not. */
    assert_int_equal(hostlist_expand("n[0-65535]", &list, &err), 0);
    assert_int_equal(list.count, 65536);
    assert_string_equal(hostlist_nth(&list, 65535), "n65535");
    hostlist_free(&list);
    assert_int_equal(hostlist_expand("n[0-65536]", &list, &err), -1);
    /* Products and sums are capped at HOSTLIST_MAX_NAMES without expanding first. */
    assert_int_equal(hostlist_expand("n[0-999]x[0-999]", &list, &err), -1);
    assert_non_null(strstr(err.msg, "limit"));
    assert_int_equal(list.count, 0);
    assert_int_equal(hostlist_expand("a[0-65535],b[0-65535],c[0-65535],d[0-65535],e[0-9]", &list, &err), -1);
    assert_int_equal(list.count, 0);
    /* A name longer than HOSTLIST_MAX_NAME. */
    char longname[400];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    assert_int_equal(hostlist_expand(longname, &list, &err), -1);
    assert_non_null(strstr(err.msg, "longer than 255"));
    hostlist_free(&list);
}

/* Folds space-separated names and compares with what `scontrol show hostlist` printed for them. */
static void test_compress_matches_scontrol(void **state)
{
    (void)state;
    static const struct { const char *names, *folded; } cases[] = {
        /* each pair recorded from scontrol show hostlist (Slurm 22.05.8) */
        {"gn01 gn02 gn03 gn05", "gn[01-03,05]"},
        {"gn03 gn01 gn02", "gn[03,01-02]"},
        {"gn01 login1 gn02", "gn01,login1,gn02"},
        {"gn01 gn01", "gn[01,01]"},
        {"gn1 gn01 gn2", "gn[1,01,2]"},
        {"gn9 gn10", "gn[9-10]"},
        {"gn09 gn10", "gn[09-10]"},
        {"rack1-gn01 rack1-gn02 rack2-gn01", "rack1-gn[01-02],rack2-gn01"},
        {"a b c", "a,b,c"},
        {"gn01 gn02 gn04 gn05 gn07", "gn[01-02,04-05,07]"},
        {"x1 x2 y1 x3", "x[1-2],y1,x3"},
        {"gn001 gn002 gn01", "gn[001-002,01]"},
        {"node node1", "node,node1"},
        {"n1 n n2", "n1,n,n2"},
        {"gn07", "gn07"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hostlist list;
        hostlist_init(&list);
        struct dt_err err;
        assert_int_equal(hostlist_expand(cases[i].names, &list, &err), 0);
        char *folded = hostlist_compress(&list);
        assert_non_null(folded);
        if (strcmp(folded, cases[i].folded) != 0)
            print_error("%s: got %s, want %s\n", cases[i].names, folded, cases[i].folded);
        assert_string_equal(folded, cases[i].folded);
        /* and back: the folded form expands to the same names */
        char *again = expand_joined(folded);
        assert_string_equal(again, cases[i].names);
        free(again);
        free(folded);
        hostlist_free(&list);
    }
}

static void test_find_and_nth(void **state)
{
    (void)state;
    struct hostlist list;
    hostlist_init(&list);
    struct dt_err err;
    assert_int_equal(hostlist_expand("gn[01-02,07-08]", &list, &err), 0);
    assert_int_equal(hostlist_find(&list, "gn07"), 2);
    assert_int_equal(hostlist_find(&list, "gn03"), -1);
    assert_string_equal(hostlist_nth(&list, 3), "gn08");
    hostlist_free(&list);
}

/* Sizes as nccl-tests takes them (dtrain-commbench --min-bytes/--max-bytes, --partition-bytes). */
static void test_sizes_parse_with_suffixes(void **state)
{
    (void)state;
    long v;
    assert_int_equal(dt_parse_bytes("8", 0, 1L << 40, &v), 0);
    assert_int_equal(v, 8);
    assert_int_equal(dt_parse_bytes("64K", 0, 1L << 40, &v), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(dt_parse_bytes("256m", 0, 1L << 40, &v), 0);
    assert_int_equal(v, 256L << 20);
    assert_int_equal(dt_parse_bytes("2G", 0, 1L << 40, &v), 0);
    assert_int_equal(v, 2L << 30);
    const char *bad[] = {"", "K", "1.5M", "-8", "8KB", " 8", "4G", "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(dt_parse_bytes(bad[i], 0, 3L << 30, &v), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expands_slurm_syntax),
        cmocka_unit_test(test_malformed_names_expression_and_position),
        cmocka_unit_test(test_empty_expression_is_an_error),
        cmocka_unit_test(test_failed_expansion_leaves_list_unchanged),
        cmocka_unit_test(test_limits_stop_huge_expansions),
        cmocka_unit_test(test_compress_matches_scontrol),
        cmocka_unit_test(test_find_and_nth),
        cmocka_unit_test(test_sizes_parse_with_suffixes),
    };
    return cmocka_run_group_tests_name("hostlist", tests, NULL, NULL);
}
