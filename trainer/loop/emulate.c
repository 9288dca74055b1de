/* emulate.c - layers that take a profile's time instead of computing (see emulate.h). Each wait
 * ends at a target that advances by the layer's time from the previous target, not from when the
 * sleep happened to end, so a sleep's late wake-up (tens of microseconds) does not add up over a
 * model's layers; the time the pass's hooks take (an exchange's waits) moves it on as well. */
#include "trainer/loop/emulate.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "trainer/base/timeline.h"

int emulation_open(struct emulation *e, const char *path, double rate, double dilate, int batch,
                   const struct model *m, struct dt_err *err)
{
    *e = (struct emulation){.dilate = dilate};
    if (profile_read(path, &e->profile, err) < 0 || profile_matches(&e->profile, m, err) < 0) {
        profile_free(&e->profile);
        return dt_wrap(err, "--emulate %s", path);
    }
    double compute = profile_compute_seconds(&e->profile);
    /* a step of `batch` samples: the profile's time, scaled by the batch; at --emulate-rate R, one
     * device's step of batch samples takes batch / R */
    double per_step = compute * batch / e->profile.batch;
    if (rate > 0)
        per_step = batch / rate;
    if (!(compute >= EMULATE_MIN_STEP_SECONDS) || !(per_step >= EMULATE_MIN_STEP_SECONDS) ||
        !(per_step <= EMULATE_MAX_STEP_SECONDS) || !(e->profile.update <= EMULATE_MAX_STEP_SECONDS)) {
        profile_free(&e->profile);
        return dt_fail(err, "--emulate %s: a step would take %g s of compute (the profile's layers: %g s at batch "
                       "%d, update %g s): a device's step takes between 1 us and an hour (a hand-edited profile?)",
                       path, per_step, compute, e->profile.batch, e->profile.update);
    }
    e->scale = per_step / compute * dilate;
    e->first = calloc((size_t)e->profile.layers + 1, sizeof *e->first);
    size_t *count = calloc((size_t)e->profile.layers + 1, sizeof *count);
    if (!e->first || !count) {
        free(count);
        emulation_close(e);
        return dt_fail(err, "out of memory");
    }
    model_layer_spans(m, e->first, count);
    free(count);
    for (int l = 0; l < e->profile.layers; l++)
        e->params += e->profile.params[l];
    return 0;
}

void emulation_close(struct emulation *e)
{
    profile_free(&e->profile);
    free(e->first);
    e->first = NULL;
}

double emulation_step_seconds(const struct emulation *e)
{
    return profile_compute_seconds(&e->profile) * e->scale;
}

/* A pass begins: its first wait counts from now (or from where the last one ended, if later). */
static void begin_pass(struct emulation *e)
{
    double now = timeline_now();
    if (e->target < now)
        e->target = now;
}

/* Sleeps until `seconds` of the profile after the previous target. */
static void wait_for(struct emulation *e, double seconds)
{
    e->target += seconds * e->scale;
    double left = e->target - timeline_now();
    if (left <= 0)
        return;
    /* the bounds emulation_open checked keep `left` far below time_t's range and ts valid */
    struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* A hook (an exchange's wait) ran from `start`, the target then `before`: the time it took moves
 * the target on, unless the hook's own emulated work already moved it as far. ByteScheduler's
 * wait applies the layer's update (emulate_update), whose pass begins at the wait's end: adding the
 * wait again counted it twice (each layer-wise wait doubled on the forward pass before 2026-11-26). */
static void hook_took(struct emulation *e, double before, double start)
{
    double moved = before + (timeline_now() - start);
    if (e->target < moved)
        e->target = moved;
}

double emulate_forward(struct emulation *e, const struct params_needed *need)
{
    begin_pass(e);
    for (int l = 0; l < e->profile.layers; l++) {
        if (need) {   /* a layer-wise exchange's wait: the layer starts after it */
            size_t end = l + 1 < e->profile.layers ? e->first[l + 1] : e->first[l] + e->profile.params[l];
            double before = e->target, start = timeline_now();
            need->call(need->ctx, e->first[l], end - e->first[l]);
            hook_took(e, before, start);
        }
        wait_for(e, e->profile.forward[l]);
    }
    return 0;
}

void emulate_backward(struct emulation *e, const struct grads_ready *ready)
{
    begin_pass(e);
    for (int l = e->profile.layers - 1; l >= 0; l--) {
        wait_for(e, e->profile.backward[l]);
        if (ready && ready->call) {
            double before = e->target, start = timeline_now();
            ready->call(ready->ctx, e->first[l]);
            hook_took(e, before, start);
        }
    }
}

void emulate_update(struct emulation *e, size_t count)
{
    begin_pass(e);
    wait_for(e, e->params ? e->profile.update * (double)count / (double)e->params : 0);
}
