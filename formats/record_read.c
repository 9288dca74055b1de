/* record_read.c - the run-record reader (record_parse, record.h): one pass over a line with
 * json_read, each member's value going straight to its field of struct run_record. */
#include "formats/record.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/json_read.h"

/* The fast reader: one pass over the line with json_read, each member's value going straight to
 * its field. Members may come in any order; unknown ones are checked as JSON and passed over (a
 * newer dtrain may add fields); a known one twice is an error, as jansson's REJECT_DUPLICATES was. */

/* Integer fields are read into longs first: the record keeps some as int. */
struct whole_fields {
    long version, nodes, gpus, world, batch, epochs, steps, threads, resumed, max_steps, resumed_at_step;
    int compute_ranks;   /* entries of rank_compute_us (-1: none) */
};

enum field_kind { FIELD_TEXT, FIELD_OWNED_TEXT, FIELD_WHOLE, FIELD_REAL, FIELD_HOSTS, FIELD_EPOCHS, FIELD_COMPUTE };

struct field {
    const char *name;
    enum field_kind kind;
    size_t offset, size;   /* into run_record (text, real) or whole_fields (whole) */
    int optional;
};

#define TEXT(name, member) {name, FIELD_TEXT, offsetof(struct run_record, member), sizeof(((struct run_record *)0)->member), 0}
#define OWNED(name, member, optional) {name, FIELD_OWNED_TEXT, offsetof(struct run_record, member), 0, optional}
#define WHOLE(name, member) {name, FIELD_WHOLE, offsetof(struct whole_fields, member), 0, 0}
#define REAL(name, member) {name, FIELD_REAL, offsetof(struct run_record, member), 0, 0}

/* In the order dtrain writes them (field_named's guess), which is also the order in which a
 * missing one is reported. */
static const struct field fields[] = {
    WHOLE("record_version", version), TEXT("dtrain_version", version), TEXT("job_id", job_id),
    OWNED("job_name", job_name, 0), TEXT("step_id", step_id), OWNED("nodelist", nodelist, 0), WHOLE("nodes", nodes),
    WHOLE("gpus_per_node", gpus), WHOLE("world_size", world), {"hostnames", FIELD_HOSTS, 0, 0, 0},
    TEXT("model", model), TEXT("dataset", dataset), TEXT("optimizer", optimizer), REAL("lr", lr),
    WHOLE("batch_per_replica", batch), WHOLE("epochs", epochs), WHOLE("steps_per_rank", steps), TEXT("comm", comm),
    TEXT("backend", backend), WHOLE("threads", threads), REAL("runtime_seconds", runtime_seconds),
    REAL("peak_data_per_sec", peak_data_per_sec), REAL("final_data_per_sec", final_data_per_sec),
    {"epochs_run", FIELD_EPOCHS, 0, 0, 0}, TEXT("start_time", start_time), TEXT("end_time", end_time),
    TEXT("exit_state", exit_state), OWNED("error", error, 0), WHOLE("resumed", resumed),
    /* tag came after version 1's first records: absent means none */
    OWNED("tag", tag, 1),
    /* version 2's: absent (version 1) means none */
    OWNED("comm_options", comm_options, 1),
    /* emulated runs came later: absent means a real run */
    OWNED("emulation", emulation, 1),
    /* the template's spares came later: absent means none took over */
    OWNED("replaced", replaced, 1),
    /* came with the analyzer's experiments: absent means no step limit was recorded */
    {"max_steps", FIELD_WHOLE, offsetof(struct whole_fields, max_steps), 0, 1},
    /* came with the language models: absent means 0 (an image model, or an older record) */
    {"tokens_per_sec", FIELD_REAL, offsetof(struct run_record, tokens_per_sec), 0, 1},
    /* came with the study's resumed runs: absent means from the start (older records' runtimes of
     * resumed runs were the last part's too, unknown how long) */
    {"resumed_at_step", FIELD_WHOLE, offsetof(struct whole_fields, resumed_at_step), 0, 1},
    /* came with the straggler report: each rank's compute a step, in whole microseconds */
    {"rank_compute_us", FIELD_COMPUTE, 0, 0, 1},
};
enum { FIELD_COUNT = sizeof fields / sizeof fields[0] };

