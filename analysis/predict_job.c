/* predict_job.c - the job a prediction is for: its shape from the options (links, servers, the
 * allreduce measured at its size) and the cost model's samples/s for a method on it, checked. */
#include "analysis/predict_job.h"

#include <math.h>
#include <stdio.h>

#include "common/exchange_methods.h"

static const struct link_cost *measured_over(const struct measured_allreduce *m, int count, int ranks)
{
    for (int i = 0; i < count; i++)
        if (m[i].ranks == ranks)
            return &m[i].cost;
    return NULL;
}

const struct link_cost *predict_measured_at(const struct predict_options *o, int workers)
{
    return measured_over(o->allreduce, o->allreduce_count, workers);
}

const struct link_cost *predict_round_at(const struct predict_options *o, int nodes)
{
    return measured_over(o->rounds, o->round_count, nodes);
}

const struct link_cost *predict_pieces_at(const struct predict_options *o, bool colocated, int nodes, int workers,
                                          int servers)
{
    for (int i = 0; i < o->pieces_count; i++)
        if (o->pieces[i].colocated == colocated && o->pieces[i].ranks == (colocated ? nodes : workers + servers))
            return &o->pieces[i].cost;
    return NULL;
}

struct cluster_shape predict_shape_of_nodes(const struct predict_options *o, int nodes, int per_node)
{
    return (struct cluster_shape){.nodes = nodes, .gpus_per_node = per_node, .intra = o->intra, .inter = o->inter,
                                  .servers = o->servers, .servers_colocated = o->servers_colocated,
                                  .servers_half_duplex = o->servers_half_duplex,
                                  .nodes_per_link = o->nodes_per_link, .allreduce = predict_measured_at(o, nodes * per_node),
                                  .servers_round = o->servers_colocated ? predict_round_at(o, nodes) : NULL,
                                  .servers_link = o->has_servers_link ? &o->servers_link : NULL,
                                  .servers_pieces = predict_pieces_at(o, o->servers_colocated, nodes, nodes * per_node,
                                                                      o->servers > 0 ? o->servers : nodes)};
}

/* A hand-edited input out of range (a layer of 2^62 parameters, a link fit's beta of 1e308)
 * gives an infinite, NaN or negative step: refused, not printed as a rate. */
int predict_rate(const struct step_costs *s, const struct cluster_shape *c, const char *method,
                 const struct predict_options *o, double *rate)
{
    struct method_settings settings = {.partition_bytes = o->partition_bytes, .credit_bytes = o->credit_bytes,
                                       .ps_node_sums_off = o->ps_node_sums_off};
    /* --servers colocated is the servers' layout: a method without servers runs without them (it
     * made ByteScheduler-A2A's pulls share one link with its pushes, 3% faster than it ran) */
    struct cluster_shape job = *c;
    const struct method_facts *facts = method_find(method);
    if (facts && !facts->servers)
        job.servers = 0, job.servers_colocated = false, job.servers_round = NULL, job.servers_pieces = NULL;
    double step = cost_step(s, &job, method, &settings);
    int gpus = c->nodes * c->gpus_per_node;
    *rate = (double)o->batch * gpus / step;
    if (step == -1 && !method_find(method))
        return 1;
    if (isfinite(step) && step > 0 && isfinite(*rate) && *rate > 0)
        return 0;
    fprintf(stderr, "dtrain-analyze predict: %s on %d GPUs: the model's step comes to %g s, not a time: an input is "
            "out of range (the profile's layer sizes or times, a link's fit or measured curve)\n", method, gpus, step);
    return 2;
}
