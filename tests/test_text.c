/* test_text.c - the text datasets: SST-5's PTB trees (a hand-made fixture, and malformed trees named
 * by file:line:column), TSV, BERT's basic tokenizer, the word vocabulary and its encoding, the
 * token batches the loader hands the models, WordNet's glosses (where wordnet-base is installed)
 * and the errors of the text options. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "trainer/backend/backend.h"
#include "trainer/data/data.h"
#include "trainer/data/text.h"
#include "tests/testutil.h"

static void test_ptb_trees_of_the_fixture(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "text/train.txt");
    struct sentence_list list = {0};
    struct dt_err err;
    assert_int_equal(text_read_ptb(path, &list, &err), 0);
    assert_int_equal(list.count, 5);
    static const char *const texts[] = {"It 's a lovely film", "The plot is thin", "Awful .", "Truly wonderful !",
                                        "A film"};
    static const int labels[] = {3, 1, 0, 4, 2};
    for (int i = 0; i < 5; i++) {
        assert_string_equal(list.texts[i], texts[i]);
        assert_int_equal(list.labels[i], labels[i]);
    }
    sentence_list_free(&list);
}

/* Each malformed tree is refused with the file, the line and the column where it goes wrong. */
static void test_malformed_trees_are_named(void **state)
{
    (void)state;
    static const struct {
        const char *tree, *expected;
    } cases[] = {
        {"(3 (2 It) (4 lovely)", ":2: column 21: expected ')' or another subtree"},
        {"(7 (2 a))", ":2: column 2: expected a label from 0 to 4"},
        {"(3 (2 a b))", ":2: column 7: expected a word and ')'"},
        {"3 (2 a)", ":2: column 1: expected '('"},
        {"(3 (2 a)) x", ":2: column 10: text after the tree's closing ')'"},
        {"(3(2 a))", ":2: column 3: expected a space after the label"},
        {"(12 (2 a))", ":2: column 2: expected a label from 0 to 4"},
    };
    char path[] = "/tmp/dtrain-test-ptb-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "(2 (2 fine))\n%s\n", cases[i].tree);
        fclose(f);
        struct sentence_list list = {0};
        struct dt_err err;
        int rc = text_read_ptb(path, &list, &err);
        if (rc == 0 || !strstr(err.msg, cases[i].expected) || !strstr(err.msg, path))
            print_error("%s: %s\n", cases[i].tree, rc == 0 ? "accepted" : err.msg);
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err.msg, cases[i].expected));
        sentence_list_free(&list);
    }
    unlink(path);
}

static void test_tsv(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "text/train.tsv");
    struct sentence_list list = {0};
    struct dt_err err;
    assert_int_equal(text_read_tsv(path, &list, &err), 0);
    assert_int_equal(list.count, 2);
    assert_string_equal(list.texts[0], "A lovely, lovely film.");
    assert_int_equal(list.labels[1], 0);
    sentence_list_free(&list);
    char bad[] = "/tmp/dtrain-test-tsv-XXXXXX";
    int fd = mkstemp(bad);
    assert_true(write(fd, "1\tgood\nx\tbad\n", 13) == 13);
    close(fd);
    assert_int_equal(text_read_tsv(bad, &list, &err), -1);
    assert_non_null(strstr(err.msg, ":2: expected \"LABEL<TAB>text\""));
    sentence_list_free(&list);
    unlink(bad);
}

struct tokens {
    char out[16][32];
    int count;
};

static void collect_tokens(void *ctx, const char *token, int length)
{
    struct tokens *t = ctx;
    snprintf(t->out[t->count++], sizeof t->out[0], "%.*s", length, token);
}

static void test_basic_tokenizer(void **state)
{
    (void)state;
    struct tokens t = {0};
    text_basic_tokens("  Hello, World!\tit's\n", collect_tokens, &t);
    static const char *const expected[] = {"hello", ",", "world", "!", "it", "'", "s"};
    assert_int_equal(t.count, 7);
    for (int i = 0; i < 7; i++)
        assert_string_equal(t.out[i], expected[i]);
}

