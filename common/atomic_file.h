/* atomic_file.h - a file written whole or not at all: into PATH.tmp, then renamed over PATH, so a
 * reader (or a crash) sees the old file or the complete new one, never half of it. Checkpoints
 * (trainer/loop/checkpoint.c) add fsyncs on top and keep their own path. */
#ifndef ATOMIC_FILE_H
#define ATOMIC_FILE_H

#include <stdio.h>

#include "dt_error.h"

/* Writes the content to out; 0, or -1 when a write failed. */
typedef int (*atomic_fill)(FILE *out, const void *arg);

/* Returns 0, or -1 with err naming the file (PATH.tmp is removed). */
int atomic_write(const char *path, atomic_fill fill, const void *arg, struct dt_err *err);

/* mkdir -p: dir and every missing parent (0755). 0, or -1 with errno. */
int make_dirs(const char *dir);

/* The folder a file path is in, made as make_dirs does ("name" alone: nothing to make). */
int make_parent_dirs(const char *path);

/* write(2) until all `bytes` are out (a signal or a short write goes on); 0, or -1 with errno
 * (a write that wrote nothing: ENOSPC where the disk is full). */
int write_fully(int fd, const void *data, size_t bytes);

#endif
