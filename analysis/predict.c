/* predict.c - dtrain-analyze predict: a profile's layers and the links' alpha and
 * beta into every method's predicted samples/s at every size of job, as a method comparison table. */
#include "analysis/command.h"

#include <getopt.h>
#include <math.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis/costmodel.h"
#include "common/exchange_methods.h"
#include "common/dt_parse.h"
#include "analysis/links.h"
#include "analysis/predict_compare.h"
#include "analysis/predict_job.h"
#include "analysis/predictions.h"
#include "formats/profile.h"
#include "formats/record.h"

static const char predict_usage[] =
    "Usage: dtrain-analyze predict [options] PROFILE\n"
    "\n"
    "Predicts samples/s of every gradient-exchange method at every job size from a profile\n"
    "(dtrain-train --profile-out) and the links, before the allocation is spent: BSP as compute\n"
    "plus an allreduce (the cheapest of ring, Rabenseifner and hierarchical, Thakur et al.),\n"
    "WFBP, MG-WFBP and ByteScheduler by a per-layer schedule of the step, parameter servers by\n"
    "their busiest link. Printed as a method comparison table (a row per method, a column per GPU\n"
    "count). analysis/costmodel.h writes the model out.\n"
    "\n"
    "      --gpus-per-node G   workers per node (4)\n"
    "      --nodes LIST        node counts, comma-separated (1,2,4,8)\n"
    "      --inter LINK        between nodes: BANDWIDTH[:LATENCY] (10gbit:25us; bandwidth in\n"
    "                          gbit, mbit, GB/s or MB/s, latency in us, ms or s), or a JSON file\n"
    "                          of dtrain-commbench --json run on 2 ranks across the link: its\n"
    "                          measured times, a message of m bytes costing half the allreduce\n"
    "                          of 2m, read between the sizes measured\n"
    "      --servers-link FILE  dtrain-commbench --op pushpull --json on 2 ranks across the link (a\n"
    "                          worker, a server): the servers' pushes and pulls at the rate it\n"
    "                          measured a direction at a time (a message of m bytes half the push\n"
    "                          and pull of m), not --inter's, whose allreduce loads both at once\n"
    "      --line              a commbench file's alpha-beta fit instead (allreduce 2 alpha + n beta)\n"
    "      --allreduce FILE    dtrain-commbench --json over all the ranks of one job size: that\n"
    "                          size's allreduce as measured (the library's algorithm, links and\n"
    "                          cores shared by ranks included) instead of composed from the\n"
    "                          links; repeatable, a file a size (its \"ranks\")\n"
    "      --servers-round FILE  dtrain-commbench --op colocated-ranks --json over a worker and a\n"
    "                          server rank on each node of a job (or --op colocated, one rank a\n"
    "                          node): with colocated servers at that node count, BSP-PS's and\n"
    "                          WFBP-PS's pushes and sums cost what the round measured, not what\n"
    "                          --inter composes; repeatable, a file a size\n"
    "      --servers-pieces FILE  dtrain-commbench --partition-bytes N --json: ByteScheduler-PS's\n"
    "                          traffic alone in a job's layout (--op pushpull over its workers\n"
    "                          and servers, or --op colocated-ranks over its nodes): how much\n"
    "                          slower a piece crosses while the link's other way is busy is\n"
    "                          fitted to it at the model's gradient size; repeatable, a file a\n"
    "                          layout\n"
    "      --intra LINK        inside a node, the same way (12GB/s:5us: PCIe 3 x16)\n"
    "      --servers N|colocated  parameter servers, each on a node of its own (default: one per\n"
    "                          worker node), or colocated: one on each worker node, beside its\n"
    "                          workers (dtrain-train --ps-colocated)\n"
    "      --servers-duplex full|half  full: a node's pushes and pulls each at the link's rate\n"
    "                          one way (dtrain's servers over Open MPI); half: the two take turns\n"
    "                          on that one rate, as BytePS's servers over TCP ran in the reference\n"
    "                          comparison (docs/cost-model.md). Colocated servers share one link\n"
    "                          either way (full)\n"
    "      --nodes-per-link K  nodes behind one link (a leaf's uplink; the test cluster's 2):\n"
    "                          their servers' traffic crosses it together (1)\n"
    "      --methods LIST      comma-separated (all of them, listed below)\n"
    "      --partition-bytes N ByteScheduler's and the servers' partitions (4096000)\n"
    "      --credit-bytes N    ByteScheduler's bytes under way at once (16000000)\n"
    "      --ps-node-sums on|off  a node's workers sum first and push once (BytePS's, on), or\n"
    "                          each its own (--records: as each record's comm_options say)\n"
    "      --batch B           samples per worker a step (the profile's; times scale with it)\n"
    "      --rate R            scale the profile so one device trains R samples/s (ResNet-50 on\n"
    "                          the reference GPUs: 253.1)\n"
    "      --format md|csv|json  (md)\n"
    "      --records           the arguments after PROFILE are run records (files or\n"
    "                          directories): each method, tag and job size the profile's model\n"
    "                          and batch ran at, measured (mean +- std) beside predicted, error %\n"
    "                          (the links as the options give them; the job's shape from the record)\n"
    "      --tag TEXT          with --records: only the runs of this tag (the link they ran over);\n"
    "                          with --save: the tag the planned runs will carry\n"
    "      --dilate K          the --inter link was measured shaped K times slower, for runs of\n"
    "                          dtrain-train --dilate K (reported at real time): its times (and\n"
    "                          --allreduce's, --servers-round's, --servers-link's) are divided by K\n"
    "      --save FILE         also write the predictions, each job laid out as it will run (its\n"
    "                          nodes, workers a node, servers), to FILE with the time they were\n"
    "                          made, and --tag (the label the runs will carry): dtrain-analyze\n"
    "                          compare holds them against the runs later (a blind prediction)\n"
    "      --against FILE      a hand-made method comparison table: its rows that start with\n"
    "                          --row's text, measured beside predicted at each GPU count (values\n"
    "                          read at the GPU counts the audit's reading gives), error %\n"
    "      --row TEXT          the rows' key cells before the method (\"ResNet-50, 64, 10GbE\")\n"
    "  -h, --help              this text\n"
    "\n"
    "Examples:\n"
    "  dtrain-analyze predict resnet50.json --rate 253.1 --inter 10gbit:25us --nodes 1,2,4,8\n"
    "  dtrain-analyze predict cnn.json --inter 1gbit:50us --records runs/\n"
  "  dtrain-analyze predict resnet50.json --rate 253.1 --batch 64 --inter 10gbit:25us \\\n"
  "      --against 004_fa976a34413c7ab4.txt --row \"ResNet-50, 64, 10GbE\"\n";

