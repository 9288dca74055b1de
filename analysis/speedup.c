/* speedup.c - the speedup table of a set of runs (see speedup.h). */
#include "analysis/speedup.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/duration.h"
#include "analysis/experiment.h"
#include "analysis/methods.h"
#include "analysis/stats.h"

bool speedup_split(const struct run_record *r, char *text, size_t size)
{
    enum { MAX_SPLIT = 64 };   /* nodes told apart; a wider job is read as even */
    const char *host[MAX_SPLIT];
    int ranks[MAX_SPLIT], hosts = 0;
    for (int i = 0; r->hostnames && i < r->world_size; i++) {
        int h = 0;
        while (h < hosts && strcmp(host[h], r->hostnames[i]) != 0)
            h++;
        if (h == MAX_SPLIT || !r->hostnames[i][0])
            return false;
        if (h == hosts)
            host[hosts] = r->hostnames[i], ranks[hosts++] = 0;
        ranks[h]++;
    }
    bool uneven = false;
    for (int h = 1; h < hosts; h++)
        uneven |= ranks[h] != ranks[0];
    size_t used = 0;
    for (int h = 0; uneven && h < hosts && used < size; h++)
        used += (size_t)snprintf(text + used, size - used, "%s%s:%d", h ? ", " : "", host[h], ranks[h]);
    return uneven;
}

int speedup_gpus_of(const struct run_record *r)
{
    char split[8];
    if (speedup_split(r, split, sizeof split))
        return r->world_size;
    if (r->gpus_per_node > 0)
        return r->gpus_per_node;
    return r->nodes > 0 ? r->world_size / r->nodes : r->world_size;
}

/* The GPUs (or CPU ranks) of a group's runs in all: an uneven group's gpus are already its total. */
static int speedup_group_gpus(const struct speedup_group *g)
{
    return g->uneven ? g->gpus : g->nodes * g->gpus;
}

static const struct run_record *sort_runs;

/* By configuration; within one, in the order the runs were read. */
static int by_config(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    const struct run_record *x = &sort_runs[i], *y = &sort_runs[j];
    if (x->nodes != y->nodes)
        return x->nodes - y->nodes;
    if (speedup_gpus_of(x) != speedup_gpus_of(y))
        return speedup_gpus_of(x) - speedup_gpus_of(y);
    char split[8];
    bool ux = speedup_split(x, split, sizeof split), uy = speedup_split(y, split, sizeof split);
    if (ux != uy)
        return ux - uy;
    return i - j;
}

static void summarise_group(const struct run_record *runs, const int *order, struct speedup_group *g, enum speedup_stat stat)
{
    double *t = malloc((size_t)g->count * sizeof *t), mean;
    for (int i = 0; i < g->count; i++) {
        t[i] = runs[order[g->first + i]].peak_data_per_sec;
        g->samples += experiment_samples(&runs[order[g->first + i]]) / g->count;
    }
    stats_mean_std(t, g->count, &g->data_per_sec, &g->data_per_sec_std);
    for (int i = 0; i < g->count; i++)
        t[i] = runs[order[g->first + i]].runtime_seconds;
    stats_mean_std(t, g->count, &mean, &g->std);
    double median = stats_sort_median(t, g->count);
    g->min = t[0], g->max = t[g->count - 1];
    g->average = stat == STAT_MEAN ? mean : median;
    g->mean = mean;
    double half = stats_ci95_half(g->std, g->count);
    g->runtime_lo = mean - half, g->runtime_hi = mean + half;
    free(t);
}

/* The speedup's 95% interval against the baseline group's runs (none for the baseline itself). */
static void speedup_interval(struct speedup_group *g, const struct speedup_group *base)
{
    g->speedup_lo = g->speedup_hi = NAN;
    g->speedup_baseline = g == base;
    if (base && g != base && !isnan(g->speedup))
        stats_ratio_ci95(g->speedup, base->mean, base->std, base->count, g->mean, g->std, g->count, &g->speedup_lo,
                         &g->speedup_hi);
}

