/* test_profile.c - a step's cost as a profile (--profile-out written, read back, bad ones refused)
 * and emulated compute (--emulate: each layer waits its profiled time, rate-scaled and dilated). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>
#include <jansson.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/comm/comm.h"
#include "trainer/data/data.h"
#include "trainer/loop/emulate.h"
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


static struct train_config lenet_config(long steps)
{
    return (struct train_config){.model = "lenet", .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                                 .optimizer = "adam", .backend = "cpu", .batch = 2, .epochs = 1, .threads = 1,
                                 .log_every = 1000, .eval_every = 0, .max_steps = steps, .lr = 0.01, .seed = 1};
}

/* --profile-out: a real run's profile has the model's layers (names, parameter counts), positive
 * times, and steps measured after the warm-up; it reads back equal; it matches LeNet, not the CNN. */
static void test_a_profile_round_trips(void **state)
{
    (void)state;
    char scratch[] = "/tmp/dtrain-test-profile-XXXXXX", path[128];
    assert_non_null(mkdtemp(scratch));
    snprintf(path, sizeof path, "%s/lenet.json", scratch);
    struct train_config cfg = lenet_config(6);
    cfg.profile_out = path;
    struct train_result res;
    struct dt_err err;
    FILE *out = fopen("/dev/null", "w");
    assert_int_equal(train_run(&cfg, out, &res, &err), 0);
    train_result_free(&res);
    struct profile p, again;
    assert_int_equal(profile_read(path, &p, &err), 0);
    assert_string_equal(p.model, "lenet");
    assert_int_equal(p.batch, 2);
    assert_int_equal(p.steps, 6 - PROFILE_WARMUP_STEPS);
    assert_int_equal(p.layers, 5);
    assert_string_equal(p.names[0], "conv 0");
    assert_string_equal(p.names[4], "linear 4");
    assert_int_equal(p.params[0], 156);
    double layers = 0;
    for (int l = 0; l < p.layers; l++) {
        assert_true(p.forward[l] > 0 && p.backward[l] > 0);
        layers += p.forward[l] + p.backward[l];
    }
    assert_true(p.update > 0);
    assert_true(p.step >= layers);   /* the step holds its layers, and more (data, the loss's bookkeeping) */
    assert_true(strncmp(p.device, "cpu: 1 thread of ", 17) == 0);
    /* written again and read back: the same numbers, bit for bit (%.17g) */
    snprintf(path, sizeof path, "%s/again.json", scratch);
    assert_int_equal(profile_write(&p, path, &err), 0);
    assert_int_equal(profile_read(path, &again, &err), 0);
    assert_int_equal(again.layers, p.layers);
    assert_memory_equal(again.forward, p.forward, (size_t)p.layers * sizeof(double));
    assert_memory_equal(again.backward, p.backward, (size_t)p.layers * sizeof(double));
    assert_true(again.update == p.update && again.step == p.step);
    struct model lenet, cnn;
    assert_int_equal(model_build(&lenet, "lenet", 1, 28, 28, 10, &err), 0);
    assert_int_equal(model_build(&cnn, "cnn", 1, 28, 28, 10, &err), 0);
    assert_int_equal(profile_matches(&p, &lenet, &err), 0);
    assert_int_equal(profile_matches(&p, &cnn, &err), -1);
    assert_true(strstr(err.msg, "model cnn") != NULL);
    model_free(&lenet), model_free(&cnn);
    profile_free(&p), profile_free(&again);
    fclose(out);
    tu_remove_tree(scratch);
}

