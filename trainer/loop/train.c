/* train.c - the training loop (see train.h): one step is forward, backward with the gradient
 * exchange fed as layers finish, the exchange's mean, the update; around it the reference trainer logs' lines,
 * evaluations, checkpoints and the watchdog. What a run holds is run.c's, the GPU's copies
 * device.c's, checkpoints restart.c's. */
#include "trainer/loop/train.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/loop/checkpoint.h"
#include "trainer/loop/export.h"
#include "trainer/base/fault.h"
#include "trainer/loop/restart.h"
#include "trainer/base/timeline.h"
#include "trainer/loop/run.h"
#include "formats/log_lines.h"
#include "trainer/loop/watchdog.h"

/* Set by SIGTERM or SIGUSR1 (Slurm's time-limit and preemption warnings): checkpoint and stop. */
static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int sig)
{
    stop_signal = sig;
}

/* One batch, where the backend reads it: forward, backward (the exchange takes each layer's
 * gradients as they are final), the workers' mean, the update. Eager: *loss is the step's, and a
 * loss that is not finite stops before the update (returns 1). Captured (a CUDA graph being
 * recorded): nothing runs, *loss is 0. 0, or -1 with err (the job must then be aborted). */
static int train_step(struct run *r, const float *x, const int *y, int batch, bool captured, double *loss,
                      struct dt_err *err)
{
    struct batch b = {.n = batch, .x = x, .labels = y, .noise = r->step_noise,
                      .position = (long)r->workers.rank * batch};
    phase_begin(r, PHASE_FORWARD, captured);
    *loss = compute_forward(r, &b);
    phase_end(r);
    if (compute_check(r, err) < 0)
        return -1;
    if (!captured && !isfinite(*loss))
        return 1;
    phase_begin(r, PHASE_BACKWARD, captured);
    compute_backward(r, batch);
    phase_end(r);
    phase_begin(r, PHASE_EXCHANGE, captured);
    if (exchange_finish(&r->exchange, err) < 0)
        return -1;
    phase_end(r);
    phase_begin(r, PHASE_UPDATE, captured);
    /* the optimizer's step, where the state lives: begun once, then applied to every parameter
     * (or, where the exchange updates each layer itself, to each before its next forward) */
    compute_begin_update(r, captured);
    if (!exchange_updates_itself(&r->exchange))
        compute_update(r, 0, r->model.num_params);
    phase_end(r);
    return 0;
}

/* The state of the loop between steps. */
struct loop {
    const struct train_config *cfg;
    struct run r;
    struct comm *comm;         /* the workers' */
    struct train_result *res;
    FILE *out;
    bool leader;               /* only rank 0 prints the log lines */
    long first, total, per_epoch;
    double samples_per_step, start, epoch_start, eval_time;
    double dilate;             /* --dilate: wall seconds per reported second */
    struct watchdog wd;
    struct rank_status status; /* where this rank is, for the watchdog's report of a stall */
    int checkpoint_lock;       /* rank 0: the fd holding --checkpoint's directory lock, or -1 */
};

/* Accuracy over the whole test set in eval mode (running BN statistics, rank 0's: each rank
 * gathered its own), each rank evaluating its share. Returns -1 with err if a collective fails. */
static double evaluate_test_set(struct run *r, int batch, struct dt_err *err)
{
    struct comm *comm = r->workers.comm;
    if (device_download(r, r->buffers, r->dev.buffers, r->model.num_buffers, err) < 0 ||
        comm->broadcast(comm, r->buffers, r->model.num_buffers * sizeof(float), 0, err) < 0 ||
        device_upload_buffers(r, err) < 0)
        return -1;
    size_t sample = (size_t)r->test.c * r->test.h * r->test.w;
    long count = r->test.count, begin = count * r->workers.rank / r->workers.count,
         end = count * (r->workers.rank + 1) / r->workers.count, correct = 0;
    for (long first = begin; first < end; first += batch) {
        int n = end - first < batch ? (int)(end - first) : batch, right = 0;
        if (device_staged(r, err) < 0)   /* the last batch's upload has read eval_x */
            return -1;
        for (int i = 0; i < n; i++)
            dataset_sample(&r->test, first + i, r->eval_x + i * sample, &r->eval_y[i]);
        const float *x;
        const int *y;
        if (device_batch_in(r, r->eval_x, r->eval_y, n, &x, &y, err) < 0)
            return -1;
        struct batch b = {.n = n, .x = x, .labels = y};
        model_forward(&r->model, r->be, &r->ws, run_params(r), run_buffers(r), &b, false, NULL, &right);
        if (compute_check(r, err) < 0)
            return -1;
        correct += right;
    }
    if (comm->sum_long(comm, &correct, err) < 0)
        return -1;
    return (double)correct / count;
}