static const char *kind_name(enum field_kind kind)
{
    return kind == FIELD_TEXT || kind == FIELD_OWNED_TEXT ? "a string" : kind == FIELD_WHOLE ? "an integer" : kind == FIELD_REAL ? "a number" : "a list";
}

static int wrong_type(struct dt_err *err, const struct field *f)
{
    return dt_fail(err, "field \"%s\" is missing or not %s", f->name, kind_name(f->kind));
}

/* A string of any length, into memory of its own: the first reading measures it, the second
 * copies it (strings are short; this spares a scratch buffer). */
static int read_owned_string(struct json_reader *in, char **out)
{
    const char *start = in->at;
    long length = json_read_string(in, NULL, 0);
    if (length < 0)
        return -1;
    char *text = malloc((size_t)length + 1);
    if (!text)
        return dt_fail(in->err, "out of memory");
    in->at = start;
    json_read_string(in, text, (size_t)length + 1);
    if (!text[0])   /* most records' error, many a tag: one shared "" (record_free knows it) */
        free(text), text = record_no_text;
    *out = text;
    return 0;
}

/* The host names, one per rank, as one block (record_keep_hostnames' layout), read the same way:
 * checked and measured, then copied. Their count is held against world_size at the end. */
static int read_hostnames(struct json_reader *in, struct run_record *r, int *count)
{
    int index = 0, more;
    size_t bytes = 0;
    if (json_peek(in) != JSON_KIND_ARRAY)
        return dt_fail(in->err, "field \"hostnames\" is not a list of host names");
    const char *start = in->at;
    json_array_begin(in);
    while ((more = json_array_next(in, &index)) == 1) {
        if (json_peek(in) != JSON_KIND_STRING)
            return dt_fail(in->err, "field \"hostnames\": entry %d is not a string", index - 1);
        long length = json_read_string(in, NULL, 0);
        if (length < 0)
            return -1;
        bytes += (size_t)length + 1;
    }
    if (more < 0)
        return -1;
    const char *end = in->at;
    char **block = malloc((size_t)index * sizeof(char *) + bytes + 1);
    if (!block)
        return dt_fail(in->err, "out of memory");
    char *next = (char *)(block + index);
    in->at = start;
    json_array_begin(in);
    for (int i = 0; json_array_next(in, &i) == 1;) {
        block[i - 1] = next;
        next += json_read_string(in, next, bytes) + 1;
    }
    in->at = end;
    r->hostnames = block;
    *count = index;
    return 0;
}

/* rank_compute_us: a list of whole microseconds, one a rank, into r->rank_compute_read (ms);
 * *count their number, held against world_size at the end. */
static int read_rank_compute(struct json_reader *in, struct run_record *r, int *count)
{
    int index = 0, more, cap = 0;
    double *ms = NULL;
    if (json_array_begin(in) < 0)
        return dt_fail(in->err, "field \"rank_compute_us\" is not a list of whole microseconds");
    while ((more = json_array_next(in, &index)) == 1) {
        struct json_number n;
        if (json_peek(in) != JSON_KIND_NUMBER || json_read_number(in, &n) < 0 || !n.is_integer || n.integer < 0)
            return free(ms), dt_fail(in->err, "field \"rank_compute_us\": entry %d is not a whole number of "
                                     "microseconds", index - 1);
        if (index > cap) {
            cap = cap ? 2 * cap : 64;
            double *grown = realloc(ms, (size_t)cap * sizeof *grown);
            if (!grown)
                return free(ms), dt_fail(in->err, "out of memory");
            ms = grown;
        }
        ms[index - 1] = (double)n.integer / 1000;
    }
    if (more < 0)
        return free(ms), -1;
    double *fitted = index > 0 && index < cap ? realloc(ms, (size_t)index * sizeof *ms) : NULL;   /* a million records */
    free(r->rank_compute_read);
    r->rank_compute_read = fitted ? fitted : ms, *count = index;
    return 0;
}