/* A profile that is not one, or has a bad field, is refused with the file's name and the reason. */
static void test_bad_profiles_are_refused(void **state)
{
    (void)state;
    char scratch[] = "/tmp/dtrain-test-profile-XXXXXX", path[128];
    assert_non_null(mkdtemp(scratch));
    snprintf(path, sizeof path, "%s/p.json", scratch);
    const char *layer = "{\"name\": \"conv 0\", \"params\": 156, \"forward_seconds\": 0.001, "
                        "\"backward_seconds\": 0.002}";
    char good[1024];
    snprintf(good, sizeof good, "{\"format\": \"dtrain-profile\", \"version\": 1, \"model\": \"x\", \"device\": "
             "\"d\", \"backend\": \"cpu\", \"batch\": 2, \"steps\": 3, \"update_seconds\": 0.001, "
             "\"step_seconds\": 0.01, \"layers\": [%s]}", layer);
    const struct {
        const char *from, *to, *says;
    } cases[] = {
        {"\"dtrain-profile\"", "\"chrome-trace\"", "not a profile"},
        {"\"version\": 1", "\"version\": 7", "profile version 7"},
        {"\"batch\": 2", "\"batch\": 0", "batch 1 or more"},
        {"\"update_seconds\": 0.001", "\"update_seconds\": -1", "update_seconds"},
        {"\"forward_seconds\": 0.001", "\"forward_seconds\": \"fast\"", "layer 0"},
        {"\"params\": 156", "\"params\": -156", "layer 0"},
        {"{\"format\"", "[{\"format\"", "a JSON object"},
        {"\"layers\": [", "\"layers\": [,", "not a profile ("},
    };
    struct profile p;
    struct dt_err err;
    assert_int_equal(tu_write_file(path, good), 0);
    assert_int_equal(profile_read(path, &p, &err), 0);
    profile_free(&p);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char bad[1200];
        const char *at = strstr(good, cases[i].from);
        assert_non_null(at);
        snprintf(bad, sizeof bad, "%.*s%s%s", (int)(at - good), good, cases[i].to, at + strlen(cases[i].from));
        if (cases[i].from[0] == '{')
            strcat(bad, "]");
        assert_int_equal(tu_write_file(path, bad), 0);
        assert_int_equal(profile_read(path, &p, &err), -1);
        if (!strstr(err.msg, cases[i].says) || !strstr(err.msg, path))
            print_error("case %zu: %s\n", i, err.msg);
        assert_non_null(strstr(err.msg, cases[i].says));
        assert_non_null(strstr(err.msg, path));
    }
    assert_int_equal(profile_read("/nonexistent/p.json", &p, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/p.json"));
    tu_remove_tree(scratch);
}

/* A hand-made LeNet profile: each layer 8 ms forward and 12 ms backward, the update 4 ms, so a
 * step of batch 2 computes 104 ms (long beside the loop's own work: a step's bookkeeping, under
 * ASan on a busy machine, stays near 1%). */
static void write_lenet_profile(const char *path, int batch)
{
    struct model m;
    struct profile p;
    struct dt_err err;
    assert_int_equal(model_build(&m, "lenet", 1, 28, 28, 10, &err), 0);
    assert_int_equal(profile_for_model(&p, &m, &err), 0);
    for (int l = 0; l < p.layers; l++)
        p.forward[l] = 0.008, p.backward[l] = 0.012;
    p.update = 0.004, p.step = 0.105, p.batch = batch, p.steps = 1;
    snprintf(p.device, sizeof p.device, "by hand");
    snprintf(p.backend, sizeof p.backend, "none");
    assert_int_equal(profile_write(&p, path, &err), 0);
    profile_free(&p);
    model_free(&m);
}

/* Makes the scratch directory (its name a mkdtemp template) and a LeNet profile of batch 2 in it, at path. */
static void lenet_profile_in_scratch(char *scratch, char *path, size_t size)
{
    assert_non_null(mkdtemp(scratch));
    snprintf(path, size, "%s/lenet.json", scratch);
    write_lenet_profile(path, 2);
}

/* --emulate: a step takes its profile's time (104 ms) within 5%; --dilate 3 takes three times as
 * long and reports the same rate; --emulate-rate 50 makes a step of 2 samples 40 ms; a profile of
 * another model is refused. */
static void test_an_emulated_step_takes_its_profile_time(void **state)
{
    (void)state;
    char scratch[] = "/tmp/dtrain-test-emulate-XXXXXX", path[128];
    lenet_profile_in_scratch(scratch, path, sizeof path);
    const struct {
        double rate, dilate, expected;   /* samples/s: 2 samples a step */
        long steps;                      /* about a second each: the start's one-off costs stay small */
    } cases[] = {{0, 1, 2 / 0.104, 8}, {0, 3, 2 / 0.104, 8}, {50, 1, 50, 24}};
    FILE *out = fopen("/dev/null", "w");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* the best of up to 3 tries within 5%: a machine busy for a moment only slows a run down */
        double closest = INFINITY;
        for (int attempt = 0; attempt < 3 && !(closest < 0.05); attempt++) {
            struct train_config cfg = lenet_config(cases[i].steps);
            cfg.emulate = path, cfg.emulate_rate = cases[i].rate, cfg.dilate = cases[i].dilate;
            struct train_result res;
            struct dt_err err;
            double start = timeline_now();
            assert_int_equal(train_run(&cfg, out, &res, &err), 0);
            double wall = timeline_now() - start;
            print_message("emulated at rate %g, dilate %g: %.2f samples/s (expected %.2f), %.3f s of wall time\n",
                          cases[i].rate, cases[i].dilate, res.final_rate, cases[i].expected, wall);
            closest = fmin(closest, fabs(res.final_rate / cases[i].expected - 1));
            assert_true(wall > cases[i].steps * 2 / cases[i].expected * cases[i].dilate * 0.95);   /* it waited, dilated */
            assert_true(res.final_accuracy < 0);   /* nothing computed, nothing evaluated */
            train_result_free(&res);
        }
        assert_true(closest < 0.05);
    }
    struct train_config cfg = lenet_config(2);
    cfg.model = "cnn", cfg.emulate = path;
    struct train_result res;
    struct dt_err err;
    assert_int_equal(train_run(&cfg, out, &res, &err), -1);
    assert_non_null(strstr(err.msg, "--emulate"));
    assert_non_null(strstr(err.msg, "model cnn"));
    train_result_free(&res);
    fclose(out);
    tu_remove_tree(scratch);
}

