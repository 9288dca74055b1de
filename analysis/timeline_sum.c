/* timeline_sum.c - sums of dtrain-train's Chrome traces (see timeline_sum.h). A step is a span of
 * category "step" named "step N"; the phases inside it are the spans "forward", "backward",
 * "exchange", "update" of that category; transfers are the exchange lane's "iallreduce", "push"
 * and "allreduce" events, and the communication thread's spans of category "transfer"; a
 * layer-wise method's waits and updates inside the forward pass ("layer wait", "layer update")
 * count as exchange wait and update (formats/FORMAT.md describes the file). */
#include "analysis/timeline_sum.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct event {
    const char *cat, *name;
    double ts, dur;            /* us; dur 0 for instants */
};

static int read_event(json_t *e, struct event *out)
{
    json_t *cat = json_object_get(e, "cat"), *name = json_object_get(e, "name"), *ts = json_object_get(e, "ts");
    if (!json_is_string(cat) || !json_is_string(name) || !json_is_number(ts))
        return -1;   /* metadata events have none of these */
    *out = (struct event){json_string_value(cat), json_string_value(name), json_number_value(ts),
                          json_number_value(json_object_get(e, "dur"))};
    return 0;
}

static bool is_transfer(const struct event *e)
{
    if (strcmp(e->cat, "transfer") == 0)   /* the thread's: spans, beside "ready" instants */
        return strcmp(e->name, "ready") != 0;
    return strcmp(e->cat, "exchange") == 0 &&
           (strcmp(e->name, "iallreduce") == 0 || strcmp(e->name, "push") == 0 || strcmp(e->name, "allreduce") == 0);
}

/* A trace's events by time, so that a step's are found by a binary search and read once: a
 * scan of every event for every step took 89 s for 4,000 steps and never ended for 16,000. */
struct events {
    struct event *at;
    size_t count;
};

static int by_time(const void *a, const void *b)
{
    double x = ((const struct event *)a)->ts, y = ((const struct event *)b)->ts;
    return (x > y) - (x < y);
}

