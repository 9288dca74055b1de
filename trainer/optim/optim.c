/* optim.c - SGD with momentum and weight decay, and Adam (see optim.h). */
#include "trainer/optim/optim.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int optim_create(struct optimizer *opt, const char *name, size_t count, struct dt_err *err)
{
    memset(opt, 0, sizeof *opt);
    if (strcmp(name, "sgd") == 0)
        opt->kind = OPTIM_SGD;
    else if (strcmp(name, "adam") == 0)
        opt->kind = OPTIM_ADAM;
    else
        return dt_fail(err, "unknown optimizer \"%s\" (sgd or adam)", name);
    opt->count = count;
    opt->lr = 0.01f;
    opt->beta1 = 0.9f, opt->beta2 = 0.999f, opt->eps = 1e-8f;
    opt->m = calloc(count ? count : 1, sizeof(float));
    opt->v = opt->kind == OPTIM_ADAM ? calloc(count ? count : 1, sizeof(float)) : NULL;
    if (!opt->m || (opt->kind == OPTIM_ADAM && !opt->v)) {
        optim_free(opt);
        return dt_fail(err, "out of memory for the optimizer state (%zu parameters)", count);
    }
    return 0;
}

void optim_free(struct optimizer *opt)
{
    free(opt->m);
    free(opt->v);
    opt->m = opt->v = NULL;
}

static void sgd_update(struct optimizer *opt, float *p, const float *grads, size_t begin, size_t end)
{
    bool first = opt->step == 1;   /* PyTorch starts the momentum buffer at the first gradient */
    for (size_t i = begin; i < end; i++) {
        float g = grads[i] + opt->weight_decay * p[i];
        if (opt->momentum != 0.0f) {
            opt->m[i] = first ? g : opt->momentum * opt->m[i] + g;
            g = opt->m[i];
        }
        p[i] -= opt->lr * g;
    }
}

void optim_adam_scalars(const struct optimizer *opt, float *step_size, float *root2)
{
    double correction1 = 1.0 - pow(opt->beta1, (double)opt->step), correction2 = 1.0 - pow(opt->beta2, (double)opt->step);
    *step_size = (float)(opt->lr / correction1);
    *root2 = (float)sqrt(correction2);
}

static void adam_update(struct optimizer *opt, float *p, const float *grads, size_t begin, size_t end)
{
    float b1 = opt->beta1, b2 = opt->beta2, step_size, root2;
    optim_adam_scalars(opt, &step_size, &root2);
    for (size_t i = begin; i < end; i++) {
        float g = grads[i] + opt->weight_decay * p[i];
        opt->m[i] = b1 * opt->m[i] + (1.0f - b1) * g;
        opt->v[i] = b2 * opt->v[i] + (1.0f - b2) * g * g;
        p[i] -= step_size * opt->m[i] / (sqrtf(opt->v[i]) / root2 + opt->eps);
    }
}

void optim_begin_step(struct optimizer *opt)
{
    opt->step++;
}

void optim_update_range(struct optimizer *opt, float *params, const float *grads, size_t first, size_t count)
{
    if (opt->kind == OPTIM_SGD)
        sgd_update(opt, params, grads, first, first + count);
    else
        adam_update(opt, params, grads, first, first + count);
}

void optim_step(struct optimizer *opt, float *params, const float *grads)
{
    optim_begin_step(opt);
    optim_update_range(opt, params, grads, 0, opt->count);
}
