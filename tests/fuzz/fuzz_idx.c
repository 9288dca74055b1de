/* fuzz_idx.c - libFuzzer target: any bytes as an IDX file (plain or gzipped: zlib reads both).
 * The first byte picks the dimensions asked for (1: labels, 3: images). Invariants: no crash or
 * leak; a file that is read has exactly the bytes its header announces, and nothing after them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainer/data/data.h"
#include "tests/fuzz/memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int dims = data[0] & 1 ? 3 : 1;
    char path[64];
    int fd = fuzz_memfile(data + 1, size - 1, path);
    uint32_t sizes[3];
    uint8_t *bytes = NULL;
    long count = -1;
    struct dt_err err;
    if (idx_read(path, dims, sizes, &bytes, &count, &err) == 0) {
        size_t total = 1;
        for (int d = 0; d < dims; d++)
            total *= sizes[d];
        /* a plain file that was read is exactly header + payload long */
        if (!bytes || count != (long)sizes[0] || (!(size > 1 && data[1] == 0x1f) && size - 1 != 4 + 4 * (size_t)dims + total))
            abort();
        volatile uint8_t last = bytes[total - 1];   /* the whole payload is there (ASan checks) */
        (void)last;
    } else if (bytes || !strstr(err.msg, path)) {
        abort();   /* a refusal leaves nothing and names the file */
    }
    free(bytes);
    close(fd);
    return 0;
}
