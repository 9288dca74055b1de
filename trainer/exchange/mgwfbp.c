/* mgwfbp.c - merged-gradient WFBP (Shi, Chu, Li, INFOCOM 2019; reference HKBU-HPML/MG-WFBP): as
 * WFBP, but consecutive layers whose gradients are ready close together go out as one allreduce,
 * saving a start-up (alpha) each. The plan (grouping.c) comes from each layer's backward time,
 * measured in the first MGWFBP_WARMUP_STEPS steps (sent layer by layer meanwhile) and averaged over
 * the workers so every rank plans alike, and an alpha-beta cost of an allreduce fitted at start on
 * the job's own links (rank 0's fit, broadcast). --comm-threshold BYTES fuses by size instead
 * (Horovod's fusion), from the first step. Sums are BSP's, so parameters equal BSP's bitwise at two
 * ranks, whatever the plan. */
#include "common/grouping.h"
#include "trainer/exchange/pieces.h"

#include <stdio.h>
#include <stdlib.h>

/* Steps whose backward times make the plan (the reference measures 5 warm-up iterations first). */
#define MGWFBP_WARMUP_STEPS 5
/* The fit's allreduces (grouping.h's sizes) are each timed this many times after one untimed; the
 * fastest time of each size is fitted (the one least disturbed on a shared machine). */
#define FIT_REPEATS 10

struct mgwfbp {
    struct pieces pieces;
    int layers;
    size_t *first, *count;     /* each layer's gradients */
    double *backward;          /* summed seconds per layer over the measured steps */
    bool *merged;              /* the plan: merged[l], layer l goes out with l - 1 */
    bool planned;
    long measured;             /* steps timed so far */
    int next;                  /* the layer backward finishes next (from layers - 1 down) */
    double mark;               /* when the previous layer finished (or backward began) */
    struct alpha_beta cost;
};

/* Rank 0 times allreduces of growing sizes on the gradients' transport, fits alpha and beta, and
 * every rank takes its fit. */
static int fit_cost(struct exchange *x, struct mgwfbp *s, struct dt_err *err)
{
    size_t largest = GROUPING_FIT_FIRST_BYTES << (GROUPING_FIT_SIZES - 1);
    /* a device transport takes device memory: the gradient buffer itself serves (nothing in it is
     * kept before the first backward), its sizes halving down from the whole buffer where it is
     * smaller than the largest; it runs asynchronously, so each call is timed to its drain */
    bool device = x->transport->device_buffers;
    float *scratch = device ? x->grads : calloc(largest / sizeof(float), sizeof(float));
    double bytes[GROUPING_FIT_SIZES], seconds[GROUPING_FIT_SIZES];
    if (!scratch)
        return dt_fail(err, "out of memory");
    int rc = 0;
    for (int i = 0; i < GROUPING_FIT_SIZES && rc == 0; i++) {
        size_t n = (GROUPING_FIT_FIRST_BYTES << i) / sizeof(float);
        if (device && x->count * sizeof(float) < largest)
            n = (x->count >> (GROUPING_FIT_SIZES - 1 - i)) ? x->count >> (GROUPING_FIT_SIZES - 1 - i) : 1;
        bytes[i] = (double)(n * sizeof(float));
        seconds[i] = 1e30;
        for (int k = 0; k <= FIT_REPEATS && rc == 0; k++) {
            double start = timeline_now();
            rc = x->transport->allreduce(x->transport, scratch, n, COMM_SUM, err);
            if (rc == 0 && x->transport->drain)
                rc = x->transport->drain(x->transport, err);
            double took = timeline_now() - start;
            if (k > 0 && took < seconds[i])
                seconds[i] = took;
        }
    }
    if (!device)
        free(scratch);
    if (rc < 0)
        return dt_wrap(err, "timing allreduces for the alpha-beta fit");
    if (grouping_fit(GROUPING_FIT_SIZES, bytes, seconds, &s->cost) < 0)
        return dt_fail(err, "the alpha-beta fit failed");
    s->cost = grouping_plan_cost(s->cost);
    return x->workers.comm->broadcast(x->workers.comm, &s->cost, sizeof s->cost, 0, err);
}

static void mgwfbp_destroy(struct exchange *x)
{
    struct mgwfbp *s = x->state;
    if (!s)
        return;
    pieces_close(&s->pieces);
    free(s->first);
    free(s->backward);
    free(s->merged);
    free(s);
}

/* The plan as spans of the buffer: a group from its first layer to its last (merged[l]: layer l
 * goes with l - 1). Returns their number. */
static int group_spans(const struct mgwfbp *s, size_t *first, size_t *count)
{
    int groups = 0;
    for (int l = 0; l < s->layers; l++) {
        if (l == 0 || !s->merged[l])
            first[groups] = s->first[l], count[groups++] = 0;
        count[groups - 1] += s->count[l];
    }
    return groups;
}

