/* fuzz_scaling.c - libFuzzer target: any bytes through the published scaling-table reader
 * (formats/scaling_table.c: GPU counts beside throughputs, times with their units, speedups and
 * efficiencies; Markdown, or CSV where the first byte is odd), its audit and its speedup tables. Invariants: no crash, no leak, no undefined
 * behaviour; every table has its count column and rows with line numbers; a ratio column tied to a
 * column ties to a throughput or a time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analysis/scaling_audit.h"
#include "tests/fuzz/memfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether column c is what a ratio may be worked out from. */
static int is_measure(const struct scaling_table *t, int c)
{
    return c >= 0 && c < t->columns && (t->column[c].kind == SCALING_RATE || t->column[c].kind == SCALING_TIME);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], csv[64];
    int fd = fuzz_memfile(data, size, path);
    /* an odd first byte: the same bytes as a published CSV file (its name says so) */
    snprintf(csv, sizeof csv, "/tmp/fuzz_scaling_%d.csv", (int)getpid());
    if (size > 0 && (data[0] & 1)) {
        unlink(csv);
        if (symlink(path, csv) == 0)
            snprintf(path, sizeof path, "%s", csv);
    }
    struct scaling_set set = {0};
    struct dt_err err;
    if (scaling_parse_file(path, &set, &err) == 0)
        for (int i = 0; i < set.count; i++) {
            const struct scaling_table *t = &set.tables[i];
            if (t->count_column < 0 || t->count_column >= t->columns || t->rows < 1)
                abort();
            for (int r = 0; r < t->rows; r++)
                if (t->row_line[r] <= t->line)
                    abort();
            for (int c = 0; c < t->columns; c++)
                if ((t->column[c].of >= 0 && !is_measure(t, t->column[c].of)) ||
                    (t->column[c].to >= 0 && !is_measure(t, t->column[c].to)))
                    abort();
            struct audit a = {0}, notes = {0};
            scaling_audit(t, &a, &notes);
            audit_free(&a), audit_free(&notes);
            char text[4096];
            scaling_describe(t, text, sizeof text);
            FILE *null = fopen("/dev/null", "w");
            if (null)
                scaling_print(null, t, "fuzz"), fclose(null);
        }
    scaling_set_free(&set);
    close(fd);
    unlink(csv);
    return 0;
}
