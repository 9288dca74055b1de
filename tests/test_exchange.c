/* test_exchange.c - the exchange methods' arithmetic without MPI: MG-WFBP's merging on a worked
 * example, size-threshold fusion, the alpha-beta fit, where parameter servers are placed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/costmodel.h"
#include "common/exchange_methods.h"
#include "common/grouping.h"
#include "trainer/exchange/node_sums.h"
#include "trainer/exchange/placement.h"

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

/* A fit whose start-up or rate came out below zero (too small to measure) plans with none; the
 * model and dtrain-train both plan through grouping_plan_cost. */
static void test_mgwfbp_plans_without_a_negative_start_up(void **state)
{
    (void)state;
    struct alpha_beta kept = grouping_plan_cost((struct alpha_beta){0.002, 1e-9}),
                      start_up = grouping_plan_cost((struct alpha_beta){-5.6e-5, 3.76e-9}),
                      rate = grouping_plan_cost((struct alpha_beta){0.001, -1e-12});
    assert_true(kept.alpha == 0.002 && kept.beta == 1e-9);
    assert_true(start_up.alpha == 0 && start_up.beta == 3.76e-9);
    assert_true(rate.alpha == 0.001 && rate.beta == 0);
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

/* The workers' nodes for node-local sums, in the order of their first worker, each node's workers
 * in rank order, servers left out (gn03's only rank serves: no node of its own). */
static void test_workers_are_grouped_by_node(void **state)
{
    (void)state;
    const char *hosts[] = {"gn02", "gn01", "gn02", "gn01", "gn02", "gn03"};
    bool serving[] = {false, false, false, false, true, true};
    int first[7], member[6];
    assert_int_equal(placement_nodes(6, hosts, serving, first, member), 2);
    int expected_first[] = {0, 2, 4}, expected_member[] = {0, 2, 1, 3};
    assert_memory_equal(first, expected_first, sizeof expected_first);
    assert_memory_equal(member, expected_member, sizeof expected_member);

    /* rank 2 is gn02's second worker: partition p's root there is gn02's worker p mod 2, so rank 2
     * roots the odd partitions (their bytes are its credit) and pushes the even ones to rank 0 */
    struct node_sums ns;
    struct dt_err err;
    bool several;
    assert_int_equal(node_sums_plan(&ns, 6, hosts, serving, 2, true, &several, &err), 0);
    assert_true(several);
    assert_int_equal(ns.nodes, 2);
    assert_int_equal(ns.node, 0), assert_int_equal(ns.local, 1), assert_int_equal(ns.size, 2);
    int roots[2][4] = {{0, 2, 0, 2}, {1, 3, 1, 3}};
    for (int n = 0; n < 2; n++)
        for (int p = 0; p < 4; p++)
            assert_int_equal(node_sums_root(&ns, n, p), roots[n][p]);
    struct comm_thread_transfer t = {.count = 100, .index = 1};
    assert_int_equal(node_sums_charge(&ns, &t), 400);
    t.index = 2;
    assert_int_equal(node_sums_charge(&ns, &t), 0);
    node_sums_free(&ns);

    /* one worker a node: nothing to sum inside one; ten on a node: more than a root's requests */
    const char *ten[11] = {"gn01", "gn01", "gn01", "gn01", "gn01", "gn01", "gn01", "gn01", "gn01", "gn01", "gn02"};
    bool none[11] = {false};
    assert_int_equal(node_sums_plan(&ns, 2, hosts + 3, none, 0, true, &several, &err), 0);
    assert_false(several);
    assert_int_equal(node_sums_plan(&ns, 11, ten, none, 0, true, &several, &err), -1);
    assert_non_null(strstr(err.msg, "node gn01 has 10 workers; node-local sums take at most 9 (--ps-node-sums off)"));
    assert_int_equal(node_sums_plan(&ns, 11, ten, none, 0, false, &several, &err), 0);
    assert_true(several);
}

/* The collectives' costs as Thakur, Rabenseifner and Gropp give them, worked by hand: 1 MB over
 * 4 ranks, alpha 10 us, beta 1 ns/byte: ring 6 alpha + 1.5 MB beta = 1.56 ms, Rabenseifner
 * 4 alpha + 1.5 MB beta = 1.54 ms; on 2 nodes of 2 (inside: 1 us, 0.1 ns/byte) the hierarchical one
 * 2 us + 0.1 ms + 20 us + 1 ms = 1.122 ms, the cheapest. */
static void test_allreduce_costs_as_worked_by_hand(void **state)
{
    (void)state;
    struct link_cost out = {.alpha = 1e-5, .beta = 1e-9}, in = {.alpha = 1e-6, .beta = 1e-10};
    assert_true(fabs(cost_ring(4, out, 1e6) - 1.56e-3) < 1e-12);
    assert_true(fabs(cost_rabenseifner(4, out, 1e6) - 1.54e-3) < 1e-12);
    assert_true(cost_rabenseifner(3, out, 1e6) < 0);
    struct cluster_shape c = {.nodes = 2, .gpus_per_node = 2, .intra = in, .inter = out};
    assert_true(fabs(cost_hierarchical(&c, 1e6) - 1.122e-3) < 1e-12);
    assert_true(fabs(cost_allreduce(&c, 1e6) - 1.122e-3) < 1e-12);
    c.gpus_per_node = 1;   /* 2 ranks: every algorithm is 2 alpha + n beta */
    assert_true(fabs(cost_allreduce(&c, 1e6) - (2e-5 + 1e-3)) < 1e-12);
}

/* A measured link (message bytes, seconds): (1000, 1 ms), (3000, 2 ms), (7000, 6 ms). A message of
 * 500 bytes costs the first point's 1 ms; 2000: 1.5 ms; 5000: 2 + 2000 x 1 us = 4 ms; 9000, past
 * the last point on its segment's line: 6 + 2 = 8 ms. 8000 bytes over 4 ranks: the ring sends 6
 * messages of 2000 (9 ms), Rabenseifner two of 4000 (3 ms) and two of 2000: 9 ms; on 2 ranks both
 * are 2 messages of 4000: 6 ms. A line given as alpha and beta is untouched by the curve fields. */
static void test_measured_link_as_worked_by_hand(void **state)
{
    (void)state;
    const struct link_point curve[] = {{1000, 1e-3}, {3000, 2e-3}, {7000, 6e-3}};
    struct link_cost link = {.curve = curve, .points = 3};
    const double bytes[] = {500, 1000, 2000, 3000, 5000, 9000}, seconds[] = {1e-3, 1e-3, 1.5e-3, 2e-3, 4e-3, 8e-3};
    for (int i = 0; i < 6; i++)
        assert_true(fabs(link_message(link, bytes[i]) - seconds[i]) < 1e-12);
    assert_true(fabs(cost_ring(4, link, 8000) - 9e-3) < 1e-12);
    assert_true(fabs(cost_rabenseifner(4, link, 8000) - 9e-3) < 1e-12);
    assert_true(fabs(cost_ring(2, link, 8000) - 6e-3) < 1e-12);
    assert_true(fabs(cost_rabenseifner(2, link, 8000) - 6e-3) < 1e-12);
    struct link_cost line = {.alpha = 1e-5, .beta = 1e-9};
    assert_true(fabs(link_message(line, 1e6) - 1.01e-3) < 1e-15);
}

/* Three layers (forward, backward, bytes): (1, 2, 1000), (1, 1, 3000), (2, 1, 2000); the update
 * 0.6 (its share by bytes: 0.1, 0.3, 0.2); 2 workers on 2 nodes, between them alpha 0.5 and beta
 * 0.001 a byte, so an allreduce of n bytes is 2 alpha + n beta = 1 + n / 1000. F = 4, B = 4;
 * backward finishes layer 2 at 1, layer 1 at 2, layer 0 at 4.
 *   1 worker: F + B + U = 8.6.
 *   bsp-a2a: F + B + AR(6000) + U = 4 + 4 + 7 + 0.6 = 15.6.
 *   wfbp-a2a: layer 2 sends 1..4, layer 1 4..8, layer 0 8..10: 4 + 10 + 0.6 = 14.6.
 *   mg-wfbp: the fit finds alpha 1, beta 0.001; layer 1 is ready at 2, not before layer 2's start
 *     (1) + alpha: layer 2 alone (1..4); layer 0 is ready at 4 < layer 1's start (4) + alpha: {0, 1}
 *     as one group of 4000 bytes, 4..9: 4 + 9 + 0.6 = 13.6.
 *   bytescheduler-a2a (partitions larger than a layer), a credit of one byte (one partition under
 *     way at a time: each starts when the link is free): step 0 backward from 4 readies layer 2 at
 *     5, 1 at 6, 0 at 8: layer 2 sends 5..8, then layer 0 (first by priority) 8..10, layer 1 10..14;
 *     step 1 starts at 8: layer 0 waits for 10, updates (0.1), computes to 11.1; layer 1 waits for
 *     14: 14.3..15.3; layer 2 15.5..17.5; backward to 21.5; sends layer 2 18.5..21.5, layer 0
 *     21.5..23.5, layer 1 23.5..27.5; step 2 starts at 21.5: the period is 13.5, and stays so.
 *   bytescheduler-a2a, the default credit (16 MB: everything starts once ready, and the link takes
 *     it in that order): step 0 sends layer 2 5..8, layer 1 (started at 6) 8..12, layer 0 12..14;
 *     step 1 from 8: layer 0 waits for 14, 14.1..15.1, layer 1 15.4..16.4, layer 2 16.6..18.6,
 *     backward readies 19.6, 20.6, 22.6: sends 19.6..22.6, 22.6..26.6, 26.6..28.6; step 2 from
 *     22.6: 28.7..29.7, 30.0..31.0, 31.2..33.2, backward to 37.2: the period is 14.6 (WFBP's:
 *     priority cannot reorder what has all been started).
 *   Parameter servers, one server, partitions of 2500 bytes: a push takes alpha + bytes x 0.002 of
 *     the link alone (the server takes both workers' pushes: 1000 bytes 2.5, 2500 bytes 5.5), and
 *     its pull as much the other way; the pushes under way share the link, so do the pulls.
 *   bsp-ps: partitions of the buffer 2500, 2500, 1000 bytes, all pushed at 4: three share the link
 *     until the 1000-byte one is through (2.5 each: 11.5), the two others 3 each more (17.5); the
 *     first pull 11.5..14, the two others shared 17.5..28.5: 4 + 28.5 + 0.6 = 33.1.
 *   wfbp-ps: the 1000-byte partition (layer 2's) at 1, [2500, 5000) (layer 1's) at 2, [0, 2500)
 *     at 4: alone 1..2, with the second 2..4 (1 each), the three until the first is through at 5.5
 *     (0.5 each), two until the second is at 13.5 (4 each), the third at 14.5; pulls 5.5..8,
 *     13.5..23.5 and 14.5..24.5 (4.5 shared, then 1): 4 + 24.5 + 0.6 = 29.1.
 *   bsp-ps, pushes and pulls taking turns on one rate (servers_half_duplex): as above to 11.5, then
 *     the first pull shares the link with the two pushes (3 left each): through at 19, the pushes
 *     0.5 each more (20), their pulls shared to 31: 4 + 31 + 0.6 = 35.6.
 *   bytescheduler-ps, a credit of one byte: each layer cut on its own (1000; 2500 + 500; 2000),
 *     one push under way at a time, the pulls queued back in the order pushed (every piece within
 *     the eager limit: no handshakes): step 0 pushes layer 2 5..9.5, layer 0 9.5..12, layer 1's
 *     12..17.5 and 17.5..19; pulls 9.5..14, 14..16.5, 17.5..23, 23..24.5; step 1 from 8: layer 0
 *     at 16.6..17.6, layer 1 24.8..25.8, layer 2 26..28, backward to 32; pushes 29..33.5,
 *     33.5..36, 36..41.5, 41.5..43 (sums back 38, 40.5, 47, 48.5); step 2 from 32: 40.6..41.6,
 *     48.8..49.8, 50..52, backward to 56: the period is 24. */
static void test_step_costs_as_worked_by_hand(void **state)
{
    (void)state;
    const struct layer_cost layers[] = {{1, 2, 1000}, {1, 1, 3000}, {2, 1, 2000}};
    struct step_costs s = {.layers = 3, .layer = layers, .update = 0.6};
    struct cluster_shape one = {.nodes = 1, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001}};
    struct cluster_shape two = {.nodes = 2, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001}, .servers = 1};
    struct method_settings whole = {0}, cut = {.partition_bytes = 2500}, one_byte = {.credit_bytes = 1},
                           cut_one = {.partition_bytes = 2500, .credit_bytes = 1};
    assert_true(fabs(cost_step(&s, &one, "bsp-a2a", &whole) - 8.6) < 1e-9);
    const struct {
        const char *method;
        const struct method_settings *settings;
        double expected;
    } cases[] = {
        {"bsp-a2a", &whole, 15.6}, {"wfbp-a2a", &whole, 14.6}, {"mg-wfbp", &whole, 13.6},
        {"bytescheduler-a2a", &one_byte, 13.5}, {"bytescheduler-a2a", &whole, 14.6}, {"bsp-ps", &cut, 33.1},
        {"wfbp-ps", &cut, 29.1}, {"bytescheduler-ps", &cut_one, 24},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double got = cost_step(&s, &two, cases[i].method, cases[i].settings);
        if (fabs(got - cases[i].expected) >= 1e-9)
            print_error("%s: %.12f, expected %.12f\n", cases[i].method, got, cases[i].expected);
        assert_true(fabs(got - cases[i].expected) < 1e-9);
    }
    assert_true(cost_step(&s, &two, "carrier-pigeon", &whole) < 0);
    two.servers_half_duplex = true;
    assert_float_equal(cost_step(&s, &two, "bsp-ps", &cut), 35.6, 1e-9);
}

