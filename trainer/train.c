/* train.c - the training loop (see train.h). */
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend.h"
#include "data.h"
#include "loader.h"
#include "nn.h"
#include "optim.h"
#include "seedlog.h"

static double now_sec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Everything one run holds, so that cleanup is one function. */
struct run {
    struct dataset train, test;
    struct model model;
    struct backend *fast;
    const struct backend *be;
    struct workspace ws;
    struct optimizer opt;
    struct loader loader;
    float *params, *grads, *buffers, *eval_x;
    int *eval_y;
};

static void run_free(struct run *r)
{
    loader_stop(&r->loader);
    optim_free(&r->opt);
    if (r->ws.act)
        workspace_free(&r->ws, &r->model);
    backend_cpu_destroy(r->fast);
    model_free(&r->model);
    dataset_free(&r->train);
    dataset_free(&r->test);
    free(r->params);
    free(r->grads);
    free(r->buffers);
    free(r->eval_x);
    free(r->eval_y);
}

static int setup(struct run *r, const struct train_config *cfg, struct dt_err *err)
{
    memset(r, 0, sizeof *r);
    if (dataset_open(cfg->dataset, cfg->data_dir, &r->train, &r->test, err) < 0 ||
        model_build(&r->model, cfg->model, r->train.c, r->train.h, r->train.w, r->train.classes, err) < 0)
        return -1;
    if (strcmp(cfg->backend, "reference") == 0) {
        r->be = backend_reference();
    } else if (strcmp(cfg->backend, "cpu") == 0) {
        if (!(r->fast = backend_cpu_create(cfg->threads)))
            return dt_fail(err, "out of memory for the cpu backend");
        r->be = r->fast;
    } else {
        return dt_fail(err, "unknown backend \"%s\" (cpu or reference)", cfg->backend);
    }
    size_t n = r->model.num_params, sample = (size_t)r->train.c * r->train.h * r->train.w;
    r->params = malloc(n * sizeof(float));
    r->grads = malloc(n * sizeof(float));
    r->buffers = malloc((r->model.num_buffers + 1) * sizeof(float));
    r->eval_x = malloc(sample * cfg->batch * sizeof(float));
    r->eval_y = malloc((size_t)cfg->batch * sizeof(int));
    if (!r->params || !r->grads || !r->buffers || !r->eval_x || !r->eval_y)
        return dt_fail(err, "out of memory for %zu parameters", n);
    model_init_params(&r->model, r->params, r->buffers, cfg->seed);
    if (workspace_create(&r->ws, &r->model, cfg->batch, err) < 0 || optim_create(&r->opt, cfg->optimizer, n, err) < 0)
        return -1;
    r->opt.lr = (float)(cfg->lr * (cfg->lr_scale_linear ? cfg->world : 1));
    r->opt.momentum = (float)cfg->momentum;
    r->opt.weight_decay = (float)cfg->weight_decay;
    if (loader_init(&r->loader, &r->train, cfg->batch, cfg->rank, cfg->world, cfg->seed, err) < 0)
        return -1;
    return loader_start(&r->loader, 0, err);
}

/* Accuracy over the whole test set, in eval mode (running BN statistics). */
static double evaluate(struct run *r, int batch)
{
    size_t sample = (size_t)r->test.c * r->test.h * r->test.w;
    long correct = 0;
    for (long first = 0; first < r->test.count; first += batch) {
        int n = r->test.count - first < batch ? (int)(r->test.count - first) : batch;
        for (int i = 0; i < n; i++)
            dataset_sample(&r->test, first + i, r->eval_x + i * sample, &r->eval_y[i]);
        int right = 0;
        model_forward(&r->model, r->be, &r->ws, r->params, r->buffers, r->eval_x, r->eval_y, n, false, &right);
        correct += right;
    }
    return (double)correct / r->test.count;
}

static void print_eta(long step, long total, double elapsed, double loss)
{
    double left = elapsed / step * (total - step);
    fprintf(stderr, "dtrain-train: step %ld/%ld, loss %.4f, %.0f s elapsed, ETA %dm%02ds\n", step, total, loss, elapsed,
            (int)(left / 60), (int)left % 60);
}

int train_run(const struct train_config *cfg, FILE *out, struct train_result *res, struct dt_err *err)
{
    memset(res, 0, sizeof *res);
    res->final_accuracy = -1;
    struct run r;
    if (setup(&r, cfg, err) < 0) {
        run_free(&r);
        return -1;
    }
    res->params = r.model.num_params;
    res->flops_per_sample = model_train_flops(&r.model);
    long per_epoch = r.loader.steps_per_epoch, total = per_epoch * cfg->epochs;
    if (cfg->max_steps > 0 && cfg->max_steps < total)
        total = cfg->max_steps;
    fprintf(stderr, "dtrain-train: model %s (%zu parameters), dataset %s (%ld train, %ld test), backend %s, %d thread%s, "
            "batch %d x %d rank%s, %s lr %g, %ld steps (%ld per epoch)\n", cfg->model, r.model.num_params, cfg->dataset,
            r.train.count, r.test.count, r.be->name, cfg->threads, cfg->threads > 1 ? "s" : "", cfg->batch, cfg->world,
            cfg->world > 1 ? "s" : "", cfg->optimizer, r.opt.lr, total, per_epoch);
    /* Rates count wall time since training started, evaluations left out, data waits included. */
    double samples_per_step = (double)cfg->batch * cfg->world, start = now_sec(), eval_time = 0, trained = 0;
    double epoch_start = start;
    int rc = 0;
    for (long step = 1; step <= total; step++) {
        const float *x;
        const int *y;
        loader_next(&r.loader, &x, &y);
        double loss = model_forward(&r.model, r.be, &r.ws, r.params, r.buffers, x, y, cfg->batch, true, NULL);
        if (!isfinite(loss)) {
            rc = dt_fail(err, "step %ld: the loss is %f (diverged: try a smaller --lr)", step, loss);
            break;
        }
        memset(r.grads, 0, r.model.num_params * sizeof(float));
        model_backward(&r.model, r.be, &r.ws, r.params, r.grads, cfg->batch);
        optim_step(&r.opt, r.params, r.grads);
        trained = now_sec() - start - eval_time;
        res->steps = step;
        res->final_loss = loss;
        res->final_rate = step * samples_per_step / trained;
        if (step % cfg->log_every == 0) {
            seedlog_step(out, step, res->final_rate);
            if (res->final_rate > res->peak_rate)
                res->peak_rate = res->final_rate;
            if (cfg->progress)
                print_eta(step, total, trained, loss);
        }
        bool epoch_end = step % per_epoch == 0 || step == total;
        if (!epoch_end)
            continue;
        int epoch = (int)((step - 1) / per_epoch);
        double train_sec = now_sec() - epoch_start;
        if (cfg->eval_every > 0 && ((epoch + 1) % cfg->eval_every == 0 || step == total)) {
            double e0 = now_sec();
            res->final_accuracy = evaluate(&r, cfg->batch);
            double test_sec = now_sec() - e0;
            eval_time += test_sec;
            seedlog_epoch(out, epoch, train_sec, test_sec, res->final_accuracy);
        }
        res->epochs_done = epoch + 1;
        epoch_start = now_sec();
    }
    if (r.fast && backend_cpu_failed(r.fast))
        rc = dt_fail(err, "the cpu backend ran out of memory for its im2col buffers");
    res->seconds = trained;
    if (res->peak_rate < res->final_rate && res->steps < cfg->log_every)
        res->peak_rate = res->final_rate;   /* no Step line was printed: the only rate there is */
    run_free(&r);
    return rc;
}
