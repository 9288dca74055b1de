/* straggler.c - the slow rank, named while the job runs (straggler.h). */
#include "trainer/loop/straggler.h"

#include <stdlib.h>
#include <time.h>
#include <string.h>

/* What each rank hands the others at a report. */
struct straggler_share {
    double mean_seconds;       /* over the stretch; 0 when it took no step */
    char host[64];
};

void straggler_step(struct straggler_watch *w, double seconds)
{
    w->interval_seconds += seconds, w->interval_steps++;
    w->total_seconds += seconds, w->total_steps++;
}

double straggler_mean_ms(const struct straggler_watch *w)
{
    return w->total_steps ? w->total_seconds / w->total_steps * 1e3 : 0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of the ranks' means (those that took steps), or 0. */
static double median_of(const struct straggler_share *all, int n)
{
    double *v = malloc((size_t)n * sizeof *v);
    int k = 0;
    for (int i = 0; v && i < n; i++)
        if (all[i].mean_seconds > 0)
            v[k++] = all[i].mean_seconds;
    double median = 0;
    if (k > 0) {
        qsort(v, (size_t)k, sizeof *v, by_value);
        median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    }
    free(v);
    return median;
}

static double now_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int report_stragglers(struct straggler_watch *w, struct comm *comm, double threshold, FILE *out, struct dt_err *err);

int straggler_report(struct straggler_watch *w, struct comm *comm, double threshold, FILE *out, struct dt_err *err)
{
    double start = now_seconds();
    int named = report_stragglers(w, comm, threshold, out, err);
    w->report_seconds += now_seconds() - start;
    w->reports++;
    return named;
}

static int report_stragglers(struct straggler_watch *w, struct comm *comm, double threshold, FILE *out, struct dt_err *err)
{
    struct straggler_share mine = {.mean_seconds = w->interval_steps ? w->interval_seconds / w->interval_steps : 0};
    snprintf(mine.host, sizeof mine.host, "%.63s", comm->hostname);
    w->interval_seconds = 0, w->interval_steps = 0;
    if (comm->world < 2)
        return 0;
    struct straggler_share *all = calloc((size_t)comm->world, sizeof *all);
    if (!all)
        return dt_fail(err, "out of memory");
    if (comm->allgather(comm, &mine, sizeof mine, all, err) < 0)
        return free(all), -1;
    int named = 0;
    double median = comm->rank == 0 ? median_of(all, comm->world) : 0;
    for (int r = 0; median > 0 && r < comm->world; r++) {
        if (all[r].mean_seconds < (1 + threshold) * median)
            continue;
        fprintf(out, "dtrain-train: straggler: rank %d on %s computes %.2fx the median (%.1f ms a step against "
                "%.1f ms)\n", r, all[r].host, all[r].mean_seconds / median, all[r].mean_seconds * 1e3, median * 1e3);
        named++;
    }
    free(all);
    return named;
}