/* The three layers above at three workers, a node each, the job's allreduce measured (four started
 * together: 1 + n / 500) and the link between the nodes as above (a 2-rank allreduce 1 + n / 1000).
 * With the first two nodes behind one link, WFBP's and MG-WFBP's allreduces, started apart, go at
 * the 2-rank allreduce's cost across the link (ranks 0 and 1 share a leaf; their hops on it ride
 * beside the link): 14.6 and 13.6 as at two workers (MG-WFBP's groups still planned on the measured
 * allreduce: alpha 1, the same groups). With a link a node, the measured cost: WFBP sends layer 2
 * 1..6, layer 1 6..13, layer 0 13..16: 4 + 16 + 0.6 = 20.6. ByteScheduler-A2A's pieces, started
 * as its credit frees, go at the 2-rank cost too: the step it has with the job's allreduce measured
 * at that cost. BSP's one blocking allreduce keeps the measured cost either way: 4 + 4 + 13 + 0.6 =
 * 21.6. */
static void test_allreduces_started_apart_at_three_ranks(void **state)
{
    (void)state;
    const struct layer_cost layers[] = {{1, 2, 1000}, {1, 1, 3000}, {2, 1, 2000}};
    struct step_costs s = {.layers = 3, .layer = layers, .update = 0.6};
    struct link_cost measured = {.alpha = 1, .beta = 0.002};
    struct cluster_shape leaves = {.nodes = 3, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001},
                                   .nodes_per_link = 2, .allreduce = &measured};
    struct cluster_shape own_links = leaves;
    own_links.nodes_per_link = 1;
    struct method_settings whole = {0};
    assert_float_equal(cost_step(&s, &leaves, "wfbp-a2a", &whole), 14.6, 1e-9);
    assert_float_equal(cost_step(&s, &leaves, "mg-wfbp", &whole), 13.6, 1e-9);
    assert_float_equal(cost_step(&s, &own_links, "wfbp-a2a", &whole), 20.6, 1e-9);
    assert_float_equal(cost_step(&s, &leaves, "bsp-a2a", &whole), 21.6, 1e-9);
    assert_float_equal(cost_step(&s, &own_links, "bsp-a2a", &whole), 21.6, 1e-9);
    struct link_cost two_ranks = {.alpha = 1, .beta = 0.001};
    struct cluster_shape measured_so = own_links;
    measured_so.allreduce = &two_ranks;
    assert_float_equal(cost_step(&s, &leaves, "bytescheduler-a2a", &whole),
                       cost_step(&s, &measured_so, "bytescheduler-a2a", &whole), 1e-9);
    assert_true(cost_step(&s, &leaves, "bytescheduler-a2a", &whole) <
                cost_step(&s, &own_links, "bytescheduler-a2a", &whole) - 1e-6);
    leaves.nodes = 4;   /* a power of two: no fold, the measured cost */
    own_links.nodes = 4;
    assert_float_equal(cost_step(&s, &leaves, "wfbp-a2a", &whole), cost_step(&s, &own_links, "wfbp-a2a", &whole), 1e-12);
}

