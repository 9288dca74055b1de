/* train_options.c - dtrain-train's options (train_options.h): --help with the exchange methods
 * from their table, the values checked, then the combinations. */
#include "trainer/train_options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/data/data.h"
#include "common/dt_parse.h"
#include "trainer/exchange/exchange.h"
#include "formats/record.h"
#include "common/version.h"

static const char usage_text[] =
    "Usage: dtrain-train [options]\n"
    "\n"
    "Trains a model and prints, on standard output, the lines the reference trainer logs print:\n"
    "  Step200: 100.71 data/sec       every --log-every steps: samples/s since the start\n"
    "  Epoch 0 in 543.88 sec, test time 13.77 sec, test accuracy: 0.86263\n"
    "The configuration, the parameter count and an ETA go to standard error.\n"
    "\n"
    "Options:\n"
    "  -m, --model NAME        mlp, lenet, cnn, resnet18, resnet34, resnet50, resnet101 (lenet); for text:\n"
    "                          transformer (6 layers, hidden 256, 4 heads), bert-base, bert-large, or a\n"
    "                          size as transformer:LAYERSxHIDDENxHEADS\n"
    "  -d, --dataset SPEC      fashion-mnist, mnist, synthetic[:HxWxC], bigmnist[:K] (fashion-mnist);\n"
    "                          text: wordnet (WordNet's noun glosses, 5 classes), sst5 (train.txt and\n"
    "                          test.txt PTB trees in --data), tsv (train.tsv, test.tsv: label<TAB>text),\n"
    "                          synthetic-text[:VOCABxLEN]\n"
    "      --data DIR          where the files are (" DATA_DEFAULT_DIR "; wordnet: " TEXT_WORDNET_DIR ")\n"
    "      --seq-len N         tokens a sentence is cut or padded to, [CLS] first (64)\n"
    "      --vocab FILE        tokenise with WordPiece from a BERT vocab.txt (default: a word\n"
    "                          vocabulary built from the training sentences)\n"
    "      --dropout P         the language models' dropout after the embeddings and each attention\n"
    "                          and feed-forward block, in training (0.1, as BERT's)\n"
    "  -b, --batch-size N      samples per step and rank (128)\n"
    "  -e, --epochs N          passes over the training set (1)\n"
    "      --max-steps N       stop after N steps (the epoch line still follows)\n"
    "      --optimizer NAME    adam or sgd (adam)\n"
    "      --lr X              learning rate (0.01, as the reference runs)\n"
    "      --lr-scale MODE     none, or linear: lr x world size (the reference runs' 0.01 x world_size)\n"
    "      --momentum X        SGD momentum (0.9)\n"
    "      --weight-decay X    L2 penalty (0)\n"
    "      --seed N            initial weights and data order (1)\n"
    "  -T, --threads N         threads of the cpu backend (1)\n"
    "      --backend NAME      cpu (OpenBLAS), reference (plain C, slow) or cuda (cpu)\n"
    "      --device cpu|cuda   cuda: train on a GPU (cuDNN, cuBLAS; NCCL between ranks), the\n"
    "                          one dtrain gave the rank (DTRAIN_GPU), else LOCAL_RANK, else 0\n"
    "      --precision fp32|bf16  on the GPU: fp32 with TF32 tensor cores (the default), or\n"
    "                          bf16 GEMMs and convolutions with fp32 master weights (autocast)\n"
    "      --conv-algo heuristic|find|deterministic  on the GPU: cuDNN's convolution\n"
    "                          algorithms as its heuristics rank them (default), timed once\n"
    "                          per shape (find: as torch.backends.cudnn.benchmark), or only\n"
    "                          those that sum in a fixed order (deterministic: as\n"
    "                          torch.backends.cudnn.deterministic; runs repeat bit for bit)\n"
    "      --channels-last     on the GPU: images NHWC from the first convolution to the\n"
    "                          pooling (PyTorch's torch.channels_last), as cuDNN's tensor\n"
    "                          cores read them; the ResNets (the others flatten images)\n"
    "      --cuda-graphs       on one GPU: capture a training step once as a CUDA graph and\n"
    "                          replay it (one launch a step instead of hundreds)\n"
    "      --log-every N       steps between Step lines (200)\n"
    "      --eval-every N      epochs between evaluations (1); the last epoch is always\n"
    "                          evaluated; 0: never (speed runs)\n"
    "      --comm METHOD       the gradient exchange (names ignore case):\n"
    "%s"
    "      --comm-threshold BYTES  mg-wfbp: merge layers into groups of at least BYTES,\n"
    "                          from the last layer (Horovod's fusion), instead of measuring\n"
    "      --ps-servers N      *-ps: the last N ranks are parameter servers (1)\n"
    "      --ps-colocated      *-ps: instead, the last rank of every node is its server,\n"
    "                          beside that node's workers (BytePS's colocated mode)\n"
    "      --ps-node-sums on|off  *-ps: a node's workers sum each partition first and one of\n"
    "                          them pushes it, as BytePS does (on), or each pushes its own;\n"
    "                          the record's comm_options says which ran (node-sums=)\n"
    "      --partition-bytes N  *-ps, bytescheduler-*: the largest partition of the gradients\n"
    "                          sent at once (4096000, as BytePS's default; ByteScheduler cuts\n"
    "                          each layer on its own)\n"
    "      --credit-bytes N    bytescheduler-*: bytes under way at once (16000000)\n"
    "      --gpu-transport nccl|host  how a GPU rank's gradients travel: nccl (bsp-a2a's\n"
    "                          default), or host: copied to host memory span by span as\n"
    "                          backward completes them and exchanged there (BytePS's and\n"
    "                          Horovod's MPI path; every other method's default). On CPU\n"
    "                          ranks, host stages them through a second buffer the same way\n"
    "                          (the GPU path's orchestration, tested without a GPU)\n"
    "      --list-methods      the exchange methods' names, one a line (for scripts)\n"
    "      --check-replicas    after every step, check that all ranks hold identical parameters\n"
    "      --timeline PREFIX   each worker's Chrome trace in PREFIX.rankR.json (open it in\n"
    "                          Perfetto or chrome://tracing): every step's forward and backward,\n"
    "                          each layer's share of them, the exchange's transfers and waits,\n"
    "                          the update (on a GPU: when the host queued the work)\n"
    "      --timeline-steps N  record the first N steps only (default 100; 0: all)\n"
    "      --params-out PREFIX write the final parameters to PREFIX.rankR (raw float32)\n"
    "      --export-run DIR    write the initial parameters (float32, dtrain's order) and the\n"
    "                          encoded text data to DIR, then stop: PyTorch trains the same\n"
    "                          model from there (bench/seq_accuracy.py)\n"
    "      --profile-out FILE  rank 0 writes what a step costs, layer by layer (forward,\n"
    "                          backward, update; the mean of the steps after the first 2), as\n"
    "                          JSON for --emulate and dtrain-analyze (formats/FORMAT.md)\n"
    "      --emulate FILE      emulated compute: each layer takes the time the profile FILE\n"
    "                          gives (a wait that uses no CPU) instead of computing; data,\n"
    "                          gradients, exchange and updates' bookkeeping are real, so many\n"
    "                          ranks share few cores and the links are what is measured\n"
    "      --emulate-rate R    scale the profile so that one device trains R samples/s\n"
    "                          (the reference 1-GPU rates: ResNet-50 253.1, BERT-Base 212.8)\n"
    "      --dilate K          emulated time runs K times slower (shape the links K times\n"
    "                          slower too); times and rates are reported at real time\n"
    "      --record FILE       append this run's record, one JSON line (formats/FORMAT.md), to FILE\n"
    "      --tag TEXT          a label kept in the record (e.g. the link: 1gbit); dtrain-analyze\n"
    "                          throughput tables runs per model, batch, tag and method\n"
    "      --record-failure TEXT  train nothing: append a failed record of the run these options\n"
    "                          describe, with TEXT as its error (a batch script whose job step was\n"
    "                          ended before any rank could write; WORLD_SIZE and DTRAIN_* give its shape)\n"
    "      --checkpoint DIR    save checkpoints in DIR: every --checkpoint-every steps, and when\n"
    "                          SIGTERM or SIGUSR1 arrives (then stop; #SBATCH --signal=USR1@120)\n"
    "      --checkpoint-every N  steps between checkpoints (0: only on a signal; default 0)\n"
    "      --resume            continue from the newest valid checkpoint in DIR, if there is one\n"
    "      --straggler-threshold F  every --log-every steps, rank 0 names each rank whose\n"
    "                          forward and backward took F more than the ranks' median\n"
    "                          (0.25; 0: never); the record keeps every rank's mean\n"
    "      --stall-warning SEC  warn when no step has finished for SEC seconds (60; 0: never),\n"
    "                          naming every rank behind the others, what it is doing and\n"
    "                          since when, and the ranks that wait; --timeout says the same\n"
    "      --status-dir DIR    where the ranks note where they are, for those reports: a\n"
    "                          directory all ranks see (default $TMPDIR or /tmp: one node's)\n"
    "      --timeout MIN       end the whole job when no step has finished for MIN minutes (a\n"
    "                          hung rank or a dead network; default 30, 0 = never)\n"
    "  -q, --quiet             no ETA lines\n"
    "  -h, --help              this text\n"
    "  -V, --version           the version\n"
    "\n"
    "Data parallel: start it with srun --mpi=pmix or mpirun (through dtrain, which binds each\n"
    "rank); each rank trains on its own shard of every epoch, gradients are averaged every step,\n"
    "and rank 0 prints the lines, with data/sec counting the samples of all ranks.\n"
    "\n"
    "Examples:\n"
    "  dtrain-train --model lenet --epochs 5\n"
    "  mpirun -np 2 dtrain --gpus-per-node 0 -- dtrain-train --model lenet --lr-scale linear\n"
    "  dtrain-train --model resnet18 --dataset bigmnist --batch-size 512 --epochs 10\n"
    "  dtrain-train --model resnet50 --dataset synthetic:224x224x3 --max-steps 50 --threads 16\n"
    "\n"
    "Exit status: 0; 1 when training fails (a diverging loss); 2 for bad options or input files.\n";

