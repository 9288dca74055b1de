/* data.c - IDX loading, synthetic samples, bigMNIST deformations (see data.h). */
#include "trainer/data/data.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "trainer/backend/backend.h"
#include "trainer/base/rng.h"

/* Samples in the synthetic sets, the size of (Fashion-)MNIST's. */
#define SYNTHETIC_TRAIN 60000
#define SYNTHETIC_TEST 10000
/* Largest image a synthetic spec may ask for: 4096x4096x4. */
#define SYNTHETIC_MAX_SIDE 4096

/* Reads exactly len bytes at the current offset of a (possibly gzipped) file. */
static int read_exact(gzFile f, const char *path, void *buf, size_t len, long offset, const char *what, struct dt_err *err)
{
    size_t done = 0;
    while (done < len) {
        unsigned chunk = len - done > (1u << 30) ? 1u << 30 : (unsigned)(len - done);
        int n = gzread(f, (char *)buf + done, chunk);
        if (n < 0) {
            int code;
            const char *msg = gzerror(f, &code);
            return dt_fail(err, "%s: offset %ld: cannot read %s: %s", path, offset + (long)done, what, msg);
        }
        if (n == 0)
            return dt_fail(err, "%s: truncated at offset %ld: expected %zu bytes of %s, the file ends after %zu",
                           path, offset + (long)done, len, what, done);
        done += (size_t)n;
    }
    return 0;
}

/* Reads the `total` bytes a header announces into a buffer that grows with what arrives, so a
 * damaged header that announces terabytes costs an error, not a terabyte allocation. */
static int read_payload(gzFile f, const char *path, uint8_t **data, size_t total, long offset, const char *what,
                        struct dt_err *err)
{
    size_t have = 0, cap = 0;
    while (have < total) {
        size_t want = total - have < ((size_t)1 << 26) ? total - have : (size_t)1 << 26;   /* 64 MiB a read */
        if (have + want > cap) {
            size_t grown = cap ? cap * 2 : want;
            grown = grown < have + want ? have + want : grown > total ? total : grown;
            uint8_t *bigger = realloc(*data, grown);
            if (!bigger)
                return dt_fail(err, "%s: out of memory for %zu bytes of %s", path, grown, what);
            *data = bigger, cap = grown;
        }
        if (read_exact(f, path, *data + have, want, offset + (long)have, what, err) < 0)
            return -1;
        have += want;
    }
    return 0;
}

static uint32_t big_endian(const uint8_t *b)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

