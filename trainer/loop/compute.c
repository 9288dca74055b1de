/* compute.c - a step's passes, check and update, by the model on the CPU or a GPU or by an
 * emulated device (see compute.h). */
#include "trainer/loop/compute.h"

#include "trainer/base/fault.h"
#include "trainer/loop/device.h"
#include "trainer/loop/run.h"

static double model_pass_forward(struct run *r, const struct batch *b, const struct params_needed *need)
{
    return model_forward(&r->model, r->be, &r->ws, run_params(r), run_buffers(r), b, true, need, NULL);
}

static void model_pass_backward(struct run *r, int n, const struct grads_ready *ready)
{
    backend_zero(r->be, run_grads(r), r->model.num_params * sizeof(float));
    model_backward_notify(&r->model, r->be, &r->ws, run_params(r), run_grads(r), n, ready);
}

static double emulated_forward(struct run *r, const struct batch *b, const struct params_needed *need)
{
    (void)b;
    return emulate_forward(&r->emu, need);
}

/* An emulated run's gradients stay zero: nothing writes them but the exchange's sums. */
static void emulated_backward(struct run *r, int n, const struct grads_ready *ready)
{
    (void)n;
    emulate_backward(&r->emu, ready);
}

static int host_check(const struct run *r, struct dt_err *err)
{
    (void)r, (void)err;
    return 0;   /* a CPU backend's failures are returned where they happen */
}

static void host_begin_update(struct run *r, bool counted)
{
    if (!counted)
        optim_begin_step(&r->opt);
}

static void host_update(struct run *r, size_t first, size_t count)
{
    optim_update_range(&r->opt, r->params, r->grads, first, count);
}

static void emulated_update(struct run *r, size_t first, size_t count)
{
    (void)first;
    emulate_update(&r->emu, count);
}

const struct compute compute_host = {"model", model_pass_forward, model_pass_backward, host_check, host_begin_update,
                                     host_update};
const struct compute compute_gpu = {"model on a GPU", model_pass_forward, model_pass_backward, device_check,
                                    device_begin_update, device_update_range};
const struct compute compute_emulated = {"emulated", emulated_forward, emulated_backward, host_check,
                                         host_begin_update, emulated_update};

double compute_forward(struct run *r, const struct batch *b)
{
    fault_slow_compute(r->workers.rank);
    const struct params_needed *need = trace_forward(&r->trace, exchange_forward_hook(&r->exchange));
    double loss = r->compute->forward(r, b, need);
    trace_forward_done(&r->trace);
    return loss;
}

void compute_backward(struct run *r, int n)
{
    struct grads_ready hook = trace_backward(&r->trace, exchange_backward_hook(&r->exchange));
    r->compute->backward(r, n, &hook);
}

int compute_check(const struct run *r, struct dt_err *err)
{
    return r->compute->check(r, err);
}

void compute_begin_update(struct run *r, bool counted)
{
    r->compute->begin_update(r, counted);
}

void compute_update(struct run *r, size_t first, size_t count)
{
    r->compute->update(r, first, count);
}