/* --help, with the exchange methods from their table: each name, then its help in words
 * wrapped under it. */
static void print_usage(void)
{
    char methods[4096] = "";
    size_t used = 0;
    for (int i = 0; i < method_count && used < sizeof methods - 256; i++) {
        const struct method_facts *m = &method_list[i];
        int column = snprintf(methods + used, sizeof methods - used, "%28s%s%s%s%s:", "", m->name,
                              m->aliases[0] ? " (or " : "", m->aliases, m->aliases[0] ? ")" : "");
        used += column;
        for (const char *w = m->help; *w && used < sizeof methods - 128;) {
            int len = (int)strcspn(w, " ");
            if (column + 1 + len > 92)
                used += snprintf(methods + used, sizeof methods - used, "\n%29s", ""), column = 29;
            used += snprintf(methods + used, sizeof methods - used, " %.*s", len, w);
            column += 1 + len;
            w += len + (w[len] == ' ');
        }
        used += snprintf(methods + used, sizeof methods - used, "\n");
    }
    printf(usage_text, methods);
}

static int bad_option(const char *option, const char *value, const char *what)
{
    fprintf(stderr, "dtrain-train: %s \"%s\": expected %s\n", option, value, what);
    return 2;
}

/* Long options without a short form. */
enum { O_DATA = 256, O_MAX_STEPS, O_OPTIMIZER, O_LR, O_LR_SCALE, O_MOMENTUM, O_WD, O_SEED, O_BACKEND, O_LOG, O_EVAL,
       O_COMM, O_CHECK, O_PARAMS_OUT, O_RECORD, O_CKPT, O_CKPT_EVERY, O_RESUME, O_TIMEOUT, O_TAG, O_DEVICE,
       O_PRECISION, O_CONV_ALGO, O_GRAPHS, O_CHANNELS_LAST, O_COMM_THRESHOLD, O_PS_SERVERS, O_PS_COLOCATED, O_PS_NODE_SUMS, O_PARTITION, O_CREDIT, O_TIMELINE,
       O_PROFILE_OUT, O_EMULATE, O_EMULATE_RATE, O_DILATE, O_EXPORT_RUN,
       O_TIMELINE_STEPS, O_RECORD_FAILURE, O_SEQ_LEN, O_DROPOUT, O_VOCAB, O_LIST_METHODS, O_STRAGGLER, O_STALL_WARNING, O_STATUS_DIR,
       O_GPU_TRANSPORT };