static void print_usage(void)
{
    char names[256];
    fputs(predict_usage, stdout);
    printf("\nMethods: %s.\n", method_names(NULL, ", ", NULL, names, sizeof names));
}

/* The profile as the cost model's step: times scaled to the batch, or to rate samples/s. */
static int step_of(const struct profile *p, const struct predict_options *o, struct layer_cost *layers,
                   struct step_costs *s)
{
    double compute = profile_compute_seconds(p), scale = (double)o->batch / p->batch;
    if (o->rate > 0 && compute > 0)
        scale = o->batch / o->rate / compute;
    for (int l = 0; l < p->layers; l++)
        layers[l] = (struct layer_cost){p->forward[l] * scale, p->backward[l] * scale, (double)p->params[l] * 4};
    *s = (struct step_costs){.layers = p->layers, .layer = layers, .update = p->update * scale};
    return compute > 0 ? 0 : -1;
}

/* A text cell of a Markdown or CSV table: '|' escaped in Markdown, a cell with ',' or '"' quoted
 * in CSV (RFC 4180), so that a model's name cannot add columns. */
static void print_cell(const char *text, bool md)
{
    if (md) {
        for (const char *c = text; *c; c++)
            printf(*c == '|' ? "\\|" : "%c", *c);
    } else if (strpbrk(text, ",\"\n")) {
        putchar('"');
        for (const char *c = text; *c; c++)
            printf(*c == '"' ? "\"\"" : "%c", *c);
        putchar('"');
    } else
        fputs(text, stdout);
}

