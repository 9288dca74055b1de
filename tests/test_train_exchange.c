/* test_train_exchange.c - every gradient-exchange method inside the training loop, on a two-rank
 * "twin" transport (this process plays both ranks): every model with every method, what each
 * method sent, MG-WFBP's groups, the methods' names and their one implementation each, and the
 * timeline of a WFBP run. The methods across real ranks are test_mpi's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>
#include <jansson.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/comm/comm.h"
#include "trainer/data/data.h"
#include "trainer/exchange/exchange.h"
#include "trainer/data/loader.h"
#include "trainer/nn/nn.h"
#include "trainer/nn/ops.h"
#include "trainer/optim/optim.h"
#include "formats/profile.h"
#include "tests/testutil.h"
#include "trainer/base/timeline.h"
#include "trainer/loop/trace.h"
#include "trainer/loop/train.h"
#include "trainer/loop/watchdog.h"


/* A transport of two ranks whose other rank is this one's twin: it holds the same values, so a sum
 * is twice this rank's and every other collective an identity. The exchange methods run on it
 * without MPI, as on a world of 2, and it counts what they hand it. */
struct twin_counts {
    long allreduces, iallreduces;
    size_t floats;             /* elements handed to either */
};
static struct twin_counts twin_seen;

static int twin_allreduce(struct comm *c, float *buf, size_t count, enum comm_op op, struct dt_err *err)
{
    (void)c, (void)err;
    twin_seen.allreduces++;
    twin_seen.floats += count;
    for (size_t i = 0; op == COMM_SUM && i < count; i++)
        buf[i] *= 2;
    return 0;
}

static int twin_iallreduce_sum(struct comm *c, float *buf, size_t count, struct comm_request *req, struct dt_err *err)
{
    (void)c, (void)req, (void)err;
    twin_seen.iallreduces++;
    twin_seen.floats += count;
    for (size_t i = 0; i < count; i++)
        buf[i] *= 2;
    return 0;
}

static int twin_sum_long(struct comm *c, long *value, struct dt_err *err)
{
    (void)c, (void)err;
    *value *= 2;
    return 0;
}

static struct comm twin_comm(void)
{
    struct comm twin = *comm_single();   /* broadcast, allgather, min_max, test/wait, abort: as one process's */
    twin.name = "twin";
    twin.world = 2;
    twin.allreduce = twin_allreduce;
    twin.iallreduce_sum = twin_iallreduce_sum;
    twin.sum_long = twin_sum_long;
    return twin;
}

/* Layers with parameters: WFBP sends each one's gradients as its own piece. With per_partition,
 * the pieces when each layer is cut into partitions of at most that many floats (ByteScheduler). */
static int layer_pieces(const char *name, size_t per_partition)
{
    struct model m;
    struct dt_err err;
    assert_int_equal(model_build(&m, name, 1, 28, 28, 10, &err), 0);
    int pieces = 0;
    for (int i = 0; i < m.num_ops; i++) {
        if (!op_type_of(&m.ops[i])->owns_params)
            continue;
        size_t count = op_type_of(&m.ops[i])->param_count(&m, &m.ops[i]);
        pieces += per_partition ? (int)((count + per_partition - 1) / per_partition) : 1;
    }
    model_free(&m);
    return pieces;
}

/* One step of each model with each exchange method on a world of 2: WFBP sends one piece per
 * layer with parameters, BSP one allreduce, and between them every gradient exactly once. (A
 * silent fallback from WFBP to BSP, or a model whose parameters WFBP cannot send in order, fails.) */