/* The options that take a count: 0 when opt was one and its value good, 2 when the value is bad,
 * 1 when opt is not one of them. */
static int parse_count(int opt, struct train_config *cfg)
{
    long value;
    char *end;
    switch (opt) {
    case O_CKPT_EVERY:
        if (dt_parse_long(optarg, 0, 1L << 40, &cfg->checkpoint_every) < 0)
            return bad_option("--checkpoint-every", optarg, "a number from 0");
        break;
    case O_DROPOUT:
        cfg->dropout = strtod(optarg, &end);
        cfg->dropout_set = true;
        if (end == optarg || *end || !(cfg->dropout >= 0 && cfg->dropout < 1))
            return bad_option("--dropout", optarg, "a probability from 0 to below 1");
        break;
    case O_SEQ_LEN:
        if (dt_parse_int(optarg, 2, 65536, &cfg->seq_len) < 0)
            return bad_option("--seq-len", optarg, "a number of tokens from 2 to 65536");
        break;
    case 'b':
        if (dt_parse_int(optarg, 1, 1 << 20, &cfg->batch) < 0)
            return bad_option("--batch-size", optarg, "a number from 1");
        break;
    case 'e':
        cfg->epochs_set = true;
        if (dt_parse_int(optarg, 1, 1 << 20, &cfg->epochs) < 0)
            return bad_option("--epochs", optarg, "a number from 1");
        break;
    case 'T':
        if (dt_parse_int(optarg, 1, 1024, &cfg->threads) < 0)
            return bad_option("--threads", optarg, "a number from 1 to 1024");
        break;
    case O_LOG:
        if (dt_parse_int(optarg, 1, 1 << 30, &cfg->log_every) < 0)
            return bad_option("--log-every", optarg, "a number from 1");
        break;
    case O_EVAL:
        if (dt_parse_int(optarg, 0, 1 << 20, &cfg->eval_every) < 0)
            return bad_option("--eval-every", optarg, "a number from 0");
        break;
    case O_MAX_STEPS:
        if (dt_parse_long(optarg, 1, 1L << 40, &cfg->max_steps) < 0)
            return bad_option("--max-steps", optarg, "a number from 1");
        break;
    case O_COMM_THRESHOLD:
        if (dt_parse_long(optarg, 0, 1L << 40, &value) < 0)
            return bad_option("--comm-threshold", optarg, "bytes, 0 or more");
        cfg->exchange_options.threshold_set = true;
        cfg->exchange_options.threshold_bytes = (size_t)value;
        break;
    case O_TIMELINE_STEPS:
        if (dt_parse_long(optarg, 0, 1L << 40, &cfg->timeline_steps) < 0)
            return bad_option("--timeline-steps", optarg, "a number from 0");
        break;
    case O_PS_SERVERS:
        if (dt_parse_int(optarg, 1, 1 << 16, &cfg->exchange_options.ps_servers) < 0)
            return bad_option("--ps-servers", optarg, "a number from 1");
        break;
    case O_PARTITION:
        if (dt_parse_long(optarg, 4, 1L << 30, &value) < 0)
            return bad_option("--partition-bytes", optarg, "bytes, from 4 to 1 GiB");
        cfg->exchange_options.partition_bytes = (size_t)value;
        break;
    case O_CREDIT:
        if (dt_parse_long(optarg, 1, 1L << 40, &value) < 0)
            return bad_option("--credit-bytes", optarg, "bytes, 1 or more");
        cfg->exchange_options.credit_bytes = (size_t)value;
        break;
    default: return 1;
    }
    return 0;
}

