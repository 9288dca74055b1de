/* check_links.h - every pair of ranks' link measured, as dtrain-check does before a job: n-1
 * rounds of disjoint pairs (the circle method of a round-robin tournament), so every link is timed
 * once and no rank takes part in two transfers at a time; a pair times 8-byte ping-pongs (latency)
 * and transfers of `bytes` (bandwidth, from the lower rank to the higher); the schedule runs twice
 * and each link keeps its best figures. */
#ifndef CHECK_LINKS_H
#define CHECK_LINKS_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/comm/comm.h"
#include "common/dt_error.h"

/* One link's figures; 0 where the pair was not measured (a rank with itself). */
struct link_figures {
    double bytes_per_s, latency_s;
};

/* Measures every pair (a collective of comm): links[a * world + b] for a < b, the same figures
 * gathered on every rank. one_at_a_time: one pair after another, the others waiting without
 * spinning, for ranks that share cores (a test cluster on one machine), where pairs measured side
 * by side would measure the scheduler. 0, or -1 with err when a transfer failed. */
int check_links(struct comm *comm, size_t bytes, int iters, bool one_at_a_time, struct link_figures *links,
                struct dt_err *err);

/* The partner of rank in round of a round-robin over world ranks (world - 1 rounds, world + 1
 * when odd); -1 when rank sits the round out. */
int check_partner(int rank, int world, int round);

#endif
