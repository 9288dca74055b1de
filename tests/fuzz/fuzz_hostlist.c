/* fuzz_hostlist.c - libFuzzer target: any bytes through the hostlist parser and back.
 * Invariants: no crash or leak; a parsed list folds to an expression that expands to the same
 * names (order and duplicates kept). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/hostlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *expr = malloc(size + 1);
    if (!expr)
        return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';
    struct hostlist list, again;
    hostlist_init(&list);
    hostlist_init(&again);
    struct dt_err err;
    if (hostlist_expand(expr, &list, &err) == 0) {
        char *folded = hostlist_compress(&list);
        if (!folded || hostlist_expand(folded, &again, &err) != 0 || again.count != list.count)
            abort();
        for (size_t i = 0; i < list.count; i++)
            if (strcmp(hostlist_nth(&list, i), hostlist_nth(&again, i)) != 0)
                abort();
        free(folded);
    }
    hostlist_free(&list);
    hostlist_free(&again);
    free(expr);
    return 0;
}
