/* test_train.c - datasets (IDX errors, bigMNIST), optimizers, the loader's shards, a short real
 * training run on Fashion-MNIST, refused options, deterministic runs, the watchdog. The exchange
 * methods in the loop: test_train_exchange.c; profiles and emulation: test_profile.c. */
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

static char dir[] = "/tmp/dtrain-test-idx-XXXXXX";

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* Writes an IDX file (gzipped when the name ends in .gz) with `bytes` payload bytes after the header. */
static void write_idx(const char *name, uint32_t magic, const uint32_t *dims, int ndims, size_t bytes, uint8_t fill)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    uint8_t header[16];
    put_be32(header, magic);
    for (int d = 0; d < ndims; d++)
        put_be32(header + 4 + 4 * d, dims[d]);
    uint8_t *payload = malloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++)
        payload[i] = (uint8_t)(fill ? fill : i % 10);
    gzFile f = gzopen(path, strstr(name, ".gz") ? "wb" : "wbT");
    gzwrite(f, header, 4 + 4 * (unsigned)ndims);
    gzwrite(f, payload, (unsigned)bytes);
    gzclose(f);
    free(payload);
}

static void clear_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -f %s/*", dir);
    assert_int_equal(system(cmd), 0);
}

/* A valid tiny dataset: 20 training and 10 test images of 4x4, gzipped or plain. */
static void write_valid(bool gz)
{
    uint32_t tr[3] = {20, 4, 4}, te[3] = {10, 4, 4}, trl[1] = {20}, tel[1] = {10};
    const char *ext = gz ? ".gz" : "";
    char name[64];
    snprintf(name, sizeof name, "train-images-idx3-ubyte%s", ext);
    write_idx(name, 0x803, tr, 3, 20 * 16, 0);
    snprintf(name, sizeof name, "train-labels-idx1-ubyte%s", ext);
    write_idx(name, 0x801, trl, 1, 20, 0);
    snprintf(name, sizeof name, "t10k-images-idx3-ubyte%s", ext);
    write_idx(name, 0x803, te, 3, 10 * 16, 0);
    snprintf(name, sizeof name, "t10k-labels-idx1-ubyte%s", ext);
    write_idx(name, 0x801, tel, 1, 10, 0);
}

static void expect_open_error(const char *says)
{
    struct dataset train, test;
    struct dt_err err;
    assert_int_equal(dataset_open("mnist", dir, &train, &test, &err), -1);
    assert_true(tu_contains(err.msg, says));
}

static void test_idx_files_and_their_errors(void **state)
{
    (void)state;
    assert_non_null(mkdtemp(dir));
    for (int gz = 0; gz < 2; gz++) {
        clear_dir();
        write_valid(gz);
        struct dataset train, test;
        struct dt_err err;
        assert_int_equal(dataset_open("mnist", dir, &train, &test, &err), 0);
        assert_int_equal(train.count, 20);
        assert_int_equal(test.count, 10);
        assert_int_equal(train.h, 4);
        float x[16];
        int label;
        dataset_sample(&train, 3, x, &label);
        assert_int_equal(label, 3);
        dataset_free(&train);
        dataset_free(&test);
    }
    uint32_t tr[3] = {20, 4, 4}, trl[1] = {20}, short_labels[1] = {19};
    clear_dir();
    write_valid(true);
    write_idx("train-images-idx3-ubyte.gz", 0x803, tr, 3, 20 * 16 - 5, 0);   /* truncated */
    expect_open_error("train-images-idx3-ubyte.gz: truncated at offset 331: expected 320 bytes of pixels (20 images of 4x4)");
    write_idx("train-images-idx3-ubyte.gz", 0x803, tr, 3, 20 * 16 + 3, 0);   /* 3 bytes too many */
    expect_open_error("train-images-idx3-ubyte.gz: offset 336: bytes after the 20 images the header announces");
    write_idx("train-images-idx3-ubyte.gz", 0x801, tr, 1, 20, 0);            /* a labels file in its place */
    expect_open_error("offset 0: expected the IDX magic 0x00000803 (unsigned bytes, 3 dimensions), found 0x00000801");
    write_idx("train-images-idx3-ubyte.gz", 0x803, tr, 3, 20 * 16, 0);
    write_idx("train-labels-idx1-ubyte.gz", 0x801, short_labels, 1, 19, 0);  /* one label short */
    expect_open_error("has 20 images but");
    write_idx("train-labels-idx1-ubyte.gz", 0x801, trl, 1, 20, 12);           /* class 12 */
    expect_open_error("train-labels-idx1-ubyte.gz: offset 8: label 12 is not a class from 0 to 9");
    clear_dir();
    expect_open_error("train-images-idx3-ubyte.gz: No such file or directory");
    rmdir(dir);

    struct dataset train, test;
    struct dt_err err;
    assert_int_equal(dataset_open("imagenet", DATA_DEFAULT_DIR, &train, &test, &err), -1);
    assert_true(tu_contains(err.msg, "unknown dataset \"imagenet\""));
    assert_int_equal(dataset_open("synthetic:224x224", DATA_DEFAULT_DIR, &train, &test, &err), -1);
    assert_true(tu_contains(err.msg, "synthetic:HxWxC"));
    assert_int_equal(dataset_open("synthetic:224x224x3", DATA_DEFAULT_DIR, &train, &test, &err), 0);
    assert_int_equal(train.c * train.h * train.w, 224 * 224 * 3);
    dataset_free(&train);
    dataset_free(&test);
}

