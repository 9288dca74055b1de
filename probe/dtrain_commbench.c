/* dtrain_commbench.c - `dtrain-commbench`: the nccl-tests/OSU of the toolkit. Times the
 * transports the exchange methods use, over sizes doubling from --min-bytes to --max-bytes, and
 * prints nccl-tests' columns (time, algbw, busbw, wrong values); fits the alpha-beta cost of the
 * operation (what MG-WFBP plans with and the cost model predicts from) and saves it all as JSON.
 *
 *   allreduce  the dtrain transport's allreduce (comm.h), the sum of every rank's buffer;
 *              --raw: MPI_Allreduce called directly, the yardstick for the transport
 *   pushpull   a parameter server's round: ranks 0..n-2 push the buffer to the last rank, which
 *              sums and sends the sum back to each
 *   colocated  colocated servers' round (BytePS beside its workers, dtrain-train --ps-colocated):
 *              every rank serves 1/n of the buffer, takes that part from every other rank, sums
 *              it and sends the sum back to each: both directions of every link carry pushes and
 *              sums at once, as a step of bsp-ps does on colocated servers
 *   colocated-ranks  the same round with a worker rank and a server rank a node (even ranks
 *              work, odd ranks serve), as dtrain-train --ps-colocated runs them
 * The servers' rounds (commbench_rounds.h) cut the buffer into a part per server, or with
 * --partition-bytes into pieces pushed under a credit, as bytescheduler-ps sends them.
 */
#include <dirent.h>
#include <getopt.h>
#include <jansson.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "trainer/comm/comm.h"
#include "probe/commbench_rounds.h"
#include "common/dt_parse.h"
#include "common/exchange_methods.h"
#include "common/grouping.h"
#include "trainer/base/timeline.h"
#include "common/version.h"
#include "common/stdout_check.h"

static const char usage_text[] =
    "Usage: dtrain-commbench [options]\n"
    "\n"
    "Times the gradient transports of dtrain over sizes doubling from --min-bytes to --max-bytes\n"
    "and prints, as nccl-tests does, per size: the time of one operation (the slowest rank's mean),\n"
    "algbw = bytes / time, busbw = the algorithm's bus bandwidth as nccl-tests defines it, algbw\n"
    "scaled by the bytes each rank moves (allreduce: x 2(n-1)/n; pushpull: x 2, the bytes a worker\n"
    "sends and receives; colocated, colocated-ranks: as an allreduce over the n workers), so that\n"
    "one number compares rank counts, and the values that came out wrong. busbw is what the\n"
    "algorithm got, not the link's rate (over one TCP connection a pair of ranks, Open MPI's\n"
    "default, a message each way at once ran at random one way after the other: dtrain asks\n"
    "for two unless OMPI_MCA_btl_tcp_links is set; measure the link itself with dtrain-check or\n"
    "--op pushpull); beside the table, the rate each of the node's links reports\n"
    "(/sys/class/net; a shaped link still reports its device's). Then the alpha-beta fit of\n"
    "time = alpha + beta x bytes over the sizes from --fit-from on.\n"
    "\n"
    "Options:\n"
    "      --op NAME           allreduce (default), pushpull (ranks 0..n-2 push to the last),\n"
    "                          colocated (a server on every rank: each sums 1/n of the buffer) or\n"
    "                          colocated-ranks (as dtrain-train --ps-colocated lays them out: even\n"
    "                          ranks work, each odd rank serves 2/n of the buffer beside them)\n"
    "      --min-bytes SIZE    first size (8); K, M, G: powers of 1024\n"
    "      --max-bytes SIZE    last size (256M)\n"
    "      --iters N           timed operations per size (20)\n"
    "      --warmup N          untimed operations first (5)\n"
    "      --fit-from SIZE     smallest size in the alpha-beta fit (32K)\n"
    "      --raw               allreduce: call MPI_Allreduce directly (the yardstick)\n"
    "      --inflight K        also time K operations of each size under way at once (non-\n"
    "                          blocking), as a layer-wise method's or a server's partitions\n"
    "                          travel: the time a message then takes (the total / K) is\n"
    "                          printed and saved beside the time of one alone (2 to 64; sizes\n"
    "                          whose K copies pass 256M are timed alone only); an allreduce is\n"
    "                          also timed alone through the same nonblocking call (alone(us)):\n"
    "                          the trainer's layer-wise allreduces are these calls\n"
    "      --partition-bytes SIZE  a servers' round in pieces of SIZE, each whole at one server (in\n"
    "                          turn, as dtrain-train places partitions), each piece's sum sent\n"
    "                          back once every push of it is in: bytescheduler-ps's traffic\n"
    "      --credit-bytes SIZE with --partition-bytes: a worker starts its next push only while its\n"
    "                          bytes under way stay within SIZE (16000000, dtrain-train's default)\n"
    "      --json FILE         write the table and the fit (written whole or not at all)\n"
    "  -h, --help              this text\n"
    "  -V, --version           the version\n"
    "nccl-tests' -b, -e, -n, -w and -o are long options here: a short option of dtrain's means\n"
    "one thing in all its tools (-b is --batch-size, -n --ranks, -o --output).\n"
    "\n"
    "Examples:\n"
    "  mpirun -np 4 dtrain --gpus-per-node 0 -- dtrain-commbench --max-bytes 64M --json links.json\n"
    "  srun --mpi=pmix dtrain --nodes 2 --gpus-per-node 0 -- dtrain-commbench --op pushpull\n"
    "  srun --mpi=pmix -n 8 dtrain --nodes 4 --gpus-per-node 0 -- dtrain-commbench --op colocated-ranks \\\n"
    "      --partition-bytes 4096000 --min-bytes 4M\n"
    "\n"
    "Exit status: 0; 1 when a value came out wrong or a transfer failed; 2 for bad options.\n";