static void test_every_model_suits_every_exchange(void **state)
{
    (void)state;
    const char *models[] = {"mlp", "lenet", "cnn", "resnet18", "resnet50"};
    for (int k = 0; k < exchange_method_count; k++) {
        if (exchange_methods[k]->serve)
            continue;   /* parameter servers need real messages between ranks: test_mpi runs them */
        for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
            struct comm twin = twin_comm();
            struct train_config cfg = {.model = models[i], .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                                       .optimizer = "adam", .backend = "cpu", .batch = 2, .epochs = 1, .threads = 1,
                                       .log_every = 1000, .eval_every = 0, .max_steps = 1, .lr = 0.01, .seed = 1,
                                       .comm = &twin, .exchange = exchange_methods[k]};
            struct train_result res;
            struct dt_err err;
            FILE *out = fopen("/dev/null", "w");
            memset(&twin_seen, 0, sizeof twin_seen);
            int rc = train_run(&cfg, out, &res, &err);
            if (rc < 0)
                print_error("%s, %s: %s\n", models[i], exchange_methods[k]->name, err.msg);
            assert_int_equal(rc, 0);
            assert_int_equal(res.steps, 1);
            assert_int_equal(res.exchange.steps, 1);
            assert_true(res.exchange.floats == (double)res.params);
            assert_true(twin_seen.floats >= res.params);   /* mg-wfbp's alpha-beta fit sends more */
            /* one step: layer-wise methods send each layer alone (mg-wfbp is still measuring),
             * ByteScheduler in partitions of 4096000 bytes */
            bool layerwise = exchange_methods[k] != &exchange_bsp;
            size_t per = exchange_facts(exchange_methods[k])->takes_partition ? EXCHANGE_PARTITION_BYTES / sizeof(float) : 0;
            long pieces = layerwise ? layer_pieces(models[i], per) : 1;
            assert_int_equal(res.exchange.transfers, pieces);
            assert_int_equal(twin_seen.iallreduces, layerwise ? pieces : 0);
            if (!layerwise)
                assert_int_equal(twin_seen.allreduces, 1);
            if (exchange_methods[k] == &exchange_wfbp)
                assert_int_equal(twin_seen.allreduces, 0);
            train_result_free(&res);
            fclose(out);
        }
    }
}

/* MG-WFBP: with --comm-threshold the groups are fixed from the first step (LeNet's layers hold 624,
 * 9664, 123360, 40656 and 3400 bytes: from the last, 3400 + 40656 >= 40000, then 123360, then the
 * rest: 3 groups); without, it measures 5 steps and then plans, and says so. */
static void test_mgwfbp_sends_its_groups(void **state)
{
    (void)state;
    for (int measured = 0; measured < 2; measured++) {
        struct comm twin = twin_comm();
        struct train_config cfg = {.model = "lenet", .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                                   .optimizer = "adam", .backend = "cpu", .batch = 2, .epochs = 1, .threads = 1,
                                   .log_every = 1000, .eval_every = 0, .max_steps = measured ? 7 : 2, .lr = 0.01,
                                   .seed = 1, .comm = &twin, .exchange = &exchange_mgwfbp,
                                   .exchange_options = {.threshold_set = !measured, .threshold_bytes = 40000}};
        struct train_result res;
        struct dt_err err;
        FILE *out = fopen("/dev/null", "w");
        assert_int_equal(train_run(&cfg, out, &res, &err), 0);
        if (measured) {
            assert_true(res.exchange.transfers >= 5 * 5 + 2 && res.exchange.transfers <= 7 * 5);
            assert_true(tu_contains(res.exchange.detail, "5 layers in "));
            assert_true(tu_contains(res.exchange.detail, "from 5 measured steps"));
        } else {
            assert_int_equal(res.exchange.transfers, 2 * 3);
            assert_string_equal(res.exchange.detail, "5 layers in 3 groups (--comm-threshold 40000 bytes)");
        }
        train_result_free(&res);
        fclose(out);
    }
}

/* The run LeNet steps of batch 2 on synthetic data, in-process, with the settings given. */
static void test_exchange_methods_are_found_by_name(void **state)
{
    (void)state;
    assert_ptr_equal(exchange_find("allreduce"), &exchange_bsp);
    assert_ptr_equal(exchange_find("BSP"), &exchange_bsp);
    assert_ptr_equal(exchange_find("WfBp"), &exchange_wfbp);
    assert_ptr_equal(exchange_find("MG-WFBP"), &exchange_mgwfbp);
    assert_ptr_equal(exchange_find("mgwfbp"), &exchange_mgwfbp);
    assert_null(exchange_find("wfbp,"));
    assert_null(exchange_find(""));
    assert_null(exchange_find("byteps"));
    for (int k = 0; k < exchange_method_count; k++)
        assert_ptr_equal(exchange_find(exchange_methods[k]->name), exchange_methods[k]);
    assert_ptr_equal(exchange_find("PS"), &exchange_bsp_ps);
    assert_ptr_equal(exchange_find("wfbp-ps"), &exchange_wfbp_ps);
    assert_ptr_equal(exchange_find("ByteScheduler"), &exchange_bytescheduler_a2a);
    assert_ptr_equal(exchange_find("BYTESCHEDULER-PS"), &exchange_bytescheduler_ps);
    char names[256];
    assert_string_equal(method_names(NULL, ", ", " or ", names, sizeof names),
                        "bsp-a2a, wfbp-a2a, mg-wfbp, bytescheduler-a2a, bsp-ps, wfbp-ps or bytescheduler-ps");
    assert_string_equal(method_names(method_takes_credit, ",", NULL, names, sizeof names),
                        "bytescheduler-a2a,bytescheduler-ps");
}

