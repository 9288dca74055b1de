/* bytescheduler.c - ByteScheduler (Peng et al., SOSP 2019; bytedance/byteps, bytescheduler/):
 * each layer's gradients cut into partitions of --partition-bytes, started by the rank's
 * communication thread (comm_thread.h) in priority order, the layer nearest the input first, while
 * --credit-bytes last. The next forward pass needs the first layers first: it waits, layer by
 * layer, only for that layer's sums, and applies that layer's update just before its forward
 * (ByteScheduler's forward pre-hook), so the last layers' gradients still travel while the next
 * step computes.
 *
 * bytescheduler-a2a allreduces the partitions, rank 0 choosing the order for every rank;
 * bytescheduler-ps pushes them to parameter servers (ps.h), each worker choosing its own order.
 * The sums are BSP's and a layer's update equals the whole step's update of that range bitwise
 * (optim.h), so the parameters equal BSP's bitwise at two workers. */
#include "trainer/exchange/pieces.h"
#include "trainer/exchange/ps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bytescheduler {
    struct pieces pieces;      /* each layer's partitions, on the communication thread */
    struct ps *ps;             /* bytescheduler-ps */
    int layers;
    size_t *first, *count;     /* each layer's parameters */
    bool *due;                 /* layer l's update of the last step is not applied yet */
    int cursor;                /* the layer the forward pass reached (a guess that is usually right) */
};

