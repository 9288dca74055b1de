/* exchange.c - the table of gradient-exchange methods and what every method shares (exchange.h). */
#include "trainer/exchange/exchange.h"

#include <stdio.h>
#include <string.h>

/* In method_list's order (exchange_methods.c). */
const struct exchange_method *const exchange_methods[] = {&exchange_bsp,    &exchange_wfbp,    &exchange_mgwfbp,
                                                          &exchange_bytescheduler_a2a, &exchange_bsp_ps,
                                                          &exchange_wfbp_ps, &exchange_bytescheduler_ps};
const int exchange_method_count = sizeof exchange_methods / sizeof exchange_methods[0];

const struct exchange_method *exchange_find(const char *name)
{
    const struct method_facts *facts = method_find(name);
    for (int i = 0; facts && i < exchange_method_count; i++)
        if (strcmp(exchange_methods[i]->name, facts->name) == 0)
            return exchange_methods[i];
    return NULL;
}

const struct method_facts *exchange_facts(const struct exchange_method *method)
{
    return method_find(method->name);
}

/* The staging thread's hand-over of a span in host memory: what backward's hook does on CPU ranks. */
static int deliver_span(void *ctx, size_t first, struct dt_err *err)
{
    struct exchange *x = ctx;
    return x->method->grads_ready ? x->method->grads_ready(x, first, err) : 0;
}

/* A layer-wise update of a staged exchange: the span's mean goes back to the device first (the
 * update on the compute stream waits for that copy only). */
static void staged_update(void *ctx, size_t first, size_t count)
{
    struct exchange *x = ctx;
    if (!x->failed && staging_in(x->staging, first, count, &x->pending) < 0)
        x->failed = true;
    x->device_update.call(x->device_update.ctx, first, count);
}

void exchange_set_update(struct exchange *x, struct exchange_update update)
{
    x->device_update = update;
    x->update = x->staging ? (struct exchange_update){staged_update, x} : update;
}

void exchange_mean(const struct exchange *x, float *buf, size_t count)
{
    if (!x->transport->sums_are_means)
        comm_scale(buf, count, x->workers.count);
}

const char *exchange_gpu_transport(const struct exchange *x)
{
    return x->staging ? "host" : x->transport && x->transport->device_buffers ? x->transport->name : "";
}

int exchange_staged_spans(const struct model *model)
{
    return model_layer_spans(model, NULL, NULL) + 1;
}

int exchange_create(struct exchange *x, const struct exchange_method *method, const struct exchange_options *options,
                    struct comm *host, struct comm *device_transport, const struct staging_device *staged,
                    const struct model *model, float *grads, size_t count, struct dt_err *err)
{
    memset(x, 0, sizeof *x);
    if (method->needs_op_order && !model_params_in_op_order(model))
        return dt_fail(err, "--comm %s: model %s has parameters out of op order", method->name, model->name);
    x->method = method;
    x->transport = device_transport ? device_transport : host;
    x->workers = (struct workers){.comm = host, .rank = host->rank, .count = host->world};
    x->model = model;
    if (options)
        x->options = *options;
    x->grads = grads;
    x->count = count;
    if (staged && !device_transport) {
        if (staging_create(&x->staging, *staged, grads, count, exchange_staged_spans(model), deliver_span, x, err) < 0)
            return dt_wrap(err, "--comm %s", method->name);
        x->grads = staging_host(x->staging);
    }
    if (method->create && method->create(x, err) < 0)
        return dt_wrap(err, "--comm %s", method->name);
    return 0;
}

void exchange_destroy(struct exchange *x)
{
    if (x->method && x->method->destroy)
        x->method->destroy(x);
    staging_destroy(x->staging);
    memset(x, 0, sizeof *x);
}

/* A lone worker has nobody to average with, unless the method has servers to talk to. */
static bool exchanges_nothing(const struct exchange *x)
{
    return x->workers.count == 1 && !x->method->serve;
}

static void on_grads_ready(void *ctx, size_t first)
{
    struct exchange *x = ctx;
    if (x->failed || exchanges_nothing(x))
        return;
    if (x->staging)   /* the method gets the span from the staging thread once it is in host memory */
        staging_out(x->staging, first);
    else if (x->method->grads_ready && x->method->grads_ready(x, first, &x->pending) < 0)
        x->failed = true;
}