/* Words seen twice get ids, most frequent first; [CLS] leads, [PAD] fills, rare words are [UNK]. */
static void test_vocabulary_and_encoding(void **state)
{
    (void)state;
    char train_path[4096], test_path[4096];
    tu_fixture(train_path, sizeof train_path, "text/train.txt");
    tu_fixture(test_path, sizeof test_path, "text/test.txt");
    struct sentence_list train_text = {0}, test_text = {0};
    struct dt_err err;
    assert_int_equal(text_read_ptb(train_path, &train_text, &err), 0);
    assert_int_equal(text_read_ptb(test_path, &test_text, &err), 0);
    struct text_set train, test;
    assert_int_equal(text_encode(&train_text, &test_text, 6, &train, &test, &err), 0);
    /* twice in training: "a" ("a" and "A", lower-cased) and "film"; the rest once */
    assert_int_equal(train.vocab, TEXT_FIRST_WORD + 2);
    assert_int_equal(train.classes, 5);
    const int32_t a = TEXT_FIRST_WORD, film = TEXT_FIRST_WORD + 1;   /* both twice: alphabetical */
    const int32_t first[6] = {TEXT_CLS, TEXT_UNK, TEXT_UNK, TEXT_UNK, a, TEXT_UNK};   /* it ' s a lovely | film */
    assert_memory_equal(train.ids, first, sizeof first);
    const int32_t awful[6] = {TEXT_CLS, TEXT_UNK, TEXT_UNK, TEXT_PAD, TEXT_PAD, TEXT_PAD};
    assert_memory_equal(train.ids + 2 * 6, awful, sizeof awful);
    const int32_t good[6] = {TEXT_CLS, a, TEXT_UNK, film, TEXT_PAD, TEXT_PAD};   /* the test split, same ids */
    assert_memory_equal(test.ids, good, sizeof good);
    assert_int_equal(test.labels[1], 1);
    text_set_free(&train), text_set_free(&test);
    sentence_list_free(&train_text), sentence_list_free(&test_text);
}

/* What the loader hands a language model: per token its id and segment, as floats. */
static void test_token_batches(void **state)
{
    (void)state;
    char dir[4096];
    tu_fixture(dir, sizeof dir, "text");
    struct dataset train, test;
    struct dt_err err;
    assert_int_equal(dataset_open_seq("sst5", dir, 8, &train, &test, &err), 0);
    assert_int_equal(train.count, 5);
    assert_int_equal(train.c, 8);
    assert_int_equal(train.w, SEQ_TOKEN_FIELDS);
    float x[8 * SEQ_TOKEN_FIELDS];
    int label;
    dataset_sample(&train, 3, x, &label);
    assert_int_equal(label, 4);
    assert_true(x[0] == TEXT_CLS && x[1] == 0);
    assert_true(x[4 * SEQ_TOKEN_FIELDS] == TEXT_PAD);   /* "truly wonderful !" is 3 tokens after [CLS] */
    dataset_free(&train), dataset_free(&test);

    assert_int_equal(dataset_open_seq("synthetic-text:100x16", DATA_DEFAULT_DIR, 0, &train, &test, &err), 0);
    assert_int_equal(train.vocab, 100);
    float again[16 * SEQ_TOKEN_FIELDS], y[16 * SEQ_TOKEN_FIELDS];
    dataset_sample(&train, 7, y, &label);
    dataset_sample(&train, 7, again, &label);
    assert_memory_equal(y, again, sizeof y);   /* the same sample each time it is drawn */
    int masked = 0;
    for (int t = 1; t < 16; t++) {   /* a word, or [MASK] with the word it hides as its label */
        const float *tok = y + t * SEQ_TOKEN_FIELDS;
        if (tok[0] == TEXT_MASK) {
            assert_true(tok[2] >= TEXT_FIRST_WORD && tok[2] < 100);
            masked++;
        } else {
            assert_true(tok[0] >= TEXT_FIRST_WORD && tok[0] < 100 && tok[2] == SEQ_NO_LABEL);
        }
    }
    assert_true(train.pretraining);
    dataset_free(&train), dataset_free(&test);
}

static void expect_refused_vocab(const char *spec, const char *dir, int seq_len, const char *vocab,
                                 const char *expected)
{
    struct dataset train, test;
    struct dt_err err;
    int rc = dataset_open_text(spec, dir, seq_len, vocab, &train, &test, &err);
    if (rc == 0 || !strstr(err.msg, expected))
        print_error("%s: %s\n", spec, rc == 0 ? "accepted" : err.msg);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err.msg, expected));
}

static void expect_refused(const char *spec, const char *dir, int seq_len, const char *expected)
{
    expect_refused_vocab(spec, dir, seq_len, NULL, expected);
}

static void test_text_options_are_checked(void **state)
{
    (void)state;
    expect_refused("sst5", DATA_DEFAULT_DIR, 0, "--dataset sst5 reads its files from --data DIR");
    expect_refused("sst5", "/nonexistent", 0, "/nonexistent/train.txt: No such file or directory");
    expect_refused("fashion-mnist", DATA_DEFAULT_DIR, 32, "--seq-len is for text datasets");
    expect_refused("mnist", DATA_DEFAULT_DIR, 0, "--dataset mnist reads MNIST's IDX files from --data DIR");
    expect_refused("synthetic-text:100", DATA_DEFAULT_DIR, 0, "expected synthetic-text:VOCABxLEN");
    expect_refused("synthetic-text:100x16", DATA_DEFAULT_DIR, 32, "--seq-len 32, but --dataset synthetic-text:100x16 says 16");
    expect_refused("wordnet", "/nonexistent", 0, "/nonexistent/data.noun: No such file or directory (Debian's wordnet-base");
}

