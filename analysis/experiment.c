/* experiment.c - which runs are one experiment (see experiment.h). */
#include "analysis/experiment.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/methods.h"

static const char *const field_names[EXP_FIELD_COUNT] = {
    [EXP_MODEL] = "model",         [EXP_DATASET] = "dataset", [EXP_BATCH] = "batch",
    [EXP_EPOCHS] = "epochs",       [EXP_MAX_STEPS] = "max-steps", [EXP_METHOD] = "method",
    [EXP_BACKEND] = "backend",     [EXP_THREADS] = "threads", [EXP_OPTIMIZER] = "optimizer",
    [EXP_LR] = "lr",               [EXP_TAG] = "tag",         [EXP_EMULATION] = "emulation",
};

const char *experiment_field_name(enum experiment_field field)
{
    return field_names[field];
}

void experiment_value(const struct run_record *r, enum experiment_field field, char *out, size_t size)
{
    switch (field) {
    case EXP_MODEL: snprintf(out, size, "%s", r->model); break;
    case EXP_DATASET: snprintf(out, size, "%s", r->dataset); break;
    case EXP_BATCH: snprintf(out, size, "%d", r->batch_per_replica); break;
    case EXP_EPOCHS: snprintf(out, size, "%d", r->epochs); break;
    case EXP_MAX_STEPS: snprintf(out, size, "%ld", r->max_steps); break;
    case EXP_METHOD: snprintf(out, size, "%s", r->comm); break;
    case EXP_BACKEND: snprintf(out, size, "%s", r->backend); break;
    case EXP_THREADS: snprintf(out, size, "%d", r->threads); break;
    case EXP_OPTIMIZER: snprintf(out, size, "%s", r->optimizer); break;
    case EXP_LR: snprintf(out, size, "%g", r->lr); break;   /* as the user typed it, near enough */
    case EXP_TAG: snprintf(out, size, "%s", r->tag); break;
    case EXP_EMULATION: snprintf(out, size, "%s", r->emulation); break;
    case EXP_FIELD_COUNT: out[0] = '\0'; break;
    }
}

bool experiment_same(const struct run_record *a, const struct run_record *b)
{
    return experiment_same_but(a, b, EXP_FIELD_COUNT);
}

bool experiment_same_but(const struct run_record *a, const struct run_record *b, enum experiment_field ignored)
{
    for (int f = 0; f < EXP_FIELD_COUNT; f++) {
        if (f == (int)ignored)
            continue;
        char x[320], y[320];
        experiment_value(a, f, x, sizeof x);
        experiment_value(b, f, y, sizeof y);
        if (strcmp(x, y) != 0)
            return false;
    }
    return true;
}

int experiment_split(const struct run_record *runs, int n, int *index)
{
    int count = 0;
    for (int i = 0; i < n; i++) {
        index[i] = -1;
        for (int j = 0; j < i && index[i] < 0; j++)   /* quadratic: studies have hundreds of runs, not millions */
            if (experiment_same(&runs[i], &runs[j]))
                index[i] = index[j];
        if (index[i] < 0)
            index[i] = count++;
    }
    return count;
}

void experiment_describe(const struct run_record *r, char *out, size_t size)
{
    size_t used = (size_t)snprintf(out, size, "%s on %s, batch %d a replica, %d epoch%s", r->model, r->dataset,
                                   r->batch_per_replica, r->epochs, r->epochs == 1 ? "" : "s");
    if (used < size && r->max_steps > 0)
        used += (size_t)snprintf(out + used, size - used, " or %ld steps", r->max_steps);
    if (used < size)
        used += (size_t)snprintf(out + used, size - used, ", %s, %s, %d thread%s, %s lr %g", r->comm, r->backend,
                                 r->threads, r->threads == 1 ? "" : "s", r->optimizer, r->lr);
    if (used < size && r->tag[0])
        used += (size_t)snprintf(out + used, size - used, ", tag %s", r->tag);
    if (used < size && r->emulation[0])
        snprintf(out + used, size - used, ", emulated (%s)", r->emulation);
}

int experiment_where_parse(const char *text, struct experiment_where *where, struct dt_err *err)
{
    const char *equals = strchr(text, '=');
    for (int f = 0; equals && f < EXP_FIELD_COUNT; f++) {
        if (strlen(field_names[f]) != (size_t)(equals - text) || strncmp(text, field_names[f], (size_t)(equals - text)))
            continue;
        if (strlen(equals + 1) >= sizeof where->value)
            return dt_fail(err, "--where \"%.40s...\": the value is too long", text);
        where->field = f;
        snprintf(where->value, sizeof where->value, "%s", equals + 1);
        return 0;
    }
    return dt_fail(err, "--where \"%s\": expected KEY=VALUE with KEY one of model, dataset, batch, epochs, "
                   "max-steps, method, backend, threads, optimizer, lr, tag, emulation", text);
}

bool experiment_matches(const struct run_record *r, const struct experiment_where *where, int count)
{
    for (int i = 0; i < count; i++) {
        char value[320];
        experiment_value(r, where[i].field, value, sizeof value);
        if (where[i].field == EXP_LR ? strtod(value, NULL) != strtod(where[i].value, NULL)
                                     : strcmp(value, where[i].value) != 0)
            return false;
    }
    return true;
}

double experiment_samples(const struct run_record *r)
{
    /* servers train nothing; a resumed run's runtime is of the steps after the resume */
    return (double)(r->steps_per_rank - r->resumed_at_step) * r->batch_per_replica * methods_workers_of(r);
}

bool experiment_same_work(const struct run_record *runs, int count)
{
    double fewest = INFINITY, most = 0;
    for (int i = 0; i < count; i++) {
        fewest = fmin(fewest, experiment_samples(&runs[i]));
        most = fmax(most, experiment_samples(&runs[i]));
    }
    return count == 0 || experiment_work_agrees(fewest, most);
}
