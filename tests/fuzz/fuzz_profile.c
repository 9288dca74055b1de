/* fuzz_profile.c - libFuzzer target: any bytes as a layer profile (dtrain-train --profile-out's
 * JSON, read by --emulate and predict). Invariants: no crash or leak; a profile that is read has
 * layers, a batch, every time finite and not negative, every layer's parameters within
 * PROFILE_MAX_LAYER_PARAMS; a refusal names the file. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/memfile.h"
#include "formats/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int time_ok(double t)
{
    return isfinite(t) && t >= 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path);
    struct profile p;
    struct dt_err err;
    if (profile_read(path, &p, &err) == 0) {
        if (p.layers < 1 || p.batch < 1 || !time_ok(p.update) || !time_ok(p.step))
            abort();
        for (int l = 0; l < p.layers; l++)
            if (!time_ok(p.forward[l]) || !time_ok(p.backward[l]) || p.params[l] > (size_t)PROFILE_MAX_LAYER_PARAMS ||
                strlen(p.names[l]) >= sizeof p.names[l])
                abort();
        profile_free(&p);
    } else if (!strstr(err.msg, path)) {
        abort();   /* a refusal names the file */
    }
    close(fd);
    return 0;
}
