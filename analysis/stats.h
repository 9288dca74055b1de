/* stats.h - the mean and sample standard deviation of repeats, as every table of the analyzer
 * reports them (std 0 for a single value), and their median. */
#ifndef STATS_H
#define STATS_H

#include <math.h>
#include <stdlib.h>

static inline void stats_mean_std(const double *values, int count, double *mean, double *std)
{
    double sum = 0, squares = 0;
    for (int i = 0; i < count; i++)
        sum += values[i];
    *mean = count ? sum / count : NAN;
    for (int i = 0; i < count && count > 1; i++)
        squares += (values[i] - *mean) * (values[i] - *mean);
    *std = count > 1 ? sqrt(squares / (count - 1)) : 0;
}

static inline int stats_ascending(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Sorts values[0..count) ascending (count above 0) and returns their median. */
static inline double stats_sort_median(double *values, int count)
{
    qsort(values, (size_t)count, sizeof *values, stats_ascending);
    return count % 2 ? values[count / 2] : (values[count / 2 - 1] + values[count / 2]) / 2;
}

#endif
