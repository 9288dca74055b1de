/* grouping.c - MG-WFBP's merging, size-threshold fusion, and the alpha-beta fit (grouping.h). */
#include "common/grouping.h"

#include <stdlib.h>
#include <string.h>

/* When each layer's allreduce starts: when its gradients are ready and the one before it (in
 * backward order) has ended. ready[l] = when backward has finished layer l. */
static void comm_starts(int layers, const double *ready, const double *comm, double *start)
{
    start[layers - 1] = ready[layers - 1];
    for (int l = layers - 2; l >= 0; l--) {
        double after_previous = start[l + 1] + comm[l + 1];
        start[l] = after_previous > ready[l] ? after_previous : ready[l];
    }
}

int grouping_mgwfbp(int layers, const double *backward, const size_t *bytes, struct alpha_beta cost, bool *merged,
                    double *finish)
{
    if (layers <= 0)
        return 0;
    memset(merged, 0, (size_t)layers * sizeof *merged);
    double *ready = malloc(3 * (size_t)layers * sizeof(double));
    size_t *group_bytes = malloc((size_t)layers * sizeof(size_t));
    if (!ready || !group_bytes) {
        free(ready), free(group_bytes);
        return -1;
    }
    double *comm = ready + layers, *start = comm + layers;
    double t = 0;   /* backward runs from the last layer: layer l is ready after layers L-1..l */
    for (int l = layers - 1; l >= 0; l--) {
        t += backward[l];
        ready[l] = t;
        group_bytes[l] = bytes[l];
        comm[l] = cost.alpha + cost.beta * (double)bytes[l];
    }
    comm_starts(layers, ready, comm, start);
    int groups = layers;
    for (int l = layers - 1; l >= 1; l--) {
        if (ready[l - 1] >= start[l] + cost.alpha)
            continue;
        merged[l] = true;   /* l's gradients wait for l - 1's and go out with them */
        groups--;
        group_bytes[l - 1] += group_bytes[l];
        group_bytes[l] = 0;
        comm[l] = 0;
        comm[l - 1] = cost.alpha + cost.beta * (double)group_bytes[l - 1];
        comm_starts(layers, ready, comm, start);
    }
    if (finish)
        *finish = start[0] + comm[0];
    free(ready);
    free(group_bytes);
    return groups;
}

int grouping_threshold(int layers, const size_t *bytes, size_t threshold, bool *merged)
{
    memset(merged, 0, (size_t)layers * sizeof *merged);
    int groups = 0;
    size_t open = 0;   /* bytes of the group being filled; 0: none is open */
    for (int l = layers - 1; l >= 0; l--) {
        if (open > 0)
            merged[l + 1] = true;
        else
            groups++;
        open += bytes[l];
        if (open >= threshold)
            open = 0;
    }
    return groups;
}

struct alpha_beta grouping_plan_cost(struct alpha_beta fit)
{
    return (struct alpha_beta){.alpha = fit.alpha > 0 ? fit.alpha : 0, .beta = fit.beta > 0 ? fit.beta : 0};
}

int grouping_fit(int n, const double *bytes, const double *seconds, struct alpha_beta *cost)
{
    double mean_x = 0, mean_y = 0, sxx = 0, sxy = 0;
    for (int i = 0; i < n; i++)
        mean_x += bytes[i] / n, mean_y += seconds[i] / n;
    for (int i = 0; i < n; i++) {
        sxx += (bytes[i] - mean_x) * (bytes[i] - mean_x);
        sxy += (bytes[i] - mean_x) * (seconds[i] - mean_y);
    }
    if (n < 2 || sxx <= 0)
        return -1;
    cost->beta = sxy / sxx;
    cost->alpha = mean_y - cost->beta * mean_x;
    return 0;
}