/* The options that take a seed, a duration, a rate or a factor: as parse_count. */
static int parse_real(int opt, struct train_config *cfg)
{
    long value;
    char *end;
    switch (opt) {
    case O_SEED:
        if (dt_parse_long(optarg, 0, 1L << 62, &value) < 0)
            return bad_option("--seed", optarg, "a number from 0");
        cfg->seed = (uint64_t)value;
        break;
    case O_STALL_WARNING:
        cfg->stall_warning = strtod(optarg, &end);
        if (end == optarg || *end || !(cfg->stall_warning >= 0 && cfg->stall_warning <= 1e6))
            return bad_option("--stall-warning", optarg, "seconds, 0 or more (0: no warning)");
        break;
    case O_STRAGGLER:
        cfg->straggler_threshold = strtod(optarg, &end);
        if (end == optarg || *end || !(cfg->straggler_threshold >= 0 && cfg->straggler_threshold <= 100))
            return bad_option("--straggler-threshold", optarg, "a fraction from 0 (0: no report)");
        break;
    case O_TIMEOUT: {
        double minutes = strtod(optarg, &end);
        if (end == optarg || *end || minutes < 0 || minutes > 1e6)
            return bad_option("--timeout", optarg, "minutes, 0 or more");
        cfg->timeout_minutes = minutes;
        break;
    }
    case O_LR:
    case O_MOMENTUM:
    case O_WD: {
        double x = strtod(optarg, &end);
        if (end == optarg || *end || !(x >= 0 && x <= 1e3) || (opt == O_LR && x == 0))   /* NaN fails too */
            return bad_option(opt == O_LR ? "--lr" : opt == O_MOMENTUM ? "--momentum" : "--weight-decay", optarg,
                       opt == O_LR ? "a positive number up to 1000" : "a number from 0 to 1000");
        *(opt == O_LR ? &cfg->lr : opt == O_MOMENTUM ? &cfg->momentum : &cfg->weight_decay) = x;
        break;
    }
    case O_EMULATE_RATE:
    case O_DILATE: {
        double x = strtod(optarg, &end);
        if (end == optarg || *end || !(x > 0) || x > 1e9 || (opt == O_DILATE && x < 1))
            return bad_option(opt == O_DILATE ? "--dilate" : "--emulate-rate", optarg,
                       opt == O_DILATE ? "a factor, 1 or more" : "samples/s, more than 0");
        *(opt == O_DILATE ? &cfg->dilate : &cfg->emulate_rate) = x;
        break;
    }
    default: return 1;
    }
    return 0;
}