/* An allreduce alone (link_cost.alone): Open MPI's in-place nonblocking allreduce crosses a link one
 * way, then back, so one among others holds the link for less than one alone takes. The three
 * layers above at two workers, the job's allreduce measured: two under way 1 + n / 1000 each (as
 * without the alone curve: WFBP sends layer 2 1..4, layer 1 4..8, layer 0 8..10, 14.6), one of
 * them alone 1.2 + n / 833.3. Two started together take one alone plus a share: a share of
 * 2 (1 + n / 1000) - (1.2 + n / 833.3) = 0.8 + 0.0008 n, each one's sums back 0.4 + 0.0004 n
 * after it leaves the link. WFBP: layer 2 1..3.4, back at 4.6; layer 1 3.4..6.6, back at 8.2;
 * layer 0 6.6..8.2, back at 9.0: 4 + 9.0 + 0.6 = 13.6. At three workers behind the leaves,
 * the allreduces started apart hold the link for the 2-rank link's share (1 + n / 1000, its lone
 * time not measured: the sends of 14.6) and come back the job's one alone after their start:
 * layer 2 at 1 + 3.6, layer 1 at 4 + 4.8, layer 0 at 8 + 2.4 = 10.4: 4 + 10.4 + 0.6 = 15.0. BSP's
 * one blocking allreduce keeps its own curve (1 + n / 500: 4 + 4 + 13 + 0.6 = 21.6). Where one
 * alone takes no longer than its part of two, nothing changes. */