void speedup_uncertainty_cells(const struct avg_uncertainty *u, int decimals, struct uncertainty_cells *c)
{
    snprintf(c->runs, sizeof c->runs, "%d", u->runs);
    char lo[20], hi[20];
    duration_format(u->runtime_lo > 0 ? u->runtime_lo : 0, decimals, lo);
    duration_format(u->runtime_hi, decimals, hi);
    if (u->runs < 2)
        snprintf(c->runtime, sizeof c->runtime, u->runs == 1 ? "- (1 run)" : "- (no runs)");
    else
        snprintf(c->runtime, sizeof c->runtime, "%s-%s", lo, hi);
    if (isnan(u->speedup))
        snprintf(c->speedup, sizeof c->speedup, "-");
    else if (u->baseline)
        snprintf(c->speedup, sizeof c->speedup, "- (baseline)");
    else if (isnan(u->speedup_lo))
        snprintf(c->speedup, sizeof c->speedup, "%s", u->runs < 2 ? c->runtime : "- (1 baseline run)");
    else
        snprintf(c->speedup, sizeof c->speedup, "%.2f-%.2f", u->speedup_lo, u->speedup_hi);
    if (isnan(u->speedup) || !(u->scale > 0))
        snprintf(c->efficiency, sizeof c->efficiency, "-");
    else
        snprintf(c->efficiency, sizeof c->efficiency, "%.2f", u->speedup / u->scale);
}

/* The GPUs of g over the baseline's: what its efficiency divides the speedup by. */
static double gpus_over_baseline(const struct speedup_group *g, const struct speedup_options *opt)
{
    return speedup_group_gpus(g) / (double)(opt->base_nodes * opt->base_gpus);
}

static void uncertainty_of(const struct speedup_group *g, const struct speedup_options *opt, int decimals,
                           struct uncertainty_cells *c)
{
    struct avg_uncertainty u = {.runs = g->count, .runtime_lo = g->runtime_lo, .runtime_hi = g->runtime_hi,
                                .speedup = g->speedup, .speedup_lo = g->speedup_lo, .speedup_hi = g->speedup_hi,
                                .baseline = g->speedup_baseline, .scale = gpus_over_baseline(g, opt)};
    speedup_uncertainty_cells(&u, decimals, c);
}

static void print_csv_row(FILE *out, const struct speedup_options *opt, bool avg, const struct run_record *r,
                          const struct speedup_group *g, const char *runtime, const char *speedup, const char *nodes,
                          const struct uncertainty_cells *u, const char *std, const char *lo, const char *hi)
{
    fprintf(out, "%d,%d,%d,%d,%ld,%s,%s,\"%s\"", g->nodes, g->gpus, r->epochs, r->batch_per_replica, r->steps_per_rank,
            runtime, avg && !isnan(g->speedup) ? speedup : "", nodes);
    if (avg)
        fprintf(out, ",%s,\"%s\",\"%s\",%s", u->runs, u->runtime, u->speedup, isnan(g->speedup) ? "" : u->efficiency);
    else
        fputs(",,,,", out);
    if (opt->extra)
        fprintf(out, ",%s,%s,%s", avg ? std : "", avg ? lo : "", avg ? hi : "");
    fputc('\n', out);
}

static void print_row(FILE *out, const struct speedup_options *opt, int decimals, bool avg,
                      const struct run_record *r, const struct speedup_group *g)
{
    char runtime[32], std[32], lo[32], hi[32], speedup[16] = "-";
    struct uncertainty_cells u;
    uncertainty_of(g, opt, decimals, &u);
    duration_format(avg ? g->average : r->runtime_seconds, decimals, runtime);
    if (avg && !isnan(g->speedup))
        snprintf(speedup, sizeof speedup, "%.2f", g->speedup);
    duration_format(g->std, decimals, std);
    duration_format(g->min, decimals, lo);
    duration_format(g->max, decimals, hi);
    char split[512];
    const char *nodes = avg ? "Avg" : speedup_split(r, split, sizeof split) ? split : r->nodelist;
    if (opt->format == FORMAT_CSV) {
        print_csv_row(out, opt, avg, r, g, runtime, speedup, nodes, &u, std, lo, hi);
        return;
    }
    /* a program's run (dtrain-record) knows no epochs or batch size: "-", which audit reads as such */
    char epoch[16], batch[16], steps[24];
    bool program = strcmp(r->backend, "program") == 0;
    snprintf(epoch, sizeof epoch, "%d", r->epochs);
    snprintf(batch, sizeof batch, "%d", r->batch_per_replica);
    snprintf(steps, sizeof steps, "%ld", r->steps_per_rank);
    if (program && r->epochs == 0)
        snprintf(epoch, sizeof epoch, "-");
    if (program && r->batch_per_replica == 0)
        snprintf(batch, sizeof batch, "-");
    if (program && r->steps_per_rank == 0)   /* no log to count them in */
        snprintf(steps, sizeof steps, "-");
    const char *b = avg ? "**" : "";   /* the reference experiments' bold Avg rows */
    fprintf(out, "| %s%d%s | %s%d%s | %s%s%s | %s%s%s | %s%s%s | %s%s%s | %s%s%s | %s%s%s |", b, g->nodes, b, b, g->gpus,
            b, b, epoch, b, b, batch, b, b, steps, b, b, runtime, b, b, speedup, b, b, nodes, b);
    if (opt->format == FORMAT_REFERENCE) {   /* the reference experiments' columns, --extra's as before */
        if (opt->extra)
            fprintf(out, avg ? " **%s** | **%s** | **%s-%s** |" : " - | - | - |", u.efficiency, std, lo, hi);
    } else if (avg) {
        fprintf(out, " **%s** | **%s** | **%s** | **%s** |", u.runs, u.runtime, u.speedup, u.efficiency);
        if (opt->extra)
            fprintf(out, " **%s** | **%s-%s** |", std, lo, hi);
    } else {
        fputs(opt->extra ? " - | - | - | - | - | - |" : " - | - | - | - |", out);
    }
    fputc('\n', out);
}