/* The options that name something or switch something on: as parse_count. */
static int parse_choice(int opt, struct train_options *opts)
{
    struct train_config *cfg = &opts->cfg;
    switch (opt) {
    case 'm': cfg->model = optarg; break;
    case 'd': cfg->dataset = optarg; break;
    case O_DATA: cfg->data_dir = optarg; break;
    case O_VOCAB: cfg->vocab = optarg; break;
    case O_OPTIMIZER: cfg->optimizer = optarg; break;
    case O_BACKEND: cfg->backend = optarg; break;
    case O_DEVICE:
        if (strcmp(optarg, "cpu") != 0 && strcmp(optarg, "cuda") != 0)
            return bad_option("--device", optarg, "cpu or cuda");
        cfg->backend = optarg;
        break;
    case O_PRECISION:
        if (strcmp(optarg, "fp32") != 0 && strcmp(optarg, "bf16") != 0)
            return bad_option("--precision", optarg, "fp32 or bf16");
        cfg->bf16 = strcmp(optarg, "bf16") == 0;
        break;
    case O_CONV_ALGO:
        cfg->conv_algo = CONV_ALGO_COUNT;
        for (int i = 0; i < CONV_ALGO_COUNT; i++)
            if (strcmp(optarg, conv_algo_names[i]) == 0)
                cfg->conv_algo = (enum conv_algo)i;
        if (cfg->conv_algo == CONV_ALGO_COUNT)
            return bad_option("--conv-algo", optarg, "heuristic, find or deterministic");
        break;
    case O_GRAPHS: cfg->cuda_graphs = true; break;
    case O_CHANNELS_LAST: cfg->channels_last = true; break;
    case O_GPU_TRANSPORT:
        if (strcmp(optarg, "nccl") != 0 && strcmp(optarg, "host") != 0)
            return bad_option("--gpu-transport", optarg, "nccl or host");
        cfg->gpu_transport = optarg;
        break;
    case O_PS_COLOCATED: cfg->exchange_options.ps_colocated = true; break;
    case O_PS_NODE_SUMS:
        if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
            return bad_option("--ps-node-sums", optarg, "on or off");
        cfg->exchange_options.ps_node_sums_off = strcmp(optarg, "off") == 0;
        cfg->exchange_options.ps_node_sums_given = true;
        break;
    case 'q': cfg->progress = false; break;
    case O_CHECK: cfg->check_replicas = true; break;
    case O_PARAMS_OUT: cfg->params_out = optarg; break;
    case O_RECORD: opts->record.path = optarg; break;
    case O_RECORD_FAILURE: opts->record.failure_text = optarg; break;
    case O_TAG:
        /* it becomes a table cell (Markdown, CSV) */
        if (strlen(optarg) >= sizeof ((struct run_record *)0)->tag || strpbrk(optarg, ",|\"\n"))
            return bad_option("--tag", optarg, "at most 127 characters, without , | \" or a newline");
        opts->record.tag = optarg;
        break;
    case O_CKPT: cfg->checkpoint_dir = optarg; break;
    case O_STATUS_DIR: cfg->status_dir = optarg; break;
    case O_TIMELINE: cfg->timeline = optarg; break;
    case O_PROFILE_OUT: cfg->profile_out = optarg; break;
    case O_EXPORT_RUN: cfg->export_dir = optarg; break;
    case O_EMULATE: cfg->emulate = optarg; break;
    case O_RESUME: cfg->resume = true; break;
    case O_COMM:
        if (!(cfg->exchange = exchange_find(optarg))) {
            char names[256];
            return bad_option("--comm", optarg, method_names(NULL, ", ", " or ", names, sizeof names));
        }
        break;
    case O_LR_SCALE:
        if (strcmp(optarg, "linear") && strcmp(optarg, "none"))
            return bad_option("--lr-scale", optarg, "none or linear");
        cfg->lr_scale_linear = strcmp(optarg, "linear") == 0;
        break;
    default: return 1;
    }
    return 0;
}

