/* compute.c - a step's passes, by the model or by an emulated device (see compute.h). */
#include "trainer/loop/compute.h"

#include "trainer/base/fault.h"
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

const struct compute compute_model = {"model", model_pass_forward, model_pass_backward};
const struct compute compute_emulated = {"emulated", emulated_forward, emulated_backward};

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