/* The implementations and the shared table list the same methods, in the same order; each
 * implementation's facts are its own row. */
static void test_every_method_has_one_implementation(void **state)
{
    (void)state;
    assert_int_equal(exchange_method_count, method_count);
    for (int k = 0; k < method_count; k++) {
        assert_string_equal(exchange_methods[k]->name, method_list[k].name);
        assert_ptr_equal(exchange_facts(exchange_methods[k]), &method_list[k]);
        assert_int_equal(exchange_methods[k]->serve != NULL, method_list[k].servers);
    }
}

/* Same seed, same thread count: the same losses, bitwise (part 2's checkpoint test relies on it). */

/* --timeline: a Chrome trace per rank of the first --timeline-steps steps: each step with its
 * forward, backward, exchange and update, each of LeNet's 5 layers in both passes, WFBP's 5
 * transfers a step on the exchange lane; valid JSON. */
static void test_timeline_records_the_steps(void **state)
{
    (void)state;
    char scratch[] = "/tmp/dtrain-test-trace-XXXXXX", prefix[64], path[128];
    assert_non_null(mkdtemp(scratch));
    snprintf(prefix, sizeof prefix, "%s/trace", scratch);
    struct comm twin = twin_comm();
    struct train_config cfg = {.model = "lenet", .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                               .optimizer = "adam", .backend = "cpu", .batch = 2, .epochs = 1, .threads = 1,
                               .log_every = 1000, .eval_every = 0, .max_steps = 4, .lr = 0.01, .seed = 1,
                               .comm = &twin, .exchange = &exchange_wfbp, .timeline = prefix, .timeline_steps = 2};
    struct train_result res;
    struct dt_err err;
    FILE *out = fopen("/dev/null", "w");
    assert_int_equal(train_run(&cfg, out, &res, &err), 0);
    train_result_free(&res);
    fclose(out);
    snprintf(path, sizeof path, "%s.rank0.json", prefix);
    json_error_t jerr;
    json_t *events = json_load_file(path, 0, &jerr);
    assert_non_null(events);
    int steps = 0, phases = 0, conv0 = 0, linear4 = 0, transfers = 0, ready = 0;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat)
            continue;
        steps += strcmp(cat, "step") == 0 && strncmp(name, "step ", 5) == 0;
        phases += strcmp(cat, "step") == 0 && strncmp(name, "step ", 5) != 0;
        conv0 += strcmp(name, "conv 0") == 0;
        linear4 += strcmp(name, "linear 4") == 0;
        transfers += strcmp(cat, "transfer") == 0 && strncmp(name, "allreduce L", 11) == 0;
        ready += strcmp(cat, "transfer") == 0 && strcmp(name, "ready") == 0;
    }
    json_decref(events);
    assert_int_equal(steps, 2);
    assert_int_equal(phases, 2 * 4);
    assert_int_equal(conv0, 2 * 2);
    assert_int_equal(linear4, 2 * 2);
    assert_int_equal(transfers, 2 * 5);   /* the communication thread's, one per layer */
    assert_int_equal(ready, 2 * 5);
    unlink(path);
    rmdir(scratch);
}

/* Which GPU a rank drives: dtrain's index as given; a launcher's local rank wraps around the
 * devices the rank sees (srun --gpus-per-task shows each rank one GPU: local rank 3 is device 0);
 * nothing given: device 0. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_model_suits_every_exchange),
        cmocka_unit_test(test_mgwfbp_sends_its_groups),
        cmocka_unit_test(test_exchange_methods_are_found_by_name),
        cmocka_unit_test(test_every_method_has_one_implementation),
        cmocka_unit_test(test_timeline_records_the_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
