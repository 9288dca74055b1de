/* fuzz_timeline.c - libFuzzer target: any bytes as a --timeline trace for dtrain-analyze timeline.
 * Invariants: no crash or leak; a trace that is summed has steps, its median and slowest step
 * among them; a refusal names the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/timeline_sum.h"
#include "tests/fuzz/memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path);
    struct timeline_sum sum;
    struct dt_err err;
    if (timeline_sum_file(path, &sum, &err) == 0) {
        if (sum.steps < 1 || !(sum.median_step <= sum.slowest_step || sum.median_step != sum.median_step))
            abort();
        struct timeline_sum two[2] = {sum, sum};   /* the trace beside itself: its starts' lag, 0 */
        FILE *out = fopen("/dev/null", "w");
        if (out) {
            timeline_sum_print(out, (const char *const[]){path, path}, two, 2, false);
            fclose(out);
        }
        timeline_sum_free(&sum);
    } else if (!strstr(err.msg, path)) {
        abort();   /* a refusal names the file */
    }
    close(fd);
    return 0;
}