static void test_bigmnist_is_deterministic_and_deformed(void **state)
{
    (void)state;
    struct dataset train, test;
    struct dt_err err;
    if (dataset_open("bigmnist", DATA_DEFAULT_DIR, &train, &test, &err) < 0) {
        tu_skip("%s", err.msg);
    }
    assert_int_equal(train.count, 60000L * 120);   /* 7.2 M: the reference bigMNIST */
    float a[784], b[784], base[784];
    int la, lb, lbase;
    dataset_sample(&train, 5 + 60000L * 7, a, &la);
    dataset_sample(&train, 5 + 60000L * 7, b, &lb);
    dataset_sample(&train, 5, base, &lbase);
    assert_memory_equal(a, b, sizeof a);   /* the same sample every time */
    assert_int_equal(la, lbase);           /* a deformed image keeps its class */
    double diff = 0;
    for (int i = 0; i < 784; i++)
        diff += fabs(a[i] - base[i]);
    assert_true(diff > 10);                /* and is not the image itself */
    dataset_free(&train);
    dataset_free(&test);
}

static void test_optimizers_follow_pytorch(void **state)
{
    (void)state;
    /* One parameter p=1, gradient g=0.5 every step; values computed by hand from torch.optim's
     * update rules. SGD(lr=0.1, momentum=0.9, weight_decay=0.01): g' = g + 0.01 p;
     * buf1 = g'; buf2 = 0.9 buf1 + g'. */
    struct optimizer opt;
    assert_int_equal(optim_create(&opt, "sgd", 1, NULL), 0);
    opt.lr = 0.1f, opt.momentum = 0.9f, opt.weight_decay = 0.01f;
    float p = 1.0f, g = 0.5f;
    optim_step(&opt, &p, &g);
    assert_float_equal(p, 1.0f - 0.1f * 0.51f, 1e-6);
    float p1 = p, buf = 0.9f * 0.51f + (0.5f + 0.01f * p1);
    optim_step(&opt, &p, &g);
    assert_float_equal(p, p1 - 0.1f * buf, 1e-6);
    optim_free(&opt);
    /* Adam(lr=0.01): after step 1, p -= lr * g / (|g| + eps') = lr exactly (bias-corrected). */
    assert_int_equal(optim_create(&opt, "adam", 1, NULL), 0);
    opt.lr = 0.01f;
    p = 1.0f;
    optim_step(&opt, &p, &g);
    assert_float_equal(p, 0.99f, 1e-6);
    optim_step(&opt, &p, &g);
    assert_float_equal(p, 0.98f, 1e-6);   /* a constant gradient: m/sqrt(v) stays 1 */
    optim_free(&opt);
    struct dt_err err;
    assert_int_equal(optim_create(&opt, "lamb", 1, &err), -1);
    assert_true(tu_contains(err.msg, "unknown optimizer \"lamb\""));
}

/* A step updated range by range (layer-wise methods: ByteScheduler), in any order, ends where
 * the whole-buffer step ends, bitwise, for both optimizers over three steps. */