/* The first event at or after ts. */
static size_t first_at(const struct events *all, double ts)
{
    size_t lo = 0, hi = all->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (all->at[mid].ts < ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* When the step's backward pass began and ended (-1 when it has none): the last such span in
 * [first, past). */
static void backward_of(const struct events *all, size_t first, size_t past, double *start, double *finish)
{
    *start = *finish = -1;
    for (size_t i = first; i < past; i++) {
        const struct event *ev = &all->at[i];
        if (strcmp(ev->cat, "step") == 0 && strcmp(ev->name, "backward") == 0)
            *start = ev->ts, *finish = ev->ts + ev->dur;
    }
}

/* Adds the events that begin inside step [begin, end) to sum's totals (the next step's first span
 * may begin the very microsecond this one ends). The exchange under way during
 * backward runs from the first transfer started in backward to its end (a layer-wise method's
 * transfers of the step before, started during this forward pass, do not count). */
static void add_step(const struct events *all, double begin, double end, struct timeline_sum *sum)
{
    size_t first = first_at(all, begin), past = first;
    while (past < all->count && all->at[past].ts < end)
        past++;
    double backward_start, backward_end, first_transfer = -1;
    backward_of(all, first, past, &backward_start, &backward_end);
    for (size_t i = first; i < past; i++) {
        const struct event *ev = &all->at[i];
        if (strcmp(ev->cat, "step") == 0) {
            double ms = ev->dur / 1000;
            if (strcmp(ev->name, "forward") == 0)
                sum->forward += ms;
            else if (strcmp(ev->name, "backward") == 0)
                sum->backward += ms;
            else if (strcmp(ev->name, "exchange") == 0)
                sum->exchange += ms;
            else if (strcmp(ev->name, "update") == 0)
                sum->update += ms;
        } else if (strcmp(ev->cat, "exchange") == 0 && strcmp(ev->name, "layer wait") == 0) {
            sum->exchange += ev->dur / 1000;
        } else if (strcmp(ev->cat, "exchange") == 0 && strcmp(ev->name, "layer update") == 0) {
            sum->update += ev->dur / 1000;
        } else if (is_transfer(ev)) {
            sum->transfers++;
            if (ev->ts >= backward_start && (first_transfer < 0 || ev->ts < first_transfer))
                first_transfer = ev->ts;
        }
    }
    if (first_transfer >= 0 && backward_end > first_transfer)
        sum->overlap += (backward_end - first_transfer) / 1000;
}

static int by_name_then_time(const void *a, const void *b)
{
    const struct transfer_start *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The trace's transfer spans' names and starts into sum, by name then time (the k-th start of a
 * name on one rank is the k-th on another). 0, or -1 out of memory. */
static int timeline_starts_read(const struct events *all, struct timeline_sum *sum)
{
    sum->starts = malloc((all->count + 1) * sizeof *sum->starts);
    if (!sum->starts)
        return -1;
    for (size_t i = 0; i < all->count; i++)
        if (is_transfer(&all->at[i]) && all->at[i].dur > 0) {
            struct transfer_start *t = &sum->starts[sum->nstarts++];
            snprintf(t->name, sizeof t->name, "%s", all->at[i].name);
            t->at = all->at[i].ts;
        }
    qsort(sum->starts, sum->nstarts, sizeof *sum->starts, by_name_then_time);
    return 0;
}

void timeline_sum_free(struct timeline_sum *sum)
{
    free(sum->starts);
    sum->starts = NULL, sum->nstarts = 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The steps' median and slowest durations, in ms, from their durations (sorted here). */
static void step_spread(double *ms, int steps, struct timeline_sum *sum)
{
    qsort(ms, (size_t)steps, sizeof *ms, by_value);
    sum->median_step = steps % 2 ? ms[steps / 2] : (ms[steps / 2 - 1] + ms[steps / 2]) / 2;
    sum->slowest_step = ms[steps - 1];
}

/* The trace's events with a category, a name and a time, sorted by time; the process's name
 * (its metadata event) into sum. 0, or -1 when out of memory. */
static int sorted_events(json_t *events, struct events *all, struct timeline_sum *sum)
{
    all->count = 0;
    all->at = malloc((json_array_size(events) + 1) * sizeof *all->at);
    if (!all->at)
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e) {
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *process = json_string_value(json_object_get(json_object_get(e, "args"), "name"));
        if (name && strcmp(name, "process_name") == 0) {
            snprintf(sum->process, sizeof sum->process, "%s", process ? process : "");
            sum->wall_origin = json_number_value(json_object_get(json_object_get(e, "args"), "wall_origin"));
        }
        if (read_event(e, &all->at[all->count]) == 0)
            all->count++;
    }
    qsort(all->at, all->count, sizeof *all->at, by_time);
    return 0;
}

int timeline_sum_file(const char *path, struct timeline_sum *sum, struct dt_err *err)
{
    memset(sum, 0, sizeof *sum);
    json_error_t jerr;
    json_t *events = json_load_file(path, 0, &jerr);
    if (!events)
        return dt_fail(err, "%s:%d: not a trace (%s)", path, jerr.line, jerr.text);
    if (!json_is_array(events))
        return json_decref(events), dt_fail(err, "%s: not a trace (a JSON array of events)", path);
    struct events all;
    double *step_ms = malloc((json_array_size(events) + 1) * sizeof *step_ms);   /* at most an event a step */
    if (!step_ms || sorted_events(events, &all, sum) < 0)
        return free(step_ms), json_decref(events), dt_fail(err, "%s: out of memory", path);
    if (timeline_starts_read(&all, sum) < 0)
        return free(step_ms), free(all.at), json_decref(events), dt_fail(err, "%s: out of memory", path);
    for (size_t i = 0; i < all.count; i++) {
        const struct event *ev = &all.at[i];
        if (strcmp(ev->cat, "step") == 0 && strncmp(ev->name, "step ", 5) == 0) {
            step_ms[sum->steps++] = ev->dur / 1000;
            sum->step += ev->dur / 1000;
            add_step(&all, ev->ts, ev->ts + ev->dur, sum);
        }
    }
    free(all.at);
    json_decref(events);
    if (sum->steps == 0)
        return free(step_ms), timeline_sum_free(sum),
               dt_fail(err, "%s: no steps in this trace (dtrain-train --timeline writes them)", path);
    step_spread(step_ms, sum->steps, sum);
    free(step_ms);
    double n = sum->steps;
    sum->step /= n, sum->forward /= n, sum->backward /= n, sum->exchange /= n, sum->update /= n;
    sum->transfers /= n, sum->overlap /= n;
    return 0;
}

/* How far behind trace a's the same transfers start on trace b, by the wall clock (the k-th start
 * of a name in each): their median and 90th percentile in ms into lag[0], lag[1]. False where the
 * two share no transfer or a trace does not say its wall origin. */
static bool start_lag(const struct timeline_sum *a, const struct timeline_sum *b, double lag[2])
{
    double *ms = malloc((a->nstarts + 1) * sizeof *ms);
    size_t n = 0, i = 0, j = 0;
    while (ms && i < a->nstarts && j < b->nstarts) {
        int c = strcmp(a->starts[i].name, b->starts[j].name);
        if (c == 0)   /* the same name: its starts paired in order, the longer list's rest passed */
            ms[n++] = ((b->wall_origin - a->wall_origin) * 1e6 + b->starts[j].at - a->starts[i].at) / 1000, i++, j++;
        else if (c < 0)
            for (const char *name = a->starts[i].name; i < a->nstarts && strcmp(a->starts[i].name, name) == 0;)
                i++;
        else
            for (const char *name = b->starts[j].name; j < b->nstarts && strcmp(b->starts[j].name, name) == 0;)
                j++;
    }
    bool any = n > 0 && a->wall_origin > 0 && b->wall_origin > 0;
    if (any) {
        qsort(ms, n, sizeof *ms, by_value);
        lag[0] = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
        lag[1] = ms[(size_t)(0.9 * (double)(n - 1) + 0.5)];
    }
    free(ms);
    return any;
}

void timeline_sum_print(FILE *out, const char *const *paths, const struct timeline_sum *sums, int count, bool csv)
{
    double lag[2];
    bool lags = count >= 2;   /* several traces of one run, on one clock: how far apart they start */
    for (int k = 1; k < count && lags; k++)
        lags = start_lag(&sums[0], &sums[k], lag);
    if (csv)
        fprintf(out, "trace,process,steps,step ms,median step ms,slowest step ms,forward ms,backward ms,exchange wait ms,"
                "update ms,transfers a step,exchange during backward ms%s\n",
                lags ? ",start behind the first median ms,start behind the first p90 ms" : "");
    else
        fprintf(out, "| trace | process | steps | step ms | median step ms | slowest step ms | forward ms | backward ms | "
                "exchange wait ms | update ms | transfers a step | exchange under way during backward, ms |%s\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|%s\n",
                lags ? " transfers start behind the first trace's, median / p90 ms |" : "", lags ? "---|" : "");
    /* the same cells either way: quoted and comma-separated, or between bars */
    const char *open = csv ? "\"" : "| ", *between_names = csv ? "\",\"" : " | ", *after_names = csv ? "\"," : " | ";
    const char *sep = csv ? "," : " | ", *end = csv ? "\n" : " |\n";
    for (int k = 0; k < count; k++) {
        const struct timeline_sum *s = &sums[k];
        fprintf(out, "%s%s%s%s%s%d", open, paths[k], between_names, s->process, after_names, s->steps);
        const double ms[] = {s->step, s->median_step, s->slowest_step, s->forward, s->backward, s->exchange, s->update};
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
            fprintf(out, "%s%.3f", sep, ms[i]);
        fprintf(out, "%s%.1f%s%.3f", sep, s->transfers, sep, s->overlap);
        if (lags && k == 0)
            fprintf(out, "%s%s", sep, csv ? "," : "-");
        else if (lags && start_lag(&sums[0], s, lag))
            fprintf(out, csv ? "%s%.3f,%.3f" : "%s%.3f / %.3f", sep, lag[0], lag[1]);
        fputs(end, out);
    }
}