struct options {
    const char *op, *json;
    long min_bytes, max_bytes, fit_from;
    int iters, warmup;
    int inflight;              /* --inflight K (0: one operation at a time only) */
    long partition_bytes;      /* a servers' round in pieces of this size (0: a part per server) */
    long credit_bytes;         /* a worker's bytes of pieces under way at once */
    bool raw;
    enum op_kind { OP_ALLREDUCE, OP_PUSHPULL, OP_COLOCATED, OP_COLOCATED_RANKS } kind;
};

static const char *const op_names[] = {"allreduce", "pushpull", "colocated", "colocated-ranks"};

/* --inflight's buffers hold K copies of a size: sizes whose K copies exceed this many bytes are
 * timed one at a time only (their row has no in-flight time). */
#define INFLIGHT_MAX 64
#define INFLIGHT_MAX_BYTES (256L << 20)

struct row {
    long bytes;
    double seconds, algbw, busbw;   /* GB/s */
    double inflight_seconds;   /* one message's share of K under way at once (0: not measured) */
    double alone_seconds;      /* one nonblocking allreduce alone, as the K are started (0: not measured) */
    long wrong;
};

static int bad_option(const char *option, const char *value, const char *what)
{
    fprintf(stderr, "dtrain-commbench: %s \"%s\": expected %s\n", option, value, what);
    return 2;
}

/* The options that do not go together, refused (2); the credit's default where pieces are asked. */
static int check_together(struct options *o)
{
    if (o->min_bytes > o->max_bytes)
        return fprintf(stderr, "dtrain-commbench: --min-bytes is above --max-bytes\n"), 2;
    if (o->raw && o->kind != OP_ALLREDUCE)
        return fprintf(stderr, "dtrain-commbench: --raw is for --op allreduce\n"), 2;
    if (o->partition_bytes && o->kind == OP_ALLREDUCE)
        return fprintf(stderr, "dtrain-commbench: --partition-bytes cuts a servers' round: --op pushpull, colocated "
                       "or colocated-ranks\n"), 2;
    if (o->credit_bytes && !o->partition_bytes)
        return fprintf(stderr, "dtrain-commbench: --credit-bytes limits pieces under way: give --partition-bytes\n"), 2;
    if (o->partition_bytes && o->inflight)
        return fprintf(stderr, "dtrain-commbench: --partition-bytes already keeps pieces under way (--credit-bytes "
                       "says how many bytes): --inflight is for whole operations\n"), 2;
    if (o->partition_bytes && !o->credit_bytes)
        o->credit_bytes = METHOD_CREDIT_BYTES;
    if (o->raw && o->inflight)
        return fprintf(stderr, "dtrain-commbench: --raw times MPI_Allreduce, which blocks: --inflight times the "
                       "transport's own non-blocking operations\n"), 2;
    return 0;
}

