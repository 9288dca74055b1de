/* partitions.c - where a parameter server's partitions go (see partitions.h). */
#include "common/partitions.h"

int partition_server(const size_t *held, int servers)
{
    int least = 0;
    for (int k = 1; k < servers; k++)
        if (held[k] < held[least])
            least = k;
    return least;
}