/* --format json: every cell an object, written by jansson (escaped as JSON requires). */
static int print_json(const struct profile *p, const struct predict_options *o, const struct step_costs *s)
{
    json_t *cells = json_array();
    char methods[512];
    snprintf(methods, sizeof methods, "%s", o->methods);
    int rc = cells ? 0 : 2;
    for (char *m = strtok(methods, ","); m && rc == 0; m = strtok(NULL, ","))
        for (int k = 0; k < o->node_counts && rc == 0; k++) {
            struct cluster_shape c = predict_shape_of_nodes(o, o->nodes[k], o->gpus_per_node);
            double rate;
            if ((rc = predict_rate(s, &c, m, o, &rate)) == 0)
                rc = json_array_append_new(cells, json_pack("{s:s, s:i, s:s, s:i, s:f, s:f}", "model", p->model, "batch",
                                                            o->batch, "method", m, "gpus", c.nodes * c.gpus_per_node,
                                                            "step_seconds", o->batch * c.nodes * c.gpus_per_node / rate,
                                                            "samples_per_second", rate)) < 0 ? 2 : 0;
        }
    if (rc == 0 && (json_dumpf(cells, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(9)) < 0 ||
                    putchar('\n') == EOF))
        rc = 2;
    json_decref(cells);
    return rc;
}

static int print_table(const struct profile *p, const struct predict_options *o, const struct step_costs *s)
{
    if (strcmp(o->format, "json") == 0)
        return print_json(p, o, s);
    bool md = strcmp(o->format, "md") == 0;
    const char *sep = md ? " | " : ",";
    printf(md ? "| Model | BS | Method |" : "model,batch,method");
    for (int k = 0; k < o->node_counts; k++)
        printf(md ? " %d GPU%s |" : ",%d%.0s", o->nodes[k] * o->gpus_per_node,
               o->nodes[k] * o->gpus_per_node == 1 ? "" : "s");
    if (md)
        for (int k = -3; k < o->node_counts; k++)
            printf(k == -3 ? "\n|---|" : "---|");
    printf("\n");
    char methods[512];
    snprintf(methods, sizeof methods, "%s", o->methods);
    for (char *m = strtok(methods, ","); m; m = strtok(NULL, ",")) {
        printf(md ? "| " : "");
        print_cell(p->model, md);
        printf("%s%d%s%s", sep, o->batch, sep, m);
        for (int k = 0; k < o->node_counts; k++) {
            struct cluster_shape c = predict_shape_of_nodes(o, o->nodes[k], o->gpus_per_node);
            double rate;
            int rc = predict_rate(s, &c, m, o, &rate);
            if (rc != 0)
                return 2;
            printf("%s%.1f", sep, rate);
        }
        printf(md ? " |\n" : "\n");
    }
    return 0;
}

/* Checks and fills the lists; 0, or 2 with a message. */
static int parse_lists(struct predict_options *o, const char *nodes)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", nodes);
    o->node_counts = 0;
    for (char *n = strtok(copy, ","); n; n = strtok(NULL, ",")) {
        if (o->node_counts == 32 || dt_parse_int(n, 1, 1 << 20, &o->nodes[o->node_counts++]) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --nodes \"%s\": expected up to 32 counts from 1\n", nodes),
                   2;
    }
    snprintf(copy, sizeof copy, "%s", o->methods);
    o->methods[0] = '\0';   /* rebuilt from the table's names: an alias or another case is the method's name */
    for (char *m = strtok(copy, ","); m; m = strtok(NULL, ",")) {
        char names[256];
        const struct method_facts *facts = method_find(m);
        if (!facts || !cost_knows(m))
            return fprintf(stderr, "dtrain-analyze predict: --methods: unknown method \"%s\" (%s)\n", m,
                           method_names(NULL, ",", NULL, names, sizeof names)), 2;
        size_t used = strlen(o->methods);
        snprintf(o->methods + used, sizeof o->methods - used, "%s%s", used ? "," : "", facts->name);
    }
    return o->node_counts > 0 ? 0 : (fprintf(stderr, "dtrain-analyze predict: --nodes is empty\n"), 2);
}

enum { P_GPN = 300, P_NODES, P_INTER, P_INTRA, P_SERVERS, P_METHODS, P_PARTITION, P_CREDIT, P_NODE_SUMS, P_PER_LINK, P_BATCH, P_RATE, P_FORMAT,
       P_RECORDS, P_TAG, P_AGAINST, P_ROW, P_DILATE, P_LINE, P_ALLREDUCE, P_ROUND, P_SERVERS_LINK,
       P_DUPLEX, P_SAVE, P_PIECES };