/* A fingerprint of the parameters' exact bits (FNV-1a over the buffer). */
static unsigned long long params_fingerprint(const float *params, size_t count)
{
    const unsigned char *p = (const unsigned char *)params;
    unsigned long long h = 1469598103934665603ULL;
    for (size_t i = 0; i < count * sizeof(float); i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* --check-replicas: every worker holds the same parameters, bit for bit. */
static int check_replicas(struct loop *l, long step, struct dt_err *err)
{
    struct run *r = &l->r;
    if (exchange_settle(&r->exchange, err) < 0 || device_download(r, r->params, r->dev.params, r->model.num_params, err) < 0)
        return -1;
    unsigned long long lo, hi, mine = params_fingerprint(r->params, r->model.num_params);
    if (l->comm->min_max_u64(l->comm, mine, &lo, &hi, err) < 0)
        return -1;
    return lo != hi ? dt_fail(err, "step %ld: the ranks' parameters differ (replicas diverged)", step) : 0;
}

/* Where steps are recorded from now on (NULL: nowhere). */
static void record_into(struct run *r, struct timeline *t)
{
    r->timeline = t;
    r->trace.timeline = t;
    r->exchange.timeline = t;
}

/* --timeline: this worker's trace file, PREFIX.rankR.json. 0 or -1 with err. */
static int open_timeline(struct loop *l, struct dt_err *err)
{
    struct run *r = &l->r;
    char path[4096], process[320];
    snprintf(path, sizeof path, "%s.rank%d.json", l->cfg->timeline, l->comm->rank);
    snprintf(process, sizeof process, "rank %d on %s", l->comm->rank, l->comm->hostname);
    if (!(r->timeline_file = timeline_open(path, l->comm->rank, process, err)))
        return -1;
    record_into(r, r->timeline_file);
    return 0;
}

static void settle_gpu(void *gpu)
{
    backend_cuda_sync(gpu);   /* a failure shows at the step's device_check */
}

/* What the layer hooks record: --timeline's spans, --profile-out's sums (on a GPU, each mark
 * waits for the work queued before it, so the times are the device's). 0 or -1 with err. */
static int start_tracing(struct loop *l, struct dt_err *err)
{
    struct run *r = &l->r;
    if (l->cfg->timeline && open_timeline(l, err) < 0)
        return -1;
    if (l->cfg->profile_out && profile_for_model(&r->measured, &r->model, err) < 0)
        return -1;
    if (trace_init(&r->trace, &r->model, r->timeline_file, l->cfg->profile_out ? &r->measured : NULL) < 0)
        return dt_fail(err, "out of memory");
    if (r->gpu)
        r->trace.settle = settle_gpu, r->trace.settle_ctx = r->gpu;
    record_into(r, r->timeline_file);
    return 0;
}

/* --profile-out: rank 0 writes the mean of the counted steps. 0 or -1 with err. */
static int write_profile(struct loop *l, struct dt_err *err)
{
    struct profile *p = &l->r.measured;
    if (p->steps < 1)
        return dt_fail(err, "--profile-out: no step was measured (the first %d are warm-up: run more steps)",
                       PROFILE_WARMUP_STEPS);
    if (!l->leader)
        return 0;
    double n = (double)p->steps;
    for (int k = 0; k < p->layers; k++)
        p->forward[k] /= n, p->backward[k] /= n;
    p->update /= n, p->step /= n;
    p->batch = l->cfg->batch;
    snprintf(p->backend, sizeof p->backend, "%s", l->r.be->name);
    device_describe(&l->r, l->cfg->threads, p->device, sizeof p->device);
    return profile_write(p, l->cfg->profile_out, err);
}

/* Fetches step's batch and trains on it: eagerly, or as a replayed CUDA graph (the first step of
 * a process runs eagerly: it makes the plans and buffers a graph points to). */
static int step_once(struct loop *l, long step, double *loss, struct dt_err *err)
{
    struct run *r = &l->r;
    const float *x;
    const int *y;
    if (r->status)
        rank_status_set(r->status, PHASE_DATA, step);
    phase_step_begin(r);
    fault_injection_point(l->comm->rank, step);
    if (l->cfg->timeline_steps > 0 && step - l->first > l->cfg->timeline_steps)
        record_into(r, NULL);   /* enough steps recorded */
    r->trace.counting = l->cfg->profile_out && step > l->first + PROFILE_WARMUP_STEPS;
    r->step_noise = (l->cfg->seed + 1) * 0x9e3779b97f4a7c15ULL ^ (uint64_t)step * 0xc2b2ae3d27d4eb4fULL;
    double start = timeline_now();
    if (device_next_batch(r, &x, &y, err) < 0 || device_batch_in(r, x, y, l->cfg->batch, &x, &y, err) < 0)
        return -1;
    int rc = l->cfg->cuda_graphs && step > l->first + 1
                 ? device_graph_step(r, x, y, l->cfg->batch, train_step, loss, err)
                 : train_step(r, x, y, l->cfg->batch, false, loss, err);
    char name[32];
    snprintf(name, sizeof name, "step %ld", step);
    double end = timeline_now();
    timeline_span(r->timeline, LANE_COMPUTE, "step", name, start, end);
    if (r->trace.counting)
        r->measured.step += end - start, r->measured.steps++;
    if (rc < 0)
        return dt_wrap(err, "step %ld", step);
    if (rc > 0 || !isfinite(*loss))
        return dt_fail(err, "step %ld: the loss is %f (diverged: try a smaller --lr)", step, *loss);
    return l->cfg->check_replicas ? check_replicas(l, step, err) : 0;
}

/* Checkpoints when due or when a stop signal came; *stop says whether to stop now. */
static int checkpoint_step(struct loop *l, long step, bool *stop, struct dt_err *err)
{
    const struct train_config *cfg = l->cfg;
    /* every rank stops at the same step: the signal may reach them a step apart */
    long stopping = stop_signal;
    if (l->comm->sum_long(l->comm, &stopping, err) < 0)
        return -1;
    *stop = stopping != 0;
    bool due = cfg->checkpoint_every > 0 && step % cfg->checkpoint_every == 0;
    if (*stop || due)
        rank_status_phase(l->r.status, PHASE_CHECKPOINT);
    if ((*stop || due) &&
        (exchange_settle(&l->r.exchange, err) < 0 || restart_save(&l->r, cfg, step, l->res->resumed, err) < 0))
        return -1;
    if (*stop) {
        l->res->stop_signal = stop_signal ? stop_signal : SIGTERM;
        if (l->leader)
            fprintf(stderr, "dtrain-train: stopped by a signal at step %ld; checkpoint saved in %s\n", step,
                    cfg->checkpoint_dir);
    }
    return 0;
}

static void print_eta(long step, long total, double elapsed, double loss)
{
    double left = elapsed / step * (total - step);
    fprintf(stderr, "dtrain-train: step %ld/%ld, loss %.4f, %.0f s elapsed, ETA %dm%02ds\n", step, total, loss, elapsed,
            (int)(left / 60), (int)left % 60);
}

/* After a step: the rates (wall time since the start, evaluations left out, data waits
 * included; samples of all workers: speedup = data/sec(W) / data/sec(1), as in the reference runs) and
 * the loss. */
static void account_step(struct loop *l, long step, double loss)
{
    struct train_result *res = l->res;
    double trained = (timeline_now() - l->start - l->eval_time) / l->dilate;   /* at real time */
    res->seconds = trained;
    res->steps = step;
    res->final_loss = loss;
    if (l->cfg->loss_curve && step <= l->cfg->max_steps)
        l->cfg->loss_curve[step - 1] = loss;
    res->final_rate = (step - l->first) * l->samples_per_step / trained;
}

/* Every --log-every steps, the reference experiments' Step line (and the ETA on stderr), and the
 * straggler report: a collective of the workers. 0, or -1 with err. */
static int log_step(struct loop *l, long step, double loss, struct dt_err *err)
{
    struct train_result *res = l->res;
    if (step % l->cfg->log_every != 0)
        return 0;
    if (l->leader)
        log_lines_step(l->out, step, res->final_rate);
    if (res->final_rate > res->peak_rate)
        res->peak_rate = res->final_rate;
    if (l->cfg->progress && l->leader)
        print_eta(step, l->total, res->seconds, loss);
    if (l->cfg->straggler_threshold > 0 &&
        straggler_report(&l->r.straggler, l->r.workers.comm, l->cfg->straggler_threshold, stderr, err) < 0)
        return -1;
    return 0;
}

/* At the end of an epoch: its time, and an evaluation when one is due (always after the last). */
static int end_epoch(struct loop *l, long step, struct dt_err *err)
{
    const struct train_config *cfg = l->cfg;
    struct train_result *res = l->res;
    int epoch = (int)((step - 1) / l->per_epoch);
    double train_sec = (timeline_now() - l->epoch_start) / l->dilate;
    res->epoch_seconds[epoch] = train_sec;
    res->epoch_accuracy[epoch] = -1;
    if (cfg->eval_every > 0 && !l->r.emulating && ((epoch + 1) % cfg->eval_every == 0 || step == l->total)) {
        double e0 = timeline_now();
        rank_status_phase(l->r.status, PHASE_EVALUATION);
        if (exchange_settle(&l->r.exchange, err) < 0 || (res->final_accuracy = evaluate_test_set(&l->r, cfg->batch, err)) < 0)
            return -1;
        double test_sec = timeline_now() - e0;
        l->eval_time += test_sec;
        watchdog_touch(&l->wd, step);
        res->epoch_accuracy[epoch] = res->final_accuracy;
        if (l->leader)
            log_lines_epoch(l->out, epoch, train_sec, test_sec, res->final_accuracy);
    }
    res->epochs_done = epoch + 1;
    l->epoch_start = timeline_now();
    return 0;
}

/* Steps first + 1 to total. 0 or -1 with err. */
static int train_steps(struct loop *l, struct dt_err *err)
{
    l->start = l->epoch_start = timeline_now();
    l->res->started_at = timeline_wall_now();
    for (long step = l->first + 1; step <= l->total; step++) {
        double loss;
        if (step_once(l, step, &loss, err) < 0)
            return -1;
        watchdog_touch(&l->wd, step);
        account_step(l, step, loss);
        bool stop = false;
        if (l->cfg->checkpoint_dir && checkpoint_step(l, step, &stop, err) < 0)
            return -1;
        if (stop)
            return 0;
        if (log_step(l, step, loss, err) < 0)
            return -1;
        if ((step % l->per_epoch == 0 || step == l->total) && end_epoch(l, step, err) < 0)
            return -1;
    }
    return 0;
}

static void announce_run(const struct loop *l)
{
    const struct train_config *cfg = l->cfg;
    const struct run *r = &l->r;
    int world = r->workers.count;
    if (l->first > 0)
        fprintf(stderr, "dtrain-train: resumed at step %ld from %s (resume %d)\n", l->first, cfg->checkpoint_dir,
                l->res->resumed);
    fprintf(stderr, "dtrain-train: model %s (%zu parameters), dataset %s (%ld train, %ld test), backend %s, "
            "%d thread%s, batch %d x %d rank%s (%s), %s lr %g, %ld steps (%ld per epoch)\n", cfg->model,
            r->model.num_params, cfg->dataset, r->train.count, r->test.count, r->be->name, cfg->threads,
            cfg->threads > 1 ? "s" : "", cfg->batch, world, world > 1 ? "s" : "", l->comm->name, cfg->optimizer,
            r->opt.lr, l->total, l->per_epoch);
    if (r->gpu) {   /* which device, and which libraries the run loaded (they may not be those built with) */
        char device[256], versions[256];
        device_describe(r, cfg->threads, device, sizeof device);
        backend_cuda_versions(versions, sizeof versions);
        fprintf(stderr, "dtrain-train: %s; %s\n", device, versions);
    }
    if (cfg->max_steps > 0 && cfg->epochs_set)   /* both given: whichever ends first, and which that is */
        fprintf(stderr, "dtrain-train: --max-steps %ld and --epochs %d: %s ends the run first\n", cfg->max_steps,
                cfg->epochs, cfg->max_steps < (long)cfg->epochs * l->per_epoch ? "--max-steps" : "--epochs");
}

/* Checkpoints on SIGTERM, SIGUSR1 and SIGINT (a terminal's Ctrl-C: treated as SIGTERM) while on
 * (a run with a checkpoint directory). */
static void catch_stop_signals(bool on)
{
    stop_signal = 0;
    struct sigaction sa = {.sa_handler = on ? on_stop_signal : SIG_DFL};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
}

/* Room for every epoch's time and accuracy (the run may span more epochs than --epochs said). */
static int grow_epoch_results(struct train_result *res, long epochs)
{
    double *seconds = realloc(res->epoch_seconds, (size_t)epochs * sizeof(double));
    if (seconds)
        res->epoch_seconds = seconds;
    double *accuracy = seconds ? realloc(res->epoch_accuracy, (size_t)epochs * sizeof(double)) : NULL;
    if (!accuracy)
        return -1;
    res->epoch_accuracy = accuracy;
    return 0;
}

/* Resumes when asked, starts the loader, and sets the step range. 0 or -1 with err. */
static int begin_loop(struct loop *l, struct dt_err *err)
{
    const struct train_config *cfg = l->cfg;
    if (cfg->checkpoint_dir && l->r.workers.comm->rank == 0) {
        /* the lock first: another job's save in flight is its, not a leftover to remove */
        if ((l->checkpoint_lock = checkpoint_lock(cfg->checkpoint_dir, err)) == -1)
            return -1;
        checkpoint_remove_stale(cfg->checkpoint_dir);   /* what a killed earlier attempt was writing */
    }
    if (cfg->checkpoint_dir && cfg->resume && (l->first = restart_resume(&l->r, cfg, &l->res->resumed, err)) < 0)
        return -1;
    l->res->resumed_at = l->first;
    if (loader_start(&l->r.loader, l->first, err) < 0)
        return -1;
    l->per_epoch = l->r.loader.steps_per_epoch;
    long epochs = cfg->epochs;
    if (cfg->max_steps > 0 && !cfg->epochs_set)   /* --max-steps alone: exactly that many steps */
        epochs = (cfg->max_steps + l->per_epoch - 1) / l->per_epoch;
    if (epochs > cfg->epochs && grow_epoch_results(l->res, epochs) < 0)
        return dt_fail(err, "out of memory for %ld epochs", epochs);
    l->total = l->per_epoch * epochs;
    if (cfg->max_steps > 0 && cfg->max_steps < l->total)
        l->total = cfg->max_steps;
    l->samples_per_step = (double)cfg->batch * l->r.workers.count;
    l->comm = l->r.workers.comm;
    l->leader = l->comm->rank == 0;
    l->dilate = l->r.emulating && cfg->dilate > 0 ? cfg->dilate : 1;
    return start_tracing(l, err);
}

/* What only the end of a run can tell: the backend's late failures, the parameters out. */
static int finish_loop(struct loop *l, int rc, struct dt_err *err)
{
    struct run *r = &l->r;
    struct train_result *res = l->res;
    if (r->fast && backend_cpu_failed(r->fast))
        rc = dt_fail(err, "the cpu backend ran out of memory for its im2col buffers");
    if (rc == 0 && device_sync(r, err) < 0)
        rc = -1;
    if (rc == 0 && l->cfg->params_out)
        rc = restart_write_params(r, l->cfg->params_out, err);
    if (rc == 0 && l->cfg->profile_out)
        rc = write_profile(l, err);
    struct timeline *timeline = r->timeline_file;
    r->timeline_file = NULL;
    record_into(r, NULL);
    if (timeline_close(timeline, rc == 0 ? err : &(struct dt_err){0}) < 0)
        rc = -1;
    /* The run's rate at its end is a rate it reached, as a Step line printed then would say: the
     * peak is never below it (with no Step line printed it is the only rate there is) */
    if (res->peak_rate < res->final_rate)
        res->peak_rate = res->final_rate;
    res->exchange = r->exchange.stats;
    snprintf(res->transport, sizeof res->transport, "%s", exchange_gpu_transport(&r->exchange));
    res->compute_ms = straggler_mean_ms(&r->straggler);
    res->straggler_seconds = r->straggler.report_seconds, res->straggler_reports = r->straggler.reports;
    return rc;
}

void train_result_free(struct train_result *res)
{
    free(res->epoch_seconds);
    free(res->epoch_accuracy);
    res->epoch_seconds = res->epoch_accuracy = NULL;
}

/* Every worker's status in a directory they share, so that a stall names the stuck rank; a run
 * without one goes on and says so. A collective of the workers (before any step). */
static void keep_status(struct loop *l, struct comm *world)
{
    struct dt_err why;
    if (l->r.workers.count < 2)   /* one rank: nobody to tell apart */
        return;
    if (rank_status_open(&l->status, l->r.workers.comm, world->rank, l->cfg->status_dir, &why) < 0) {
        if (l->leader)
            fprintf(stderr, "dtrain-train: a stall will not name the stuck rank: %s\n", why.msg);
        rank_status_close(&l->status);
        return;
    }
    l->r.status = &l->status;
    watchdog_describe_with(&l->wd, &l->status, l->cfg->stall_warning);
}

int train_run(const struct train_config *cfg, FILE *out, struct train_result *res, struct dt_err *err)
{
    memset(res, 0, sizeof *res);
    res->final_accuracy = -1;
    res->epoch_seconds = calloc((size_t)cfg->epochs, sizeof(double));
    res->epoch_accuracy = calloc((size_t)cfg->epochs, sizeof(double));
    if (!res->epoch_seconds || !res->epoch_accuracy)
        return dt_fail(err, "out of memory");
    struct loop l = {.cfg = cfg, .res = res, .out = out, .checkpoint_lock = -1};
    struct comm *comm = cfg->comm ? cfg->comm : comm_single();
    int rc = run_setup(&l.r, cfg, comm, err);
    res->params = l.r.model.num_params;
    res->flops_per_sample = model_train_flops(&l.r.model);
    res->tokens_per_sample = rc == 0 && l.r.train.vocab > 0 ? l.r.train.c : 0;
    if (rc == 0 && (cfg->export_dir || l.r.exchange.serving))
        start_deadline_disarm();   /* no steps to watch: an export's writes, a server's whole run */
    if (rc == 0 && cfg->export_dir) {   /* the starting point for a peer framework, and no training */
        rc = comm->rank == 0 ? export_run(&l.r, cfg, cfg->export_dir, err) : 0;   /* all hold rank 0's values */
        run_free(&l.r);
        return rc;
    }
    if (rc == 0 && l.r.exchange.serving) {   /* a parameter server: its exchange is its whole job */
        rc = exchange_serve(&l.r.exchange, err);
        res->exchange = l.r.exchange.stats;
        run_free(&l.r);
        return rc;
    }
    if (rc == 0)
        rc = begin_loop(&l, err);
    if (rc == 0) {
        if (cfg->checkpoint_dir)
            catch_stop_signals(true);
        keep_status(&l, comm);
        watchdog_start(&l.wd, comm, l.r.nccl, cfg->timeout_minutes * 60, l.first, cfg->on_stall);
        if (l.leader)
            announce_run(&l);
        rc = train_steps(&l, err);
        if (rc == 0)
            rc = exchange_settle(&l.r.exchange, err);
        if (rc == 0)
            rc = exchange_close(&l.r.exchange, err);
        rc = finish_loop(&l, rc, err);
        watchdog_stop(&l.wd);
        rank_status_close(&l.status);
        if (cfg->checkpoint_dir)
            catch_stop_signals(false);
    }
    if (l.checkpoint_lock >= 0)
        close(l.checkpoint_lock);
    run_free(&l.r);
    return rc;
}