/* The options' combinations: each setting belongs to the methods or modes that use it. 0, or 2
 * after a message. */
static int check_combinations(const struct train_options *opts)
{
    const struct train_config *cfg = &opts->cfg;
    const struct exchange_method *method = cfg->exchange ? cfg->exchange : &exchange_bsp;
    const struct method_facts *facts = exchange_facts(method);
    char names[256];
    if (cfg->exchange_options.threshold_set && !facts->takes_threshold)
        return fprintf(stderr, "dtrain-train: --comm-threshold is mg-wfbp's (--comm mg-wfbp)\n"), 2;
    const struct exchange_options *xo = &cfg->exchange_options;
    if ((xo->ps_servers || xo->ps_colocated || xo->ps_node_sums_given) && !facts->servers)
        return fprintf(stderr, "dtrain-train: --ps-servers, --ps-colocated and --ps-node-sums are the parameter "
                       "servers' (--comm %s)\n",
                       method_names(method_has_servers, ", ", " or ", names, sizeof names)), 2;
    if (cfg->exchange_options.ps_servers && cfg->exchange_options.ps_colocated)
        return fprintf(stderr, "dtrain-train: --ps-servers N (the last N ranks serve) or --ps-colocated (the last "
                       "rank of each node serves), not both\n"), 2;
    if (cfg->exchange_options.partition_bytes && !facts->takes_partition)
        return fprintf(stderr, "dtrain-train: --partition-bytes is for methods that cut gradients into partitions "
                       "(--comm %s)\n", method_names(method_takes_partition, ", ", " or ", names, sizeof names)), 2;
    if (cfg->exchange_options.credit_bytes && !facts->takes_credit)
        return fprintf(stderr, "dtrain-train: --credit-bytes is ByteScheduler's (--comm %s)\n",
                       method_names(method_takes_credit, ", ", " or ", names, sizeof names)), 2;
    if ((cfg->emulate_rate > 0 || cfg->dilate > 0) && !cfg->emulate)
        return fprintf(stderr, "dtrain-train: --emulate-rate and --dilate scale an emulated run (--emulate PROFILE)\n"), 2;
    if (cfg->emulate && cfg->profile_out)
        return fprintf(stderr, "dtrain-train: --profile-out measures a real run, not an emulated one (--emulate)\n"), 2;
    if ((cfg->resume || cfg->checkpoint_every) && !cfg->checkpoint_dir)
        return fprintf(stderr, "dtrain-train: --resume and --checkpoint-every need --checkpoint DIR\n"), 2;
    if (opts->record.failure_text && !opts->record.path)
        return fprintf(stderr, "dtrain-train: --record-failure TEXT writes to the --record FILE: give both\n"), 2;
    return 0;
}