/* What the command line names beyond predict_options: the inputs still to be read. */
struct predict_args {
    const char *nodes;
    bool records;             /* the arguments after the profile are run records to compare with */
    const char *tag;          /* with records: only those of this tag (the link they ran over) */
    const char *save;         /* --save: the prediction file to write */
    const char *against, *row;   /* a hand-made method table, and which of its rows */
    double dilate;            /* the inter link as measured is this many times slower */
    const char *intra, *inter, *servers_link;   /* the links as given (read after every option) */
    bool measured;            /* a commbench file's measured times, not its line */
    const char *allreduce_files[MEASURED_SIZES], *round_files[MEASURED_SIZES], *pieces_files[MEASURED_SIZES];
};

/* The options that take a number: 0 when opt was one and good, 2 after a message, 1 for another. */
static int parse_number(int opt, struct predict_options *o, struct predict_args *a)
{
    long value;
    char *end;
    switch (opt) {
    case P_GPN:
        if (dt_parse_int(optarg, 1, 1024, &o->gpus_per_node) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --gpus-per-node \"%s\": expected 1 to 1024\n", optarg), 2;
        break;
    case P_SERVERS:
        o->servers_colocated = strcmp(optarg, "colocated") == 0;
        if (!o->servers_colocated && dt_parse_int(optarg, 1, 1 << 20, &o->servers) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --servers \"%s\": expected a count from 1, or colocated\n",
                           optarg), 2;
        break;
    case P_PER_LINK:
        if (dt_parse_int(optarg, 1, 1 << 20, &o->nodes_per_link) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --nodes-per-link \"%s\": expected a count from 1\n", optarg), 2;
        break;
    case P_PARTITION:
        if (dt_parse_long(optarg, 4, 1L << 30, &value) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --partition-bytes \"%s\": expected 4 to 1 GiB\n", optarg), 2;
        o->partition_bytes = (double)value;
        break;
    case P_CREDIT:
        if (dt_parse_long(optarg, 1, 1L << 40, &value) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --credit-bytes \"%s\": expected 1 to 1 TiB\n", optarg), 2;
        o->credit_bytes = (double)value;
        break;
    case P_BATCH:
        if (dt_parse_int(optarg, 1, 1 << 20, &o->batch) < 0)
            return fprintf(stderr, "dtrain-analyze predict: --batch \"%s\": expected a count from 1\n", optarg), 2;
        break;
    case P_RATE:
        o->rate = strtod(optarg, &end);
        if (end == optarg || *end || !(o->rate > 0))
            return fprintf(stderr, "dtrain-analyze predict: --rate \"%s\": expected samples/s above 0\n", optarg), 2;
        break;
    case P_DILATE:
        a->dilate = strtod(optarg, &end);
        if (end == optarg || *end || !(a->dilate >= 1))
            return fprintf(stderr, "dtrain-analyze predict: --dilate \"%s\": expected a factor, 1 or more\n", optarg), 2;
        break;
    default: return 1;
    }
    return 0;
}