struct grads_ready exchange_backward_hook(struct exchange *x)
{
    if (x->method->begin_backward && !exchanges_nothing(x))
        x->method->begin_backward(x);
    if (x->staging && !exchanges_nothing(x))
        staging_begin(x->staging, x->timeline);
    return (struct grads_ready){on_grads_ready, x};
}

static void on_params_needed(void *ctx, size_t first, size_t count)
{
    struct exchange *x = ctx;
    if (!x->failed && !exchanges_nothing(x) && x->method->before_forward(x, first, count, &x->pending) < 0)
        x->failed = true;
}

const struct params_needed *exchange_forward_hook(struct exchange *x)
{
    if (!x->method->before_forward)
        return NULL;
    x->forward_hook = (struct params_needed){on_params_needed, x};
    return &x->forward_hook;
}

int exchange_finish(struct exchange *x, struct dt_err *err)
{
    if (x->failed) {
        *err = x->pending;
        return -1;
    }
    if (exchanges_nothing(x))
        return 0;
    if (x->staging && staging_drain(x->staging, err) < 0)
        return dt_wrap(err, "staging the gradients to the host");
    if (x->method->finish(x, err) < 0)
        return -1;
    /* the means back to the device for the loop's update (a layer-wise method brings each span
     * back itself, just before its update) */
    if (x->staging && !x->method->updates_layerwise && staging_in(x->staging, 0, x->count, err) < 0)
        return dt_wrap(err, "the mean gradients back to the device");
    x->stats.steps++;
    return 0;
}

bool exchange_updates_itself(const struct exchange *x)
{
    return x->method->updates_layerwise && !exchanges_nothing(x);
}

int exchange_settle(struct exchange *x, struct dt_err *err)
{
    if (x->failed) {
        *err = x->pending;
        return -1;
    }
    if (exchange_updates_itself(x) && x->method->settle(x, err) < 0)
        return -1;
    if (x->failed) {   /* a staged span's copy back, during the settle's updates */
        *err = x->pending;
        return -1;
    }
    return 0;
}

int exchange_serve(struct exchange *x, struct dt_err *err)
{
    return x->method->serve(x, err);
}

int exchange_close(struct exchange *x, struct dt_err *err)
{
    return x->method->close && !exchanges_nothing(x) ? x->method->close(x, err) : 0;
}

size_t exchange_partition_bytes(const struct exchange_options *options)
{
    return options->partition_bytes ? options->partition_bytes : (size_t)EXCHANGE_PARTITION_BYTES;
}

size_t exchange_partition_floats(const struct exchange_options *options)
{
    size_t floats = exchange_partition_bytes(options) / sizeof(float);
    return floats ? floats : 1;
}

size_t exchange_credit_bytes(const struct exchange_options *options)
{
    return options->credit_bytes ? options->credit_bytes : (size_t)EXCHANGE_CREDIT_BYTES;
}

void exchange_describe_options(const struct exchange_method *method, const struct exchange_options *options,
                               char *text, size_t size)
{
    size_t used = 0;
    text[0] = '\0';
    if (method->serve && options->ps_colocated)
        used += (size_t)snprintf(text + used, size - used, "servers=colocated ");
    else if (method->serve)
        used += (size_t)snprintf(text + used, size - used, "servers=%d ",
                                 options->ps_servers ? options->ps_servers : EXCHANGE_PS_SERVERS);
    if (exchange_facts(method)->takes_partition && used < size)
        used += (size_t)snprintf(text + used, size - used, "partition=%zu ",
                                 exchange_partition_bytes(options));
    if (exchange_facts(method)->takes_credit && used < size)
        used += (size_t)snprintf(text + used, size - used, "credit=%zu ",
                                 exchange_credit_bytes(options));
    if (exchange_facts(method)->takes_threshold && options->threshold_set && used < size)
        used += (size_t)snprintf(text + used, size - used, "threshold=%zu ", options->threshold_bytes);
    if (used > 0 && used <= size)
        text[used - 1] = '\0';   /* the last separator */
}