/* One of epochs_run: {"epoch": E, "seconds": S, "test_accuracy": A or null}. */
static int read_epoch(struct json_reader *in, double *seconds, double *accuracy)
{
    char key[32];
    int index = 0, more, have_seconds = 0, have_accuracy = 0;
    struct json_number number;
    if (json_peek(in) != JSON_KIND_OBJECT)
        return dt_fail(in->err, "field \"seconds\" is missing or not a number");
    json_object_begin(in);
    while ((more = json_object_next(in, &index, key, sizeof key)) == 1) {
        int *seen = strcmp(key, "seconds") == 0 ? &have_seconds : strcmp(key, "test_accuracy") == 0 ? &have_accuracy : NULL;
        if (seen && (*seen)++)
            return dt_fail(in->err, "field \"%s\" given twice", key);
        if (seen == &have_seconds) {
            if (json_peek(in) != JSON_KIND_NUMBER)
                return dt_fail(in->err, "field \"seconds\" is missing or not a number");
            if (json_read_number(in, &number) < 0)
                return -1;
            *seconds = number.value;
        } else if (seen == &have_accuracy && json_peek(in) == JSON_KIND_NULL) {
            if (json_read_null(in) < 0)
                return -1;
            *accuracy = -1;
        } else if (seen == &have_accuracy) {
            if (json_peek(in) != JSON_KIND_NUMBER)
                return dt_fail(in->err, "field \"test_accuracy\" is not a number or null");
            if (json_read_number(in, &number) < 0)
                return -1;
            *accuracy = number.value;
        } else if (json_skip_value(in) < 0) {
            return -1;
        }
    }
    if (more == 0 && !have_seconds)
        return dt_fail(in->err, "field \"seconds\" is missing or not a number");
    if (more == 0 && !have_accuracy)
        return dt_fail(in->err, "field \"test_accuracy\" is not a number or null");
    return more;
}

/* Room for cap epochs in one block (record.h: the seconds, then the accuracies), the `have` read so
 * far moved into it. 0, or -1 out of memory. */
static int grow_epochs(struct run_record *r, int have, int cap)
{
    double *block = malloc(2 * (size_t)cap * sizeof *block);
    if (!block)
        return -1;
    if (have > 0) {
        memcpy(block, r->epoch_seconds, (size_t)have * sizeof *block);
        memcpy(block + cap, r->epoch_accuracy, (size_t)have * sizeof *block);
    }
    free(r->epoch_seconds);
    r->epoch_seconds = block, r->epoch_accuracy = block + cap;
    return 0;
}

static int read_epochs(struct json_reader *in, struct run_record *r)
{
    int index = 0, more, cap = 0;
    if (json_peek(in) != JSON_KIND_ARRAY)
        return dt_fail(in->err, "field \"epochs_run\" is missing or not a list");
    json_array_begin(in);
    while ((more = json_array_next(in, &index)) == 1) {
        if (index > cap && grow_epochs(r, index - 1, cap = cap ? 2 * cap : 16) < 0)
            return dt_fail(in->err, "out of memory");
        if (read_epoch(in, &r->epoch_seconds[index - 1], &r->epoch_accuracy[index - 1]) < 0)
            return dt_wrap(in->err, "epochs_run[%d]", index - 1);
    }
    r->epochs_done = index;
    if (more == 0 && index > 0 && index < cap)   /* fitted: a million records are held at once */
        grow_epochs(r, index, index);
    return more;
}

static int read_field(struct json_reader *in, const struct field *f, struct run_record *r, struct whole_fields *w,
                      int *host_count)
{
    struct json_number number;
    switch (f->kind) {
    case FIELD_TEXT:
        if (json_peek(in) != JSON_KIND_STRING)
            return wrong_type(in->err, f);
        return json_read_string(in, (char *)r + f->offset, f->size) < 0 ? -1 : 0;
    case FIELD_OWNED_TEXT:
        if (json_peek(in) != JSON_KIND_STRING)
            return wrong_type(in->err, f);
        return read_owned_string(in, (char **)((char *)r + f->offset));
    case FIELD_WHOLE:
    case FIELD_REAL:
        if (json_peek(in) != JSON_KIND_NUMBER)
            return wrong_type(in->err, f);
        if (json_read_number(in, &number) < 0)
            return -1;
        if (f->kind == FIELD_REAL)
            return *(double *)((char *)r + f->offset) = number.value, 0;
        if (!number.is_integer)
            return wrong_type(in->err, f);
        *(long *)((char *)w + f->offset) = (long)number.integer;
        if (f->offset == offsetof(struct whole_fields, version) && (w->version < 1 || w->version > RECORD_VERSION))
            return dt_fail(in->err, "record_version %ld is not 1 to %d (a newer dtrain wrote it?)", w->version,
                           RECORD_VERSION);
        return 0;
    case FIELD_HOSTS: return read_hostnames(in, r, host_count);
    case FIELD_EPOCHS: return read_epochs(in, r);
    case FIELD_COMPUTE: return read_rank_compute(in, r, &w->compute_ranks);
    }
    return -1;
}

