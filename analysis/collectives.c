/* collectives.c - the links and the allreduce's algorithms the cost model composes (costmodel.h):
 * a message's time on a link (its alpha-beta line, or its measured curve read between the sizes
 * measured), ring, Rabenseifner's halving and doubling, the hierarchical ring (Thakur et al.), and
 * the cheapest of them, or the allreduce as measured at the job's size. */
#include "analysis/collectives.h"

double link_message(struct link_cost link, double bytes)
{
    if (!link.curve || link.points < 2)
        return link.alpha + link.beta * bytes;
    const struct link_point *pt = link.curve;
    if (bytes <= pt[0].bytes)
        return pt[0].seconds;
    int k = 1;   /* the segment [k-1, k] holding bytes, or the last one */
    while (k + 1 < link.points && pt[k].bytes < bytes)
        k++;
    double slope = (pt[k].seconds - pt[k - 1].seconds) / (pt[k].bytes - pt[k - 1].bytes);
    return pt[k - 1].seconds + slope * (bytes - pt[k - 1].bytes);
}

double cost_ring(int p, struct link_cost link, double bytes)
{
    return p < 2 ? 0 : 2.0 * (p - 1) * link_message(link, bytes / p);
}

double cost_rabenseifner(int p, struct link_cost link, double bytes)
{
    if (p < 2)
        return 0;
    if (p & (p - 1))
        return -1;
    double seconds = 0;   /* reduce-scatter halving, allgather doubling: the same messages twice */
    for (double piece = bytes / 2; p > 1; p /= 2, piece /= 2)
        seconds += 2 * link_message(link, piece);
    return seconds;
}

double cost_hierarchical(const struct cluster_shape *c, double bytes)
{
    return cost_ring(c->gpus_per_node, c->intra, bytes) + cost_ring(c->nodes, c->inter, bytes);
}

double cost_allreduce(const struct cluster_shape *c, double bytes)
{
    int p = c->nodes * c->gpus_per_node;
    if (p < 2)
        return 0;
    if (c->allreduce)
        return link_message(*c->allreduce, bytes);
    struct link_cost link = c->nodes > 1 ? c->inter : c->intra;   /* a flat algorithm crosses the slowest */
    double best = cost_ring(p, link, bytes), rab = cost_rabenseifner(p, link, bytes);
    if (rab >= 0 && rab < best)
        best = rab;
    if (c->nodes > 1 && c->gpus_per_node > 1) {
        double hier = cost_hierarchical(c, bytes);
        best = hier < best ? hier : best;
    }
    return best;
}
