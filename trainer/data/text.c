/* text.c - labelled sentences read, tokenised and encoded as token ids (see text.h). */
#include "trainer/data/text.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/base/rng.h"

/* ---------- sentence lists ---------- */

static int push_sentence(struct sentence_list *list, const char *text, size_t length, int label, struct dt_err *err)
{
    if (list->count == list->cap) {
        long cap = list->cap ? list->cap * 2 : 1024;
        char **texts = realloc(list->texts, (size_t)cap * sizeof *texts);
        if (texts)
            list->texts = texts;
        uint8_t *labels = texts ? realloc(list->labels, (size_t)cap) : NULL;
        if (!labels)
            return dt_fail(err, "out of memory for %ld sentences", cap);
        list->labels = labels, list->cap = cap;
    }
    char *copy = malloc(length + 1);
    if (!copy)
        return dt_fail(err, "out of memory");
    memcpy(copy, text, length);
    copy[length] = '\0';
    list->texts[list->count] = copy;
    list->labels[list->count++] = (uint8_t)label;
    return 0;
}

void sentence_list_free(struct sentence_list *list)
{
    for (long i = 0; i < list->count; i++)
        free(list->texts[i]);
    free(list->texts);
    free(list->labels);
    memset(list, 0, sizeof *list);
}

/* ---------- SST-5's PTB trees ---------- */

struct tree_reader {
    const char *line, *at;
    char *words;              /* the leaves, space-separated */
    size_t used;
};

static int tree_error(const struct tree_reader *t, const char *path, long number, const char *what, struct dt_err *err)
{
    return dt_fail(err, "%s:%ld: column %ld: %s (a PTB tree: \"(LABEL (LABEL word) ...)\")", path, number,
                   (long)(t->at - t->line) + 1, what);
}

/* One subtree at t->at: "(" LABEL (" " word | " " subtree ...) ")". Returns its label, or -1. */
static int read_tree(struct tree_reader *t, const char *path, long number, int depth, struct dt_err *err)
{
    if (depth > 1000)
        return tree_error(t, path, number, "nested too deeply", err);
    if (*t->at != '(')
        return tree_error(t, path, number, "expected '('", err);
    t->at++;
    if (!isdigit((unsigned char)*t->at) || isdigit((unsigned char)t->at[1]) || t->at[0] > '4')
        return tree_error(t, path, number, "expected a label from 0 to 4", err);
    int label = *t->at++ - '0';
    if (*t->at != ' ')
        return tree_error(t, path, number, "expected a space after the label", err);
    t->at++;
    if (*t->at != '(') {   /* a leaf: the word runs to the closing parenthesis */
        const char *end = strchr(t->at, ')');
        if (!end || end == t->at || memchr(t->at, '(', (size_t)(end - t->at)) || memchr(t->at, ' ', (size_t)(end - t->at)))
            return tree_error(t, path, number, "expected a word and ')'", err);
        size_t length = (size_t)(end - t->at);
        memcpy(t->words + t->used, t->at, length);
        t->used += length;
        t->words[t->used++] = ' ';
        t->at = end + 1;
        return label;
    }
    while (*t->at == '(') {
        if (read_tree(t, path, number, depth + 1, err) < 0)
            return -1;
        if (*t->at == ' ')
            t->at++;
    }
    if (*t->at != ')')
        return tree_error(t, path, number, "expected ')' or another subtree", err);
    t->at++;
    return label;
}

/* Reads a sentence file line by line, each non-empty line (its CR/LF cut) through one_line;
 * a file without sentences is an error too. */
typedef int (*sentence_line)(const char *path, long number, char *line, struct sentence_list *out, struct dt_err *err);

static int read_sentences(const char *path, sentence_line one_line, struct sentence_list *out, struct dt_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(err, "%s: %s", path, strerror(errno));
    char *line = NULL;
    size_t size = 0;
    long number = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &size, f) > 0) {
        number++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] != '\0')
            rc = one_line(path, number, line, out, err);
    }
    free(line);
    fclose(f);
    if (rc == 0 && out->count == 0)
        rc = dt_fail(err, "%s: no sentences", path);
    return rc;
}

