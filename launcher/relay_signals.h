/* relay_signals.h - the signals a supervising dtrain passes on to the programs it started (local
 * mode's ranks, a watched rank): SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 (srun's and Slurm's
 * warnings among them), caught into a pipe so the supervisor's poll loop sees them with its other
 * descriptors, and SIGCHLD to wake it when a child ends. */
#ifndef RELAY_SIGNALS_H
#define RELAY_SIGNALS_H

#include "common/dt_error.h"

/* Catches the signals; 0, or -1 with err. */
int relay_signals_install(struct dt_err *err);

/* The descriptor that becomes readable when a signal arrived. */
int relay_signals_fd(void);

/* The signals that arrived since the last call (SIGCHLD among them), at most max; their count. */
int relay_signals_take(int *sigs, int max);

/* In a forked child before exec: the default dispositions back and no signal blocked. */
void relay_signals_reset_in_child(void);

#endif
