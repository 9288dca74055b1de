/* placement.c - which ranks serve, and which workers share a node (see placement.h). */
#include "trainer/exchange/placement.h"

#include <string.h>

int placement_servers(int world, const char *const *hosts, int dedicated, bool colocated, bool *serving)
{
    int servers = 0;
    for (int r = 0; r < world; r++) {
        bool last_of_host = true;   /* no later rank on the same host */
        for (int later = r + 1; colocated && later < world && last_of_host; later++)
            last_of_host = strcmp(hosts[r], hosts[later]) != 0;
        serving[r] = colocated ? last_of_host : r >= world - dedicated;
        servers += serving[r];
    }
    return servers;
}

int placement_nodes(int world, const char *const *hosts, const bool *serving, int *first, int *member)
{
    int nodes = 0, placed = 0;
    for (int r = 0; r < world; r++) {
        bool seen = false;   /* r's host already has its node */
        for (int earlier = 0; earlier < r && !seen; earlier++)
            seen = !serving[earlier] && strcmp(hosts[earlier], hosts[r]) == 0;
        if (serving[r] || seen)
            continue;
        first[nodes++] = placed;
        for (int later = r; later < world; later++)   /* r and the later workers of its host */
            if (!serving[later] && strcmp(hosts[later], hosts[r]) == 0)
                member[placed++] = later;
    }
    first[nodes] = placed;
    return nodes;
}
