/* stdout_check.h - a tool's standard output, checked before it exits. A table written to a full
 * disk (`dtrain-analyze table ... > table.md`, the sweep's last job) used to end with status 0 and
 * an empty file: stdio reports a failed write only at the flush, after main has returned. Each
 * tool registers this check first thing in main; at exit it flushes and closes standard output
 * and, when that fails, says so with the errno and makes the exit status 1 (coreutils' rule). */
#ifndef STDOUT_CHECK_H
#define STDOUT_CHECK_H

/* At exit, tool's standard output is flushed and closed; a failure prints "TOOL: cannot write
 * standard output: REASON" and ends the process with status 1. Call once, at the start of main. */
void stdout_check_at_exit(const char *tool);

#endif
