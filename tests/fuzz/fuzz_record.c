/* fuzz_record.c - libFuzzer target: any bytes through the run-record parser. Invariants: no
 * crash, no leak; a record that parses has world_size host names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size + 1);
    if (!line)
        return 0;
    memcpy(line, data, size);
    line[size] = '\0';
    struct run_record r;
    struct dt_err err;
    if (record_parse(line, &r, &err) == 0) {
        if (r.world_size < 1 || !r.hostnames)
            abort();
        record_free(&r);
    }
    free(line);
    return 0;
}
