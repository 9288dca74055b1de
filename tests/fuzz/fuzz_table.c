/* fuzz_table.c - libFuzzer target: any bytes through the result-table parser, the method-table
 * parser and their audits. Invariants: no crash, no leak, no undefined behaviour; every row read
 * has a line number; a method row has no more values than its header has GPU columns. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis/audit.h"
#include "formats/table.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *f = fmemopen((void *)data, size, "r");
    if (!f)
        return 0;
    struct table_set set = {0};
    struct dt_err err;
    if (table_parse_stream(f, "fuzz", &set, &err) == 0)
        for (int t = 0; t < set.count; t++) {
            for (int r = 0; r < set.tables[t].count; r++)
                if (set.tables[t].rows[r].line < 1)
                    abort();
            struct audit a = {0};
            audit_table(&set.tables[t], &a);
            audit_free(&a);
        }
    rewind(f);
    struct method_set methods = {0};
    if (method_table_parse(f, "fuzz", &methods, &err) == 0)
        for (int t = 0; t < methods.count; t++) {
            for (int r = 0; r < methods.tables[t].count; r++)
                if (methods.tables[t].rows[r].line < 1 || methods.tables[t].rows[r].values > methods.tables[t].columns)
                    abort();
            struct audit a = {0};
            audit_method_table(&methods.tables[t], &a);
            audit_free(&a);
        }
    method_set_free(&methods);
    fclose(f);
    table_set_free(&set);
    return 0;
}
