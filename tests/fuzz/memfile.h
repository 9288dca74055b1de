/* memfile.h - what the file-reading fuzz targets share: the input as a file in memory (memfd),
 * named by a path the reader under test opens. */
#ifndef FUZZ_MEMFILE_H
#define FUZZ_MEMFILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* data[0, size) as a file at path (/proc/self/fd/N); returns its fd, to close after. */
static inline int fuzz_memfile(const uint8_t *data, size_t size, char path[64])
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    snprintf(path, 64, "/proc/self/fd/%d", fd);
    return fd;
}

#endif
