/* predict_job.h - dtrain-analyze predict's options as parsed (predict.c), the job a prediction is
 * for and the cost model's rate on it (predict_job.c); predict_compare.h puts them beside what ran. */
#ifndef PREDICT_JOB_H
#define PREDICT_JOB_H

#include <stdbool.h>

#include "analysis/costmodel.h"
#include "analysis/links.h"

#define MEASURED_SIZES 16   /* --allreduce, --servers-round and --servers-pieces files */

struct predict_options {
    int gpus_per_node, nodes[32], node_counts, servers, batch;
    bool servers_colocated;    /* --servers colocated */
    bool servers_half_duplex;  /* --servers-duplex half */
    int nodes_per_link;        /* --nodes-per-link */
    struct link_cost intra, inter;
    struct link_curves intra_curves, inter_curves;   /* measured links' */
    struct link_cost servers_link;   /* --servers-link: the inter link a direction at a time */
    struct link_curves servers_link_curves;
    bool has_servers_link;
    struct measured_allreduce *allreduce;   /* --allreduce files, by job size */
    int allreduce_count;
    struct measured_allreduce *rounds;      /* --servers-round files, by nodes */
    int round_count;
    struct measured_allreduce *pieces;      /* --servers-pieces files, by layout */
    int pieces_count;
    char methods[512];
    double partition_bytes, credit_bytes, rate;
    bool ps_node_sums_off;     /* every worker pushes its own */
    const char *format;
};

/* The allreduce measured at this many workers, or NULL. */
const struct link_cost *predict_measured_at(const struct predict_options *o, int workers);
/* The colocated servers' round measured over this many nodes, or NULL. */
const struct link_cost *predict_round_at(const struct predict_options *o, int nodes);

/* ByteScheduler-PS's traffic measured in this layout (colocated: over `nodes` nodes; else over
 * `workers` and `servers` ranks of their own), or NULL. */
const struct link_cost *predict_pieces_at(const struct predict_options *o, bool colocated, int nodes, int workers,
                                          int servers);

/* The job of `nodes` nodes of per_node workers each, with the links and measurements given. */
struct cluster_shape predict_shape_of_nodes(const struct predict_options *o, int nodes, int per_node);

/* The samples/s the model predicts for method on the cluster c: 0 and *rate, 1 when the model has
 * no step for the method, or 2, said, when the step is not a time at all. */
int predict_rate(const struct step_costs *s, const struct cluster_shape *c, const char *method,
                 const struct predict_options *o, double *rate);

#endif
