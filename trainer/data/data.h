/* data.h - datasets: MNIST-format IDX files (Fashion-MNIST by default), synthetic inputs of any
 * shape for speed runs, and bigMNIST, the training set enlarged by deterministic per-sample
 * deformations computed on the fly (nothing is stored). */
#ifndef DATA_H
#define DATA_H

#include <stdbool.h>
#include <stdint.h>

#include "common/dt_error.h"
#include "trainer/data/text.h"

/* Where Debian's dataset-fashion-mnist puts its IDX files. */
#define DATA_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

/* bigMNIST's default factor: 60000 x 120 = 7.2 M samples, the reference 140626 steps of 512 for 10
 * epochs. */
#define DATA_BIGMNIST_FACTOR 120

enum dataset_kind { DATASET_IDX, DATASET_SYNTHETIC, DATASET_BIGMNIST, DATASET_TEXT, DATASET_SYNTHETIC_TEXT };

/* Tokens a sentence of a text dataset is cut or padded to, unless --seq-len says (the reference experiments' BERT
 * runs: 64). */
#define DATA_SEQ_LEN 64

struct dataset {
    enum dataset_kind kind;
    char name[64];
    long count;                /* samples */
    int c, h, w, classes;
    uint8_t *pixels;           /* IDX and bigMNIST: count_base x h x w bytes */
    uint8_t *labels;
    long base_count;           /* bigMNIST: the images deformed */
    float mean, std;           /* pixel normalisation, from the training images */
    uint64_t seed;             /* synthetic and bigMNIST: what the samples are derived from */
    float *pool;               /* synthetic: DATA_SYNTHETIC_POOL random samples, reused */
    /* Text (c = tokens, h = 1, w = SEQ_TOKEN_FIELDS: a token batch): the encoded sentences, or for
     * synthetic-text only their shape. */
    struct text_set text;
    int vocab;                 /* token ids are below this; 0 for images */
    bool pretraining;          /* masked tokens and next-sentence labels (synthetic-text): BERT's heads */
};

/* Distinct synthetic samples: speed runs measure training, not a random-number generator, so
 * samples are copies from a pool made once (labels still differ per index). */
#define DATA_SYNTHETIC_POOL 256

/* Opens the training and test sets of a dataset spec:
 *   fashion-mnist, mnist   IDX files in dir (train-images-idx3-ubyte[.gz] and friends)
 *   synthetic[:HxWxC]      random inputs (default 28x28x1), 60000 + 10000 samples
 *   bigmnist[:K]           the IDX training set x K (default 120) deformed; the plain test set
 * Returns 0, or -1 with err naming the file, the byte offset and what was expected. */
int dataset_open(const char *spec, const char *dir, struct dataset *train, struct dataset *test, struct dt_err *err);

/* dataset_open with the sequence length of text datasets (0: DATA_SEQ_LEN):
 *   wordnet                WordNet's noun glosses in 5 classes (dir: /usr/share/wordnet unless given)
 *   sst5                   SST-5's train.txt and test.txt (PTB trees) in dir
 *   tsv                    train.tsv and test.tsv ("label<TAB>text") in dir
 *   synthetic-text[:VxL]   BERT pre-training data as the reference experiments': random ids below V (default 30522),
 *                          L tokens (default the length), 15% masked, a next-sentence label */
int dataset_open_seq(const char *spec, const char *dir, int seq_len, struct dataset *train, struct dataset *test,
                     struct dt_err *err);

/* dataset_open_seq tokenising with WordPiece from a BERT vocab.txt (vocab_path NULL: a word
 * vocabulary built from the training split). */
int dataset_open_text(const char *spec, const char *dir, int seq_len, const char *vocab_path, struct dataset *train,
                      struct dataset *test, struct dt_err *err);
void dataset_free(struct dataset *ds);

/* Sample `index` (0 <= index < count), normalised, into out (c x h x w floats); its class into *label. */
void dataset_sample(const struct dataset *ds, long index, float *out, int *label);

/* Reads one IDX file of `dims` dimensions (magic 0x0000080N); *data holds the bytes. Exposed for
 * tests. Returns 0 or -1 with err. */
int idx_read(const char *path, int dims, uint32_t *sizes, uint8_t **data, long *count, struct dt_err *err);

#endif
