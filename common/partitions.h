/* partitions.h - where a parameter server's partitions go: the rule dtrain-train's servers (ps.c)
 * place them by and the cost model (costmodel.c) replays, kept here so the two cannot drift.
 *
 * The gradients (each layer on its own for ByteScheduler-PS, else the whole buffer) are cut into
 * partitions of at most --partition-bytes, in order from the input's layer on, and each partition
 * in that order goes to the server holding the fewest bytes so far, the first of equals: balanced
 * by bytes over the step, but a partition is whole at one server, so a layer larger than the rest
 * puts most of a step's bytes through one server's links. */
#ifndef PARTITIONS_H
#define PARTITIONS_H

#include <stddef.h>

/* The server (0 .. servers - 1) that takes the next partition, held[k] being the bytes (or
 * floats) server k holds so far; the caller adds the partition to held[] itself. */
int partition_server(const size_t *held, int servers);

#endif
