/* fault.h - test-only fault injection, from the environment, acting on the rank and step named:
 *   DTRAIN_FAULT_HANG=RANK:STEP  that rank stops before that step (the watchdog's test)
 *   DTRAIN_FAULT_KILL=RANK:STEP  that rank kills itself with SIGKILL before that step (a rank the
 *                                OOM killer or a node failure took: the job must end)
 * so that tests signal only processes they started, never one found by name. A worker's step is
 * its training step; a parameter server's is the step it serves. */
#ifndef FAULT_H
#define FAULT_H

void fault_injection_point(int rank, long step);

#endif