static void print_json(FILE *out, const struct run_record *runs, const int *order, const struct speedup_group *groups, int ng,
                       const struct speedup_options *opt)
{
    fputc('{', out);
    if (opt->heading)
        fprintf(out, "\"experiment\": \"%s\", ", opt->heading);   /* the caller's: no quotes or controls in it */
    fprintf(out, "\"speedup_by\": \"%s\", \"baseline\": \"%dx%d\", \"stat\": \"%s\", \"groups\": [",
            opt->by_rate ? "samples_per_sec" : "runtime", opt->base_nodes, opt->base_gpus,
            opt->stat == STAT_MEAN ? "mean" : "median");
    for (int k = 0; k < ng; k++) {
        const struct speedup_group *g = &groups[k];
        char speedup[32] = "null", efficiency[32] = "null";   /* no baseline: null, as JSON has no NaN */
        if (!isnan(g->speedup)) {
            snprintf(speedup, sizeof speedup, "%.4f", g->speedup);
            snprintf(efficiency, sizeof efficiency, "%.4f", g->speedup / gpus_over_baseline(g, opt));
        }
        char runtime_ci[64] = "null", speedup_ci[64] = "null";   /* one run: no interval */
        if (g->count > 1)
            snprintf(runtime_ci, sizeof runtime_ci, "[%.3f, %.3f]", g->runtime_lo, g->runtime_hi);
        if (!isnan(g->speedup_lo))
            snprintf(speedup_ci, sizeof speedup_ci, "[%.4f, %.4f]", g->speedup_lo, g->speedup_hi);
        fprintf(out, "%s\n  {\"nodes\": %d, \"gpus\": %d, \"runs\": %d, \"runtime_seconds\": %.3f, \"speedup\": %s, "
                "\"efficiency\": %s, \"runtime_ci95\": %s, \"speedup_ci95\": %s, \"samples\": %.0f, "
                "\"std_seconds\": %.3f, \"min_seconds\": %.3f, \"max_seconds\": %.3f, \"nodelists\": [",
                k ? "," : "", g->nodes, g->gpus, g->count, g->average, speedup, efficiency, runtime_ci, speedup_ci,
                g->samples, g->std, g->min, g->max);
        for (int i = 0; i < g->count; i++)
            fprintf(out, "%s\"%s\"", i ? ", " : "", runs[order[g->first + i]].nodelist);
        fputs("]}", out);
    }
    fputs("\n]}", out);
}

/* The --baseline that would work: the even configuration with the fewest GPUs in all. */
static void smallest_baseline(const struct speedup_group *groups, int ng, char *hint, size_t size)
{
    const struct speedup_group *best = NULL;
    for (int k = 0; k < ng; k++)
        if (!groups[k].uneven && (!best || speedup_group_gpus(&groups[k]) < speedup_group_gpus(best)))
            best = &groups[k];
    if (best)
        snprintf(hint, size, "the smallest here is --baseline %dx%d", best->nodes, best->gpus);
    else
        snprintf(hint, size, "choose another with --baseline NxG");
}