static int mgwfbp_create(struct exchange *x, struct dt_err *err)
{
    struct mgwfbp *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(err, "out of memory");
    x->state = s;
    s->layers = model_layer_spans(x->model, NULL, NULL);
    s->first = malloc(2 * (size_t)s->layers * sizeof(size_t));
    s->backward = calloc((size_t)s->layers, sizeof(double));
    s->merged = calloc((size_t)s->layers, sizeof(bool));
    if (!s->first || !s->backward || !s->merged)
        return dt_fail(err, "out of memory");
    s->count = s->first + s->layers;
    model_layer_spans(x->model, s->first, s->count);
    struct comm_thread_ops ops = {.start = pieces_start_allreduce, .ctx = x, .fifo = true, .what = "allreduce"};
    if (!x->options.threshold_set) {   /* layer by layer until the plan is made */
        if (pieces_open(&s->pieces, x, NULL, s->first, s->count, s->layers, 0, 0, ops, err) < 0)
            return -1;
        return x->workers.count > 1 ? fit_cost(x, s, err) : 0;
    }
    size_t *bytes = malloc((size_t)s->layers * sizeof *bytes);
    if (!bytes)
        return dt_fail(err, "out of memory");
    for (int l = 0; l < s->layers; l++)
        bytes[l] = s->count[l] * sizeof(float);
    int groups = grouping_threshold(s->layers, bytes, x->options.threshold_bytes, s->merged);
    free(bytes);
    s->planned = true;
    snprintf(x->stats.detail, sizeof x->stats.detail, "%d layers in %d groups (--comm-threshold %zu bytes)",
             s->layers, groups, x->options.threshold_bytes);
    size_t *first = malloc(2 * (size_t)s->layers * sizeof *first);
    if (!first)
        return dt_fail(err, "out of memory");
    int spans = group_spans(s, first, first + s->layers);
    int rc = pieces_open(&s->pieces, x, NULL, first, first + s->layers, spans, 0, 0, ops, err);
    free(first);
    return rc;
}

static void mgwfbp_begin_backward(struct exchange *x)
{
    struct mgwfbp *s = x->state;
    pieces_begin(&s->pieces, x);
    s->next = s->layers - 1;
    s->mark = timeline_now();
}

/* The layer whose gradients start at first: backward reports them from the last layer down. */
static int layer_at(const struct mgwfbp *s, size_t first)
{
    int l = s->next;
    while (l > 0 && s->first[l] > first)
        l--;
    return l;
}

static int mgwfbp_grads_ready(struct exchange *x, size_t first, struct dt_err *err)
{
    struct mgwfbp *s = x->state;
    int l = layer_at(s, first);
    if (!s->planned) {
        double now = timeline_now();
        s->backward[l] += now - s->mark;
        s->mark = now;
    }
    s->next = l - 1;
    (void)err;
    pieces_ready_from(&s->pieces, s->first[l]);   /* a group goes out once its first layer is ready */
    return 0;
}

/* The communication thread sends the plan's groups from now on. */
static int replan_groups(struct exchange *x, struct mgwfbp *s, struct dt_err *err)
{
    size_t *first = malloc(2 * (size_t)s->layers * sizeof *first);
    if (!first)
        return dt_fail(err, "out of memory");
    int rc = pieces_replan(&s->pieces, x, first, first + s->layers, group_spans(s, first, first + s->layers), err);
    free(first);
    return rc;
}

/* After the warm-up: the workers' mean backward times, the same on every rank, make the plan. */
static int make_plan(struct exchange *x, struct mgwfbp *s, struct dt_err *err)
{
    float *mean = malloc((size_t)s->layers * sizeof(float));
    double *backward = malloc((size_t)s->layers * sizeof(double));
    size_t *bytes = malloc((size_t)s->layers * sizeof(size_t));
    int rc = mean && backward && bytes ? 0 : dt_fail(err, "out of memory");
    for (int l = 0; l < s->layers && rc == 0; l++)
        mean[l] = (float)(s->backward[l] / s->measured);
    if (rc == 0 && (rc = x->workers.comm->allreduce(x->workers.comm, mean, (size_t)s->layers, COMM_AVG, err)) == 0) {
        for (int l = 0; l < s->layers; l++)
            backward[l] = mean[l], bytes[l] = s->count[l] * sizeof(float);
        double finish;
        int groups = grouping_mgwfbp(s->layers, backward, bytes, s->cost, s->merged, &finish);
        rc = groups < 0 ? dt_fail(err, "out of memory") : 0;
        s->planned = rc == 0;
        if (rc == 0)
            rc = replan_groups(x, s, err);
        snprintf(x->stats.detail, sizeof x->stats.detail, "%d layers in %d groups from %ld measured steps "
                 "(alpha %.3g s, beta %.3g s/byte; predicted backward + exchange %.3g s)", s->layers, groups,
                 s->measured, s->cost.alpha, s->cost.beta, finish);
    }
    free(mean), free(backward), free(bytes);
    return rc;
}

static int mgwfbp_finish(struct exchange *x, struct dt_err *err)
{
    struct mgwfbp *s = x->state;
    if (pieces_wait_all(&s->pieces, x, err) < 0)
        return -1;
    exchange_mean(x, x->grads, x->count);
    if (!s->planned && ++s->measured == MGWFBP_WARMUP_STEPS)
        return make_plan(x, s, err);
    return 0;
}

const struct exchange_method exchange_mgwfbp = {
    .name = "mg-wfbp",
    .needs_op_order = true,
    .needs_thread = true,
    .create = mgwfbp_create,
    .begin_backward = mgwfbp_begin_backward,
    .grads_ready = mgwfbp_grads_ready,
    .finish = mgwfbp_finish,
    .destroy = mgwfbp_destroy,
};