static void test_optimizer_ranges_make_the_whole_step(void **state)
{
    (void)state;
    enum { N = 1000 };
    const char *names[] = {"sgd", "adam"};
    for (int k = 0; k < 2; k++) {
        struct optimizer whole, parts;
        assert_int_equal(optim_create(&whole, names[k], N, NULL), 0);
        assert_int_equal(optim_create(&parts, names[k], N, NULL), 0);
        whole.weight_decay = parts.weight_decay = 0.01f;
        float p1[N], p2[N], g[N];
        for (int i = 0; i < N; i++)
            p1[i] = p2[i] = (float)sin(i), g[i] = (float)cos(3.0 * i);
        for (int step = 0; step < 3; step++) {
            optim_step(&whole, p1, g);
            optim_begin_step(&parts);
            optim_update_range(&parts, p2, g, 600, 400);   /* the last layers first, as backward finishes them */
            optim_update_range(&parts, p2, g, 100, 500);
            optim_update_range(&parts, p2, g, 0, 100);
        }
        assert_memory_equal(p1, p2, sizeof p1);
        assert_memory_equal(whole.m, parts.m, N * sizeof(float));
        optim_free(&whole);
        optim_free(&parts);
    }
}

/* The synthetic set's labels identify samples well enough to check who read what. */
static void test_loader_shards_cover_each_epoch(void **state)
{
    (void)state;
    struct dataset train, test;
    struct dt_err err;
    assert_int_equal(dataset_open("synthetic:2x2x1", DATA_DEFAULT_DIR, &train, &test, &err), 0);
    train.count = 1000;   /* a small epoch */
    struct loader solo, ranks[2];
    assert_int_equal(loader_init(&solo, &train, 64, 0, 1, 9, &err), 0);
    assert_int_equal(loader_init(&ranks[0], &train, 32, 0, 2, 9, &err), 0);
    assert_int_equal(loader_init(&ranks[1], &train, 32, 1, 2, 9, &err), 0);
    assert_int_equal(solo.steps_per_epoch, 16);   /* ceil(1000 / 64) */
    assert_int_equal(ranks[0].steps_per_epoch, 16);
    float xs[64 * 4], xr[2][32 * 4];
    int ys[64], yr[2][32];
    for (long step = 0; step < 20; step++) {   /* into the second epoch */
        loader_fill(&solo, step, xs, ys);
        loader_fill(&ranks[0], step, xr[0], yr[0]);
        loader_fill(&ranks[1], step, xr[1], yr[1]);
        /* 2 ranks x 32 = the same 64 samples as 1 rank x 64, rank 0 the first half */
        assert_memory_equal(xs, xr[0], sizeof xr[0]);
        assert_memory_equal(xs + 32 * 4, xr[1], sizeof xr[1]);
    }
    /* the background thread hands out exactly what loader_fill computes, step after step */
    assert_int_equal(loader_start(&solo, 0, &err), 0);
    for (long step = 0; step < 20; step++) {
        const float *x;
        const int *y;
        loader_next(&solo, &x, &y);
        loader_fill(&ranks[0], step, xr[0], yr[0]);
        assert_memory_equal(x, xr[0], sizeof xr[0]);
    }
    loader_stop(&solo);
    loader_stop(&ranks[0]);
    loader_stop(&ranks[1]);
    dataset_free(&train);
    dataset_free(&test);
}