static void test_an_allreduce_alone_has_its_way_back_to_go(void **state)
{
    (void)state;
    const struct layer_cost layers[] = {{1, 2, 1000}, {1, 1, 3000}, {2, 1, 2000}};
    struct step_costs s = {.layers = 3, .layer = layers, .update = 0.6};
    const struct link_point one[] = {{1000, 3}, {3000, 7}}, streamed[] = {{1000, 2}, {3000, 4}},
                            alone[] = {{1000, 2.4}, {3000, 4.8}}, fast_alone[] = {{1000, 2}, {3000, 4}};
    struct link_cost measured = {.curve = one, .points = 2, .streamed = streamed, .streamed_points = 2, .inflight = 2};
    struct cluster_shape two = {.nodes = 2, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001},
                                .allreduce = &measured};
    struct method_settings whole = {0};
    double bytescheduler = cost_step(&s, &two, "bytescheduler-a2a", &whole);
    assert_float_equal(cost_step(&s, &two, "wfbp-a2a", &whole), 14.6, 1e-9);
    measured.alone = alone, measured.alone_points = 2;
    assert_float_equal(cost_step(&s, &two, "wfbp-a2a", &whole), 13.6, 1e-9);
    assert_float_equal(cost_step(&s, &two, "bsp-a2a", &whole), 21.6, 1e-9);
    assert_true(fabs(cost_step(&s, &two, "bytescheduler-a2a", &whole) - bytescheduler) > 1e-6);
    struct cluster_shape leaves = two;
    leaves.nodes = 3, leaves.nodes_per_link = 2;
    assert_float_equal(cost_step(&s, &leaves, "wfbp-a2a", &whole), 15.0, 1e-9);
    measured.alone = fast_alone;
    assert_float_equal(cost_step(&s, &two, "wfbp-a2a", &whole), 14.6, 1e-9);
    assert_float_equal(cost_step(&s, &two, "bytescheduler-a2a", &whole), bytescheduler, 1e-12);
}