static int parse_bench_options(int argc, char **argv, struct options *o)
{
    enum { O_FIT_FROM = 256, O_RAW, O_JSON, O_OP, O_MIN_BYTES, O_MAX_BYTES, O_ITERS, O_WARMUP, O_INFLIGHT, O_PARTITION,
           O_CREDIT };
    static const struct option options[] = {
        {"op", required_argument, NULL, O_OP}, {"min-bytes", required_argument, NULL, O_MIN_BYTES},
        {"max-bytes", required_argument, NULL, O_MAX_BYTES}, {"iters", required_argument, NULL, O_ITERS},
        {"warmup", required_argument, NULL, O_WARMUP}, {"fit-from", required_argument, NULL, O_FIT_FROM},
        {"raw", no_argument, NULL, O_RAW}, {"json", required_argument, NULL, O_JSON},
        {"inflight", required_argument, NULL, O_INFLIGHT}, {"partition-bytes", required_argument, NULL, O_PARTITION},
        {"credit-bytes", required_argument, NULL, O_CREDIT},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
    };
    *o = (struct options){.op = "allreduce", .min_bytes = 8, .max_bytes = 256L << 20, .fit_from = 32L << 10,
                          .iters = 20, .warmup = 5};
    int opt;
    while ((opt = getopt_long(argc, argv, "hV", options, NULL)) != -1) {
        switch (opt) {
        case O_OP:
            o->kind = OP_ALLREDUCE;
            while (o->kind <= OP_COLOCATED_RANKS && strcmp(optarg, op_names[o->kind]) != 0)
                o->kind++;
            if (o->kind > OP_COLOCATED_RANKS)
                return bad_option("--op", optarg, "allreduce, pushpull, colocated or colocated-ranks");
            o->op = optarg;
            break;
        case O_MIN_BYTES:
            if (dt_parse_bytes(optarg, 4, 1L << 32, &o->min_bytes) < 0)
                return bad_option("--min-bytes", optarg, "a size from 4 bytes to 4G");
            break;
        case O_MAX_BYTES:
            if (dt_parse_bytes(optarg, 4, 1L << 32, &o->max_bytes) < 0)
                return bad_option("--max-bytes", optarg, "a size from 4 bytes to 4G");
            break;
        case O_FIT_FROM:
            if (dt_parse_bytes(optarg, 4, 1L << 32, &o->fit_from) < 0)
                return bad_option("--fit-from", optarg, "a size from 4 bytes to 4G");
            break;
        case O_ITERS:
            if (dt_parse_int(optarg, 1, 1 << 20, &o->iters) < 0)
                return bad_option("--iters", optarg, "a number from 1");
            break;
        case O_WARMUP:
            if (dt_parse_int(optarg, 0, 1 << 20, &o->warmup) < 0)
                return bad_option("--warmup", optarg, "a number from 0");
            break;
        case O_INFLIGHT:
            if (dt_parse_int(optarg, 2, INFLIGHT_MAX, &o->inflight) < 0)
                return bad_option("--inflight", optarg, "a count from 2 to 64");
            break;
        case O_PARTITION:
            if (dt_parse_bytes(optarg, 4, 1L << 31, &o->partition_bytes) < 0 || o->partition_bytes % 4)
                return bad_option("--partition-bytes", optarg, "a size of whole floats from 4 bytes to 2G");
            break;
        case O_CREDIT:
            if (dt_parse_bytes(optarg, 1, 1L << 40, &o->credit_bytes) < 0)
                return bad_option("--credit-bytes", optarg, "a size from 1 byte");
            break;
        case O_RAW: o->raw = true; break;
        case O_JSON: o->json = optarg; break;
        case 'h': fputs(usage_text, stdout); exit(0);
        case 'V': printf("dtrain-commbench %s\n", DTRAIN_VERSION); exit(0);
        default: fputs("Try 'dtrain-commbench --help'.\n", stderr); return 2;
        }
    }
    if (optind < argc)
        return fprintf(stderr, "dtrain-commbench: unexpected argument \"%s\" (try --help)\n", argv[optind]), 2;
    return check_together(o);
}