int idx_read(const char *path, int dims, uint32_t *sizes, uint8_t **data, long *count, struct dt_err *err)
{
    *data = NULL;
    gzFile f = gzopen(path, "rb");   /* reads plain files unchanged, so .gz is optional */
    if (!f)
        return dt_fail(err, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    uint8_t header[4 + 4 * 3];
    int rc = read_exact(f, path, header, 4 + 4 * (size_t)dims, 0, "IDX header", err);
    uint32_t magic = rc == 0 ? big_endian(header) : 0;
    if (rc == 0 && magic != 0x00000800u + (uint32_t)dims)
        rc = dt_fail(err, "%s: offset 0: expected the IDX magic 0x%08x (unsigned bytes, %d dimension%s), found 0x%08x",
                     path, 0x00000800u + (uint32_t)dims, dims, dims > 1 ? "s" : "", magic);
    size_t total = 1;
    for (int d = 0; rc == 0 && d < dims; d++) {
        sizes[d] = big_endian(header + 4 + 4 * d);
        if (sizes[d] == 0 || sizes[d] > (d == 0 ? 100000000u : 65536u))
            rc = dt_fail(err, "%s: offset %d: dimension %d is %u, not a plausible size", path, 4 + 4 * d, d, sizes[d]);
        total *= sizes[d];
    }
    if (rc == 0) {
        char what[96];
        if (dims == 1)
            snprintf(what, sizeof what, "labels (%u of them)", sizes[0]);
        else
            snprintf(what, sizeof what, "pixels (%u images of %ux%u)", sizes[0], sizes[1], sizes[2]);
        rc = read_payload(f, path, data, total, 4 + 4 * dims, what, err);
    }
    char extra;   /* more than the header announces: a damaged file, or one of another shape */
    if (rc == 0 && gzread(f, &extra, 1) != 0)
        rc = dt_fail(err, "%s: offset %zu: bytes after the %u %s the header announces (damaged, or not this "
                     "data set's file)", path, 4 + 4 * (size_t)dims + total, sizes[0], dims == 1 ? "labels" : "images");
    gzclose(f);
    if (rc < 0) {
        free(*data);
        *data = NULL;
        return -1;
    }
    *count = (long)sizes[0];
    return 0;
}

/* The first of the usual names of an IDX file that exists in dir: PREFIX-KIND-idxD-ubyte.gz,
 * PREFIX-KIND-idxD-ubyte, PREFIX-KIND.idxD-ubyte. */
static void find_idx(const char *dir, const char *prefix, const char *kind, char *path, size_t size)
{
    static const char *const joins[] = {"-", "-", "."}, *const suffixes[] = {".gz", "", ""};
    int dims = strcmp(kind, "images") == 0 ? 3 : 1;
    for (size_t i = 0; i < sizeof joins / sizeof joins[0]; i++) {
        snprintf(path, size, "%s/%s-%s%sidx%d-ubyte%s", dir, prefix, kind, joins[i], dims, suffixes[i]);
        if (access(path, R_OK) == 0)
            return;
    }
    snprintf(path, size, "%s/%s-%s-idx%d-ubyte.gz", dir, prefix, kind, dims);   /* the one to name in the error */
}

static int load_idx_pair(struct dataset *ds, const char *dir, const char *prefix, struct dt_err *err)
{
    char images[4096], labels[4096];
    find_idx(dir, prefix, "images", images, sizeof images);
    find_idx(dir, prefix, "labels", labels, sizeof labels);
    uint32_t isize[3], lsize[1];
    long n_images, n_labels;
    if (idx_read(images, 3, isize, &ds->pixels, &n_images, err) < 0 ||
        idx_read(labels, 1, lsize, &ds->labels, &n_labels, err) < 0)
        return -1;
    if (n_images != n_labels)
        return dt_fail(err, "%s has %ld images but %s has %ld labels", images, n_images, labels, n_labels);
    ds->count = ds->base_count = n_images;
    ds->c = 1, ds->h = (int)isize[1], ds->w = (int)isize[2], ds->classes = 10;
    for (long i = 0; i < n_labels; i++)
        if (ds->labels[i] >= ds->classes)
            return dt_fail(err, "%s: offset %ld: label %u is not a class from 0 to %d", labels, 8 + i, ds->labels[i],
                           ds->classes - 1);
    return 0;
}

/* Mean and standard deviation of all training pixels (scaled to [0, 1]). */
static void pixel_stats(struct dataset *ds)
{
    double sum = 0, sumsq = 0;
    size_t total = (size_t)ds->base_count * ds->h * ds->w;
    for (size_t i = 0; i < total; i++) {
        double v = ds->pixels[i] / 255.0;
        sum += v;
        sumsq += v * v;
    }
    double mean = sum / total;
    ds->mean = (float)mean;
    ds->std = (float)sqrt(sumsq / total - mean * mean);
}

static int parse_synthetic(const char *spec, struct dataset *ds, struct dt_err *err)
{
    ds->h = ds->w = 28, ds->c = 1;
    const char *shape = strchr(spec, ':');
    if (shape) {
        char extra;
        if (sscanf(shape + 1, "%dx%dx%d%c", &ds->h, &ds->w, &ds->c, &extra) != 3 || ds->h < 1 || ds->w < 1 ||
            ds->c < 1 || ds->h > SYNTHETIC_MAX_SIDE || ds->w > SYNTHETIC_MAX_SIDE || ds->c > 4)
            return dt_fail(err, "--dataset %s: expected synthetic:HxWxC, e.g. synthetic:224x224x3", spec);
    }
    ds->kind = DATASET_SYNTHETIC;
    ds->classes = 10;
    ds->mean = 0.0f, ds->std = 1.0f;
    return 0;
}

static int make_pool(struct dataset *ds, struct dt_err *err)
{
    size_t size = (size_t)ds->c * ds->h * ds->w;
    ds->pool = malloc(size * DATA_SYNTHETIC_POOL * sizeof(float));
    if (!ds->pool)
        return dt_fail(err, "out of memory for %d synthetic samples of %zu values", DATA_SYNTHETIC_POOL, size);
    struct rng r;
    rng_seed(&r, ds->seed);
    for (size_t i = 0; i < size * DATA_SYNTHETIC_POOL; i++)
        ds->pool[i] = (float)(rng_uniform(&r) * 2 - 1);
    return 0;
}

/* ---------- text ---------- */

static bool spec_is(const char *spec, const char *name)
{
    size_t len = strlen(name);
    return strncmp(spec, name, len) == 0 && (spec[len] == '\0' || spec[len] == ':');
}

static void text_shape(struct dataset *ds, enum dataset_kind kind, int len, int vocab, int classes)
{
    ds->kind = kind;
    ds->c = len, ds->h = 1, ds->w = SEQ_TOKEN_FIELDS;
    ds->vocab = vocab, ds->classes = classes;
}

static int open_synthetic_text(const char *spec, int seq_len, struct dataset *train, struct dataset *test,
                               struct dt_err *err)
{
    int vocab = 30522, len = seq_len ? seq_len : DATA_SEQ_LEN;
    char extra;
    if (spec[14] == ':' && (sscanf(spec + 15, "%dx%d%c", &vocab, &len, &extra) != 2 || vocab <= TEXT_FIRST_WORD ||
                            vocab > (1 << 24) || len < 2 || len > 65536))
        return dt_fail(err, "--dataset %s: expected synthetic-text:VOCABxLEN (e.g. 30522x64: ids below VOCAB, LEN "
                       "tokens)", spec);
    if (seq_len && seq_len != len)
        return dt_fail(err, "--seq-len %d, but --dataset %s says %d tokens", seq_len, spec, len);
    text_shape(train, DATASET_SYNTHETIC_TEXT, len, vocab, 2);
    text_shape(test, DATASET_SYNTHETIC_TEXT, len, vocab, 2);
    train->pretraining = test->pretraining = true;
    train->count = SYNTHETIC_TRAIN, train->seed = 0x5eed;
    test->count = SYNTHETIC_TEST, test->seed = 0x7e57;
    return 0;
}

/* wordnet, sst5, tsv: sentences read, a vocabulary built from the training split, both encoded. */
static int open_text(const char *spec, const char *dir, int seq_len, const char *vocab_path, struct dataset *train,
                     struct dataset *test, struct dt_err *err)
{
    struct sentence_list train_text = {0}, test_text = {0};
    char path[4200];
    int rc;
    bool dir_given = strcmp(dir, DATA_DEFAULT_DIR) != 0;
    if (strcmp(spec, "wordnet") == 0) {
        rc = text_read_wordnet(dir_given ? dir : TEXT_WORDNET_DIR, &train_text, &test_text, err);
    } else if (!dir_given) {
        return dt_fail(err, "--dataset %s reads its files from --data DIR (%s)", spec,
                       strcmp(spec, "sst5") == 0 ? "SST-5's train.txt and test.txt" : "train.tsv and test.tsv");
    } else {
        bool sst = strcmp(spec, "sst5") == 0;
        int (*read)(const char *, struct sentence_list *, struct dt_err *) = sst ? text_read_ptb : text_read_tsv;
        snprintf(path, sizeof path, "%s/train.%s", dir, sst ? "txt" : "tsv");
        rc = read(path, &train_text, err);
        snprintf(path, sizeof path, "%s/test.%s", dir, sst ? "txt" : "tsv");
        if (rc == 0)
            rc = read(path, &test_text, err);
    }
    int len = seq_len ? seq_len : DATA_SEQ_LEN;
    struct wordpiece wp = {0};
    if (rc == 0 && vocab_path)
        rc = text_wordpiece_load(vocab_path, &wp, err);
    if (rc == 0)
        rc = vocab_path ? text_encode_wordpiece(&wp, &train_text, &test_text, len, &train->text, &test->text, err)
                        : text_encode(&train_text, &test_text, len, &train->text, &test->text, err);
    text_wordpiece_free(&wp);
    sentence_list_free(&train_text);
    sentence_list_free(&test_text);
    if (rc < 0)
        return -1;
    text_shape(train, DATASET_TEXT, len, train->text.vocab, train->text.classes);
    text_shape(test, DATASET_TEXT, len, train->text.vocab, train->text.classes);
    train->count = train->text.count, test->count = test->text.count;
    return 0;
}

int dataset_open_seq(const char *spec, const char *dir, int seq_len, struct dataset *train, struct dataset *test,
                     struct dt_err *err)
{
    return dataset_open_text(spec, dir, seq_len, NULL, train, test, err);
}

int dataset_open_text(const char *spec, const char *dir, int seq_len, const char *vocab_path, struct dataset *train,
                      struct dataset *test, struct dt_err *err)
{
    bool synthetic = spec_is(spec, "synthetic-text");
    if (vocab_path && (synthetic || (strcmp(spec, "wordnet") && strcmp(spec, "sst5") && strcmp(spec, "tsv"))))
        return dt_fail(err, "--vocab tokenises sentences (wordnet, sst5, tsv), not --dataset %s", spec);
    if (!synthetic && strcmp(spec, "wordnet") != 0 && strcmp(spec, "sst5") != 0 && strcmp(spec, "tsv") != 0) {
        if (seq_len)
            return dt_fail(err, "--seq-len is for text datasets (wordnet, sst5, tsv, synthetic-text), not %s", spec);
        return dataset_open(spec, dir, train, test, err);
    }
    if (seq_len && (seq_len < 2 || seq_len > 65536))
        return dt_fail(err, "--seq-len %d: expected 2 to 65536 tokens", seq_len);
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    snprintf(train->name, sizeof train->name, "%s", spec);
    snprintf(test->name, sizeof test->name, "%s", spec);
    int rc = synthetic ? open_synthetic_text(spec, seq_len, train, test, err)
                       : open_text(spec, dir, seq_len, vocab_path, train, test, err);
    if (rc < 0) {
        dataset_free(train);
        dataset_free(test);
    }
    return rc;
}

int dataset_open(const char *spec, const char *dir, struct dataset *train, struct dataset *test, struct dt_err *err)
{
    memset(train, 0, sizeof *train);
    memset(test, 0, sizeof *test);
    snprintf(train->name, sizeof train->name, "%s", spec);
    snprintf(test->name, sizeof test->name, "%s", spec);
    if (strncmp(spec, "synthetic", 9) == 0 && (spec[9] == '\0' || spec[9] == ':')) {
        if (parse_synthetic(spec, train, err) < 0)
            return -1;
        *test = *train;
        train->count = SYNTHETIC_TRAIN, train->seed = 0x5eed;
        test->count = SYNTHETIC_TEST, test->seed = 0x7e57;
        if (make_pool(train, err) < 0 || make_pool(test, err) < 0) {
            dataset_free(train);
            dataset_free(test);
            return -1;
        }
        return 0;
    }
    int factor = 0;
    if (strncmp(spec, "bigmnist", 8) == 0 && (spec[8] == '\0' || spec[8] == ':')) {
        factor = DATA_BIGMNIST_FACTOR;
        char extra;
        if (spec[8] == ':' && (sscanf(spec + 9, "%d%c", &factor, &extra) != 1 || factor < 1 || factor > 100000))
            return dt_fail(err, "--dataset %s: expected bigmnist:K with K from 1 to 100000", spec);
    } else if (strcmp(spec, "mnist") == 0 && strcmp(dir, DATA_DEFAULT_DIR) == 0) {
        /* the same file names: without this, MNIST runs would train on Fashion-MNIST unawares */
        return dt_fail(err, "--dataset mnist reads MNIST's IDX files from --data DIR (the default, %s, holds "
                       "Fashion-MNIST: --dataset fashion-mnist)", DATA_DEFAULT_DIR);
    } else if (strcmp(spec, "fashion-mnist") != 0 && strcmp(spec, "mnist") != 0) {
        return dt_fail(err, "unknown dataset \"%s\" (fashion-mnist, mnist, synthetic[:HxWxC], bigmnist[:K]; text: "
                       "wordnet, sst5, tsv, synthetic-text[:VOCABxLEN])", spec);
    }
    if (load_idx_pair(train, dir, "train", err) < 0 || load_idx_pair(test, dir, "t10k", err) < 0) {
        dataset_free(train);
        dataset_free(test);
        return -1;
    }
    if (test->h != train->h || test->w != train->w) {
        dataset_free(train);
        dataset_free(test);
        return dt_fail(err, "%s: the test images are %dx%d but the training images %dx%d", dir, test->h, test->w,
                       train->h, train->w);
    }
    pixel_stats(train);
    test->mean = train->mean, test->std = train->std;
    if (factor) {
        train->kind = DATASET_BIGMNIST;
        train->count = train->base_count * factor;
        train->seed = 0xb16;
    }
    return 0;
}

void dataset_free(struct dataset *ds)
{
    text_set_free(&ds->text);
    free(ds->pixels);
    free(ds->labels);
    free(ds->pool);
    ds->pixels = ds->labels = NULL;
    ds->pool = NULL;
}

/* bigMNIST: a random affine map (rotation +-12 deg, scale 0.9-1.1, shear +-0.15, shift +-2 px)
 * and a smooth elastic ripple, drawn from the sample's own seed, sampled bilinearly. Variant 0
 * of each image is the image itself. */
static void deformed_sample(const struct dataset *ds, long index, float *out)
{
    long base = index % ds->base_count, variant = index / ds->base_count;
    const uint8_t *img = ds->pixels + (size_t)base * ds->h * ds->w;
    float inv255 = 1.0f / 255.0f;
    if (variant == 0) {
        for (int i = 0; i < ds->h * ds->w; i++)
            out[i] = (img[i] * inv255 - ds->mean) / ds->std;
        return;
    }
    struct rng r;
    rng_seed(&r, ds->seed ^ (uint64_t)index * 0x9e3779b97f4a7c15ULL);
    double angle = (rng_uniform(&r) * 2 - 1) * 0.2094, scale = 0.9 + 0.2 * rng_uniform(&r);
    double shear = (rng_uniform(&r) * 2 - 1) * 0.15, tx = (rng_uniform(&r) * 2 - 1) * 2, ty = (rng_uniform(&r) * 2 - 1) * 2;
    double amp = rng_uniform(&r) * 1.0, wave = 6 + 6 * rng_uniform(&r), phase = rng_uniform(&r) * 6.2832;
    double ca = cos(angle) / scale, sa = sin(angle) / scale, cy = (ds->h - 1) / 2.0, cx = (ds->w - 1) / 2.0;
    for (int y = 0; y < ds->h; y++)
        for (int x = 0; x < ds->w; x++) {
            /* output pixel -> source position (inverse map) */
            double dx = x - cx - tx, dy = y - cy - ty;
            dx += amp * sin(6.2832 * dy / wave + phase);
            double sx = ca * dx + (sa + shear) * dy + cx, sy = -sa * dx + ca * dy + cy;
            int x0 = (int)floor(sx), y0 = (int)floor(sy);
            double fx = sx - x0, fy = sy - y0, v = 0;
            for (int k = 0; k < 4; k++) {
                int xi = x0 + (k & 1), yi = y0 + (k >> 1);
                if (xi >= 0 && xi < ds->w && yi >= 0 && yi < ds->h)
                    v += ((k & 1) ? fx : 1 - fx) * ((k >> 1) ? fy : 1 - fy) * img[yi * ds->w + xi];
            }
            out[y * ds->w + x] = ((float)v * inv255 - ds->mean) / ds->std;
        }
}

void dataset_sample(const struct dataset *ds, long index, float *out, int *label)
{
    size_t size = (size_t)ds->c * ds->h * ds->w;
    switch (ds->kind) {
    case DATASET_IDX: {
        const uint8_t *img = ds->pixels + (size_t)index * size;
        for (size_t i = 0; i < size; i++)
            out[i] = (img[i] / 255.0f - ds->mean) / ds->std;
        *label = ds->labels[index];
        break;
    }
    case DATASET_BIGMNIST:
        deformed_sample(ds, index, out);
        *label = ds->labels[index % ds->base_count];
        break;
    case DATASET_TEXT:
    case DATASET_SYNTHETIC_TEXT: {   /* each token's id, segment and masked-LM label */
        int32_t ids[ds->c], mlm[ds->c];
        if (ds->kind == DATASET_TEXT) {   /* one sentence: segment 0, nothing to predict */
            memcpy(ids, ds->text.ids + (size_t)index * ds->c, (size_t)ds->c * sizeof *ids);
            for (int t = 0; t < ds->c; t++)
                mlm[t] = SEQ_NO_LABEL;
            *label = ds->text.labels[index];
        } else {
            text_synthetic_sample(ds->seed, index, ds->vocab, ds->c, ids, mlm, label);
        }
        for (int t = 0; t < ds->c; t++) {
            out[t * SEQ_TOKEN_FIELDS] = (float)ids[t];
            out[t * SEQ_TOKEN_FIELDS + 1] = ds->kind == DATASET_TEXT ? 0.0f : (float)(t >= ds->c / 2);
            out[t * SEQ_TOKEN_FIELDS + 2] = (float)mlm[t];
        }
        break;
    }
    case DATASET_SYNTHETIC: {
        struct rng r;
        rng_seed(&r, ds->seed ^ (uint64_t)index * 0x9e3779b97f4a7c15ULL);
        *label = (int)rng_below(&r, (uint64_t)ds->classes);
        memcpy(out, ds->pool + (size_t)(index % DATA_SYNTHETIC_POOL) * size, size * sizeof(float));
        break;
    }
    }
}
