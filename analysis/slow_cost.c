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
    double *sorted = malloc((size_t)r->world_size * sizeof *sorted);
    if (!sorted)
        return false;
    memcpy(sorted, r->rank_compute_read, (size_t)r->world_size * sizeof *sorted);
    double median = stats_sort_median(sorted, r->world_size);
    free(sorted);
    int slowest = 0;
    for (int k = 1; k < r->world_size; k++)
        if (r->rank_compute_read[k] > r->rank_compute_read[slowest])
            slowest = k;
    double saved = (double)r->steps_per_rank * (r->rank_compute_read[slowest] - median) / 1000;
    *c = (struct run_cost){.rank = slowest, .host = r->hostnames ? r->hostnames[slowest] : "?",
                           .slowest_ms = r->rank_compute_read[slowest], .median_ms = median,
                           .saved_s = saved < r->runtime_seconds ? saved : r->runtime_seconds,
                           .runtime_s = r->runtime_seconds};
    return true;
}

/* The host whose slowest ranks cost the most over the runs; its share of all that was saved. */
static void costliest_host(const struct run_record *runs, int count, FILE *out)
{
    const char *worst = NULL;
    double worst_saved = 0, all = 0;
    for (int i = 0; i < count; i++) {
        struct run_cost c;
        if (!cost_of(&runs[i], &c))
            continue;
        all += c.saved_s;
        double host_total = 0;   /* this host's cost over every run, counted once per host */
        for (int j = 0; j < count; j++) {
            struct run_cost d;
            if (cost_of(&runs[j], &d) && strcmp(d.host, c.host) == 0)
                host_total += d.saved_s;
        }
        if (host_total > worst_saved)
            worst = c.host, worst_saved = host_total;
    }
    if (worst && all > 0)
        fprintf(out, "\nMost of it: %s, %.1f s of the %.1f s its runs would have saved (%.0f%%).\n", worst,
                worst_saved, all, 100 * worst_saved / all);
}

int slow_cost_print(FILE *out, const struct run_record *runs, int count, bool csv)
{
    int told = 0;
    for (int i = 0; i < count; i++) {
        struct run_cost c;
        if (!cost_of(&runs[i], &c))
            continue;
        const struct run_record *r = &runs[i];
        if (told++ == 0)
            fputs(csv ? "job,ranks,slowest_rank,host,slowest_ms,median_ms,runtime_s,without_it_s,saved_percent\n"
                      : "\n## What the slowest rank cost (each rank's compute a step, from the records: with every rank "
                        "at the median's pace)\n\n| Job | Ranks | Slowest rank | Host | Its compute a step | The median "
                        "rank's | Runtime | Without it | Saved |\n|---|---|---|---|---|---|---|---|---|\n",
                  out);
        double without = c.runtime_s - c.saved_s, percent = c.runtime_s > 0 ? 100 * c.saved_s / c.runtime_s : 0;
        fprintf(out, csv ? "%s,%d,%d,%s,%.3f,%.3f,%.1f,%.1f,%.1f\n" : "| %s | %d | %d | %s | %.1f ms | %.1f ms | %.1f s | "
                           "%.1f s | %.0f%% |\n",
                r->job_id[0] ? r->job_id : "-", r->world_size, c.rank, c.host, c.slowest_ms, c.median_ms, c.runtime_s,
                without, percent);
    }
    if (told && !csv)
        costliest_host(runs, count, out);
    return told;
}
