/* phase.h - where a training step is, said once for all who watch it. Each phase of the step
 * (forward, backward, the exchange, the update) begins and ends with one call each, which tells
 * the rank's status (what a stall's report says this rank is doing), the timeline (a span on the
 * compute lane), the straggler watch (the rank's own work a step: all of it but the exchange,
 * where it waits for the others) and the profile (the update's time) at once, so the step itself
 * reads as the four phases it is. */
#ifndef PHASE_H
#define PHASE_H

#include <stdbool.h>

#include "trainer/loop/rank_status.h"

struct run;

/* The phase under way in a step, and when it and the step began (timeline_now's seconds). */
struct step_phase {
    enum rank_phase phase;
    double step_begun, begun;
    double exchange_seconds;   /* the step's time in the exchange so far */
    bool captured;             /* a CUDA graph being recorded: no time of this step is a step's */
};

/* A step begins now: its batch is fetched next (the fetch is the rank's own work too: a slow
 * node's loader slows it). */
void phase_step_begin(struct run *r);

/* Phase begins now. captured: the step is being recorded as a CUDA graph, so its times count for
 * no watch but the timeline. */
void phase_begin(struct run *r, enum rank_phase phase, bool captured);

/* The phase under way ends now: its span on the timeline; at the end of the update, the step's
 * own work (since phase_step_begin, less the exchange) to the straggler watch; the update's time
 * to the profile when it counts. */
void phase_end(struct run *r);

#endif
