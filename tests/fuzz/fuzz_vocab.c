/* fuzz_vocab.c - libFuzzer target: any bytes as a BERT vocab.txt (--vocab). Invariants: no crash or
 * leak; a vocabulary read has [PAD] at id 0 and [UNK], [CLS], [SEP] within it, and WordPiece gives
 * only its ids, for a fixed sentence and for the input's own text; a refusal names the file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/fuzz/memfile.h"
#include "trainer/data/text.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_ids(const struct wordpiece *wp, const char *text)
{
    int32_t ids[64];
    int n = text_wordpiece_ids(wp, text, ids, 64);
    if (n < 0 || n > 64)
        abort();
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= wp->size)
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_memfile(data, size, path);
    struct wordpiece wp;
    struct dt_err err;
    if (text_wordpiece_load(path, &wp, &err) == 0) {
        if (wp.pad != 0 || wp.unk < 0 || wp.unk >= wp.size || wp.cls < 0 || wp.cls >= wp.size || wp.sep < 0 ||
            wp.sep >= wp.size)
            abort();
        check_ids(&wp, "The quick brown fox, unaffable and ##odd, jumped!");
        char *text = malloc(size + 1);
        if (!text)
            abort();
        memcpy(text, data, size);
        text[size] = '\0';
        check_ids(&wp, text);
        free(text);
        text_wordpiece_free(&wp);
    } else if (!strstr(err.msg, path)) {
        abort();
    }
    close(fd);
    return 0;
}
