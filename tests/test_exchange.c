/* test_exchange.c - the exchange methods' arithmetic without MPI: MG-WFBP's merging on a worked
 * example, size-threshold fusion, the alpha-beta fit, where parameter servers are placed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>

#include <cmocka.h>

#include "grouping.h"
#include "placement.h"

/* Four layers, times in ms, alpha 1 ms, beta 0.001 ms per byte:
 *   layer           0     1     2     3
 *   backward        3     0.5   2     1
 *   bytes           1000  1000  4000  500
 *   allreduce       2     2     5     1.5      (alpha + beta * bytes)
 * Backward runs 3, 2, 1, 0, so the gradients are ready at 1 (layer 3), 3 (2), 3.5 (1), 6.5 (0).
 * Each alone: allreduces start at 1, max(1 + 1.5, 3) = 3, max(3 + 5, 3.5) = 8, max(8 + 2, 6.5) = 10
 * and the last ends at 12.
 * l = 3: layer 2 is ready at 3, not before 3's start + alpha = 2: layer 3 goes alone.
 * l = 2: layer 1 is ready at 3.5 < 2's start + alpha = 4: layer 2 merges into 1; the group holds
 *        5000 bytes (allreduce 6) and starts at max(3, 3.5) = 3.5; layer 0 then starts at
 *        max(3.5 + 6, 6.5) = 9.5.
 * l = 1: layer 0 is ready at 6.5, not before 3.5 + 1 = 4.5: the group {2, 1} goes alone.
 * Groups {3}, {2, 1}, {0}; the last allreduce ends at 9.5 + 2 = 11.5 instead of 12. */
static void test_mgwfbp_merges_as_worked_by_hand(void **state)
{
    (void)state;
    double backward[] = {3, 0.5, 2, 1};
    size_t bytes[] = {1000, 1000, 4000, 500};
    bool merged[4];
    double finish = 0;
    int groups = grouping_mgwfbp(4, backward, bytes, (struct alpha_beta){1.0, 0.001}, merged, &finish);
    assert_int_equal(groups, 3);
    assert_false(merged[0]);
    assert_false(merged[1]);
    assert_true(merged[2]);
    assert_false(merged[3]);
    assert_true(fabs(finish - 11.5) < 1e-12);
}

/* Free start-ups (alpha 0) and allreduces shorter than a layer's backward: each is over before the
 * next layer is ready, nothing would wait, every layer goes alone, as WFBP. A huge alpha: everything
 * is merged into one allreduce, as BSP. (With alpha 0 but a slow link, allreduces queue up and
 * layers still merge: they would wait anyway.) */
static void test_mgwfbp_ends_at_wfbp_and_bsp(void **state)
{
    (void)state;
    double backward[] = {1, 1, 1, 1, 1};
    size_t bytes[] = {100, 200, 300, 400, 500};
    bool merged[5];
    assert_int_equal(grouping_mgwfbp(5, backward, bytes, (struct alpha_beta){0.0, 0.001}, merged, NULL), 5);
    for (int l = 0; l < 5; l++)
        assert_false(merged[l]);
    assert_int_equal(grouping_mgwfbp(5, backward, bytes, (struct alpha_beta){100.0, 0.01}, merged, NULL), 1);
    for (int l = 1; l < 5; l++)
        assert_true(merged[l]);
    assert_true(grouping_mgwfbp(5, backward, bytes, (struct alpha_beta){0.0, 0.01}, merged, NULL) < 5);
}

/* From the last layer: 500, then + 4000 = 4500 >= 4500 closes {3, 2}; 1000 + 1000 = {1, 0}. */
static void test_threshold_fuses_from_the_last_layer(void **state)
{
    (void)state;
    size_t bytes[] = {1000, 1000, 4000, 500};
    bool merged[4];
    assert_int_equal(grouping_threshold(4, bytes, 4500, merged), 2);
    assert_false(merged[0]);
    assert_true(merged[1]);
    assert_false(merged[2]);
    assert_true(merged[3]);
    assert_int_equal(grouping_threshold(4, bytes, 0, merged), 4);   /* WFBP */
    assert_int_equal(grouping_threshold(4, bytes, 1 << 30, merged), 1);   /* BSP */
}

static void test_alpha_beta_fit_recovers_a_line(void **state)
{
    (void)state;
    double bytes[] = {32768, 65536, 131072, 262144, 524288}, seconds[5];
    for (int i = 0; i < 5; i++)
        seconds[i] = 2.5e-5 + 8e-10 * bytes[i];
    struct alpha_beta cost;
    assert_int_equal(grouping_fit(5, bytes, seconds, &cost), 0);
    assert_true(fabs(cost.alpha - 2.5e-5) < 1e-12);
    assert_true(fabs(cost.beta - 8e-10) < 1e-18);
    double same[] = {4096, 4096};
    assert_int_equal(grouping_fit(2, same, seconds, &cost), -1);
}

/* Dedicated servers are the last ranks; colocated, the last rank of each host, wherever the
 * launcher put it (hosts in any order), a host with one rank giving it to its server. */
static void test_servers_are_placed(void **state)
{
    (void)state;
    const char *hosts[] = {"gn01", "gn01", "gn02", "gn02", "gn01", "gn03"};
    bool serving[6];
    assert_int_equal(placement_servers(6, hosts, 2, false, serving), 2);
    for (int r = 0; r < 6; r++)
        assert_int_equal(serving[r], r >= 4);
    assert_int_equal(placement_servers(6, hosts, 0, true, serving), 3);
    bool expected[] = {false, false, false, true, true, true};
    for (int r = 0; r < 6; r++)
        assert_int_equal(serving[r], expected[r]);
    assert_int_equal(placement_servers(1, hosts, 0, true, serving), 1);   /* nobody left to train: ps.c refuses */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mgwfbp_merges_as_worked_by_hand),
        cmocka_unit_test(test_mgwfbp_ends_at_wfbp_and_bsp),
        cmocka_unit_test(test_threshold_fuses_from_the_last_layer),
        cmocka_unit_test(test_alpha_beta_fit_recovers_a_line),
        cmocka_unit_test(test_servers_are_placed),
    };
    return cmocka_run_group_tests_name("exchange", tests, NULL, NULL);
}
