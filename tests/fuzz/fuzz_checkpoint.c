/* fuzz_checkpoint.c - libFuzzer target: any bytes as the only checkpoint of a small run.
 * The first byte picks a mode: odd seals the rest with a correct CRC first (the layout is the
 * one checkpoint.c documents: a 64-byte header whose CRC-32, at offset 60, covers the header with
 * that field zeroed and the payload), so the checks behind the CRC are reached too.
 * Invariants: no crash or leak; a loaded checkpoint has believable counters; a refused one leaves
 * every buffer of the run exactly as it was. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "trainer/loop/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { PARAMS = 4, BUFFERS = 2, HEADER = 64, CRC_AT = 60 };

static char dir[64];

static void remove_dir(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/ckpt-1.dtc", dir);
    unlink(path);
    rmdir(dir);
}

static void write_file(const uint8_t *data, size_t size, int seal)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        abort();
    memcpy(copy, data, size);
    if (seal && size >= HEADER) {
        memset(copy + CRC_AT, 0, 4);
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), copy, (uInt)size);
        memcpy(copy + CRC_AT, &crc, 4);
    }
    char path[128];
    snprintf(path, sizeof path, "%s/ckpt-1.dtc", dir);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(copy, 1, size, f) != size || fclose(f) != 0)
        abort();
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/dtrain-fuzz-ckpt-XXXXXX");
        if (!mkdtemp(dir))
            abort();
        atexit(remove_dir);
    }
    if (size < 1)
        return 0;
    write_file(data + 1, size - 1, data[0] & 1);
    float params[PARAMS], buffers[BUFFERS], m[PARAMS], v[PARAMS];
    for (int i = 0; i < PARAMS; i++)
        params[i] = m[i] = v[i] = 0.5f + (float)i;
    for (int i = 0; i < BUFFERS; i++)
        buffers[i] = -1.0f - (float)i;
    float before[3 * PARAMS + BUFFERS];
    memcpy(before, params, sizeof params);
    memcpy(before + PARAMS, m, sizeof m);
    memcpy(before + 2 * PARAMS, v, sizeof v);
    memcpy(before + 3 * PARAMS, buffers, sizeof buffers);
    struct checkpoint ck = {.step = -7, .resumed = -7, .fingerprint = 0x1234, .num_params = PARAMS,
                            .num_buffers = BUFFERS, .params = params, .buffers = buffers, .opt_m = m, .opt_v = v,
                            .opt_step = -7};
    struct dt_err err;
    int rc = checkpoint_load_newest(dir, &ck, &err);
    if (rc == 1 && (ck.step < 0 || ck.opt_step < 0 || ck.opt_step > ck.step || ck.resumed < 0))
        abort();
    if (rc != 1) {
        float after[3 * PARAMS + BUFFERS];
        memcpy(after, params, sizeof params);
        memcpy(after + PARAMS, m, sizeof m);
        memcpy(after + 2 * PARAMS, v, sizeof v);
        memcpy(after + 3 * PARAMS, buffers, sizeof buffers);
        if (memcmp(before, after, sizeof before) != 0 || ck.step != -7 || ck.resumed != -7)
            abort();
    }
    return 0;
}
