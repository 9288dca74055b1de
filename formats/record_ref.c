/* record_ref.c - the reference reader of run records: jansson builds the line's tree and the
 * fields are taken out of it, plainly. record_parse (record.c) is the fast reader dtrain-analyze
 * uses; tests and tests/fuzz/fuzz_record.c hold it against this one. */
#include "formats/record.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int get_string(json_t *o, const char *key, char *out, size_t size, struct dt_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return dt_fail(err, "field \"%s\" is missing or not a string", key);
    snprintf(out, size, "%s", json_string_value(v));
    return 0;
}

/* A text of any length into the record's own memory (record_own_text). */
static int get_owned(json_t *o, const char *key, char **out, struct dt_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_string(v))
        return dt_fail(err, "field \"%s\" is missing or not a string", key);
    return (*out = record_own_text(json_string_value(v))) ? 0 : dt_fail(err, "out of memory");
}

static int get_number(json_t *o, const char *key, double *out, struct dt_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_number(v))
        return dt_fail(err, "field \"%s\" is missing or not a number", key);
    *out = json_number_value(v);
    return 0;
}

static int get_int(json_t *o, const char *key, long *out, struct dt_err *err)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v))
        return dt_fail(err, "field \"%s\" is missing or not an integer", key);
    *out = (long)json_integer_value(v);
    return 0;
}

static int parse_lists(json_t *o, struct run_record *r, struct dt_err *err)
{
    json_t *hosts = json_object_get(o, "hostnames"), *epochs = json_object_get(o, "epochs_run");
    if (!json_is_array(hosts) || (int)json_array_size(hosts) != r->world_size)
        return dt_fail(err, "field \"hostnames\" is not a list of world_size (%d) names", r->world_size);
    if (!json_is_array(epochs))
        return dt_fail(err, "field \"epochs_run\" is missing or not a list");
    r->epochs_done = (int)json_array_size(epochs);
    r->epoch_seconds = calloc(2 * ((size_t)r->epochs_done + 1), sizeof(double));   /* one block (record.h) */
    r->epoch_accuracy = r->epoch_seconds ? r->epoch_seconds + r->epochs_done + 1 : NULL;
    const char **names = calloc((size_t)r->world_size, sizeof *names);
    if (!names || !r->epoch_seconds)
        return free(names), dt_fail(err, "out of memory");
    for (int i = 0; i < r->world_size; i++) {
        if (!json_is_string(json_array_get(hosts, (size_t)i)))
            return free(names), dt_fail(err, "field \"hostnames\": entry %d is not a string", i);
        names[i] = json_string_value(json_array_get(hosts, (size_t)i));
    }
    int kept = record_keep_hostnames(r, names, r->world_size);
    free(names);
    if (kept < 0)
        return dt_fail(err, "out of memory");
    json_t *compute = json_object_get(o, "rank_compute_us");   /* optional: each rank's compute a step */
    if (compute && !json_is_array(compute))
        return dt_fail(err, "field \"rank_compute_us\" is not a list of whole microseconds");
    for (size_t i = 0; compute && i < json_array_size(compute); i++) {
        json_t *us = json_array_get(compute, i);
        if (!json_is_integer(us) || json_integer_value(us) < 0)
            return dt_fail(err, "field \"rank_compute_us\": entry %zu is not a whole number of microseconds", i);
    }
    if (compute && (int)json_array_size(compute) != r->world_size)
        return dt_fail(err, "field \"rank_compute_us\" is not a list of world_size (%d) times", r->world_size);
    if (compute && !(r->rank_compute_read = malloc((size_t)r->world_size * sizeof(double))))
        return dt_fail(err, "out of memory");
    for (int i = 0; compute && i < r->world_size; i++)
        r->rank_compute_read[i] = (double)json_integer_value(json_array_get(compute, (size_t)i)) / 1000;
    for (int e = 0; e < r->epochs_done; e++) {
        json_t *item = json_array_get(epochs, (size_t)e), *acc = json_object_get(item, "test_accuracy");
        if (get_number(item, "seconds", &r->epoch_seconds[e], err) < 0)
            return dt_wrap(err, "epochs_run[%d]", e);
        if (!json_is_null(acc) && !json_is_number(acc))
            return dt_fail(err, "epochs_run[%d]: field \"test_accuracy\" is not a number or null", e);
        r->epoch_accuracy[e] = json_is_null(acc) ? -1 : json_number_value(acc);
    }
    return 0;
}

