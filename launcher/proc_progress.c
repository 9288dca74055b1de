/* proc_progress.c - a watched program's CPU time and state from /proc (proc_progress.h). */
#include "launcher/proc_progress.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int proc_parse_stat(const char *line, char *state, long *pgrp, unsigned long long *own_ticks,
                    unsigned long long *reaped_ticks)
{
    const char *end = strrchr(line, ')');
    if (!end)
        return -1;
    /* after "pid (comm)": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt
     * utime stime cutime cstime */
    char st;
    long ppid, group, session, tty, tpgid;
    unsigned long flags, minflt, cminflt, majflt, cmajflt;
    unsigned long long utime, stime;
    long long cutime, cstime;
    if (sscanf(end + 1, " %c %ld %ld %ld %ld %ld %lu %lu %lu %lu %lu %llu %llu %lld %lld", &st, &ppid, &group,
               &session, &tty, &tpgid, &flags, &minflt, &cminflt, &majflt, &cmajflt, &utime, &stime, &cutime,
               &cstime) != 15)
        return -1;
    *state = st;
    *pgrp = group;
    *own_ticks = utime + stime;
    *reaped_ticks = (unsigned long long)(cutime > 0 ? cutime : 0) + (unsigned long long)(cstime > 0 ? cstime : 0);
    return 0;
}

static int read_small_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (int)n;
}

/* The leader's wchan: a kernel function name, "0" (running) or unreadable. */
static void read_wchan(const char *proc_root, pid_t pid, char *out, size_t size)
{
    char path[300], text[64];
    out[0] = '\0';
    snprintf(path, sizeof path, "%s/%d/wchan", proc_root, (int)pid);
    if (read_small_file(path, text, sizeof text) <= 0 || strcmp(text, "0") == 0)
        return;
    size_t n = strcspn(text, "\n");
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)text[i]) && text[i] != '_' && text[i] != '.')
            return;   /* not a symbol name: say nothing rather than something odd */
    snprintf(out, size, "%.*s", (int)n, text);
}

/* Reads and parses PROC_ROOT/PID/stat (pid as /proc names it); 0, or -1 when it is gone or odd. */
static int read_stat(const char *proc_root, const char *pid, char *state, long *pgrp, unsigned long long *own,
                     unsigned long long *reaped)
{
    char path[300], line[1024];
    snprintf(path, sizeof path, "%s/%s/stat", proc_root, pid);
    return read_small_file(path, line, sizeof line) > 0 ? proc_parse_stat(line, state, pgrp, own, reaped) : -1;
}

/* Stopped by a signal (T) or by a tracer (t). */
static bool is_stopped(char state)
{
    return state == 'T' || state == 't';
}

int proc_sample_leader(const char *proc_root, pid_t pid, struct proc_sample *out)
{
    *out = (struct proc_sample){.state = '?'};
    char name[24];
    long group;
    unsigned long long own, reaped;
    snprintf(name, sizeof name, "%d", (int)pid);
    if (read_stat(proc_root, name, &out->state, &group, &own, &reaped) < 0)
        return 0;
    out->processes = 1;
    out->cpu_ticks = own + reaped;
    out->any_stopped = is_stopped(out->state);
    read_wchan(proc_root, pid, out->wchan, sizeof out->wchan);
    return 1;
}

int proc_sample_group(const char *proc_root, pid_t pgid, struct proc_sample *out)
{
    *out = (struct proc_sample){.state = '?'};
    DIR *dir = opendir(proc_root);
    if (!dir)
        return 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (!isdigit((unsigned char)entry->d_name[0]))
            continue;
        char state;
        long group;
        unsigned long long own, reaped;
        if (read_stat(proc_root, entry->d_name, &state, &group, &own, &reaped) < 0 || group != (long)pgid)
            continue;   /* gone since readdir, or another program's */
        out->processes++;
        out->cpu_ticks += own;
        out->any_stopped |= is_stopped(state);
        if (atol(entry->d_name) == (long)pgid) {
            out->state = state;
            out->cpu_ticks += reaped;   /* what its finished children used stays counted */
        }
    }
    closedir(dir);
    if (out->state != '?')
        read_wchan(proc_root, pgid, out->wchan, sizeof out->wchan);
    return out->processes;
}

void proc_describe(const struct proc_sample *s, char *text, size_t size)
{
    if (s->processes == 0 || s->state == 'Z' || s->state == 'X')
        snprintf(text, size, "gone");
    else if (s->any_stopped || is_stopped(s->state))
        snprintf(text, size, "stopped (SIGSTOP or a debugger)");
    else if (s->state == 'D')
        snprintf(text, size, "waiting on disk%s%s%s", s->wchan[0] ? " (" : "", s->wchan, s->wchan[0] ? ")" : "");
    else if (s->state == 'R')
        snprintf(text, size, "running");
    else if (s->state == 'S' || s->state == 'I')
        snprintf(text, size, "asleep%s%s", s->wchan[0] ? " in " : "", s->wchan);
    else
        snprintf(text, size, "in state %c", s->state);
}
