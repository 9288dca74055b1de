/* profile.c - per-layer step costs, written and read as JSON (see profile.h); what needs the
 * model itself is profile_model.c's, so the analyzer reads profiles without the trainer. */
#include "formats/profile.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"

void profile_free(struct profile *p)
{
    free(p->names);
    free(p->params);
    free(p->forward);
    free(p->backward);
    memset(p, 0, sizeof *p);
}

double profile_compute_seconds(const struct profile *p)
{
    double sum = p->update;
    for (int l = 0; l < p->layers; l++)
        sum += p->forward[l] + p->backward[l];
    return sum;
}

static int write_profile_body(FILE *out, const void *arg)
{
    const struct profile *p = arg;
    json_t *layers = json_array();
    for (int l = 0; l < p->layers; l++)
        json_array_append_new(layers, json_pack("{s:s, s:I, s:f, s:f}", "name", p->names[l], "params",
                                                (json_int_t)p->params[l], "forward_seconds", p->forward[l],
                                                "backward_seconds", p->backward[l]));
    json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:s, s:i, s:I, s:f, s:f, s:o}", "format", PROFILE_FORMAT, "version",
                          PROFILE_VERSION, "model", p->model, "device", p->device, "backend", p->backend, "batch",
                          p->batch, "steps", (json_int_t)p->steps, "update_seconds", p->update, "step_seconds",
                          p->step, "layers", layers);
    int rc = o && json_dumpf(o, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) == 0 && fputc('\n', out) != EOF ? 0 : -1;
    json_decref(o);
    return rc;
}

int profile_write(const struct profile *p, const char *path, struct dt_err *err)
{
    return atomic_write(path, write_profile_body, p, err) < 0 ? dt_wrap(err, "--profile-out") : 0;
}

/* A time: a number, finite, not negative. */
static int seconds_of(json_t *o, const char *key, double *out)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
        return -1;
    *out = json_number_value(v);
    return 0;
}

static int copy_text(json_t *o, const char *key, char *out, size_t size)
{
    const char *v = json_string_value(json_object_get(o, key));
    if (!v || strlen(v) >= size)
        return -1;
    memcpy(out, v, strlen(v) + 1);
    return 0;
}

static int read_layer(json_t *e, struct profile *p, int l)
{
    json_t *params = json_object_get(e, "params");
    if (copy_text(e, "name", p->names[l], sizeof p->names[l]) < 0 || !json_is_integer(params) ||
        json_integer_value(params) < 0 || json_integer_value(params) > PROFILE_MAX_LAYER_PARAMS ||
        seconds_of(e, "forward_seconds", &p->forward[l]) < 0 ||
        seconds_of(e, "backward_seconds", &p->backward[l]) < 0)
        return -1;
    p->params[l] = (size_t)json_integer_value(params);
    return 0;
}

static int read_object(json_t *o, struct profile *p, const char *path, struct dt_err *err)
{
    json_t *layers = json_object_get(o, "layers"), *batch = json_object_get(o, "batch"),
           *steps = json_object_get(o, "steps");
    const char *format = json_string_value(json_object_get(o, "format"));
    if (!format || strcmp(format, PROFILE_FORMAT) != 0)
        return dt_fail(err, "%s: not a profile (no \"format\": \"%s\"; dtrain-train --profile-out writes them)", path,
                       PROFILE_FORMAT);
    if (json_integer_value(json_object_get(o, "version")) != PROFILE_VERSION)
        return dt_fail(err, "%s: profile version %lld, this dtrain reads %d", path,
                       (long long)json_integer_value(json_object_get(o, "version")), PROFILE_VERSION);
    if (copy_text(o, "model", p->model, sizeof p->model) < 0 || copy_text(o, "device", p->device, sizeof p->device) < 0 ||
        copy_text(o, "backend", p->backend, sizeof p->backend) < 0 || !json_is_integer(batch) ||
        json_integer_value(batch) < 1 || json_integer_value(batch) > 1 << 20 || !json_is_integer(steps) ||
        seconds_of(o, "update_seconds", &p->update) < 0 || seconds_of(o, "step_seconds", &p->step) < 0 ||
        !json_is_array(layers) || json_array_size(layers) < 1 || json_array_size(layers) > 1 << 16)
        return dt_fail(err, "%s: a field of the profile is missing or wrong (model, device, backend, batch 1 or "
                       "more, steps, update_seconds and step_seconds 0 or more, layers a list)", path);
    p->batch = (int)json_integer_value(batch);
    p->steps = (long)json_integer_value(steps);
    p->layers = (int)json_array_size(layers);
    size_t n = (size_t)p->layers;
    p->names = calloc(n, sizeof *p->names);
    p->params = calloc(n, sizeof *p->params);
    p->forward = calloc(n, sizeof *p->forward);
    p->backward = calloc(n, sizeof *p->backward);
    if (!p->names || !p->params || !p->forward || !p->backward)
        return dt_fail(err, "out of memory");
    for (int l = 0; l < p->layers; l++)
        if (read_layer(json_array_get(layers, (size_t)l), p, l) < 0)
            return dt_fail(err, "%s: layer %d: name, params (0 or more), forward_seconds and backward_seconds (0 or "
                           "more) are needed", path, l);
    return 0;
}

int profile_read(const char *path, struct profile *p, struct dt_err *err)
{
    memset(p, 0, sizeof *p);
    json_error_t jerr;
    json_t *o = json_load_file(path, 0, &jerr);
    if (!o)
        return dt_fail(err, "%s:%d: not a profile (%s)", path, jerr.line, jerr.text);
    int rc = json_is_object(o) ? read_object(o, p, path, err) : dt_fail(err, "%s: not a profile (a JSON object)", path);
    json_decref(o);
    if (rc < 0)
        profile_free(p);
    return rc;
}