int record_parse_reference(const char *line, struct run_record *r, struct dt_err *err)
{
    memset(r, 0, sizeof *r);
    json_error_t jerr;
    json_t *o = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        return dt_fail(err, "not a JSON object (%s at column %d)", jerr.text, jerr.column);
    }
    long version = 0, nodes = 0, gpus = 0, world = 0, batch = 0, epochs = 0, steps = 0, threads = 0, resumed = 0;
    int rc = get_int(o, "record_version", &version, err);
    if (rc == 0 && (version < 1 || version > RECORD_VERSION))
        rc = dt_fail(err, "record_version %ld is not 1 to %d (a newer dtrain wrote it?)", version, RECORD_VERSION);
    /* || stops at the first wrong field, so err names that one (| named the last) */
    if (rc == 0)
        rc = (get_string(o, "dtrain_version", r->version, sizeof r->version, err) ||
             get_string(o, "job_id", r->job_id, sizeof r->job_id, err) ||
             get_owned(o, "job_name", &r->job_name, err) ||
             get_string(o, "step_id", r->step_id, sizeof r->step_id, err) ||
             get_string(o, "model", r->model, sizeof r->model, err) ||
             get_string(o, "dataset", r->dataset, sizeof r->dataset, err) ||
             get_string(o, "optimizer", r->optimizer, sizeof r->optimizer, err) ||
             get_string(o, "comm", r->comm, sizeof r->comm, err) ||
             get_string(o, "backend", r->backend, sizeof r->backend, err) ||
             get_string(o, "start_time", r->start_time, sizeof r->start_time, err) ||
             get_string(o, "end_time", r->end_time, sizeof r->end_time, err) ||
             get_string(o, "exit_state", r->exit_state, sizeof r->exit_state, err) ||
             get_owned(o, "error", &r->error, err)) ? -1 : 0;
    if (rc == 0)
        rc = (get_int(o, "nodes", &nodes, err) || get_int(o, "gpus_per_node", &gpus, err) ||
             get_int(o, "world_size", &world, err) || get_int(o, "batch_per_replica", &batch, err) ||
             get_int(o, "epochs", &epochs, err) || get_int(o, "steps_per_rank", &steps, err) ||
             get_int(o, "threads", &threads, err) || get_int(o, "resumed", &resumed, err) ||
             get_number(o, "lr", &r->lr, err) || get_number(o, "runtime_seconds", &r->runtime_seconds, err) ||
             get_number(o, "peak_data_per_sec", &r->peak_data_per_sec, err) ||
             get_number(o, "final_data_per_sec", &r->final_data_per_sec, err)) ? -1 : 0;
    if (rc == 0 && (world < 1 || nodes < 1 || nodes > world))
        rc = dt_fail(err, "world_size %ld and nodes %ld do not make a job", world, nodes);
    r->nodes = (int)nodes, r->gpus_per_node = (int)gpus, r->world_size = (int)world, r->batch_per_replica = (int)batch;
    r->epochs = (int)epochs, r->steps_per_rank = steps, r->threads = (int)threads, r->resumed = (int)resumed;
    if (rc == 0)
        rc = parse_lists(o, r, err);
    if (rc == 0 && !json_is_string(json_object_get(o, "nodelist")))
        rc = dt_fail(err, "field \"nodelist\" is missing or not a string");
    if (rc == 0)
        rc = get_owned(o, "nodelist", &r->nodelist, err);
    /* tag came after version 1's first records: absent means none */
    if (rc == 0 && json_object_get(o, "tag"))
        rc = get_owned(o, "tag", &r->tag, err);
    /* version 2's: absent (version 1) means none */
    if (rc == 0 && json_object_get(o, "comm_options"))
        rc = get_owned(o, "comm_options", &r->comm_options, err);
    /* emulated runs came later: absent means a real run */
    if (rc == 0 && json_object_get(o, "emulation"))
        rc = get_owned(o, "emulation", &r->emulation, err);
    if (rc == 0 && json_object_get(o, "replaced"))   /* came with the template's spares */
        rc = get_owned(o, "replaced", &r->replaced, err);
    /* came with the analyzer's experiments: absent means no step limit was recorded */
    if (rc == 0 && json_object_get(o, "max_steps"))
        rc = get_int(o, "max_steps", &r->max_steps, err);
    /* came with the language models: absent means 0 */
    if (rc == 0 && json_object_get(o, "tokens_per_sec"))
        rc = get_number(o, "tokens_per_sec", &r->tokens_per_sec, err);
    /* came with the study's resumed runs: absent means from the start */
    if (rc == 0 && json_object_get(o, "resumed_at_step"))
        rc = get_int(o, "resumed_at_step", &r->resumed_at_step, err);
    json_decref(o);
    char **texts[] = {&r->job_name, &r->error, &r->tag, &r->comm_options, &r->emulation, &r->replaced};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)   /* absent: none */
        *texts[i] = *texts[i] ? *texts[i] : record_no_text;
    if (rc == 0)
        rc = record_check_sense(r, err);
    if (rc < 0)
        record_free(r);
    else
        record_upgrade(r, version);
    return rc < 0 ? -1 : 0;
}