/* ByteScheduler-PS's queues, one layer (forward 1, backward 1, 2000 bytes), no update, 2 workers
 * and a server, alpha 0.5, beta 0.001: a push or a pull costs 0.5 + 2 x 2000 x 0.001 = 4.5 (the
 * server takes both workers'), a message of no data 0.5. Sent at once (2000 bytes within the eager
 * limit): backward readies the layer at 2, pushed 2..6.5, pulled 6.5..11; the next forward waits
 * for it, 11..12, backward to 13: the period is 11. With an eager limit of 1000 bytes each way
 * takes a handshake first (the push's first fragment 2..2.5, the server's answer back 2.5..3, the
 * push 3..7.5; the pull's first fragment 7.5..8, the answer 8..8.5, the pull 8.5..13): 13. */
static void test_bytescheduler_ps_handshakes_as_worked_by_hand(void **state)
{
    (void)state;
    const struct layer_cost layer[] = {{1, 1, 2000}};
    struct step_costs s = {.layers = 1, .layer = layer};
    struct cluster_shape c = {.nodes = 2, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001}, .servers = 1};
    struct method_settings defaults = {0};
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &defaults), 11, 1e-9);
    c.eager_bytes = 1000;
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &defaults), 13, 1e-9);
}

/* The link's two ways loaded at once (cluster_shape.servers_pieces): the layer above cut into two
 * pieces of 1000 bytes (a push or a pull 0.5 + 2 x 1000 x 0.001 = 2.5), its traffic alone (no
 * compute) as measured: 8.75 s for its 2000 bytes. The schedule, a message t times slower while
 * the other way carries earlier ones: pushes 0..2.5, 2.5..5; the first pull from 2.5 beside the
 * second push (2.5 left of it): 2.5 + (2.5 + 2.5 - 2.5 / t); the second pull from then, the other
 * way idle: 2.5 more. Its round is 10 - 2.5 / t: 7.5 at t = 1, 8.75 at t = 2, so t = 2. Trained
 * (forward 1, backward 1): pieces ready at 2, pulls done at 2 + 8.75 = 10.75, forward to 11.75,
 * backward to 12.75: the period is 10.75 (9.5 at t = 1, which a measurement of 7.5 s, or of
 * less, leaves it at: the model is never made faster than its schedule). */