/* WordPiece from a BERT vocab.txt: greedy longest-match-first, "##" pieces, [UNK] for a word it
 * cannot cover; malformed vocabularies named by file:line. */
static void test_wordpiece(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "text/vocab.txt");
    struct wordpiece wp;
    struct dt_err err;
    if (text_wordpiece_load(path, &wp, &err) < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(wp.size, 10);
    assert_int_equal(wp.cls, 2);
    int32_t ids[16];
    int n = text_wordpiece_ids(&wp, "A lovely film. Films unaffable", ids, 16);
    const int32_t expected[] = {4, 6, 7, 5, 8, 5, 9, 1};   /* a love ##ly film . film ##s [UNK] */
    assert_int_equal(n, 8);
    assert_memory_equal(ids, expected, sizeof expected);
    assert_int_equal(text_wordpiece_ids(&wp, "A lovely film", ids, 2), 2);   /* cut at max */
    text_wordpiece_free(&wp);
    char dir[4096];
    tu_fixture(dir, sizeof dir, "text");
    struct dataset train, test;
    assert_int_equal(dataset_open_text("sst5", dir, 8, path, &train, &test, &err), 0);
    assert_int_equal(train.vocab, 10);
    float x[8 * SEQ_TOKEN_FIELDS];
    int label;
    dataset_sample(&train, 0, x, &label);   /* [CLS] it ' s a love ##ly film */
    const int F = SEQ_TOKEN_FIELDS;
    assert_true(x[0] == 2 && x[F] == 1 && x[4 * F] == 4 && x[5 * F] == 6 && x[6 * F] == 7 && x[7 * F] == 5);
    dataset_free(&train), dataset_free(&test);

    static const struct {
        const char *text, *expected;
    } bad[] = {
        {"[PAD]\n\n[UNK]\n", ":2: an empty line"},
        {"[PAD]\n[UNK]\n[PAD]\n", ":3: \"[PAD]\" is there already"},
        {"[PAD]\n[UNK]\n[CLS]\n", "no [SEP] token"},
        {"[UNK]\n[PAD]\n[CLS]\n[SEP]\n", "[PAD] is id 1; dtrain pads with id 0"},
    };
    char vocab[] = "/tmp/dtrain-test-vocab-XXXXXX";
    int fd = mkstemp(vocab);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        FILE *f = fopen(vocab, "w");
        fputs(bad[i].text, f);
        fclose(f);
        int rc = text_wordpiece_load(vocab, &wp, &err);
        if (rc == 0 || !strstr(err.msg, bad[i].expected) || !strstr(err.msg, vocab))
            print_error("case %zu: %s\n", i, rc == 0 ? "accepted" : err.msg);
        assert_int_equal(rc, -1);
        assert_non_null(strstr(err.msg, bad[i].expected));
    }
    unlink(vocab);
    expect_refused_vocab("synthetic-text:100x16", DATA_DEFAULT_DIR, 0, path, "--vocab tokenises sentences");
}

/* The real text set the demo trains on: WordNet's noun glosses in five classes. */
static void test_wordnet_glosses(void **state)
{
    (void)state;
    if (access(TEXT_WORDNET_DIR "/data.noun", R_OK) != 0) {
        tu_skip("WordNet's glosses (wordnet-base is not installed)");
    }
    struct dataset train, test;
    struct dt_err err;
    assert_int_equal(dataset_open_seq("wordnet", DATA_DEFAULT_DIR, 0, &train, &test, &err), 0);
    print_message("wordnet: %ld train, %ld test sentences, %d words, %d classes\n", train.count, test.count, train.vocab,
                  train.classes);
    assert_int_equal(train.count + test.count, 40786);   /* 7509 + 11587 + 2573 + 11087 + 8030 synsets */
    assert_int_equal(test.count, 4078);
    assert_int_equal(train.classes, 5);
    assert_int_equal(train.c, DATA_SEQ_LEN);
    dataset_free(&train), dataset_free(&test);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptb_trees_of_the_fixture),
        cmocka_unit_test(test_malformed_trees_are_named),
        cmocka_unit_test(test_tsv),
        cmocka_unit_test(test_basic_tokenizer),
        cmocka_unit_test(test_vocabulary_and_encoding),
        cmocka_unit_test(test_token_batches),
        cmocka_unit_test(test_text_options_are_checked),
        cmocka_unit_test(test_wordpiece),
        cmocka_unit_test(test_wordnet_glosses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
