/* trace.c - per-layer spans of a step on the timeline (see trace.h). */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>

int trace_init(struct step_trace *s, const struct model *m, struct timeline *t)
{
    *s = (struct step_trace){.timeline = t};
    if (!t)
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

/* Ends the span of the layer being timed (category cat) and starts the next one's. */
static void next_layer(struct step_trace *s, const char *cat, int next)
{
    double now = timeline_now();
    if (s->layer >= 0 && s->layer < s->layers)
        timeline_span(s->timeline, LANE_COMPUTE, cat, s->names[s->layer], s->mark, now);
    s->layer = next;
    s->mark = now;
}

static void on_needed(void *ctx, size_t first, size_t count)
{
    struct step_trace *s = ctx;
    next_layer(s, "forward", s->layer + 1);
    if (s->need)
        s->need->call(s->need->ctx, first, count);
}

const struct params_needed *trace_forward(struct step_trace *s, const struct params_needed *need)
{
    if (!s->timeline)
        return need;
    s->need = need;
    s->layer = -1;
    s->need_hook = (struct params_needed){on_needed, s};
    return &s->need_hook;
}

void trace_forward_done(struct step_trace *s)
{
    if (s->timeline)
        next_layer(s, "forward", -1);
}

static void on_ready(void *ctx, size_t first)
{
    struct step_trace *s = ctx;
    double now = timeline_now();
    if (--s->layer >= 0)   /* backward has finished this layer: its span began at the last mark */
        timeline_span(s->timeline, LANE_COMPUTE, "backward", s->names[s->layer], s->mark, now);
    s->mark = now;
    if (s->ready.call)
        s->ready.call(s->ready.ctx, first);
}

struct grads_ready trace_backward(struct step_trace *s, struct grads_ready ready)
{
    if (!s->timeline)
        return ready;
    s->ready = ready;
    s->layer = s->layers;   /* backward finishes the last layer first */
    s->mark = timeline_now();
    s->ready_hook = (struct grads_ready){on_ready, s};
    return s->ready_hook;
}
