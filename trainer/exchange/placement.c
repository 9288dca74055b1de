/* placement.c - which ranks serve (see placement.h). */
#include "placement.h"

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
