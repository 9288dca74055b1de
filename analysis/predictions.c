/* predictions.c - prediction files, written and read (see predictions.h). */
#include "analysis/predictions.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"

/* The format's name and version, the file's first member: a reader refuses anything else. */
#define PREDICTIONS_FORMAT "dtrain-predictions"
#define PREDICTIONS_VERSION 1

int predictions_add(struct prediction_set *set, const struct predicted_cell *cell)
{
    if (set->count == set->cap) {
        int cap = set->cap ? 2 * set->cap : 16;
        struct predicted_cell *grown = realloc(set->cells, (size_t)cap * sizeof *grown);
        if (!grown)
            return -1;
        set->cells = grown, set->cap = cap;
    }
    set->cells[set->count++] = *cell;
    return 0;
}

static json_t *cell_json(const struct predicted_cell *c)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:i, s:b, s:f, s:f}", "method", c->method, "workers", c->workers, "nodes",
                     c->nodes, "per_node", c->per_node, "servers", c->servers, "colocated", c->colocated,
                     "samples_per_second", c->samples_per_second, "step_seconds", c->step_seconds);
}

static int fill_file(FILE *out, const void *arg)
{
    const struct prediction_set *set = arg;
    json_t *cells = json_array();
    json_t *root = json_pack("{s:s, s:i, s:s, s:s, s:i, s:s, s:s, s:o}", "format", PREDICTIONS_FORMAT, "version",
                             PREDICTIONS_VERSION, "made", set->made, "model", set->model, "batch", set->batch, "tag",
                             set->tag, "profile", set->profile, "cells", cells);
    int rc = root ? 0 : -1;
    for (int i = 0; rc == 0 && i < set->count; i++)
        rc = json_array_append_new(cells, cell_json(&set->cells[i]));
    if (rc == 0)
        rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) < 0 ||
                     fputc('\n', out) == EOF ? -1 : 0;
    json_decref(root);
    return rc;
}

int predictions_write(const char *path, const struct prediction_set *set, struct dt_err *err)
{
    return atomic_write(path, fill_file, set, err);
}

/* A string member into out (size bytes); -1 with err when it is missing, not a string or too long. */
static int take_string(json_t *object, const char *key, char *out, size_t size, const char *where, struct dt_err *err)
{
    json_t *v = json_object_get(object, key);
    if (!json_is_string(v))
        return dt_fail(err, "%s: \"%s\" is missing or not a string", where, key);
    if (strlen(json_string_value(v)) >= size)
        return dt_fail(err, "%s: \"%s\" is longer than %zu bytes", where, key, size - 1);
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

/* An integer member of at least min; -1 with err otherwise. */
static int take_int(json_t *object, const char *key, int min, int *out, const char *where, struct dt_err *err)
{
    json_t *v = json_object_get(object, key);
    if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > 1 << 24)
        return dt_fail(err, "%s: \"%s\" is missing or not a whole number from %d", where, key, min);
    *out = (int)json_integer_value(v);
    return 0;
}

/* A positive finite number member; -1 with err otherwise. */
static int take_rate(json_t *object, const char *key, double *out, const char *where, struct dt_err *err)
{
    json_t *v = json_object_get(object, key);
    if (!json_is_number(v) || !(json_number_value(v) > 0) || json_number_value(v) > 1e300)
        return dt_fail(err, "%s: \"%s\" is missing or not a positive number", where, key);
    *out = json_number_value(v);
    return 0;
}

static int read_cell(json_t *c, int index, const char *path, struct predicted_cell *cell, struct dt_err *err)
{
    char where[600];
    snprintf(where, sizeof where, "%s: cell %d", path, index + 1);
    memset(cell, 0, sizeof *cell);
    if (!json_is_object(c))
        return dt_fail(err, "%s is not an object", where);
    json_t *colocated = json_object_get(c, "colocated");
    if (!json_is_boolean(colocated))
        return dt_fail(err, "%s: \"colocated\" is missing or not true/false", where);
    cell->colocated = json_is_true(colocated);
    return take_string(c, "method", cell->method, sizeof cell->method, where, err) < 0 ||
                   take_int(c, "workers", 1, &cell->workers, where, err) < 0 ||
                   take_int(c, "nodes", 1, &cell->nodes, where, err) < 0 ||
                   take_int(c, "per_node", 1, &cell->per_node, where, err) < 0 ||
                   take_int(c, "servers", 0, &cell->servers, where, err) < 0 ||
                   take_rate(c, "samples_per_second", &cell->samples_per_second, where, err) < 0 ||
                   take_rate(c, "step_seconds", &cell->step_seconds, where, err) < 0
               ? -1 : 0;
}

static int read_root(json_t *root, const char *path, struct prediction_set *set, struct dt_err *err)
{
    char format[64];
    int version;
    if (!json_is_object(root) || take_string(root, "format", format, sizeof format, path, err) < 0 ||
        strcmp(format, PREDICTIONS_FORMAT) != 0)
        return dt_fail(err, "%s: not a prediction file (dtrain-analyze predict --save writes them)", path);
    if (take_int(root, "version", 1, &version, path, err) < 0)
        return -1;
    if (version != PREDICTIONS_VERSION)
        return dt_fail(err, "%s: a prediction file of version %d; this dtrain reads version %d", path, version,
                       PREDICTIONS_VERSION);
    json_t *cells = json_object_get(root, "cells");
    if (take_string(root, "made", set->made, sizeof set->made, path, err) < 0 ||
        take_string(root, "model", set->model, sizeof set->model, path, err) < 0 ||
        take_string(root, "tag", set->tag, sizeof set->tag, path, err) < 0 ||
        take_string(root, "profile", set->profile, sizeof set->profile, path, err) < 0 ||
        take_int(root, "batch", 1, &set->batch, path, err) < 0)
        return -1;
    if (!json_is_array(cells) || json_array_size(cells) == 0)
        return dt_fail(err, "%s: \"cells\" is missing or empty", path);
    for (size_t i = 0; i < json_array_size(cells); i++) {
        struct predicted_cell cell;
        if (read_cell(json_array_get(cells, i), (int)i, path, &cell, err) < 0)
            return -1;
        if (predictions_add(set, &cell) < 0)
            return dt_fail(err, "%s: out of memory", path);
    }
    return 0;
}

int predictions_read(const char *path, struct prediction_set *set, struct dt_err *err)
{
    memset(set, 0, sizeof *set);
    json_error_t why;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &why);
    if (!root)
        return dt_fail(err, "%s: line %d: %s", path, why.line, why.text);
    int rc = read_root(root, path, set, err);
    json_decref(root);
    return rc;
}

void predictions_free(struct prediction_set *set)
{
    free(set->cells);
    memset(set, 0, sizeof *set);
}