static void test_both_ways_slow_down_as_worked_by_hand(void **state)
{
    (void)state;
    const struct layer_cost layer[] = {{1, 1, 2000}};
    struct step_costs s = {.layers = 1, .layer = layer};
    struct link_point measured[] = {{1000, 0}, {2000, 8.75}};
    struct link_cost pieces = {.curve = measured, .points = 2};
    struct cluster_shape c = {.nodes = 2, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001}, .servers = 1};
    struct method_settings cut = {.partition_bytes = 1000};
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &cut), 9.5, 1e-9);
    double wfbp_ps = cost_step(&s, &c, "wfbp-ps", &cut);
    c.servers_pieces = &pieces;
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &cut), 10.75, 1e-9);
    assert_float_equal(cost_step(&s, &c, "wfbp-ps", &cut), wfbp_ps, 0);   /* ByteScheduler-PS's traffic alone */
    measured[1].seconds = 7.5;
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &cut), 9.5, 1e-9);
    measured[1].seconds = 5;
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &cut), 9.5, 1e-9);
}

/* BytePS's node-local sums in the model, the layers above on 2 nodes of 2 workers, one server,
 * partitions of 2500 bytes (bsp-ps: all three ready at 4, the 1000-byte one first), inside a node
 * alpha 0.1, beta 0.0001. A piece's stages: the root's receive of the other worker's copy inside
 * the node (0.1 + bytes x 0.0001: 1000 bytes 0.2, 2500 bytes 0.35), the push, the pull, the
 * hand-off back (as the receive). Inside the node a piece at a time, in the order they came; on
 * the link every piece under way at its share; the node's links are not the link between nodes,
 * so one piece's hand-offs overlap another's push (BytePS's pipeline).
 *   on: one push a node (the server takes 2: alpha + bytes x 0.002 as with one worker a node: 1000
 *     bytes 2.5, 2500 bytes 5.5). Received 4..4.2, 4.2..4.55, 4.55..4.9. The small push alone to
 *     4.55 (2.15 left), with the second to 4.9 (1.975 left), the three to 10.825; its pull to
 *     13.325, handed out to 13.525. The two others (3.35 and 3.525 left): the second through at
 *     17.525, the third at 17.7; their pulls (the second alone to 17.7) through at 28.35 and
 *     28.525, handed out 28.35..28.7 and 28.7..29.05: 4 + 29.05 + 0.6 = 33.65 (34.7 when the
 *     hand-offs took the link's time).
 *   off: 4 pushes (the server's and each node's link 2 x 2: alpha + bytes x 0.004): 4.5 and 10.5;
 *     through at 4 + 3 x 4.5 = 17.5 and 17.5 + 2 x 6 = 29.5, pulls to 29.5 + 2 x 10.5 = 50.5:
 *     4 + 50.5 + 0.6 = 55.1.
 *   bytescheduler-ps, one layer (forward 1, backward 1, 2000 bytes), no update: ready at 2, in
 *     at the root 2..2.3, pushed 2.3..6.8 (alpha + 2 x 2000 x 0.001), pulled 6.8..11.3, handed
 *     out 11.3..11.6; the next forward waits for it, 11.6..12.6, backward to 13.6: the period is
 *     11.6 (11 with one worker a node). */
static void test_node_sums_cost_as_worked_by_hand(void **state)
{
    (void)state;
    const struct layer_cost layers[] = {{1, 2, 1000}, {1, 1, 3000}, {2, 1, 2000}}, layer[] = {{1, 1, 2000}};
    struct step_costs s = {.layers = 3, .layer = layers, .update = 0.6}, one_layer = {.layers = 1, .layer = layer};
    struct cluster_shape c = {.nodes = 2, .gpus_per_node = 2, .inter = {.alpha = 0.5, .beta = 0.001},
                              .intra = {.alpha = 0.1, .beta = 0.0001}, .servers = 1};
    struct method_settings on = {.partition_bytes = 2500}, off = {.partition_bytes = 2500, .ps_node_sums_off = true},
                           defaults = {0};
    assert_float_equal(cost_step(&s, &c, "bsp-ps", &on), 33.65, 1e-9);
    assert_float_equal(cost_step(&s, &c, "bsp-ps", &off), 55.1, 1e-9);
    assert_float_equal(cost_step(&one_layer, &c, "bytescheduler-ps", &defaults), 11.6, 1e-9);
}

