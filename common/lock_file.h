/* lock_file.h - a lock no other user can take. flock on the file or directory it guards let any
 * user who could open it hold it: a reader of a 0644 records file holding a shared lock made every
 * run's record append wait forever (after training, where --timeout no longer applies), and anyone
 * who could open a 0755 checkpoint directory stopped every run on it. The lock is a file of its
 * own, the user's, mode 0600 (no one else can open it, so no one else can lock it), never a link,
 * and a wait for it is bounded. */
#ifndef LOCK_FILE_H
#define LOCK_FILE_H

#include "common/dt_error.h"

/* What lock_file_take returns besides the fd holding the lock. */
enum { LOCK_FAILED = -1, LOCK_UNSUPPORTED = -2, LOCK_HELD = -3 };

/* Opens (creating it) the lock file at path and takes its exclusive lock, waiting up to
 * wait_seconds (0: not at all) while another process of this user holds it. what names the
 * guarded thing in messages ("the record file runs.jsonl"). Returns the fd holding the lock (close
 * it to release); LOCK_FAILED with err (another user's file, a link there, cannot be made: errno
 * is open's), LOCK_HELD with err (still held after the wait), or LOCK_UNSUPPORTED (a file system
 * without flock: the caller goes on unlocked, saying so). */
int lock_file_take(const char *path, double wait_seconds, const char *what, struct dt_err *err);

/* flock(fd, LOCK_EX), tried until wait_seconds have passed: 0, or -1 with errno (EWOULDBLOCK:
 * still held). */
int lock_fd_within(int fd, double wait_seconds);

#endif
