/* fault.c - test-only fault injection (see fault.h). */
#include "trainer/base/fault.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
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

void fault_slow_compute(int rank)
{
    static int checked, slow_rank = -1;
    static long slow_ms;
    if (!checked) {   /* read once: this is on every step's path */
        const char *fault = getenv("DTRAIN_FAULT_SLOW");
        checked = 1;
        if (!fault || sscanf(fault, "%d:%ld", &slow_rank, &slow_ms) != 2 || slow_ms <= 0)
            slow_rank = -1;
    }
    if (rank == slow_rank)
        nanosleep(&(struct timespec){slow_ms / 1000, slow_ms % 1000 * 1000000}, NULL);
}
