/* fault.c - test-only fault injection (see fault.h). */
#include "fault.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Whether the variable names this rank and step (RANK:STEP). */
static bool fault_here(const char *variable, int rank, long step)
{
    const char *fault = getenv(variable);
    int at_rank;
    long at_step;
    return fault && sscanf(fault, "%d:%ld", &at_rank, &at_step) == 2 && at_rank == rank && at_step == step;
}

void fault_injection_point(int rank, long step)
{
    if (fault_here("DTRAIN_FAULT_KILL", rank, step)) {
        fflush(stdout);
        raise(SIGKILL);
    }
    if (fault_here("DTRAIN_FAULT_HANG", rank, step))
        for (;;)
            pause();
}
