/* text.h - labelled sentences as token batches for the language models: readers for SST-5's
 * PTB-tree files, TSV files and WordNet's glosses, BERT's basic tokenizer with a word vocabulary
 * built from the training split, and random token sequences for speed runs. */
#ifndef TEXT_H
#define TEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "common/dt_error.h"

/* Special tokens: the ids every vocabulary dtrain builds starts with ([PAD] is SEQ_PAD_ID). */
enum { TEXT_PAD = 0, TEXT_UNK = 1, TEXT_CLS = 2, TEXT_SEP = 3, TEXT_MASK = 4, TEXT_FIRST_WORD = 5 };

/* The share of tokens BERT's pre-training masks and predicts. */
#define TEXT_MASKED_SHARE 0.15

/* A word must occur this often in the training split to get its own id (else [UNK]). */
#define TEXT_MIN_COUNT 2

/* Where Debian's wordnet-base puts WordNet. */
#define TEXT_WORDNET_DIR "/usr/share/wordnet"

/* Sentences, each [CLS] and its first len - 1 tokens, padded with [PAD] to len. */
struct text_set {
    long count;
    int len;                   /* tokens per sequence */
    int32_t *ids;              /* count x len */
    uint8_t *labels;
    int classes;
    int vocab;                 /* ids are below this */
};

/* A sentence as read, before tokenising: its label and its words (or raw text to split). */
struct sentence_list {
    long count, cap;
    char **texts;
    uint8_t *labels;
};

void sentence_list_free(struct sentence_list *list);

/* SST-5's PTB-tree file: one tree a line, "(3 (2 It) (4 ...))"; the root's label 0-4 is the
 * sentence's, the leaves are its tokens. A malformed tree is an error naming path:line. */
int text_read_ptb(const char *path, struct sentence_list *out, struct dt_err *err);

/* "label<TAB>text" lines, labels 0-255. */
int text_read_tsv(const char *path, struct sentence_list *out, struct dt_err *err);

/* WordNet's noun glosses labelled by the lexicographer file of their synset: animal, artifact,
 * food, person, plant (text_wordnet_classes names them); every tenth synset is in the test split. */
int text_read_wordnet(const char *dir, struct sentence_list *train, struct sentence_list *test, struct dt_err *err);
extern const char *const text_wordnet_classes[5];

/* BERT's basic tokenization: lower-cased, split at white space, each punctuation character a
 * token of its own. Calls emit for each token (not NUL-terminated: start, length). */
void text_basic_tokens(const char *text, void (*emit)(void *ctx, const char *token, int length), void *ctx);

/* A word vocabulary built from the training sentences (words seen TEXT_MIN_COUNT times, most
 * frequent first, ties alphabetically); encodes both splits with it. */
int text_encode(const struct sentence_list *train_text, const struct sentence_list *test_text, int len,
                struct text_set *train, struct text_set *test, struct dt_err *err);

/* A BERT vocabulary (vocab.txt: one token a line, its id the line's number from 0; "##" marks a
 * piece that continues a word), for WordPiece: greedy longest-match-first over each basic token,
 * a word with no match [UNK]. */
struct wordpiece {
    struct text_vocab_table *table;
    int size;
    int32_t pad, unk, cls, sep;
};

/* Reads vocab.txt; an empty line, a repeated token or a missing [PAD] (which must be id 0, as
 * padding is id 0 here), [UNK], [CLS] or [SEP] is an error naming path:line. */
int text_wordpiece_load(const char *path, struct wordpiece *wp, struct dt_err *err);
void text_wordpiece_free(struct wordpiece *wp);

/* The ids of `text`'s WordPiece tokens, at most `max` of them into ids; returns how many. */
int text_wordpiece_ids(const struct wordpiece *wp, const char *text, int32_t *ids, int max);

/* Encodes both splits with WordPiece ([CLS] first, then the pieces, [PAD] after). */
int text_encode_wordpiece(const struct wordpiece *wp, const struct sentence_list *train_text,
                          const struct sentence_list *test_text, int len, struct text_set *train, struct text_set *test,
                          struct dt_err *err);

/* A random pre-training sequence, as the reference experiments' synthetic BERT runs: [CLS], then ids
 * TEXT_FIRST_WORD..vocab-1, of which TEXT_MASKED_SHARE are [MASK] with the id they hid in
 * mlm_labels (-1 elsewhere), and a next-sentence label 0 or 1; from seed and index alone. */
void text_synthetic_sample(uint64_t seed, long index, int vocab, int len, int32_t *ids, int32_t *mlm_labels,
                           int *label);

void text_set_free(struct text_set *set);

#endif