/* The field of a key; dtrain writes them in one order, so the one after the last found is tried
 * first. */
static const struct field *field_named(const char *key, const struct field *last)
{
    if (last && last + 1 < fields + FIELD_COUNT && strcmp(last[1].name, key) == 0)
        return last + 1;
    for (int i = 0; i < FIELD_COUNT; i++)
        if (strcmp(fields[i].name, key) == 0)
            return &fields[i];
    return NULL;
}

/* The record's members, each once; the whole-number fields land in w. */
static int read_members(struct json_reader *in, struct run_record *r, struct whole_fields *w, int *host_count)
{
    char key[32];
    int index = 0, more;
    unsigned long seen = 0;
    const struct field *last = NULL;
    if (json_peek(in) != JSON_KIND_OBJECT)
        return dt_fail(in->err, "not a JSON object (it starts at column %ld with '%.1s')", (long)(in->at - in->text) + 1,
                       in->at);
    json_object_begin(in);
    while ((more = json_object_next(in, &index, key, sizeof key)) == 1) {
        const struct field *f = field_named(key, last);
        if (!f) {
            if (json_skip_value(in) < 0)
                return -1;
            continue;
        }
        unsigned long bit = 1ul << (f - fields);
        if (seen & bit)
            return dt_fail(in->err, "field \"%s\" given twice", f->name);
        seen |= bit, last = f;
        if (read_field(in, f, r, w, host_count) < 0)
            return -1;
    }
    if (more < 0 || json_read_end(in) < 0)
        return -1;
    for (int i = 0; i < FIELD_COUNT; i++)
        if (!(seen & 1ul << i) && !fields[i].optional)
            return wrong_type(in->err, &fields[i]);
    return 0;
}

int record_parse(const char *line, struct run_record *r, struct dt_err *err)
{
    memset(r, 0, sizeof *r);
    struct whole_fields w = {.compute_ranks = -1};
    struct json_reader in;
    int host_count = 0;
    json_reader_init(&in, line, err);
    int rc = read_members(&in, r, &w, &host_count);
    if (rc == 0 && (w.world < 1 || w.nodes < 1 || w.nodes > w.world))
        rc = dt_fail(err, "world_size %ld and nodes %ld do not make a job", w.world, w.nodes);
    if (rc == 0 && host_count != w.world)
        rc = dt_fail(err, "field \"hostnames\" is not a list of world_size (%ld) names", w.world);
    if (rc == 0 && w.compute_ranks >= 0 && w.compute_ranks != w.world)
        rc = dt_fail(err, "field \"rank_compute_us\" is not a list of world_size (%ld) times", w.world);
    r->nodes = (int)w.nodes, r->gpus_per_node = (int)w.gpus, r->world_size = (int)w.world, r->batch_per_replica = (int)w.batch;
    r->epochs = (int)w.epochs, r->steps_per_rank = w.steps, r->threads = (int)w.threads, r->resumed = (int)w.resumed;
    r->max_steps = w.max_steps, r->resumed_at_step = w.resumed_at_step;
    for (int i = 0; i < FIELD_COUNT; i++) {   /* an optional text absent: none */
        char **text = (char **)((char *)r + fields[i].offset);
        if (fields[i].kind == FIELD_OWNED_TEXT && !*text)
            *text = record_no_text;
    }
    if (rc == 0)
        rc = record_check_sense(r, err);
    if (rc < 0)
        record_free(r);
    else
        record_upgrade(r, w.version);
    return rc;
}

