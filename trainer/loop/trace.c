/* trace.c - per-layer spans of a step on the timeline (see trace.h). */
#include "trainer/loop/trace.h"

#include <stdio.h>
#include <stdlib.h>

/* Whether the hooks do anything. */
static bool trace_active(const struct step_trace *s)
{
    return s->timeline || s->profile;
}

int trace_init(struct step_trace *s, const struct model *m, struct timeline *t, struct profile *profile)
{
    *s = (struct step_trace){.timeline = t, .profile = profile};
    if (!trace_active(s))
        return 0;
    s->layers = model_layer_spans(m, NULL, NULL);
    const char **kinds = malloc(((size_t)s->layers + 1) * sizeof *kinds);
    s->names = malloc(((size_t)s->layers + 1) * sizeof *s->names);
    if (!kinds || !s->names)
        return free(kinds), -1;
    model_layer_kinds(m, kinds);
    for (int l = 0; l < s->layers; l++)
        snprintf(s->names[l], sizeof s->names[l], "%s %d", kinds[l], l);
    free(kinds);
    return 0;
}

void trace_free(struct step_trace *s)
{
    free(s->names);
    s->names = NULL;
}

double trace_now_settled(struct step_trace *s)
{
    if (s->profile && s->settle)
        s->settle(s->settle_ctx);
    return timeline_now();
}

/* Layer `layer` of a pass (cat: "forward" or "backward") ran from s->mark to now. */
static void layer_ran(struct step_trace *s, const char *cat, int layer, double now)
{
    if (layer < 0 || layer >= s->layers)
        return;
    timeline_span(s->timeline, LANE_COMPUTE, cat, s->names[layer], s->mark, now);
    if (s->profile && s->counting)
        (cat[0] == 'f' ? s->profile->forward : s->profile->backward)[layer] += now - s->mark;
}

static void on_needed(void *ctx, size_t first, size_t count)
{
    struct step_trace *s = ctx;
    layer_ran(s, "forward", s->layer++, trace_now_settled(s));
    if (s->need)   /* a layer-wise exchange's wait is not the layer's compute */
        s->need->call(s->need->ctx, first, count);
    s->mark = timeline_now();
}

const struct params_needed *trace_forward(struct step_trace *s, const struct params_needed *need)
{
    if (!trace_active(s))
        return need;
    s->need = need;
    s->layer = -1;
    s->need_hook = (struct params_needed){on_needed, s};
    return &s->need_hook;
}

void trace_forward_done(struct step_trace *s)
{
    if (trace_active(s))
        layer_ran(s, "forward", s->layer, trace_now_settled(s));
    s->layer = -1;
}

static void on_ready(void *ctx, size_t first)
{
    struct step_trace *s = ctx;
    layer_ran(s, "backward", --s->layer, trace_now_settled(s));   /* backward has finished this layer */
    if (s->ready.call)
        s->ready.call(s->ready.ctx, first);
    s->mark = timeline_now();
}

struct grads_ready trace_backward(struct step_trace *s, struct grads_ready ready)
{
    if (!trace_active(s))
        return ready;
    s->ready = ready;
    s->layer = s->layers;   /* backward finishes the last layer first */
    s->mark = timeline_now();
    s->ready_hook = (struct grads_ready){on_ready, s};
    return s->ready_hook;
}