/* The layer whose parameters begin at first. */
static int layer_at(struct bytescheduler *s, size_t first)
{
    if (s->cursor < s->layers && s->first[s->cursor] == first)
        return s->cursor;
    int lo = 0, hi = s->layers - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (s->first[mid] < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Waits for layer l's sums, takes their mean and applies its update. */
static int apply_layer(struct exchange *x, struct bytescheduler *s, int l, struct dt_err *err)
{
    double start = timeline_now();
    if (comm_thread_wait_span(s->pieces.thread, l, err) < 0)
        return dt_wrap(err, "the gradients of layer %d", l);
    double waited = timeline_now();
    timeline_span(x->timeline, LANE_EXCHANGE, "exchange", "layer wait", start, waited);
    float *mean = x->grads + s->first[l];
    if (s->ps)
        memcpy(mean, ps_sums(s->ps) + s->first[l], s->count[l] * sizeof(float));
    exchange_mean(x, mean, s->count[l]);
    x->update.call(x->update.ctx, s->first[l], s->count[l]);
    s->due[l] = false;
    timeline_span(x->timeline, LANE_EXCHANGE, "exchange", "layer update", waited, timeline_now());
    return 0;
}

static int bs_before_forward(struct exchange *x, size_t first, size_t count, struct dt_err *err)
{
    (void)count;
    struct bytescheduler *s = x->state;
    int l = layer_at(s, first);
    s->cursor = l + 1;
    return s->due[l] ? apply_layer(x, s, l, err) : 0;
}

static int bs_settle(struct exchange *x, struct dt_err *err)
{
    struct bytescheduler *s = x->state;
    for (int l = 0; l < s->layers; l++)
        if (s->due[l] && apply_layer(x, s, l, err) < 0)
            return -1;
    pieces_count(&s->pieces, x);
    return 0;
}

static void bs_begin_backward(struct exchange *x)
{
    struct bytescheduler *s = x->state;
    s->cursor = 0;
    /* every layer's update was applied by the forward pass; settling again costs nothing */
    if (bs_settle(x, &x->pending) < 0 || (s->ps && ps_tell_servers(x, s->ps, 1, &x->pending) < 0)) {
        x->failed = true;
        return;
    }
    pieces_begin(&s->pieces, x);
}

static int bs_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    (void)err;
    struct bytescheduler *s = x->state;
    pieces_ready_from(&s->pieces, first);
    return 0;
}

/* The step's transfers go on; the next forward pass waits for each layer's. */
static int bs_finish(struct exchange *x, struct dt_err *err)
{
    (void)err;
    struct bytescheduler *s = x->state;
    pieces_ready_from(&s->pieces, 0);   /* a layer without a grads_ready call: none, but stay safe */
    for (int l = 0; l < s->layers; l++)
        s->due[l] = true;
    return 0;
}

static int bs_close(struct exchange *x, struct dt_err *err)
{
    struct bytescheduler *s = x->state;
    if (bs_settle(x, err) < 0)
        return -1;
    return s->ps && ps_tell_servers(x, s->ps, 0, err) < 0
               ? dt_wrap(err, "telling the parameter servers that training ended")
               : 0;
}

static int bs_serve(struct exchange *x, struct dt_err *err)
{
    struct bytescheduler *s = x->state;
    return ps_serve(x, s->ps, err);
}

static void bs_destroy(struct exchange *x)
{
    struct bytescheduler *s = x->state;
    if (!s)
        return;
    if (pieces_close(&s->pieces))   /* else the thread still sends on the servers' comm */
        ps_free(s->ps);
    free(s->first);
    free(s->count);
    free(s->due);
    free(s);
}

static int layer_spans(const struct exchange *x, struct bytescheduler *s, struct dt_err *err)
{
    s->layers = model_layer_spans(x->model, NULL, NULL);
    s->first = calloc((size_t)s->layers + 1, sizeof *s->first);
    s->count = calloc((size_t)s->layers + 1, sizeof *s->count);
    s->due = calloc((size_t)s->layers + 1, sizeof *s->due);
    if (!s->first || !s->count || !s->due)
        return dt_fail(err, "out of memory");
    model_layer_spans(x->model, s->first, s->count);
    return 0;
}

static int bs_create(struct exchange *x, struct dt_err *err)
{
    struct bytescheduler *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(err, "out of memory");
    x->state = s;
    bool over_ps = x->method == &exchange_bytescheduler_ps;
    if (layer_spans(x, s, err) < 0 || (over_ps && ps_open(x, true, &s->ps, err) < 0))
        return -1;
    if (x->serving)
        return 0;   /* a server serves; it has no thread */
    size_t partition = exchange_partition_bytes(&x->options), credit = exchange_credit_bytes(&x->options);
    struct comm_thread_ops ops = {.start = pieces_start_allreduce, .ctx = x, .ordered = true, .what = "allreduce"};
    if (over_ps ? ps_open_pieces(s->ps, x, &s->pieces, true, credit, err) < 0
                : pieces_open(&s->pieces, x, NULL, s->first, s->count, s->layers,
                              exchange_partition_floats(&x->options), credit, ops, err) < 0)
        return -1;
    int transfers;
    comm_thread_plan(s->pieces.thread, &transfers);
    char ps_text[sizeof x->stats.detail / 2] = "";
    if (s->ps)
        ps_describe(s->ps, ps_text, sizeof ps_text);
    snprintf(x->stats.detail, sizeof x->stats.detail, "%d layers in %d partitions of up to %zu bytes, credit %zu "
             "bytes%s%s", s->layers, transfers, partition, credit, s->ps ? "; " : "", ps_text);
    return 0;
}

const struct exchange_method exchange_bytescheduler_a2a = {
    .name = "bytescheduler-a2a",
    .needs_op_order = true,
    .needs_thread = true,
    .updates_layerwise = true,
    .create = bs_create,
    .begin_backward = bs_begin_backward,
    .grads_ready = bs_grads_ready,
    .before_forward = bs_before_forward,
    .finish = bs_finish,
    .settle = bs_settle,
    .close = bs_close,
    .destroy = bs_destroy,
};

const struct exchange_method exchange_bytescheduler_ps = {
    .name = "bytescheduler-ps",
    .needs_op_order = true,
    .needs_thread = true,
    .updates_layerwise = true,
    .create = bs_create,
    .begin_backward = bs_begin_backward,
    .grads_ready = bs_grads_ready,
    .before_forward = bs_before_forward,
    .finish = bs_finish,
    .settle = bs_settle,
    .serve = bs_serve,
    .close = bs_close,
    .destroy = bs_destroy,
};
