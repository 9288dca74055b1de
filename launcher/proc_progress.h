/* proc_progress.h - what a watched program is doing, read from /proc: the CPU time its processes
 * have used (a program that computes is progressing even when it prints nothing) and the state of
 * its main process (stopped, asleep and where in the kernel, waiting on disk, running, gone), as
 * `dtrain --watch` reports it when a rank stalls. */
#ifndef PROC_PROGRESS_H
#define PROC_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* One look at a process group (the program and whatever it started in its group). */
struct proc_sample {
    int processes;             /* in the group now; 0: gone */
    unsigned long long cpu_ticks;   /* user + system time of the group's processes, and of the
                                     * children the leader has reaped (clock ticks) */
    char state;                /* the leader's: R, S, D, T (or t), Z; '?' when it is gone */
    bool any_stopped;          /* some process of the group is stopped (SIGSTOP, a debugger) */
    char wchan[32];            /* where the leader sleeps in the kernel ("pipe_read"), or "" */
};

/* Reads one /proc/PID/stat line's fields after the command name (which may hold spaces and
 * parentheses: the last ')' ends it): state, process group, and the CPU times. 0, or -1 when the
 * line is not one. */
int proc_parse_stat(const char *line, char *state, long *pgrp, unsigned long long *own_ticks,
                    unsigned long long *reaped_ticks);

/* Samples the leader alone (one file: what a second's sample costs while it computes); its own
 * CPU time and its reaped children's. Returns 1, or 0 when it is gone. */
int proc_sample_leader(const char *proc_root, pid_t pid, struct proc_sample *out);

/* Samples the group whose leader (and group id) is pgid, scanning proc_root ("/proc" but for
 * tests): every process of this machine looked at, so only when the leader alone has not moved.
 * Returns the processes found (0: the group is gone). */
int proc_sample_group(const char *proc_root, pid_t pgid, struct proc_sample *out);

/* The state in words, as a stall report says it: "stopped (SIGSTOP or a debugger)", "asleep in
 * pipe_read", "waiting on disk (io_schedule)", "running", "gone". */
void proc_describe(const struct proc_sample *s, char *text, size_t size);

#endif