/* The options that name an input or a choice: as parse_number. */
static int parse_choice(int opt, struct predict_options *o, struct predict_args *a)
{
    switch (opt) {
    case P_NODES: a->nodes = optarg; break;
    case P_INTER: a->inter = optarg; break;
    case P_INTRA: a->intra = optarg; break;
    case P_SERVERS_LINK: a->servers_link = optarg; break;
    case P_LINE: a->measured = false; break;
    case P_ALLREDUCE:
        if (o->allreduce_count == MEASURED_SIZES)
            return fprintf(stderr, "dtrain-analyze predict: --allreduce: at most %d files\n", MEASURED_SIZES), 2;
        a->allreduce_files[o->allreduce_count++] = optarg;
        break;
    case P_ROUND:
        if (o->round_count == MEASURED_SIZES)
            return fprintf(stderr, "dtrain-analyze predict: --servers-round: at most %d files\n", MEASURED_SIZES), 2;
        a->round_files[o->round_count++] = optarg;
        break;
    case P_PIECES:
        if (o->pieces_count == MEASURED_SIZES)
            return fprintf(stderr, "dtrain-analyze predict: --servers-pieces: at most %d files\n", MEASURED_SIZES), 2;
        a->pieces_files[o->pieces_count++] = optarg;
        break;
    case P_METHODS: snprintf(o->methods, sizeof o->methods, "%s", optarg); break;
    case P_DUPLEX:
        if (strcmp(optarg, "half") != 0 && strcmp(optarg, "full") != 0)
            return fprintf(stderr, "dtrain-analyze predict: --servers-duplex \"%s\": expected full or half\n", optarg), 2;
        o->servers_half_duplex = strcmp(optarg, "half") == 0;
        break;
    case P_NODE_SUMS:
        if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0)
            return fprintf(stderr, "dtrain-analyze predict: --ps-node-sums \"%s\": expected on or off\n", optarg), 2;
        o->ps_node_sums_off = strcmp(optarg, "off") == 0;
        break;
    case P_FORMAT:
        if (strcmp(optarg, "md") != 0 && strcmp(optarg, "csv") != 0 && strcmp(optarg, "json") != 0)
            return fprintf(stderr, "dtrain-analyze predict: --format \"%s\": expected md, csv or json\n", optarg), 2;
        o->format = optarg;
        break;
    case P_RECORDS: a->records = true; break;
    case P_TAG: a->tag = optarg; break;
    case P_SAVE: a->save = optarg; break;
    case P_AGAINST: a->against = optarg; break;
    case P_ROW: a->row = optarg; break;
    default: return 1;
    }
    return 0;
}

