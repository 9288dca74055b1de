/* stats.h - the mean and sample standard deviation of repeats, as every table of the analyzer
 * reports them (std 0 for a single value), their median, and 95% confidence intervals: of a
 * mean (Student's t) and of the ratio of two means (a speedup). */
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

/* Student's t quantile at 0.975 for df degrees of freedom (df >= 1): a two-sided 95% interval.
 * Exact to 3 decimals up to 30, then 1.96 + 2.46 / df (within 0.003 of the quantile). */
static inline double stats_t975(int df)
{
    static const double t[31] = {NAN,   12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                 2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
    return df < 1 ? NAN : df <= 30 ? t[df] : 1.96 + 2.46 / df;
}

/* Half the width of the 95% confidence interval of the mean of count values whose sample
 * standard deviation is std: t(count - 1) std / sqrt(count). NAN for a single value (no interval). */
static inline double stats_ci95_half(double std, int count)
{
    return count > 1 ? stats_t975(count - 1) * std / sqrt(count) : NAN;
}

/* The 95% confidence interval of ratio = mean_a / mean_b (a speedup: the baseline's mean runtime
 * over a configuration's) from the two sets of repeats, by the delta method on the log scale: the
 * relative standard errors of the two means add in quadrature, t is taken at the smaller set's
 * degrees of freedom (conservative where the sets differ), and the interval is ratio e^(-+half),
 * which stays above 0 however few the runs. [NAN, NAN] where either set has one value. */
static inline void stats_ratio_ci95(double ratio, double mean_a, double std_a, int n_a, double mean_b, double std_b,
                                    int n_b, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n_a < 2 || n_b < 2 || !(mean_a > 0) || !(mean_b > 0))
        return;
    double ra = std_a / sqrt(n_a) / mean_a, rb = std_b / sqrt(n_b) / mean_b;
    double half = stats_t975((n_a < n_b ? n_a : n_b) - 1) * sqrt(ra * ra + rb * rb);
    *lo = ratio * exp(-half), *hi = ratio * exp(half);
}

#endif