static void test_short_training_run_learns_fashion_mnist(void **state)
{
    (void)state;
    if (access(DATA_DEFAULT_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        tu_skip("Fashion-MNIST is not installed (make deps installs dataset-fashion-mnist)");
    }
    struct train_config cfg = {.model = "lenet", .dataset = "fashion-mnist", .data_dir = DATA_DEFAULT_DIR,
                               .optimizer = "adam", .backend = "cpu", .batch = 64, .epochs = 1, .threads = 1,
                               .log_every = 200, .eval_every = 1, .max_steps = 650, .lr = 0.002, .seed = 1};
    struct train_result res;
    struct dt_err err;
    char *log = NULL;
    size_t log_size = 0;
    FILE *out = open_memstream(&log, &log_size);
    int rc = train_run(&cfg, out, &res, &err);
    fclose(out);
    if (rc < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    print_message("lenet, 650 steps of 64: test accuracy %.4f, %.0f samples/s (peak %.0f)\n", res.final_accuracy,
                  res.final_rate, res.peak_rate);
    /* 50 steps after the last Step line, the rate still rising from its start: the summary's peak is
     * never below the rate it ends at ("27319.52 samples/s (peak 27067.93)" was printed) */
    assert_true(res.peak_rate >= res.final_rate);
    assert_true(tu_contains(log, "Step200: "));
    assert_true(tu_contains(log, "Step600: "));
    assert_true(tu_contains(log, "Epoch 0 in "));
    assert_true(res.final_accuracy >= 0.80);
    train_result_free(&res);
    free(log);
}

/* Runs cfg, which must fail; err gets why. */
static void expect_refused(const struct train_config *cfg, struct dt_err *err)
{
    struct train_result res;
    FILE *out = fopen("/dev/null", "w");
    assert_int_equal(train_run(cfg, out, &res, err), -1);
    train_result_free(&res);
    fclose(out);
}

static void test_diverging_loss_stops_the_run(void **state)
{
    (void)state;
    struct train_config cfg = {.model = "mlp", .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                               .optimizer = "sgd", .backend = "cpu", .batch = 16, .epochs = 1, .threads = 1,
                               .log_every = 1000, .eval_every = 1, .max_steps = 200, .lr = 900, .momentum = 0.9,
                               .seed = 1};
    struct dt_err err;
    expect_refused(&cfg, &err);
    assert_true(tu_contains(err.msg, "the loss is"));
    assert_true(tu_contains(err.msg, "smaller --lr"));
}

/* The GPU-only options on a CPU backend: refused, naming the option, before any step. */
static void test_gpu_options_need_the_gpu(void **state)
{
    (void)state;
    struct train_config cfg = {.model = "mlp", .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                               .optimizer = "adam", .backend = "cpu", .batch = 16, .epochs = 1, .threads = 1,
                               .log_every = 1000, .eval_every = 0, .max_steps = 2, .lr = 0.01, .seed = 1, .bf16 = true};
    const char *want[] = {"--precision bf16 needs --device cuda", "--conv-algo find needs --device cuda",
                          "--conv-algo deterministic needs --device cuda", "--cuda-graphs needs --device cuda"};
    for (int i = 0; i < 4; i++) {
        struct train_result res;
        struct dt_err err;
        FILE *out = fopen("/dev/null", "w");
        assert_int_equal(train_run(&cfg, out, &res, &err), -1);
        assert_int_equal(res.steps, 0);
        train_result_free(&res);
        fclose(out);
        assert_true(tu_contains(err.msg, want[i]));
        cfg.bf16 = false, cfg.conv_algo = i == 0 ? CONV_ALGO_FIND : i == 1 ? CONV_ALGO_DETERMINISTIC : CONV_ALGO_HEURISTIC, cfg.cuda_graphs = i == 2;
    }
    /* --device cuda where CUDA finds no GPU says so, and the fix (not the driver's own words) */
    char why[256];
    if (backend_cuda_probe(why, sizeof why) != 0) {
        tu_skip("--device cuda without a GPU: this machine has one, or a driver that fails (%s)", why);
    }
    cfg.cuda_graphs = false, cfg.backend = "cuda";
    struct dt_err err;
    expect_refused(&cfg, &err);
    assert_true(tu_contains(err.msg, "--device cuda, but this node has no GPU CUDA can use"));
    assert_true(tu_contains(err.msg, "--device cpu"));
}

static void test_a_rank_finds_its_gpu(void **state)
{
    (void)state;
    assert_int_equal(cuda_device_for_rank("2", "3", 4), 2);
    assert_int_equal(cuda_device_for_rank(NULL, "3", 4), 3);
    assert_int_equal(cuda_device_for_rank(NULL, "3", 1), 0);
    assert_int_equal(cuda_device_for_rank(NULL, "5", 2), 1);
    assert_int_equal(cuda_device_for_rank(NULL, "3", 0), 3);   /* no GPU seen: backend_cuda_create says so */
    assert_int_equal(cuda_device_for_rank("x", NULL, 4), 0);
    assert_int_equal(cuda_device_for_rank(NULL, NULL, 4), 0);
}

/* --comm's names: each method's own and its aliases, in any case; nothing else. */
static void test_runs_are_deterministic(void **state)
{
    (void)state;
    const char *models[] = {"lenet", "cnn"};
    for (int m = 0; m < 2; m++) {
        double loss[2], curve[2][15];
        for (int run = 0; run < 2; run++) {
            struct train_config cfg = {.model = models[m], .dataset = "synthetic", .data_dir = DATA_DEFAULT_DIR,
                                       .optimizer = "adam", .backend = "cpu", .batch = 32, .epochs = 1, .threads = 2,
                                       .log_every = 1000, .eval_every = 0, .max_steps = 15, .lr = 0.01, .seed = 7,
                                       .loss_curve = curve[run]};
            struct train_result res;
            struct dt_err err;
            FILE *out = fopen("/dev/null", "w");
            assert_int_equal(train_run(&cfg, out, &res, &err), 0);
            fclose(out);
            loss[run] = res.final_loss;
            train_result_free(&res);
        }
        print_message("%s: final loss %.17g and %.17g\n", models[m], loss[0], loss[1]);
        assert_memory_equal(&loss[0], &loss[1], sizeof(double));
        assert_memory_equal(curve[0], curve[1], sizeof curve[0]);   /* every step, not only the last */
        assert_true(curve[0][14] == loss[0] && curve[0][0] != curve[0][14]);
    }
}

/* The ResNets train end to end on small synthetic images (their speed is measured in bench/). */
static void test_resnets_train(void **state)
{
    (void)state;
    const char *models[] = {"resnet18", "resnet50"};
    for (int m = 0; m < 2; m++) {
        struct train_config cfg = {.model = models[m], .dataset = "synthetic:16x16x3", .data_dir = DATA_DEFAULT_DIR,
                                   .optimizer = "sgd", .backend = "cpu", .batch = 4, .epochs = 1, .threads = 1,
                                   .log_every = 1, .eval_every = 0, .max_steps = 2, .lr = 0.01, .momentum = 0.9,
                                   .seed = 1};
        struct train_result res;
        struct dt_err err;
        char *log = NULL;
        size_t size = 0;
        FILE *out = open_memstream(&log, &size);
        int rc = train_run(&cfg, out, &res, &err);
        fclose(out);
        if (rc < 0)
            print_error("%s: %s\n", models[m], err.msg);
        assert_int_equal(rc, 0);
        assert_true(tu_contains(log, "Step2: "));
        assert_true(isfinite(res.final_loss));
        train_result_free(&res);
        free(log);
    }
}

/* A transport whose health op reports what NCCL's ncclCommGetAsyncError would after a peer died. */
static int failed_health(struct comm *c, struct dt_err *err)
{
    (void)c;
    return dt_fail(err, "NCCL failed in a collective under way: remote process exited or there was a network error");
}

static int good_health(struct comm *c, struct dt_err *err)
{
    (void)c, (void)err;
    return 0;
}

static void abort_returns(struct comm *c, int status)
{
    (void)c, (void)status;   /* the watchdog then ends the process itself, with status 3 */
}

/* Runs a watchdog over a transport with the given health op in a child for `seconds` (no stall
 * timeout): its exit status, and what it wrote to stderr in out. */
static int watch_transport(int (*health)(struct comm *, struct dt_err *), unsigned seconds, char *out, size_t size)
{
    char path[] = "/tmp/dtrain-test-watchdog-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    fflush(stderr);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        dup2(fd, 2);
        struct comm host = {.rank = 2, .world = 4, .abort = abort_returns}, transport = {.rank = 2, .health = health};
        snprintf(host.hostname, sizeof host.hostname, "gn07");
        struct watchdog wd = {0};
        watchdog_start(&wd, &host, &transport, 0, 12, (struct stall_hook){0});
        sleep(seconds);
        watchdog_stop(&wd);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    ssize_t n = pread(fd, out, size - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The watchdog ends the job when the gradient transport reports a failure of its own (NCCL's
 * asynchronous error: the GPU would otherwise wait for a dead peer forever), naming the rank, its
 * host, the step and NCCL's words, within its 200 ms poll, with no --timeout needed; a healthy
 * transport is left alone. */
static void test_watchdog_ends_the_job_on_a_transport_failure(void **state)
{
    (void)state;
    char out[2048];
    assert_int_equal(watch_transport(failed_health, 5, out, sizeof out), 3);
    assert_true(tu_contains(out, "rank 2 on gn07: NCCL failed in a collective under way: remote process exited"));
    assert_true(tu_contains(out, "(after step 12): a peer died or the network failed; ending the job"));
    assert_int_equal(watch_transport(good_health, 1, out, sizeof out), 0);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_idx_files_and_their_errors),
        cmocka_unit_test(test_bigmnist_is_deterministic_and_deformed),
        cmocka_unit_test(test_optimizers_follow_pytorch),
        cmocka_unit_test(test_optimizer_ranges_make_the_whole_step),
        cmocka_unit_test(test_loader_shards_cover_each_epoch),
        cmocka_unit_test(test_short_training_run_learns_fashion_mnist),
        cmocka_unit_test(test_diverging_loss_stops_the_run),
        cmocka_unit_test(test_gpu_options_need_the_gpu),
        cmocka_unit_test(test_watchdog_ends_the_job_on_a_transport_failure),
        cmocka_unit_test(test_a_rank_finds_its_gpu),
        cmocka_unit_test(test_runs_are_deterministic),
        cmocka_unit_test(test_resnets_train),
    };
    return cmocka_run_group_tests_name("train", tests, NULL, NULL);
}