/* A layer-wise exchange's wait before a layer (ByteScheduler's, which applies the layer's update,
 * emulate_update, when its sums are in) delays the layer by the wait and the update, once: the
 * wait was counted twice until 2026-11-26, which made every emulated ByteScheduler step slower by
 * all of its waits again. */
struct wait_then_update {
    struct emulation *emu;
    double wait;               /* seconds the exchange waits before each layer */
};

static void wait_then_update(void *ctx, size_t first, size_t count)
{
    (void)first;
    struct wait_then_update *w = ctx;
    nanosleep(&(struct timespec){0, (long)(w->wait * 1e9)}, NULL);
    emulate_update(w->emu, count);
}

static void test_a_layer_wait_delays_the_forward_pass_once(void **state)
{
    (void)state;
    char scratch[] = "/tmp/dtrain-test-emulate-XXXXXX", path[128];
    lenet_profile_in_scratch(scratch, path, sizeof path);
    struct model m;
    struct emulation emu;
    struct dt_err err;
    assert_int_equal(model_build(&m, "lenet", 1, 28, 28, 10, &err), 0);
    assert_int_equal(emulation_open(&emu, path, 0, 1, 2, &m, &err), 0);
    struct wait_then_update hook = {.emu = &emu, .wait = 0.03};
    struct params_needed need = {wait_then_update, &hook};
    int layers = emu.profile.layers;
    /* each layer: the wait, the update's share of 4 ms, the forward's 8 ms */
    double expected = layers * (hook.wait + 0.008) + 0.004, fastest = INFINITY;
    for (int attempt = 0; attempt < 3 && !(fastest < expected + layers * hook.wait / 2); attempt++) {
        double start = timeline_now();   /* the best of up to 3: a busy machine only slows a pass */
        emulate_forward(&emu, &need);
        double took = timeline_now() - start;
        print_message("%d layers, each after a wait of %.0f ms: %.1f ms (expected %.1f; counted twice %.1f)\n",
                      layers, hook.wait * 1e3, took * 1e3, expected * 1e3, (expected + layers * hook.wait) * 1e3);
        assert_true(took >= expected * 0.99);
        fastest = fmin(fastest, took);
    }
    assert_true(fastest < expected + layers * hook.wait / 2);   /* half a wait a layer short of twice */
    emulation_close(&emu);
    model_free(&m);
    tu_remove_tree(scratch);
}

/* Rewrites the profile at path with every layer's forward and backward taking `layer` seconds. */
static void set_layer_seconds(const char *path, double layer)
{
    struct profile p;
    struct dt_err err;
    assert_int_equal(profile_read(path, &p, &err), 0);
    for (int l = 0; l < p.layers; l++)
        p.forward[l] = p.backward[l] = layer;
    p.update = 0;
    assert_int_equal(profile_write(&p, path, &err), 0);
    profile_free(&p);
}

/* Emulation bounded to what a device could take: a layer of 1e300 s overflowed the wait (nanosleep
 * EINVAL, not retried), and a denormal profile scaled to --emulate-rate slept not at all; both
 * runs "completed" at once. Now they are refused, naming the profile, as is a rate so low that a
 * step would take hours. */
static void test_absurd_emulation_times_are_refused(void **state)
{
    (void)state;
    char scratch[] = "/tmp/dtrain-test-emubounds-XXXXXX", path[128];
    lenet_profile_in_scratch(scratch, path, sizeof path);
    const struct {
        double layer, rate;
    } cases[] = {{1e300, 0}, {1e-310, 50}, {0.01, 1e-4}};
    FILE *out = fopen("/dev/null", "w");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_layer_seconds(path, cases[i].layer);
        struct train_config cfg = lenet_config(4);
        cfg.emulate = path, cfg.emulate_rate = cases[i].rate;
        struct train_result res;
        struct dt_err err;
        assert_int_equal(train_run(&cfg, out, &res, &err), -1);
        assert_non_null(strstr(err.msg, path));
        assert_non_null(strstr(err.msg, "between 1 us and an hour"));
        train_result_free(&res);
    }
    fclose(out);
    tu_remove_tree(scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_profile_round_trips),
        cmocka_unit_test(test_bad_profiles_are_refused),
        cmocka_unit_test(test_an_emulated_step_takes_its_profile_time),
        cmocka_unit_test(test_a_layer_wait_delays_the_forward_pass_once),
        cmocka_unit_test(test_absurd_emulation_times_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