/* One allreduce of b->data, in place. */
static int allreduce_once(struct comm *c, const struct options *o, struct buffers *b, struct dt_err *err)
{
    if (!o->raw)
        return c->allreduce(c, b->data, b->count, COMM_SUM, err);
    int rc = MPI_Allreduce(MPI_IN_PLACE, b->data, (int)b->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    return rc == MPI_SUCCESS ? 0 : dt_fail(err, "MPI_Allreduce failed (%d)", rc);
}

/* k allreduces under way at once, each of b->count floats at its own place in b->data. */
static int allreduce_inflight(struct comm *c, int k, struct buffers *b, struct dt_err *err)
{
    struct comm_request reqs[INFLIGHT_MAX];
    for (int i = 0; i < k; i++)
        if (c->iallreduce_sum(c, b->data + (size_t)i * b->count, b->count, &reqs[i], err) < 0)
            return -1;
    return c->wait_all(c, reqs, k, err);
}

/* Who works and who serves in a servers' round of o's kind. */
static enum layout layout_of(const struct options *o)
{
    return o->kind == OP_PUSHPULL ? ONE_SERVER : o->kind == OP_COLOCATED ? EVERY_RANK : PAIRS;
}

/* One operation, or with k > 1 k of them under way at once; an allreduce through the nonblocking
 * call where nonblocking (always with k > 1). */
static int operation_k(struct comm *c, const struct options *o, int k, bool nonblocking, struct buffers *b,
                       struct dt_err *err)
{
    if (o->kind != OP_ALLREDUCE && o->partition_bytes)
        return rounds_pieces(c, layout_of(o), b, (size_t)o->partition_bytes / sizeof(float), (size_t)o->credit_bytes, err);
    if (o->kind != OP_ALLREDUCE)
        return rounds_parts(c, layout_of(o), k, b, err);
    return k > 1 || nonblocking ? allreduce_inflight(c, k, b, err) : allreduce_once(c, o, b, err);
}

static int run_operation(struct comm *c, const struct options *o, struct buffers *b, struct dt_err *err)
{
    return operation_k(c, o, 1, false, b, err);
}

/* Fills the data with rank + 1, runs the operation once and counts, over all ranks, the values
 * that are not the sum they must be. */
static int verify_results(struct comm *c, const struct options *o, struct buffers *b, long *wrong, struct dt_err *err)
{
    for (size_t i = 0; i < b->count; i++)
        b->data[i] = (float)(c->rank + 1);
    if (run_operation(c, o, b, err) < 0)
        return -1;
    int summed = o->kind == OP_ALLREDUCE ? c->world : rounds_workers(c, layout_of(o));   /* ranks whose data is summed */
    float want = (float)summed * (float)(summed + 1) / 2;
    if (o->kind == OP_COLOCATED_RANKS)   /* the even ranks': 1 + 3 + ... = (world / 2)^2 */
        want = (float)(c->world / 2) * (float)(c->world / 2);
    const float *got = o->kind == OP_ALLREDUCE ? b->data : b->result;
    bool serves_only = o->kind != OP_ALLREDUCE && rounds_serves_only(c, layout_of(o));   /* receives no sums */
    *wrong = 0;
    for (size_t i = 0; !serves_only && i < b->count; i++)
        *wrong += got[i] != want;
    return c->sum_long(c, wrong, err);
}

/* The slowest rank's mean time of one operation over o->iters, after o->warmup; with k > 1, of
 * one operation's share of k under way at once (their time / k); nonblocking: operation_k's. */
static int time_size(struct comm *c, const struct options *o, int k, bool nonblocking, struct buffers *b,
                     double *seconds, struct dt_err *err)
{
    for (int i = 0; i < o->warmup; i++)
        if (operation_k(c, o, k, nonblocking, b, err) < 0)
            return -1;
    long sync = 0;
    if (c->sum_long(c, &sync, err) < 0)   /* everyone starts together */
        return -1;
    double start = timeline_now();
    for (int i = 0; i < o->iters; i++)
        if (operation_k(c, o, k, nonblocking, b, err) < 0)
            return -1;
    unsigned long long mine = (unsigned long long)((timeline_now() - start) / o->iters / k * 1e9), lo, hi;
    if (c->min_max_u64(c, mine, &lo, &hi, err) < 0)
        return -1;
    *seconds = hi * 1e-9;
    return 0;
}

/* nccl-tests' bus bandwidth: what one rank's links carry, for comparison across rank counts. A
 * colocated round moves what an allreduce over its workers does (colocated-ranks: the even ranks;
 * the servers beside them add no bytes of their own). */
static double bus_factor(const struct comm *c, const struct options *o)
{
    int n = o->kind == OP_ALLREDUCE ? c->world : rounds_workers(c, layout_of(o));
    return o->kind == OP_PUSHPULL ? 2.0 : 2.0 * (n - 1) / n;
}

static int measure_sizes(struct comm *c, const struct options *o, struct row *rows, int *nrows, struct dt_err *err)
{
    long inflight_bytes = o->inflight ? o->inflight * (o->max_bytes < INFLIGHT_MAX_BYTES / o->inflight
                                                          ? o->max_bytes : INFLIGHT_MAX_BYTES / o->inflight) : 0;
    size_t largest = (size_t)(o->max_bytes > inflight_bytes ? o->max_bytes : inflight_bytes) / sizeof(float);
    size_t k_most = (size_t)(o->inflight ? o->inflight : 1);   /* buffers under way at once */
    struct buffers b = {.data = malloc(largest * sizeof(float)), .result = malloc(largest * sizeof(float))};
    /* a server's rows of pushes, a row a worker */
    size_t slots = o->kind == OP_ALLREDUCE ? 0
                   : rounds_slot_floats(c, layout_of(o), largest, (int)k_most, (size_t)o->partition_bytes / sizeof(float));
    b.slots = slots ? malloc(slots * sizeof(float)) : NULL;
    int rc = b.data && b.result && (!slots || b.slots) ? 0 : dt_fail(err, "out of memory for %ld bytes", o->max_bytes);
    if (rc == 0)
        memset(b.data, 0, largest * sizeof(float));
    *nrows = 0;
    for (long bytes = o->min_bytes; rc == 0 && bytes <= o->max_bytes; bytes *= 2) {
        struct row *r = &rows[(*nrows)++];
        b.count = (size_t)bytes / sizeof(float);
        r->bytes = (long)(b.count * sizeof(float));
        r->inflight_seconds = r->alone_seconds = 0;
        rc = time_size(c, o, 1, false, &b, &r->seconds, err) < 0 || verify_results(c, o, &b, &r->wrong, err) < 0 ? -1 : 0;
        if (rc == 0 && o->inflight > 1 && bytes * o->inflight <= INFLIGHT_MAX_BYTES)
            rc = time_size(c, o, o->inflight, true, &b, &r->inflight_seconds, err);
        if (rc == 0 && r->inflight_seconds > 0 && o->kind == OP_ALLREDUCE)   /* the K's one alone */
            rc = time_size(c, o, 1, true, &b, &r->alone_seconds, err);
        r->algbw = r->bytes / r->seconds / 1e9;
        r->busbw = r->algbw * bus_factor(c, o);
    }
    free(b.data), free(b.result), free(b.slots);
    return rc;
}

static int fit_alpha_beta(const struct options *o, const struct row *rows, int nrows, struct alpha_beta *cost, int *used)
{
    double bytes[64], seconds[64];
    *used = 0;
    for (int i = 0; i < nrows; i++)
        if (rows[i].bytes >= o->fit_from)
            bytes[*used] = (double)rows[i].bytes, seconds[(*used)++] = rows[i].seconds;
    return grouping_fit(*used, bytes, seconds, cost);
}

/* Beside busbw, the rate each of this node's network links says it runs at (/sys/class/net: up,
 * not loopback, a speed reported), a way: what a link carries, which busbw is not. A shaped link
 * (tc) still reports its device's rate; a virtual one often none. */
static void print_link_rates(void)
{
    DIR *dir = opendir("/sys/class/net");
    struct dirent *e;
    int told = 0;
    while (dir && (e = readdir(dir))) {
        char path[512], state[32] = "";
        long mbit = -1;
        if (e->d_name[0] == '.' || strcmp(e->d_name, "lo") == 0)
            continue;
        snprintf(path, sizeof path, "/sys/class/net/%s/operstate", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fscanf(f, "%31s", state) != 1)
            state[0] = '\0';
        if (f)
            fclose(f);
        snprintf(path, sizeof path, "/sys/class/net/%s/speed", e->d_name);
        if (strcmp(state, "up") != 0 || !(f = fopen(path, "r")))
            continue;
        if (fscanf(f, "%ld", &mbit) != 1)
            mbit = -1;
        fclose(f);
        if (mbit > 0)
            printf("%s %s %ld Mbit/s (%.3f GB/s a way)", told++ ? "," : "# this node's links as they report their rate:",
                   e->d_name, mbit, mbit / 8e3);
    }
    if (dir)
        closedir(dir);
    puts(told ? " (a link's own rate; busbw is the allreduce's, not the link's)"
              : "# no link here reports its rate (/sys/class/net): busbw is the allreduce's, not a link's");
}

static void print_table(const struct comm *c, const struct options *o, const struct row *rows, int nrows)
{
    printf("# dtrain-commbench %s over %s, %d ranks, %d operations per size after %d warm-up\n", o->op,
           o->raw ? "MPI_Allreduce (raw)" : c->name, c->world, o->iters, o->warmup);
    if (o->partition_bytes)
        printf("# in pieces of %ld bytes, each whole at one server, a worker's pushes under way within %ld bytes\n",
               o->partition_bytes, o->credit_bytes);
    printf("#%12s %12s %6s %11s %12s %12s %7s", "size", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
           "#wrong");
    if (o->inflight)
        printf(" %12s", "inflight(us)");
    if (o->inflight && o->kind == OP_ALLREDUCE)
        printf(" %12s", "alone(us)");
    printf("\n");
    double sum = 0;
    int big = 0;
    long first = 0;   /* the smallest size averaged */
    for (int i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        printf(" %12ld %12ld %6s %11.2f %12.3f %12.3f %7ld", r->bytes, r->bytes / 4, "float", r->seconds * 1e6,
               r->algbw, r->busbw, r->wrong);
        if (o->inflight && r->inflight_seconds > 0)
            printf(" %12.2f", r->inflight_seconds * 1e6);
        else if (o->inflight)
            printf(" %12s", "-");   /* K copies would take more than INFLIGHT_MAX_BYTES */
        if (o->inflight && o->kind == OP_ALLREDUCE && r->alone_seconds > 0)
            printf(" %12.2f", r->alone_seconds * 1e6);
        else if (o->inflight && o->kind == OP_ALLREDUCE)
            printf(" %12s", "-");
        printf("\n");
        if (r->bytes >= o->fit_from)
            sum += r->busbw, first = big++ ? first : r->bytes;
    }
    if (big)
        printf("# average busbw over sizes from %ld bytes: %.3f GB/s\n", first, sum / big);
    print_link_rates();
    if (o->inflight)
        printf("# inflight(us): one operation's share of the time of %d under way at once%s\n", o->inflight,
               o->kind == OP_ALLREDUCE ? "; alone(us): one of them alone" : "");
}

struct json_out {
    const struct comm *c;
    const struct options *o;
    const struct row *rows;
    int nrows;
    const struct alpha_beta *cost;   /* NULL: no fit */
};

static int fill_json(FILE *out, const void *arg)
{
    const struct json_out *j = arg;
    json_t *rows = json_array();
    for (int i = 0; i < j->nrows; i++) {
        json_t *row = json_pack("{sI sf sf sf sI}", "bytes", (json_int_t)j->rows[i].bytes, "time_us",
                                j->rows[i].seconds * 1e6, "algbw_gbs", j->rows[i].algbw, "busbw_gbs",
                                j->rows[i].busbw, "wrong", (json_int_t)j->rows[i].wrong);
        if (row && j->rows[i].inflight_seconds > 0)   /* one message's share of K under way (predict's streamed rate) */
            json_object_set_new(row, "time_us_inflight", json_real(j->rows[i].inflight_seconds * 1e6));
        if (row && j->rows[i].alone_seconds > 0)   /* the same nonblocking call alone (predict's last leg) */
            json_object_set_new(row, "time_us_alone", json_real(j->rows[i].alone_seconds * 1e6));
        json_array_append_new(rows, row);
    }
    json_t *doc = json_pack("{ss ss ss ss si si si so}", "tool", "dtrain-commbench", "version", DTRAIN_VERSION, "op",
                            j->o->op, "transport", j->o->raw ? "mpi-raw" : j->c->name, "ranks", j->c->world, "iters",
                            j->o->iters, "warmup", j->o->warmup, "rows", rows);
    if (doc && j->o->inflight)
        json_object_set_new(doc, "inflight", json_integer(j->o->inflight));
    if (doc && j->o->partition_bytes)   /* a round of pieces under a credit (bytescheduler-ps's traffic) */
        json_object_set_new(doc, "partition_bytes", json_integer(j->o->partition_bytes)),
            json_object_set_new(doc, "credit_bytes", json_integer(j->o->credit_bytes));
    if (doc && j->cost)
        json_object_set_new(doc, "fit", json_pack("{sf sf sI}", "alpha_s", j->cost->alpha, "beta_s_per_byte",
                                                  j->cost->beta, "from_bytes", (json_int_t)j->o->fit_from));
    int rc = doc && json_dumpf(doc, out, JSON_INDENT(1)) == 0 && fputc('\n', out) != EOF ? 0 : -1;
    json_decref(doc);
    return rc;
}

/* Rank 0's report: the table, the fit, the JSON file. 0, or -1 with err (the file). */
static int report_rows(const struct comm *c, const struct options *o, const struct row *rows, int nrows, struct dt_err *err)
{
    print_table(c, o, rows, nrows);
    struct alpha_beta cost;
    int used;
    bool fitted = fit_alpha_beta(o, rows, nrows, &cost, &used) == 0;
    long first = 0;   /* the smallest size fitted: --fit-from, or --min-bytes where that is above it */
    for (int i = 0; i < nrows && !first; i++)
        first = rows[i].bytes >= o->fit_from ? rows[i].bytes : 0;
    if (fitted)
        printf("# alpha %.2f us, beta %.4f ns/byte (%.3f GB/s), fitted on %d sizes from %ld bytes\n", cost.alpha * 1e6,
               cost.beta * 1e9, cost.beta > 0 ? 1 / cost.beta / 1e9 : 0.0, used, first);
    /* from 256 KiB up a link's latency is a small part of every time measured: alpha is the line's
     * intercept far below the data (3-14 ms on a 40 us link from 1 MiB), not a latency */
    if (fitted && first >= 256L << 10)
        printf("# alpha is extrapolated below %ld bytes, not measured: --min-bytes 8 measures the latency\n", first);
    else if (!fitted)
        printf("# no alpha-beta fit: fewer than 2 sizes from %ld bytes (--fit-from)\n", o->fit_from);
    fflush(stdout);
    struct json_out j = {c, o, rows, nrows, fitted ? &cost : NULL};
    struct dt_err inner;
    if (o->json && atomic_write(o->json, fill_json, &j, &inner) < 0)
        return dt_fail(err, "--json: %s", inner.msg);
    return 0;
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-commbench");   /* a full disk is an error, not an empty table */
    struct options o;
    int rc = parse_bench_options(argc, argv, &o);
    if (rc != 0)
        return rc;
    struct dt_err err;
    struct comm *c = comm_mpi_init(&argc, &argv, false, &err);
    if (!c)
        return fprintf(stderr, "dtrain-commbench: %s\n", err.msg), 2;
    if (o.kind != OP_ALLREDUCE && (c->world < 2 || c->world > 4097 || (o.kind == OP_COLOCATED_RANKS && c->world % 2))) {
        if (c->rank == 0)
            fprintf(stderr, "dtrain-commbench: --op %s needs 2 to 4097 ranks%s (%d here)\n", o.op,
                    o.kind == OP_COLOCATED_RANKS ? ", an even number" : "", c->world);
        c->finalize(c);
        return 2;
    }
    struct row rows[64];
    int nrows;
    long wrong = 0;
    rc = measure_sizes(c, &o, rows, &nrows, &err);
    if (rc == 0 && c->rank == 0)
        rc = report_rows(c, &o, rows, nrows, &err);
    for (int i = 0; i < nrows; i++)
        wrong += rows[i].wrong;
    if (rc < 0) {
        fprintf(stderr, "dtrain-commbench: rank %d on %s: %s\n", c->rank, c->hostname, err.msg);
        if (c->world > 1)
            c->abort(c, 1);
    }
    c->finalize(c);
    return rc < 0 || wrong > 0 ? 1 : 0;
}