/* Colocated servers, the layers above, bsp-ps, partitions of 2500 bytes, alpha 0.5, beta 0.001:
 * on 2 nodes of one worker each, half of each push goes to the other node's server and half of
 * each answer comes from it: a push or a pull takes 0.5 + bytes x 0.0005 (1000 bytes 1, 2500
 * bytes 1.75), all on one link. The three pushes from 4 share it until the first is through
 * (1 each: 7), its pull joins, the two others are through at 9.25 (0.75 each), the first pull at 10
 * (0.25 more), the two last pulls at 13 (1.5 each, halves): 4 + 13 + 0.6 = 17.6. On one node
 * nothing crosses a link: 4 + 4 + 0.6. On 4 nodes, 2 behind each link, the 3 partitions at 3 of
 * the 4 servers: a link carries the pushes from the 2 nodes beyond it to the servers behind it, 2
 * of the 3 partitions' (2 x 2/3 of each byte), and as much in answers: a push or a pull 0.5 +
 * bytes x 0.001 x 4/3 (1.8333 and 3.8333); the first push through at 4 + 3 x 1.8333 = 9.5, its
 * pull and the two other pushes 1.8333 each until 15, those 0.1667 each more (15.3333), their
 * pulls 3.8333 each, halves, to 23: 4 + 23 + 0.6 = 27.6. */
static void test_colocated_servers_cost_as_worked_by_hand(void **state)
{
    (void)state;
    const struct layer_cost layers[] = {{1, 2, 1000}, {1, 1, 3000}, {2, 1, 2000}};
    struct step_costs s = {.layers = 3, .layer = layers, .update = 0.6};
    struct cluster_shape two = {.nodes = 2, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001},
                                .servers_colocated = true};
    struct cluster_shape one = two;
    one.nodes = 1, one.gpus_per_node = 2;
    struct method_settings cut = {.partition_bytes = 2500};
    assert_float_equal(cost_step(&s, &two, "bsp-ps", &cut), 17.6, 1e-9);
    assert_float_equal(cost_step(&s, &one, "bsp-ps", &cut), 8.6, 1e-9);
    struct cluster_shape leaves = two;
    leaves.nodes = 4, leaves.nodes_per_link = 2;
    assert_float_equal(cost_step(&s, &leaves, "bsp-ps", &cut), 27.6, 1e-9);
}

/* A server on a node of its own beside three workers, the layers above (bsp-ps, partitions of
 * 2500 bytes), two nodes behind each link in rank order (the test cluster's leaves: gn01+gn02,
 * gn03+the server): the third worker's pushes stay behind the server's link, two of the three
 * cross it, as with two workers and a link a node (33.1, test_step_costs_as_worked_by_hand); with a
 * link a node the server's takes all three (slower); with the four behind one link nothing crosses
 * (4 + 4 + 0.6). */
static void test_dedicated_server_behind_a_shared_link(void **state)
{
    (void)state;
    const struct layer_cost layers[] = {{1, 2, 1000}, {1, 1, 3000}, {2, 1, 2000}};
    struct step_costs s = {.layers = 3, .layer = layers, .update = 0.6};
    struct cluster_shape leaves = {.nodes = 3, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001},
                                   .servers = 1, .nodes_per_link = 2};
    struct method_settings cut = {.partition_bytes = 2500};
    assert_float_equal(cost_step(&s, &leaves, "bsp-ps", &cut), 33.1, 1e-9);
    struct cluster_shape own_links = leaves, one_leaf = leaves;
    own_links.nodes_per_link = 1, one_leaf.nodes_per_link = 4;
    assert_true(cost_step(&s, &own_links, "bsp-ps", &cut) > 33.1 + 5);
    assert_float_equal(cost_step(&s, &one_leaf, "bsp-ps", &cut), 8.6, 1e-9);
}

