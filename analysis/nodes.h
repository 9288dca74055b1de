/* nodes.h - which nodes are slow, from every run they took part in. Runs are compared within a
 * configuration (the same table, job size and work; the same experiment and job size of run
 * records; the same model and GPU count of a notebook): each run's time is held against the
 * median of its configuration's runs, and each node collects the ratios of the runs it was part
 * of. A node is slow when enough of its runs were (a data-parallel job runs at its slowest rank's
 * pace, so a slow node slows every job it joins). */
#ifndef NODES_H
#define NODES_H

#include <stdbool.h>
#include <stddef.h>

#include "common/dt_error.h"

/* A node is called slow when at least NODES_MIN_SLOW of its runs, and at least NODES_SLOW_SHARE
 * of them, took threshold more than their configuration's median: one slow run may be another
 * job's noise, a node that is slow again and again is the node. */
#define NODES_MIN_SLOW 2
#define NODES_SLOW_SHARE 0.4

/* What a node's runs said. */
struct node_speed {
    char node[64];
    int runs, slow_runs;
    double median_ratio;       /* of its runs' time / their configuration's median */
    double worst_ratio;
    char worst_where[400];     /* the run of worst_ratio: its configuration, nodes and source */
    bool slow;
};

struct node_study;

/* A study to fill with configurations and runs; NULL when out of memory. */
struct node_study *nodes_study_new(void);
void nodes_study_free(struct node_study *s);

/* A configuration begins: the runs added next are compared with each other. label says what it
 * is ("2 nodes x 1 GPU of bigMNIST Performance Results"). */
int nodes_begin(struct node_study *s, const char *label);

/* One run of the configuration: its nodes, its time (seconds, or seconds a sample: lower is
 * faster) and where it was read ("003.txt:53"). 0, or -1 when out of memory. */
int nodes_add_run(struct node_study *s, const char *const *nodes, int count, double seconds, const char *where);

/* The configuration is complete: a configuration of at least 2 runs on different nodes gives each
 * of its nodes a ratio per run. 0, or -1 when out of memory. */
int nodes_end(struct node_study *s);

/* Every node seen, slowest first (by median ratio), slow marked at threshold (0.2: 20% over the
 * median); *count gets their number, *compared the configurations that were compared. The caller
 * frees the array; NULL (count 0) when there is none or out of memory. */
struct node_speed *nodes_rank(const struct node_study *s, double threshold, int *count, int *compared);

#endif
