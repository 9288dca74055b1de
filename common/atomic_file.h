/* atomic_file.h - the one way dtrain creates its output files, and whole-or-nothing writes.
 *
 * Outputs often land in shared directories (a lab's scratch, /tmp with fs.protected_symlinks=0),
 * where another user can plant a name before dtrain writes it. So every output is made here:
 *   - a file written whole: a new owner-only temporary beside it (O_CREAT|O_EXCL, which never
 *     follows a link), filled, fsynced, given the user's usual mode, renamed over the target (the
 *     rename replaces a planted link, it does not write through it), the directory fsynced;
 *   - a file appended to or streamed: opened with O_NOFOLLOW and O_NONBLOCK (a FIFO with no reader
 *     cannot hang the open) and used only when it is a regular file owned by this user. */
#ifndef ATOMIC_FILE_H
#define ATOMIC_FILE_H

#include <stdio.h>

#include "common/dt_error.h"

/* Writes the content to out; 0, or -1 when a write failed. */
typedef int (*atomic_fill)(FILE *out, const void *arg);

/* Returns 0, or -1 with err naming the file (the temporary is removed). */
int atomic_write(const char *path, atomic_fill fill, const void *arg, struct dt_err *err);

/* The two halves of atomic_write, for writers that write through a descriptor (checkpoints):
 * atomic_temp makes PATH.tmp.PID.XXXXXX (owner-only, new) and returns its fd, its name in tmp;
 * atomic_commit fsyncs and closes fd, gives it mode 0666 & ~umask, renames it over path and
 * fsyncs the directory; on any failure it removes the temporary. Both: -1 with err. */
int atomic_temp(const char *path, char *tmp, size_t tmp_size, struct dt_err *err);
int atomic_commit(int fd, const char *tmp, const char *path, struct dt_err *err);

/* Opens path as an output that is appended to or streamed: `flags` are the access mode (O_WRONLY
 * or O_RDWR) with O_APPEND, or with O_TRUNC (applied once the file has passed the checks). Made
 * 0666 & ~umask when new. Refused: a symbolic link, anything but a regular file (a FIFO, a device),
 * a file of another user. Returns the fd (blocking, close-on-exec), or -1 with err naming `what`
 * (the option the path came from) and the path. */
int open_output(const char *path, int flags, const char *what, struct dt_err *err);

/* Why the open file fd is not a regular file of this user's ("not a regular file", "a file of
 * another user", fstat's error), or NULL when it is: what outputs and checkpoints are held to. */
const char *not_own_regular_file(int fd);

/* fsync of a directory: makes a rename inside it durable. 0, or -1 with errno. */
int fsync_dir(const char *dir);

/* mkdir -p: dir and every missing parent (0755). 0, or -1 with errno. */
int make_dirs(const char *dir);

/* The folder a file path is in, made as make_dirs does ("name" alone: nothing to make). */
int make_parent_dirs(const char *path);

/* write(2) until all `bytes` are out (a signal or a short write goes on); 0, or -1 with errno
 * (a write that wrote nothing: ENOSPC where the disk is full). */
int write_fully(int fd, const void *data, size_t bytes);

#endif