static int ptb_line(const char *path, long number, char *line, struct sentence_list *out, struct dt_err *err)
{
    struct tree_reader t = {.line = line, .at = line, .words = malloc(strlen(line) + 1)};
    if (!t.words)
        return dt_fail(err, "out of memory");
    int label = read_tree(&t, path, number, 0, err);
    if (label >= 0 && *t.at != '\0')
        label = tree_error(&t, path, number, "text after the tree's closing ')'", err);
    int rc = label < 0 ? -1 : push_sentence(out, t.words, t.used ? t.used - 1 : 0, label, err);
    free(t.words);
    return rc;
}

int text_read_ptb(const char *path, struct sentence_list *out, struct dt_err *err)
{
    return read_sentences(path, ptb_line, out, err);
}

/* ---------- TSV ---------- */

static int tsv_line(const char *path, long number, char *line, struct sentence_list *out, struct dt_err *err)
{
    char *tab = strchr(line, '\t'), *end;
    long label = tab ? strtol(line, &end, 10) : -1;
    if (!tab || end != tab || tab == line || label < 0 || label > 255)
        return dt_fail(err, "%s:%ld: expected \"LABEL<TAB>text\" with a label from 0 to 255", path, number);
    return push_sentence(out, tab + 1, strlen(tab + 1), (int)label, err);
}

int text_read_tsv(const char *path, struct sentence_list *out, struct dt_err *err)
{
    return read_sentences(path, tsv_line, out, err);
}

/* ---------- WordNet glosses ---------- */

const char *const text_wordnet_classes[5] = {"animal", "artifact", "food", "person", "plant"};
static const int wordnet_lexfiles[5] = {5, 6, 13, 18, 20};   /* noun.animal, noun.artifact, ... */

int text_read_wordnet(const char *dir, struct sentence_list *train, struct sentence_list *test, struct dt_err *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/data.noun", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(err, "%s: %s (Debian's wordnet-base installs it)", path, strerror(errno));
    char *line = NULL;
    size_t size = 0;
    long number = 0, synsets = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &size, f) > 0) {
        number++;
        if (line[0] == ' ')   /* the licence header */
            continue;
        unsigned long offset;
        int lexfile, label = -1;
        char *gloss = strstr(line, " | ");
        if (sscanf(line, "%lu %d n ", &offset, &lexfile) != 2 || !gloss) {
            rc = dt_fail(err, "%s:%ld: not a WordNet data line (\"OFFSET LEXFILE n ... | gloss\")", path, number);
            break;
        }
        for (int k = 0; k < 5; k++)
            label = lexfile == wordnet_lexfiles[k] ? k : label;
        if (label < 0)
            continue;
        gloss += 3;
        size_t length = strcspn(gloss, "\r\n");
        while (length > 0 && gloss[length - 1] == ' ')
            length--;
        rc = push_sentence(synsets++ % 10 == 9 ? test : train, gloss, length, label, err);
    }
    free(line);
    fclose(f);
    if (rc == 0 && (train->count == 0 || test->count == 0))
        rc = dt_fail(err, "%s: no glosses of the five classes", path);
    return rc;
}

/* ---------- tokens ---------- */

void text_basic_tokens(const char *text, void (*emit)(void *ctx, const char *token, int length), void *ctx)
{
    char word[256];
    int length = 0;
    for (const unsigned char *c = (const unsigned char *)text;; c++) {
        bool end = *c == '\0' || isspace(*c), punct = *c < 0x80 && ispunct(*c);
        if ((end || punct || length == (int)sizeof word) && length > 0) {
            emit(ctx, word, length);
            length = 0;
        }
        if (*c == '\0')
            break;
        if (punct) {
            char p = (char)*c;
            emit(ctx, &p, 1);
        } else if (!end) {
            word[length++] = (char)tolower(*c);
        }
    }
}

/* An open-addressing table of words: their counts, then their ids. */
struct vocab {
    char **words;
    long *counts;
    int32_t *ids;
    size_t cap, used;
    bool failed;
};

