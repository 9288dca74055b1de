/* placement.h - which ranks of a job serve as parameter servers (ps.c): the last N ranks
 * (dedicated servers, which an sbatch job can put on nodes of their own, as the reference method comparison ran them), or,
 * colocated, one per node beside its workers: the last rank on each host (BytePS's colocated
 * mode); and which workers share a node. No MPI here: the tests check it on lists of host names. */
#ifndef PLACEMENT_H
#define PLACEMENT_H

#include <stdbool.h>

/* serving[r] for each rank r of world (hosts[r]: its host, used when colocated): the last
 * `dedicated` ranks, or the last rank of every host. Returns the number of servers. */
int placement_servers(int world, const char *const *hosts, int dedicated, bool colocated, bool *serving);

/* The nodes of the workers (the ranks not serving), in the order of their first worker: node n's
 * workers, in rank order, are member[first[n]] .. member[first[n + 1] - 1] (first: world + 1
 * entries, member: world). Returns the number of nodes. (node-local sums, node_sums.h) */
int placement_nodes(int world, const char *const *hosts, const bool *serving, int *first, int *member);

#endif