/* ByteScheduler-PS with colocated servers, piece by piece: one layer (forward 1, backward 1, 4000
 * bytes), no update, 4 nodes of one worker, 2 behind each link, alpha 0.5, beta 0.001, pieces of
 * 1000 bytes, a credit of 1000. The pieces go to servers 0, 1, 2, 3 in turn (each to the one
 * holding fewest bytes), so pieces 0 and 1 sit behind the first link, 2 and 3 behind the second.
 * Each side's workers run their own steps: they push across only the pieces whose server is on
 * the other side (the 2 of them: 0.5 + 2 x 1000 x 0.001 = 2.5), by their own credit (one piece
 * under way), and have a piece of their own side once the other side's push is in, one of the
 * other side once its pull is back (2.5). Way A into the first pair, B into the second; all ready
 * at 2. The second pair pushes 0 on A 2..4.5, the first pushes 2 on B 2..4.5; at 4.5 pull 0 on B
 * 4.5..7 and push 1 on A 4.5..7, then pull 2 on A 7..9.5 and push 3 on B 7..9.5; at 7 pull 1 on B
 * 9.5..12; at 9.5 pull 3 on A 9.5..12. The first pair has its pieces at 4.5, 7 (its own) and 9.5,
 * 12, the second at 7, 12 and 4.5, 9.5: both forward 12..13, backward to 14, and the pattern
 * repeats 12 later: the period is 12 (17 when one worker waited for every pull, the others'
 * included, with half the credit). */
static void test_colocated_bytescheduler_ps_cost_as_worked_by_hand(void **state)
{
    (void)state;
    const struct layer_cost layer[] = {{1, 1, 4000}};
    struct step_costs s = {.layers = 1, .layer = layer};
    struct cluster_shape c = {.nodes = 4, .gpus_per_node = 1, .inter = {.alpha = 0.5, .beta = 0.001},
                              .servers_colocated = true, .nodes_per_link = 2};
    struct method_settings pieces = {.partition_bytes = 1000, .credit_bytes = 1000};
    assert_float_equal(cost_step(&s, &c, "bytescheduler-ps", &pieces), 12, 1e-9);
}

/* Every method of the shared table has a step in the cost model, found by its name and aliases;
 * a name outside the table has none. */
static void test_every_method_has_a_cost(void **state)
{
    (void)state;
    for (int k = 0; k < method_count; k++)
        assert_true(cost_knows(method_list[k].name));
    assert_true(cost_knows("allreduce"));
    assert_false(cost_knows("byteps"));
    struct layer_cost layer = {.forward = 1e-3, .backward = 2e-3, .bytes = 4e6};
    struct step_costs s = {.layers = 1, .layer = &layer};
    struct cluster_shape c = {.nodes = 2, .gpus_per_node = 1, .inter = {.alpha = 1e-5, .beta = 1e-9},
                              .intra = {.alpha = 1e-6, .beta = 1e-10}};
    assert_true(cost_step(&s, &c, "byteps", NULL) < 0);
    assert_float_equal(cost_step(&s, &c, "BSP", NULL), cost_step(&s, &c, "bsp-a2a", NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mgwfbp_merges_as_worked_by_hand),
        cmocka_unit_test(test_mgwfbp_ends_at_wfbp_and_bsp),
        cmocka_unit_test(test_threshold_fuses_from_the_last_layer),
        cmocka_unit_test(test_alpha_beta_fit_recovers_a_line),
        cmocka_unit_test(test_servers_are_placed),
        cmocka_unit_test(test_dedicated_server_behind_a_shared_link),
        cmocka_unit_test(test_workers_are_grouped_by_node),
        cmocka_unit_test(test_bytescheduler_ps_handshakes_as_worked_by_hand),
        cmocka_unit_test(test_colocated_bytescheduler_ps_cost_as_worked_by_hand),
        cmocka_unit_test(test_both_ways_slow_down_as_worked_by_hand),
        cmocka_unit_test(test_node_sums_cost_as_worked_by_hand),
        cmocka_unit_test(test_colocated_servers_cost_as_worked_by_hand),
        cmocka_unit_test(test_allreduce_costs_as_worked_by_hand),
        cmocka_unit_test(test_measured_link_as_worked_by_hand),
        cmocka_unit_test(test_step_costs_as_worked_by_hand),
        cmocka_unit_test(test_allreduces_started_apart_at_three_ranks),
        cmocka_unit_test(test_mgwfbp_plans_without_a_negative_start_up),
        cmocka_unit_test(test_an_allreduce_alone_has_its_way_back_to_go),
        cmocka_unit_test(test_every_method_has_a_cost),
    };
    return cmocka_run_group_tests_name("exchange", tests, NULL, NULL);
}