int speedup_compute(const struct run_record *runs, int n, const struct speedup_options *opt,
                    struct speedup_result *out, struct dt_err *err)
{
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    struct speedup_group *groups = calloc((size_t)(n ? n : 1), sizeof *groups);
    if (!order || !groups) {
        free(order), free(groups);
        return dt_fail(err, "out of memory");
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    sort_runs = runs;
    qsort(order, (size_t)n, sizeof *order, by_config);
    int ng = 0;
    const struct speedup_group *base = NULL;
    for (int i = 0; i < n; i++) {
        const struct run_record *r = &runs[order[i]];
        char split[8];
        bool uneven = speedup_split(r, split, sizeof split);
        if (ng == 0 || groups[ng - 1].nodes != r->nodes || groups[ng - 1].gpus != speedup_gpus_of(r) ||
            groups[ng - 1].uneven != uneven)
            groups[ng++] = (struct speedup_group){.nodes = r->nodes, .gpus = speedup_gpus_of(r), .uneven = uneven,
                                                  .first = i, .workers = methods_workers_of(r)};
        groups[ng - 1].count++;
    }
    for (int k = 0; k < ng; k++) {
        summarise_group(runs, order, &groups[k], opt->stat);
        if (groups[k].nodes == opt->base_nodes && groups[k].gpus == opt->base_gpus && !groups[k].uneven)
            base = &groups[k];
    }
    if (!base && !opt->baseline_optional) {
        char hint[64];
        smallest_baseline(groups, ng, hint, sizeof hint);
        free(order), free(groups);
        return dt_fail(err, "no run of the baseline, %d node%s x %d GPU%s (%s)", opt->base_nodes,
                       opt->base_nodes == 1 ? "" : "s", opt->base_gpus, opt->base_gpus == 1 ? "" : "s", hint);
    }
    for (int k = 0; k < ng; k++) {
        groups[k].speedup = !base         ? NAN
                            : opt->by_rate ? (groups[k].samples / groups[k].average) / (base->samples / base->average)
                                           : base->average / groups[k].average;
        speedup_interval(&groups[k], base);
    }
    *out = (struct speedup_result){.order = order, .groups = groups, .count = ng};
    return 0;
}

void speedup_result_free(struct speedup_result *result)
{
    free(result->order);
    free(result->groups);
    *result = (struct speedup_result){0};
}

static void print_header(FILE *out, const struct speedup_options *opt)
{
    static const char *const reference = "| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |";
    static const char *const rule = "|--------|-------|-------|-----------|-------|---------|---------|---------|";
    if (opt->format == FORMAT_CSV)
        fprintf(out, "#Nodes,#GPUs,Epoch,Batchsize,Steps,Runtime,Speedup,Node(s)%s%s\n", UNCERTAINTY_CSV_HEADER,
                opt->extra ? ",Std,Min,Max" : "");
    else if (opt->format == FORMAT_REFERENCE)
        fprintf(out, "%s%s\n%s%s\n", reference, opt->extra ? " Efficiency | Std | Min-Max |" : "", rule,
                opt->extra ? "---|---|---|" : "");
    else
        fprintf(out, "%s%s%s\n%s---|---|---|---|%s\n", reference, UNCERTAINTY_MD_HEADER,
                opt->extra ? " Std | Min-Max |" : "", rule, opt->extra ? "---|---|" : "");
}

int speedup_table(FILE *out, const struct run_record *runs, int n, const struct speedup_options *opt,
                  struct dt_err *err)
{
    struct speedup_result result;
    if (speedup_compute(runs, n, opt, &result, err) < 0)
        return -1;
    const struct speedup_group *groups = result.groups;
    const int *order = result.order, ng = result.count;
    if (opt->format == FORMAT_JSON) {
        print_json(out, runs, order, groups, ng, opt);
    } else {
        if (opt->heading)
            fprintf(out, "%s %s\n\n", opt->format == FORMAT_CSV ? "#" : "###", opt->heading);
        if (ng > 0 && isnan(groups[0].speedup)) {
            char hint[64];
            smallest_baseline(groups, ng, hint, sizeof hint);
            fprintf(out, "%sNo run of the baseline, %d x %d, in this experiment: no speedups (%s).\n\n",
                    opt->format == FORMAT_CSV ? "# " : "", opt->base_nodes, opt->base_gpus, hint);
        }
        if (opt->by_rate)
            fprintf(out, "%sSpeedup by samples/s: the runs did not train the same samples (Steps x Batchsize x "
                    "ranks), so a shorter runtime is not a speedup.\n\n", opt->format == FORMAT_CSV ? "# " : "");
        print_header(out, opt);
        /* whole seconds cannot tell a 2.4 s run from a 1.6 s one */
        double shortest = groups[0].min;
        for (int k = 1; k < ng; k++)
            shortest = groups[k].min < shortest ? groups[k].min : shortest;
        int decimals = shortest < 10 ? 2 : 0;
        for (int k = 0; k < ng; k++) {
            for (int i = 0; i < groups[k].count; i++)
                print_row(out, opt, decimals, false, &runs[order[groups[k].first + i]], &groups[k]);
            print_row(out, opt, decimals, true, &runs[order[groups[k].first]], &groups[k]);
        }
    }
    speedup_result_free(&result);
    return 0;
}