int train_options_parse(int argc, char **argv, struct train_options *opts)
{
    static const struct option options[] = {
        {"model", required_argument, NULL, 'm'}, {"dataset", required_argument, NULL, 'd'},
        {"data", required_argument, NULL, O_DATA}, {"batch-size", required_argument, NULL, 'b'},
        {"epochs", required_argument, NULL, 'e'}, {"max-steps", required_argument, NULL, O_MAX_STEPS},
        {"optimizer", required_argument, NULL, O_OPTIMIZER}, {"lr", required_argument, NULL, O_LR},
        {"lr-scale", required_argument, NULL, O_LR_SCALE}, {"momentum", required_argument, NULL, O_MOMENTUM},
        {"weight-decay", required_argument, NULL, O_WD}, {"seed", required_argument, NULL, O_SEED},
        {"threads", required_argument, NULL, 'T'}, {"backend", required_argument, NULL, O_BACKEND},
        {"log-every", required_argument, NULL, O_LOG}, {"eval-every", required_argument, NULL, O_EVAL},
        {"comm", required_argument, NULL, O_COMM}, {"check-replicas", no_argument, NULL, O_CHECK},
        {"params-out", required_argument, NULL, O_PARAMS_OUT}, {"record", required_argument, NULL, O_RECORD},
        {"checkpoint", required_argument, NULL, O_CKPT}, {"checkpoint-every", required_argument, NULL, O_CKPT_EVERY},
        {"resume", no_argument, NULL, O_RESUME}, {"timeout", required_argument, NULL, O_TIMEOUT},
        {"tag", required_argument, NULL, O_TAG}, {"device", required_argument, NULL, O_DEVICE},
        {"precision", required_argument, NULL, O_PRECISION}, {"conv-algo", required_argument, NULL, O_CONV_ALGO},
        {"cuda-graphs", no_argument, NULL, O_GRAPHS}, {"channels-last", no_argument, NULL, O_CHANNELS_LAST}, {"gpu-transport", required_argument, NULL, O_GPU_TRANSPORT},
        {"comm-threshold", required_argument, NULL, O_COMM_THRESHOLD},
        {"ps-servers", required_argument, NULL, O_PS_SERVERS}, {"partition-bytes", required_argument, NULL, O_PARTITION},
        {"credit-bytes", required_argument, NULL, O_CREDIT}, {"profile-out", required_argument, NULL, O_PROFILE_OUT},
        {"export-run", required_argument, NULL, O_EXPORT_RUN},
        {"emulate", required_argument, NULL, O_EMULATE}, {"emulate-rate", required_argument, NULL, O_EMULATE_RATE},
        {"dilate", required_argument, NULL, O_DILATE}, {"ps-colocated", no_argument, NULL, O_PS_COLOCATED},
        {"ps-node-sums", required_argument, NULL, O_PS_NODE_SUMS},
        {"timeline", required_argument, NULL, O_TIMELINE}, {"timeline-steps", required_argument, NULL, O_TIMELINE_STEPS},
        {"record-failure", required_argument, NULL, O_RECORD_FAILURE}, {"seq-len", required_argument, NULL, O_SEQ_LEN},
        {"dropout", required_argument, NULL, O_DROPOUT}, {"vocab", required_argument, NULL, O_VOCAB},
        {"list-methods", no_argument, NULL, O_LIST_METHODS},
        {"straggler-threshold", required_argument, NULL, O_STRAGGLER},
        {"stall-warning", required_argument, NULL, O_STALL_WARNING}, {"status-dir", required_argument, NULL, O_STATUS_DIR},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    *opts = (struct train_options){0};
    struct train_config *cfg = &opts->cfg;
    *cfg = (struct train_config){.model = "lenet", .dataset = "fashion-mnist", .data_dir = DATA_DEFAULT_DIR,
                                 .optimizer = "adam", .backend = "cpu", .batch = 128, .epochs = 1, .threads = 1,
                                 .log_every = 200, .eval_every = 1, .lr = 0.01, .momentum = 0.9, .seed = 1,
                                 .progress = true, .timeout_minutes = 30, .timeline_steps = 100,
                                 .straggler_threshold = 0.25, .stall_warning = 60};
    int opt;
    while ((opt = getopt_long(argc, argv, "m:d:b:e:T:qhV", options, NULL)) != -1) {
        int rc = parse_choice(opt, opts);
        if (rc == 1)
            rc = parse_count(opt, cfg);
        if (rc == 1)
            rc = parse_real(opt, cfg);
        if (rc == 2)
            return 2;
        if (rc == 1) {
            switch (opt) {
            case 'h': print_usage(); return -1;
            case 'V': printf("dtrain-train %s\n", DTRAIN_VERSION); return -1;
            case O_LIST_METHODS:
                for (int i = 0; i < method_count; i++)
                    puts(method_list[i].name);
                return -1;
            default: fputs("Try 'dtrain-train --help'.\n", stderr); return 2;
            }
        }
    }
    if (optind < argc)
        return fprintf(stderr, "dtrain-train: unexpected argument \"%s\" (try --help)\n", argv[optind]), 2;
    return check_combinations(opts);
}
