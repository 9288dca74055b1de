/* fuzz_text.c - libFuzzer target: any bytes as a text dataset, SST-5's PTB trees or "label<TAB>text"
 * lines (the first byte picks which). Invariants: no crash or leak; sentences read are encoded
 * with the word vocabulary built from them, every id below the vocabulary's size, every sequence
 * starting with [CLS]; a refusal names the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/memfile.h"
#include "trainer/data/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_encoding(const struct sentence_list *list)
{
    struct text_set train, test;
    struct dt_err err;
    if (text_encode(list, list, 16, &train, &test, &err) < 0)
        return;   /* (an empty list has nothing to encode: said, not a defect) */
    for (long i = 0; i < train.count; i++) {
        if (train.ids[i * train.len] != TEXT_CLS)
            abort();
        for (int t = 0; t < train.len; t++)
            if (train.ids[i * train.len + t] < 0 || train.ids[i * train.len + t] >= train.vocab)
                abort();
    }
    text_set_free(&train);
    text_set_free(&test);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char path[64];
    int fd = fuzz_memfile(data + 1, size - 1, path);
    struct sentence_list list = {0};
    struct dt_err err;
    int rc = data[0] & 1 ? text_read_tsv(path, &list, &err) : text_read_ptb(path, &list, &err);
    if (rc == 0)
        check_encoding(&list);
    else if (!strstr(err.msg, path))
        abort();
    sentence_list_free(&list);
    close(fd);
    return 0;
}