static uint64_t hash_of(const char *s, int length)
{
    uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
    for (int i = 0; i < length; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static size_t slot_of(const struct vocab *v, const char *word, int length)
{
    size_t i = hash_of(word, length) & (v->cap - 1);
    while (v->words[i] && !(strncmp(v->words[i], word, (size_t)length) == 0 && v->words[i][length] == '\0'))
        i = (i + 1) & (v->cap - 1);
    return i;
}

static bool vocab_grow(struct vocab *v)
{
    struct vocab bigger = {.cap = v->cap ? v->cap * 2 : 1 << 14};
    bigger.words = calloc(bigger.cap, sizeof *bigger.words);
    bigger.counts = calloc(bigger.cap, sizeof *bigger.counts);
    bigger.ids = calloc(bigger.cap, sizeof *bigger.ids);
    if (!bigger.words || !bigger.counts || !bigger.ids) {
        free(bigger.words), free(bigger.counts), free(bigger.ids);
        return false;
    }
    for (size_t i = 0; i < v->cap; i++)
        if (v->words[i]) {
            size_t j = slot_of(&bigger, v->words[i], (int)strlen(v->words[i]));
            bigger.words[j] = v->words[i], bigger.counts[j] = v->counts[i];
        }
    bigger.used = v->used;
    free(v->words), free(v->counts), free(v->ids);
    *v = bigger;
    return true;
}

static void count_token(void *ctx, const char *token, int length)
{
    struct vocab *v = ctx;
    if (v->failed || ((v->used + 1) * 2 > v->cap && !vocab_grow(v))) {
        v->failed = true;
        return;
    }
    size_t i = slot_of(v, token, length);
    if (!v->words[i]) {
        if (!(v->words[i] = strndup(token, (size_t)length))) {
            v->failed = true;
            return;
        }
        v->used++;
    }
    v->counts[i]++;
}

/* Most frequent first, ties alphabetically: the same ids on every rank and every run. */
static int by_count(const void *a, const void *b, void *table)
{
    const struct vocab *v = table;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    if (v->counts[i] != v->counts[j])
        return v->counts[i] > v->counts[j] ? -1 : 1;
    return strcmp(v->words[i], v->words[j]);
}

static int assign_ids(struct vocab *v, int *size)
{
    size_t kept = 0, *order = malloc((v->used + 1) * sizeof *order);
    if (!order)
        return -1;
    for (size_t i = 0; i < v->cap; i++)
        if (v->words[i] && v->counts[i] >= TEXT_MIN_COUNT)
            order[kept++] = i;
    qsort_r(order, kept, sizeof *order, by_count, v);
    for (size_t i = 0; i < v->cap; i++)
        v->ids[i] = TEXT_UNK;
    for (size_t k = 0; k < kept; k++)
        v->ids[order[k]] = TEXT_FIRST_WORD + (int32_t)k;
    *size = TEXT_FIRST_WORD + (int)kept;
    free(order);
    return 0;
}

static void vocab_free(struct vocab *v)
{
    for (size_t i = 0; i < v->cap; i++)
        free(v->words[i]);
    free(v->words), free(v->counts), free(v->ids);
}

struct encoder {
    const struct vocab *v;
    int32_t *ids;
    int len, at;
};

static void encode_token(void *ctx, const char *token, int length)
{
    struct encoder *e = ctx;
    if (e->at == e->len)
        return;
    size_t i = slot_of(e->v, token, length);
    e->ids[e->at++] = e->v->words[i] ? e->v->ids[i] : TEXT_UNK;
}

/* Writes a sentence's ids after [CLS] into ids (at most max); the rest stays [PAD] (0). */
typedef void (*sentence_encoder)(const void *table, const char *text, int32_t *ids, int max);

static void encode_words(const void *table, const char *text, int32_t *ids, int max)
{
    struct encoder e = {.v = table, .ids = ids, .len = max, .at = 0};
    text_basic_tokens(text, encode_token, &e);
}

/* Both splits, each sentence [CLS] and its ids, with the classes either split names. */
static int encode_splits(const struct sentence_list *texts[2], int len, int vocab, int32_t cls,
                         sentence_encoder encode, const void *table, struct text_set *sets[2], struct dt_err *err)
{
    for (int k = 0; k < 2; k++) {
        struct text_set *out = sets[k];
        memset(out, 0, sizeof *out);
        out->count = texts[k]->count, out->len = len, out->vocab = vocab;
        out->ids = calloc((size_t)out->count * len, sizeof *out->ids);
        out->labels = malloc((size_t)out->count + 1);
        if (!out->ids || !out->labels)
            return dt_fail(err, "out of memory for %ld sentences of %d tokens", out->count, len);
        for (long s = 0; s < out->count; s++) {
            int32_t *ids = out->ids + (size_t)s * len;
            ids[0] = cls;
            encode(table, texts[k]->texts[s], ids + 1, len - 1);
            out->labels[s] = texts[k]->labels[s];
            out->classes = out->labels[s] >= out->classes ? out->labels[s] + 1 : out->classes;
        }
    }
    int classes = sets[0]->classes > sets[1]->classes ? sets[0]->classes : sets[1]->classes;
    sets[0]->classes = sets[1]->classes = classes;
    return 0;
}

int text_encode(const struct sentence_list *train_text, const struct sentence_list *test_text, int len,
                struct text_set *train, struct text_set *test, struct dt_err *err)
{
    struct vocab v = {0};
    if (!vocab_grow(&v))
        return dt_fail(err, "out of memory for the vocabulary");
    for (long s = 0; s < train_text->count && !v.failed; s++)
        text_basic_tokens(train_text->texts[s], count_token, &v);
    int size = 0;
    int rc = v.failed || assign_ids(&v, &size) < 0 ? dt_fail(err, "out of memory for the vocabulary") : 0;
    if (rc == 0)
        rc = encode_splits((const struct sentence_list *[2]){train_text, test_text}, len, size, TEXT_CLS, encode_words,
                           &v, (struct text_set *[2]){train, test}, err);
    vocab_free(&v);
    return rc;
}

/* ---------- WordPiece ---------- */

struct text_vocab_table {
    struct vocab v;
};

/* A WordPiece table keeps each token's id where a counting table keeps its count (vocab_grow
 * carries words and counts along when it rehashes). Adds a token; -1 when memory runs out. */
static int vocab_insert(struct vocab *v, const char *token, int length, int32_t id)
{
    if ((v->used + 1) * 2 > v->cap && !vocab_grow(v))
        return -1;
    size_t i = slot_of(v, token, length);
    if (!(v->words[i] = strndup(token, (size_t)length)))
        return -1;
    v->counts[i] = id;
    v->used++;
    return 0;
}

static int32_t vocab_lookup(const struct vocab *v, const char *token, int length)
{
    size_t i = slot_of(v, token, length);
    return v->words[i] ? (int32_t)v->counts[i] : -1;
}

static int special_token_id(const struct vocab *v, const char *name, int32_t *id, const char *path, struct dt_err *err)
{
    *id = vocab_lookup(v, name, (int)strlen(name));
    return *id < 0 ? dt_fail(err, "%s: no %s token (a BERT vocab.txt has [PAD] [UNK] [CLS] [SEP])", path, name) : 0;
}

int text_wordpiece_load(const char *path, struct wordpiece *wp, struct dt_err *err)
{
    memset(wp, 0, sizeof *wp);
    FILE *f = fopen(path, "r");
    if (!f)
        return dt_fail(err, "%s: %s", path, strerror(errno));
    wp->table = calloc(1, sizeof *wp->table);
    struct vocab *v = wp->table ? &wp->table->v : NULL;
    int rc = v && vocab_grow(v) ? 0 : dt_fail(err, "out of memory for %s", path);
    char *line = NULL;
    size_t size = 0;
    long number = 0;
    while (rc == 0 && getline(&line, &size, f) > 0) {
        number++;
        int length = (int)strcspn(line, "\r\n");
        if (length == 0) {
            rc = dt_fail(err, "%s:%ld: an empty line (one token a line)", path, number);
        } else if (vocab_lookup(v, line, length) >= 0) {
            rc = dt_fail(err, "%s:%ld: \"%.*s\" is there already", path, number, length, line);
        } else if (vocab_insert(v, line, length, (int32_t)(number - 1)) < 0) {   /* the id: the line from 0 */
            rc = dt_fail(err, "out of memory for %s", path);
        }
    }
    free(line);
    fclose(f);
    wp->size = (int)number;
    if (rc == 0 && (special_token_id(v, "[PAD]", &wp->pad, path, err) || special_token_id(v, "[UNK]", &wp->unk, path, err) ||
                    special_token_id(v, "[CLS]", &wp->cls, path, err) || special_token_id(v, "[SEP]", &wp->sep, path, err)))
        rc = -1;
    if (rc == 0 && wp->pad != TEXT_PAD)
        rc = dt_fail(err, "%s: [PAD] is id %d; dtrain pads with id 0 (line 1)", path, wp->pad);
    if (rc < 0)
        text_wordpiece_free(wp);
    return rc;
}

void text_wordpiece_free(struct wordpiece *wp)
{
    if (wp->table)
        vocab_free(&wp->table->v);
    free(wp->table);
    memset(wp, 0, sizeof *wp);
}

struct piece_writer {
    const struct wordpiece *wp;
    int32_t *ids;
    int max, count;
};

/* Greedy longest-match-first: the longest prefix in the vocabulary, then the longest "##" piece
 * of the rest, and so on; a word that cannot be covered (or of more than 100 characters) is [UNK]. */
static void write_pieces(void *ctx, const char *token, int length)
{
    struct piece_writer *w = ctx;
    const struct vocab *v = &w->wp->table->v;
    int32_t pieces[100];
    int count = 0, start = 0;
    char piece[104] = "##";
    while (length <= 100 && start < length) {
        int32_t id = -1;
        int end = length;
        while (end > start) {
            int n = end - start;
            if (start > 0)   /* a continuation: "##" and the rest */
                memcpy(piece + 2, token + start, (size_t)n);
            if ((id = start > 0 ? vocab_lookup(v, piece, n + 2) : vocab_lookup(v, token, n)) >= 0)
                break;
            end--;
        }
        if (id < 0)
            break;
        pieces[count++] = id;
        start = end;
    }
    if (length > 100 || start < length)   /* not covered: the whole word is unknown */
        pieces[0] = w->wp->unk, count = 1;
    for (int i = 0; i < count && w->count < w->max; i++)
        w->ids[w->count++] = pieces[i];
}

int text_wordpiece_ids(const struct wordpiece *wp, const char *text, int32_t *ids, int max)
{
    struct piece_writer w = {.wp = wp, .ids = ids, .max = max};
    text_basic_tokens(text, write_pieces, &w);
    return w.count;
}

static void encode_pieces(const void *table, const char *text, int32_t *ids, int max)
{
    text_wordpiece_ids(table, text, ids, max);
}

int text_encode_wordpiece(const struct wordpiece *wp, const struct sentence_list *train_text,
                          const struct sentence_list *test_text, int len, struct text_set *train, struct text_set *test,
                          struct dt_err *err)
{
    return encode_splits((const struct sentence_list *[2]){train_text, test_text}, len, wp->size, wp->cls,
                         encode_pieces, wp, (struct text_set *[2]){train, test}, err);
}

void text_synthetic_sample(uint64_t seed, long index, int vocab, int len, int32_t *ids, int32_t *mlm_labels,
                           int *label)
{
    struct rng r;
    rng_seed(&r, seed ^ (uint64_t)index * 0x9e3779b97f4a7c15ULL);
    *label = (int)rng_below(&r, 2);
    ids[0] = TEXT_CLS, mlm_labels[0] = -1;
    for (int t = 1; t < len; t++) {
        ids[t] = TEXT_FIRST_WORD + (int32_t)rng_below(&r, (uint64_t)(vocab - TEXT_FIRST_WORD));
        mlm_labels[t] = -1;
        if (rng_uniform(&r) < TEXT_MASKED_SHARE)
            mlm_labels[t] = ids[t], ids[t] = TEXT_MASK;
    }
}

void text_set_free(struct text_set *set)
{
    free(set->ids);
    free(set->labels);
    memset(set, 0, sizeof *set);
}
