/* experiment.h - which runs are one experiment. A table averages and compares only runs that
 * differ in nothing but the run itself (job size, hosts, timing): the model, dataset, batch per
 * replica, epochs, step limit, exchange method, backend, threads, optimizer, learning rate, tag and
 * emulation make the experiment's key. A records file that collects a whole study (the sbatch
 * template appends every job to one) is split by that key, and --where KEY=VALUE picks. */
#ifndef EXPERIMENT_H
#define EXPERIMENT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/dt_error.h"
#include "formats/record.h"

/* The key's parts, by the names --where takes. */
enum experiment_field {
    EXP_MODEL, EXP_DATASET, EXP_BATCH, EXP_EPOCHS, EXP_MAX_STEPS, EXP_METHOD, EXP_BACKEND, EXP_THREADS,
    EXP_OPTIMIZER, EXP_LR, EXP_TAG, EXP_EMULATION, EXP_FIELD_COUNT
};

/* "model", "dataset", "batch", ... (what --where KEY=VALUE calls them). */
const char *experiment_field_name(enum experiment_field field);

/* One part of a run's key as text ("64" for the batch; "" for no tag). */
void experiment_value(const struct run_record *r, enum experiment_field field, char *out, size_t size);

/* Whether two runs belong to one experiment. */
bool experiment_same(const struct run_record *a, const struct run_record *b);

/* The same, but for one part of the key (EXP_FIELD_COUNT: none): a line per method compares its
 * runs with the baseline runs of another method. */
bool experiment_same_but(const struct run_record *a, const struct run_record *b, enum experiment_field ignored);

/* The experiments of runs[0..n): *index gets, for each run, its experiment's number, numbered in
 * the order they first appear. Returns how many experiments. */
int experiment_split(const struct run_record *runs, int n, int *index);

/* The heading of a run's experiment: "mlp on fashion-mnist, batch 64 a replica, 2 epochs, bsp-a2a,
 * cpu, 1 thread, sgd lr 0.05" (then ", at most 60 steps", ", tag 1gbit", ", emulated (...)"). */
void experiment_describe(const struct run_record *r, char *out, size_t size);

/* A --where condition. */
struct experiment_where {
    enum experiment_field field;
    char value[320];
};

/* Parses "KEY=VALUE". Returns 0, or -1 with err naming the keys there are. */
int experiment_where_parse(const char *text, struct experiment_where *where, struct dt_err *err);

/* Whether the run meets every condition. */
bool experiment_matches(const struct run_record *r, const struct experiment_where *where, int count);

/* The samples a run trained in its runtime: steps per rank (after the step it resumed at, if it
 * did: its runtime is of those) x batch per replica x workers (parameter servers train nothing).
 * A resumed run so does less work than its peers in its runtime, and a table of it is by rate. */
double experiment_samples(const struct run_record *r);

/* Whether the fewest and the most samples of a set of runs (or of a table's configurations) make
 * the same work: within 5%, as an epoch of a larger job loses up to one global batch to the last
 * partial step. The one rule for records, corrected tables and audits. */
static inline bool experiment_work_agrees(double fewest, double most)
{
    return most <= fewest * 1.05;
}

/* Whether runs[0..count) trained the same samples (experiment_work_agrees). */
bool experiment_same_work(const struct run_record *runs, int count);

#endif
