/* slow_cost.c - the slowest rank's cost, a run at a time (see slow_cost.h). */
#include "analysis/slow_cost.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"

/* What one run's slowest rank cost it. */
struct run_cost {
    int rank;
    const char *host;
    double slowest_ms, median_ms, saved_s, runtime_s;
};

/* The cost of run r, or false when its record has no compute times (or one rank). */
static bool cost_of(const struct run_record *r, struct run_cost *c)
{
    if (!r->rank_compute_read || r->world_size < 2 || r->steps_per_rank <= 0)
        return false;
    int slowest = 0;
    for (int k = 1; k < r->world_size; k++)
        if (r->rank_compute_read[k] > r->rank_compute_read[slowest])
            slowest = k;
    /* the pace of the others: with 2 ranks the other one's (a median over all would put half the
     * slow rank in it), with more their median */
    double *others = malloc((size_t)r->world_size * sizeof *others);
    if (!others)
        return false;
    int n = 0;
    for (int k = 0; k < r->world_size; k++)
        if (k != slowest)
            others[n++] = r->rank_compute_read[k];
    double median = stats_sort_median(others, n);
    free(others);
    double saved = (double)r->steps_per_rank * (r->rank_compute_read[slowest] - median) / 1000;
    *c = (struct run_cost){.rank = slowest, .host = r->hostnames ? r->hostnames[slowest] : "?",
                           .slowest_ms = r->rank_compute_read[slowest], .median_ms = median,
                           .saved_s = saved < r->runtime_seconds ? saved : r->runtime_seconds,
                           .runtime_s = r->runtime_seconds};
    return true;
}

/* The host whose slowest ranks cost the most over the runs told (costs[0..n)); its share of all
 * that was saved. One pass to sum each run's cost into its host's first run. */
static void costliest_host(struct run_cost *costs, int n, FILE *out)
{
    double all = 0, *host_total = calloc((size_t)n, sizeof *host_total);
    int worst = -1;
    for (int i = 0; host_total && i < n; i++) {
        all += costs[i].saved_s;
        int first = 0;
        while (strcmp(costs[first].host, costs[i].host) != 0)
            first++;
        host_total[first] += costs[i].saved_s;
    }
    for (int i = 0; host_total && i < n; i++)
        if (host_total[i] > 0 && (worst < 0 || host_total[i] > host_total[worst]))
            worst = i;
    if (worst >= 0 && all > 0)
        fprintf(out, "\nMost of it: %s, %.1f s of the %.1f s its runs would have saved (%.0f%%).\n",
                costs[worst].host, host_total[worst], all, 100 * host_total[worst] / all);
    free(host_total);
}

int slow_cost_print(FILE *out, const struct run_record *runs, int count, bool csv)
{
    struct run_cost *costs = malloc(((size_t)count + 1) * sizeof *costs);
    int told = 0;
    for (int i = 0; costs && i < count; i++) {
        struct run_cost *c = &costs[told];
        if (!cost_of(&runs[i], c))
            continue;
        const struct run_record *r = &runs[i];
        if (told++ == 0)
            fputs(csv ? "job,ranks,slowest_rank,host,slowest_ms,median_ms,runtime_s,without_it_s,saved_percent\n"
                      : "\n## What the slowest rank cost (each rank's compute a step, from the records: with every rank "
                        "at the others' pace)\n\n| Job | Ranks | Slowest rank | Host | Its compute a step | The others' "
                        "(median) | Runtime | Without it | Saved |\n|---|---|---|---|---|---|---|---|---|\n",
                  out);
        double without = c->runtime_s - c->saved_s, percent = c->runtime_s > 0 ? 100 * c->saved_s / c->runtime_s : 0;
        fprintf(out, csv ? "%s,%d,%d,%s,%.3f,%.3f,%.1f,%.1f,%.1f\n" : "| %s | %d | %d | %s | %.1f ms | %.1f ms | %.1f s | "
                           "%.1f s | %.0f%% |\n",
                r->job_id[0] ? r->job_id : "-", r->world_size, c->rank, c->host, c->slowest_ms, c->median_ms,
                c->runtime_s, without, percent);
    }
    if (told && !csv)
        costliest_host(costs, told, out);
    free(costs);
    return told;
}
