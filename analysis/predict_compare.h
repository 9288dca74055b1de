/* predict_compare.h - dtrain-analyze predict beside what ran (predict_compare.c): run records and
 * a hand-made method comparison table, each cell measured beside predicted. */
#ifndef PREDICT_COMPARE_H
#define PREDICT_COMPARE_H

#include "analysis/predict_job.h"

struct profile;

/* --records: the completed runs (files or directories) of the profile's model and batch, grouped
 * by method, settings, tag and workers, their mean +- std beside the prediction. 0, or 2 said. */
int predict_compare_records(const struct profile *p, const struct predict_options *o, const struct step_costs *s,
                            char **paths, int count, const char *tag);

/* --against: the rows of a hand-made method table whose key starts with row, measured beside
 * predicted at each GPU count. 0, or 2 said. */
int predict_compare_method_table(const struct predict_options *o, const struct step_costs *s, const char *path,
                                 const char *row);

#endif