/* The command line into o and a: 0, 2 after a message, -1 when --help was printed. */
static int parse_options(int argc, char **argv, struct predict_options *o, struct predict_args *a)
{
    static const struct option options[] = {
        {"gpus-per-node", required_argument, NULL, P_GPN}, {"nodes", required_argument, NULL, P_NODES},
        {"inter", required_argument, NULL, P_INTER}, {"intra", required_argument, NULL, P_INTRA},
        {"servers-link", required_argument, NULL, P_SERVERS_LINK},
        {"servers-duplex", required_argument, NULL, P_DUPLEX},
        {"servers", required_argument, NULL, P_SERVERS}, {"methods", required_argument, NULL, P_METHODS},
        {"partition-bytes", required_argument, NULL, P_PARTITION}, {"batch", required_argument, NULL, P_BATCH},
        {"credit-bytes", required_argument, NULL, P_CREDIT}, {"ps-node-sums", required_argument, NULL, P_NODE_SUMS},
        {"nodes-per-link", required_argument, NULL, P_PER_LINK},
        {"rate", required_argument, NULL, P_RATE}, {"format", required_argument, NULL, P_FORMAT},
        {"records", no_argument, NULL, P_RECORDS}, {"tag", required_argument, NULL, P_TAG},
        {"save", required_argument, NULL, P_SAVE},
        {"against", required_argument, NULL, P_AGAINST}, {"row", required_argument, NULL, P_ROW},
        {"dilate", required_argument, NULL, P_DILATE}, {"line", no_argument, NULL, P_LINE},
        {"allreduce", required_argument, NULL, P_ALLREDUCE}, {"servers-round", required_argument, NULL, P_ROUND},
        {"servers-pieces", required_argument, NULL, P_PIECES},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int opt;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((opt = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        int rc = parse_number(opt, o, a);
        if (rc == 1)
            rc = parse_choice(opt, o, a);
        if (rc == 1 && opt == 'h')
            return print_usage(), -1;
        if (rc == 1)
            return fputs("Try 'dtrain-analyze predict --help'.\n", stderr), 2;
        if (rc != 0)
            return rc;
    }
    if (optind >= argc || (!a->records && optind + 1 != argc) || (a->records && optind + 1 == argc))
        return fputs("dtrain-analyze predict: one PROFILE is needed (dtrain-train --profile-out writes it), and with "
                     "--records the record files or directories after it\n", stderr), 2;
    if (a->save && (a->records || a->against))
        return fputs("dtrain-analyze predict: --save writes predictions before the runs; compare them with what ran "
                     "by dtrain-analyze compare, not --records or --against\n", stderr), 2;
    return parse_lists(o, a->nodes);
}

/* A measured curve's times divided by the runs' dilation: real time, as the dilated runs report. */
static void to_real_time(struct link_point *points, int n, double dilate)
{
    for (int k = 0; k < n; k++)
        points[k].seconds /= dilate;
}

/* A link as measured K times slower (--dilate K), at real time: its line and its curves. */
static void link_to_real_time(struct link_cost *link, struct link_curves *curves, double dilate)
{
    link->alpha /= dilate, link->beta /= dilate;
    to_real_time(curves->one, link->curve ? link->points : 0, dilate);
    to_real_time(curves->streamed, link->streamed ? link->streamed_points : 0, dilate);
    to_real_time(curves->alone, link->alone ? link->alone_points : 0, dilate);
}

/* The measured operations of files (dtrain-commbench --op op) into m, at real time: 0, or 2 said. */
static int read_measured(const char *const *files, int count, const char *op, const char *option, double dilate,
                         struct measured_allreduce *m)
{
    char why[512];
    for (int i = 0; i < count; i++) {
        if (link_parse_measured(files[i], op, &m[i], why, sizeof why) < 0)
            return fprintf(stderr, "dtrain-analyze predict: %s %s\n", option, why), 2;
        to_real_time(m[i].curve, m[i].cost.points, dilate);
        to_real_time(m[i].streamed, m[i].cost.streamed_points, dilate);
        to_real_time(m[i].alone, m[i].cost.alone_points, dilate);
    }
    return 0;
}

/* --servers-pieces files into pieces, at real time: each cut as the runs' ByteScheduler-PS cuts
 * (--partition-bytes), or its round is another traffic. 0, or 2 said. */
static int read_pieces(struct predict_options *o, const struct predict_args *a, struct measured_allreduce *pieces)
{
    double per = o->partition_bytes > 0 ? o->partition_bytes : METHOD_PARTITION_BYTES;
    int rc = read_measured(a->pieces_files, o->pieces_count, "pieces", "--servers-pieces", a->dilate, pieces);
    for (int i = 0; rc == 0 && i < o->pieces_count; i++)
        if (pieces[i].partition_bytes != per)
            rc = (fprintf(stderr, "dtrain-analyze predict: --servers-pieces %s: measured in pieces of %.0f bytes, the "
                          "runs' are %.0f (--partition-bytes): another traffic\n", a->pieces_files[i],
                          pieces[i].partition_bytes, per), 2);
    o->pieces = pieces;
    return rc;
}

/* The links and measured operations the options name, read into o (sizes holds the allreduces,
 * rounds the servers' rounds, pieces ByteScheduler-PS's traffic), at real time. 0, or 2 after a
 * message. */
static int read_links(struct predict_options *o, const struct predict_args *a, struct measured_allreduce *sizes,
                      struct measured_allreduce *rounds, struct measured_allreduce *pieces)
{
    char why[512];
    if (a->intra && link_parse(a->intra, "allreduce", a->measured, &o->intra, &o->intra_curves, why, sizeof why) < 0)
        return fprintf(stderr, "dtrain-analyze predict: --intra %s\n", why), 2;
    if (a->inter && link_parse(a->inter, "allreduce", a->measured, &o->inter, &o->inter_curves, why, sizeof why) < 0)
        return fprintf(stderr, "dtrain-analyze predict: --inter %s\n", why), 2;
    if (a->servers_link && link_parse(a->servers_link, "pushpull", a->measured, &o->servers_link,
                                      &o->servers_link_curves, why, sizeof why) < 0)
        return fprintf(stderr, "dtrain-analyze predict: --servers-link %s\n", why), 2;
    o->has_servers_link = a->servers_link != NULL;
    link_to_real_time(&o->inter, &o->inter_curves, a->dilate);   /* as the dilated runs report */
    link_to_real_time(&o->servers_link, &o->servers_link_curves, a->dilate);
    o->allreduce = sizes, o->rounds = rounds;
    int rc = read_measured(a->allreduce_files, o->allreduce_count, "allreduce", "--allreduce", a->dilate, sizes);
    rc = rc ? rc : read_measured(a->round_files, o->round_count, "colocated", "--servers-round", a->dilate, rounds);
    return rc ? rc : read_pieces(o, a, pieces);
}

/* One planned job of the grid as it will run: the servers a parameter-server method gets. */
static int planned_cell(const struct predict_options *o, const struct step_costs *s, const char *method, int nodes,
                        struct predicted_cell *cell)
{
    struct cluster_shape c = predict_shape_of_nodes(o, nodes, o->gpus_per_node);
    bool servers = method_find(method)->servers;
    *cell = (struct predicted_cell){.workers = nodes * o->gpus_per_node, .nodes = nodes,
                                    .per_node = o->gpus_per_node, .colocated = servers && o->servers_colocated};
    cell->servers = !servers ? 0 : o->servers_colocated || o->servers == 0 ? nodes : o->servers;
    snprintf(cell->method, sizeof cell->method, "%s", method);
    int rc = predict_rate(s, &c, method, o, &cell->samples_per_second);
    cell->step_seconds = o->batch * cell->workers / cell->samples_per_second;
    return rc;
}

/* --save: every cell of the grid, with when it was made, into path. 0, or 2 said. */
static int save_predictions(const struct profile *p, const struct predict_options *o, const struct step_costs *s,
                            const struct predict_args *a, const char *profile_path)
{
    struct prediction_set set = {.batch = o->batch};
    record_time((long)time(NULL), set.made);
    snprintf(set.model, sizeof set.model, "%s", p->model);
    snprintf(set.tag, sizeof set.tag, "%s", a->tag ? a->tag : "");
    snprintf(set.profile, sizeof set.profile, "%s", profile_path);
    char methods[512];
    snprintf(methods, sizeof methods, "%s", o->methods);
    int rc = 0;
    for (char *m = strtok(methods, ","); m && rc == 0; m = strtok(NULL, ","))
        for (int k = 0; k < o->node_counts && rc == 0; k++) {
            struct predicted_cell cell;
            if ((rc = planned_cell(o, s, m, o->nodes[k], &cell)) != 0)
                rc = 2;
            else if (predictions_add(&set, &cell) < 0)
                rc = (fputs("dtrain-analyze predict: out of memory\n", stderr), 2);
        }
    struct dt_err err;
    if (rc == 0 && predictions_write(a->save, &set, &err) < 0)
        rc = (fprintf(stderr, "dtrain-analyze predict: --save: %s\n", err.msg), 2);
    predictions_free(&set);
    return rc;
}

static int predict_run(int argc, char **argv)
{
    struct predict_options o = {.gpus_per_node = 4, .intra = {.alpha = 5e-6, .beta = 1 / 12e9},
                                .inter = {.alpha = 25e-6, .beta = 8 / 10e9}, .format = "md"};
    method_names(NULL, ",", NULL, o.methods, sizeof o.methods);
    struct predict_args a = {.nodes = "1,2,4,8", .row = "", .dilate = 1, .measured = true};
    static struct measured_allreduce sizes[MEASURED_SIZES], rounds[MEASURED_SIZES], pieces[MEASURED_SIZES];   /* off the stack */
    int rc = parse_options(argc, argv, &o, &a);
    if (rc == 0)
        rc = read_links(&o, &a, sizes, rounds, pieces);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct profile p;
    struct dt_err err;
    if (profile_read(argv[optind], &p, &err) < 0)
        return fprintf(stderr, "dtrain-analyze predict: %s\n", err.msg), 2;
    if (o.batch == 0)
        o.batch = p.batch;
    struct layer_cost *layers = calloc((size_t)p.layers, sizeof *layers);
    struct step_costs s;
    if (!layers)
        rc = (fputs("dtrain-analyze predict: out of memory\n", stderr), 2);
    else if (step_of(&p, &o, layers, &s) < 0)
        rc = (fprintf(stderr, "dtrain-analyze predict: %s: the layers take no time\n", argv[optind]), 2);
    else if (a.records)
        rc = predict_compare_records(&p, &o, &s, argv + optind + 1, argc - optind - 1, a.tag);
    else if (a.against)
        rc = predict_compare_method_table(&o, &s, a.against, a.row);
    else if (!a.save || (rc = save_predictions(&p, &o, &s, &a, argv[optind])) == 0)
        rc = print_table(&p, &o, &s);
    free(layers);
    profile_free(&p);
    return rc;
}

const struct analyze_command predict_command = {
    "predict", "a profile and the links -> every method's samples/s, before the allocation is spent",
    predict_usage, predict_run};
