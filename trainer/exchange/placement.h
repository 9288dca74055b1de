/* placement.h - which ranks of a job serve as parameter servers (ps.c): the last N ranks
 * (dedicated servers, which an sbatch job can put on nodes of their own, as reference experiment 004 did), or,
 * colocated, one per node beside its workers: the last rank on each host (BytePS's colocated
 * mode). No MPI here: the tests check it on lists of host names. */
#ifndef PLACEMENT_H
#define PLACEMENT_H

#include <stdbool.h>

/* serving[r] for each rank r of world (hosts[r]: its host, used when colocated): the last
 * `dedicated` ranks, or the last rank of every host. Returns the number of servers. */
int placement_servers(int world, const char *const *hosts, int dedicated, bool colocated, bool *serving);

#endif
