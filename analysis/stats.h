/* stats.h - the mean and sample standard deviation of repeats, as every table of the analyzer
 * reports them (std 0 for a single value). */
#ifndef STATS_H
#define STATS_H

#include <math.h>

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

#endif
