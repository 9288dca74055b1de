/* fault.h - test-only fault injection, from the environment, acting on the rank and step named:
 *   DTRAIN_FAULT_HANG=RANK:STEP  that rank stops before that step (the watchdog's test)
 *   DTRAIN_FAULT_KILL=RANK:STEP  that rank kills itself with SIGKILL before that step (a rank the
 *                                OOM killer or a node failure took: the job must end)
 *   DTRAIN_FAULT_SLOW=RANK:MS    that rank's every step computes MS milliseconds longer (a slow GPU
 *                                or node: the straggler report's test)
 * so that tests signal only processes they started, never one found by name. A worker's step is
 * its training step; a parameter server's is the step it serves. */
#ifndef FAULT_H
#define FAULT_H

void fault_injection_point(int rank, long step);

/* Inside a step's compute: waits DTRAIN_FAULT_SLOW's milliseconds when it names this rank. */
void fault_slow_compute(int rank);

#endif
