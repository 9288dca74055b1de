/* phase.c - a step's phases told to the rank's status, the timeline, the straggler watch and the
 * profile with one call each (see phase.h). */
#include "trainer/loop/phase.h"

#include "trainer/base/timeline.h"
#include "trainer/loop/run.h"

/* What the timeline calls each phase of a step. */
static const char *span_name(enum rank_phase phase)
{
    switch (phase) {
    case PHASE_FORWARD: return "forward";
    case PHASE_BACKWARD: return "backward";
    case PHASE_EXCHANGE: return "exchange";
    case PHASE_UPDATE: return "update";
    default: return "step";
    }
}

void phase_step_begin(struct run *r)
{
    r->phase.step_begun = timeline_now();
    r->phase.exchange_seconds = 0;
}

void phase_begin(struct run *r, enum rank_phase phase, bool captured)
{
    double now = timeline_now();
    r->phase.phase = phase;
    r->phase.begun = now;
    r->phase.captured = captured;
    rank_status_phase(r->status, phase);
}

void phase_end(struct run *r)
{
    struct step_phase *p = &r->phase;
    /* The update is queued on a GPU: when profiling, its end is when the queue has drained. */
    double now = p->phase == PHASE_UPDATE ? trace_now_settled(&r->trace) : timeline_now();
    timeline_span(r->timeline, LANE_COMPUTE, "step", span_name(p->phase), p->begun, now);
    if (p->phase == PHASE_EXCHANGE)
        p->exchange_seconds += now - p->begun;
    /* a step's own work: all but the wait for the others (with a CPU share cut, a node's loader,
     * update and sums slow too, not its forward and backward alone) */
    if (p->phase == PHASE_UPDATE && !p->captured)
        straggler_step(&r->straggler, now - p->step_begun - p->exchange_seconds);
    if (p->phase == PHASE_UPDATE && r->trace.counting)
        r->measured.update += now - p->begun;
}
