/* dtrain_check.c - `dtrain-check`: the pre-flight check of a job's nodes, one rank per node started
 * through dtrain (so it checks what each rank is bound to): its GPUs, its NIC, the run directory,
 * and every pair of nodes' link (check_links.c). A table, a JSON file, and on a failure the
 * `sbatch --exclude=` that avoids the bad nodes. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "trainer/backend/backend.h"
#include "trainer/backend/backend_cuda.h"
#include "probe/check_links.h"
#include "trainer/comm/comm.h"
#include "common/dt_parse.h"
#include "common/hostlist.h"
#include "common/version.h"
#include "common/stdout_check.h"

static const char usage[] =
    "Usage: dtrain-check [options]\n"
    "\n"
    "Checks a job's nodes before the job spends its allocation. Start one rank per node through\n"
    "dtrain, as the sbatch template's first step does (DTRAIN_PREFLIGHT=0 skips it):\n"
    "  srun --ntasks-per-node=1 dtrain -- dtrain-check --dir runs/\n"
    "On every node: the GPUs CUDA sees are the ones Slurm gave (DTRAIN_GPUS_PER_NODE), and each\n"
    "takes a host<->device copy at a sane rate (a SKIP on CPU nodes); the NIC dtrain chose is up\n"
    "with an IPv4 address; the directory is writable with room. Between nodes: every pair's link,\n"
    "latency (8-byte ping-pongs) and bandwidth, in n-1 rounds of disjoint pairs. A node whose links'\n"
    "median bandwidth, or a link whose bandwidth, is --threshold below the median of all links is\n"
    "named.\n"
    "\n"
    "Options:\n"
    "      --dir DIR          must be writable with --min-free GiB free (the run directory)\n"
    "      --min-free GIB     (1)\n"
    "      --bytes SIZE       a bandwidth transfer (16M; K, M, G: powers of 1024)\n"
    "      --iters N          transfers timed a link (4)\n"
    "      --threshold F      named below (1 - F) x the median (0.5)\n"
    "      --one-at-a-time    measure the pairs in turn, not side by side: for ranks that share\n"
    "                         cores (nodes emulated on one machine), where concurrent pairs would\n"
    "                         measure the scheduler\n"
    "      --json FILE        the figures as JSON (written whole or not at all)\n"
    "  -h, --help             this text\n"
    "  -V, --version          the version\n"
    "\n"
    "Exit status: 0 every node fine (a slow link no node is behind is a warning); 1 a node failed\n"
    "a check or has slow links (the message says which, and the sbatch --exclude= that avoids\n"
    "them); 2 bad options or an MPI failure.\n";

struct check_options {
    const char *dir, *json;
    double min_free_gib, threshold;
    size_t bytes;
    int iters;
    bool one_at_a_time;        /* --one-at-a-time: pairs measured in turn (ranks sharing cores) */
};

/* What one node found about itself; gathered on every rank. */
struct node_report {
    char host[64];
    char gpus[96], nic[96], dir[96];   /* each "ok ...", "skip ..." or "FAILED ..." */
    bool failed;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum { O_DIR = 256, O_MIN_FREE, O_BYTES, O_ITERS, O_THRESHOLD, O_JSON, O_ONE_AT_A_TIME };

/* A number option's value into *out, between lo and hi. 0, or 2 after a message. */
static int real_option(const char *name, const char *text, double lo, double hi, double *out)
{
    char *end;
    *out = strtod(text, &end);
    if (end == text || *end || !(*out >= lo && *out <= hi))
        return fprintf(stderr, "dtrain-check: %s \"%s\": expected a number from %g to %g\n", name, text, lo, hi), 2;
    return 0;
}

/* 0 with o filled, 2 after a message, -1 when a text was printed (exit 0). */
static int parse_check_options(int argc, char **argv, struct check_options *o)
{
    static const struct option options[] = {
        {"dir", required_argument, NULL, O_DIR}, {"min-free", required_argument, NULL, O_MIN_FREE},
        {"bytes", required_argument, NULL, O_BYTES}, {"iters", required_argument, NULL, O_ITERS},
        {"threshold", required_argument, NULL, O_THRESHOLD}, {"json", required_argument, NULL, O_JSON},
        {"one-at-a-time", no_argument, NULL, O_ONE_AT_A_TIME},
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    *o = (struct check_options){.min_free_gib = 1, .threshold = 0.5, .bytes = 16u << 20, .iters = 4};
    int c;
    double x;
    while ((c = getopt_long(argc, argv, "hV", options, NULL)) != -1) {
        switch (c) {
        case O_DIR: o->dir = optarg; break;
        case O_JSON: o->json = optarg; break;
        case O_ONE_AT_A_TIME: o->one_at_a_time = true; break;
        case O_MIN_FREE:
            if (real_option("--min-free", optarg, 0, 1 << 20, &o->min_free_gib))
                return 2;
            break;
        case O_THRESHOLD:
            if (real_option("--threshold", optarg, 0.01, 0.99, &o->threshold))
                return 2;
            break;
        case O_ITERS:
            if (real_option("--iters", optarg, 1, 1000, &x))
                return 2;
            o->iters = (int)x;
            break;
        case O_BYTES: {
            long bytes;
            if (dt_parse_bytes(optarg, 8, 1L << 30, &bytes) < 0)
                return fprintf(stderr, "dtrain-check: --bytes \"%s\": expected 8 to 1G (K, M, G)\n", optarg), 2;
            o->bytes = (size_t)bytes;
            break;
        }
        case 'h': fputs(usage, stdout); return -1;
        case 'V': printf("dtrain-check %s\n", DTRAIN_VERSION); return -1;
        default: fputs("Try 'dtrain-check --help'.\n", stderr); return 2;
        }
    }
    if (optind < argc)
        return fprintf(stderr, "dtrain-check: unexpected argument \"%s\" (try --help)\n", argv[optind]), 2;
    return 0;
}

/* The GPUs: as many as dtrain says this node runs, each taking a 64 MiB copy both ways. */
static void check_gpus(struct node_report *n)
{
    const char *given = getenv("DTRAIN_GPUS_PER_NODE");
    if (given && strcmp(given, "auto") == 0)   /* each node its own count: what Slurm gave this one */
        given = getenv("SLURM_GPUS_ON_NODE");
    int want = given ? atoi(given) : 0;
    char why[256];
    if (want <= 0) {
        snprintf(n->gpus, sizeof n->gpus, "skip (CPU ranks)");
        return;
    }
    int seen = backend_cuda_probe(why, sizeof why);
    if (seen < want) {
        snprintf(n->gpus, sizeof n->gpus, "FAILED: %d of %d GPUs seen (%.40s)", seen < 0 ? 0 : seen, want, why);
        n->failed = true;
        return;
    }
    const size_t bytes = 64u << 20;
    double slowest = 1e30;
    for (int g = 0; g < want && !n->failed; g++) {
        struct backend *be = backend_cuda_create(g, NULL, why, sizeof why);
        void *dev = be ? backend_alloc(be, bytes) : NULL, *host = dev ? calloc(1, bytes) : NULL;
        double t0 = now_s();
        bool ok = host && backend_cuda_upload(be, dev, host, bytes) == 0 && backend_cuda_download(be, host, dev, bytes) == 0;
        double rate = 2.0 * bytes / (now_s() - t0 + 1e-9);
        if (!ok) {
            const char *what = be ? backend_cuda_error(be) : why;
            snprintf(n->gpus, sizeof n->gpus, "FAILED: GPU %d: %.70s", g, what ? what : "the copy failed");
            n->failed = true;
        }
        slowest = rate < slowest ? rate : slowest;
        free(host);
        if (dev)
            backend_release(be, dev);
        backend_cuda_destroy(be);
    }
    if (!n->failed)
        snprintf(n->gpus, sizeof n->gpus, "ok, %d GPU%s, copies at %.1f GB/s or more", want, want == 1 ? "" : "s",
                 slowest / 1e9);
}

/* The first interface up with an IPv4 address: the one named (NULL: any but loopback). Fills
 * name and address; false when there is none. */
static bool interface_up(const char *want, char *name, size_t name_size, char *address, size_t address_size)
{
    struct ifaddrs *list;
    bool found = false;
    if (getifaddrs(&list) != 0)
        return false;
    for (struct ifaddrs *a = list; a && !found; a = a->ifa_next) {
        bool up = (a->ifa_flags & IFF_UP) && (a->ifa_flags & IFF_RUNNING);
        if (!up || !a->ifa_addr || a->ifa_addr->sa_family != AF_INET ||
            (want ? strcmp(a->ifa_name, want) != 0 : (a->ifa_flags & IFF_LOOPBACK) != 0))
            continue;
        snprintf(name, name_size, "%s", a->ifa_name);
        inet_ntop(AF_INET, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, address, (socklen_t)address_size);
        found = true;
    }
    freeifaddrs(list);
    return found;
}

/* The NIC dtrain chose for this rank (NCCL_SOCKET_IFNAME, else Open MPI's TCP interface) is up
 * with an IPv4 address; where dtrain chose none (CPU ranks), some interface is, for the links. */
static void check_nic(struct node_report *n, bool several_nodes)
{
    const char *chosen = getenv("NCCL_SOCKET_IFNAME") ? getenv("NCCL_SOCKET_IFNAME")
                                                       : getenv("OMPI_MCA_btl_tcp_if_include");
    if (chosen && !chosen[0])
        chosen = NULL;
    if (!chosen && !several_nodes) {
        snprintf(n->nic, sizeof n->nic, "skip (one node, no NIC chosen)");
        return;
    }
    char name[32], address[INET_ADDRSTRLEN];
    if (interface_up(chosen, name, sizeof name, address, sizeof address)) {
        snprintf(n->nic, sizeof n->nic, "ok, %s up at %s%s", name, address, chosen ? "" : " (none chosen: the first up)");
        return;
    }
    if (chosen)
        snprintf(n->nic, sizeof n->nic, "FAILED: %.30s is down, missing or without an IPv4 address", chosen);
    else
        snprintf(n->nic, sizeof n->nic, "FAILED: no network interface is up with an IPv4 address");
    n->failed = true;
}

/* The run directory: a file can be written there (and is removed), and min-free GiB are free. */
static void check_dir(struct node_report *n, const struct check_options *o)
{
    if (!o->dir) {
        snprintf(n->dir, sizeof n->dir, "skip (no --dir)");
        return;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/.dtrain-check-%s-%ld", o->dir, n->host, (long)getpid());
    struct statvfs fs;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    bool written = fd >= 0 && write(fd, "dtrain-check\n", 13) == 13 && fsync(fd) == 0;
    if (fd >= 0)
        close(fd), unlink(path);
    if (!written) {
        snprintf(n->dir, sizeof n->dir, "FAILED: cannot write in %.50s (%s)", o->dir, strerror(errno));
        n->failed = true;
        return;
    }
    double free_gib = statvfs(o->dir, &fs) == 0 ? (double)fs.f_bavail * fs.f_frsize / (1 << 30) : -1;
    if (free_gib < o->min_free_gib) {
        snprintf(n->dir, sizeof n->dir, "FAILED: %.1f GiB free in %.40s (--min-free %g)", free_gib, o->dir,
                 o->min_free_gib);
        n->failed = true;
        return;
    }
    snprintf(n->dir, sizeof n->dir, "ok, %.0f GiB free", free_gib);
}

/* The median of the links' bandwidths that were measured (0 when none). */
static double median_bandwidth(const double *values, int count)
{
    double *v = malloc((size_t)(count ? count : 1) * sizeof *v);
    int k = 0;
    for (int i = 0; v && i < count; i++)
        if (values[i] > 0)
            v[k++] = values[i];
    double median = 0;
    for (int i = 1; i < k; i++)   /* insertion sort: a job has few links */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j];
            v[j] = v[j - 1], v[j - 1] = t;
        }
    if (k > 0)
        median = k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
    free(v);
    return median;
}

/* Node i's links' median bandwidth. */
static double node_median(const struct link_figures *links, int n, int i)
{
    double *v = malloc((size_t)n * sizeof *v);
    int k = 0;
    for (int j = 0; v && j < n; j++)
        if (j != i)
            v[k++] = links[(i < j ? i : j) * n + (i < j ? j : i)].bytes_per_s;
    double m = v ? median_bandwidth(v, k) : 0;
    free(v);
    return m;
}

struct verdict {
    double median;             /* of every link's bandwidth */
    bool *slow_node;           /* its links' median is below (1 - threshold) x median */
    bool *bad;                 /* a check failed or the node is slow: to exclude */
    int bad_count, slow_links;
};

/* Which nodes to avoid: those whose own checks failed, and those whose links are slow. */
static int judge_nodes(const struct node_report *nodes, const struct link_figures *links, int n, double threshold,
                 struct verdict *v)
{
    double *all = malloc((size_t)n * n * sizeof *all + sizeof *all);
    *v = (struct verdict){.slow_node = calloc((size_t)n, sizeof(bool)), .bad = calloc((size_t)n, sizeof(bool))};
    if (!all || !v->slow_node || !v->bad)
        return free(all), -1;
    for (int k = 0; k < n * n; k++)
        all[k] = links[k].bytes_per_s;
    v->median = median_bandwidth(all, n * n);
    free(all);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            v->slow_links += links[a * n + b].bytes_per_s < (1 - threshold) * v->median;
    for (int i = 0; i < n; i++) {
        v->slow_node[i] = n > 2 && node_median(links, n, i) < (1 - threshold) * v->median;
        v->bad[i] = nodes[i].failed || v->slow_node[i];
        v->bad_count += v->bad[i];
    }
    return 0;
}

/* The table on standard output: a row per node, then the links below the threshold. */
static void print_report(const struct node_report *nodes, const struct link_figures *links, int n,
                         const struct check_options *o, const struct verdict *v)
{
    printf("# dtrain-check: %d node%s, %d link%s of %zu bytes x %d; median %.3f GB/s\n", n, n == 1 ? "" : "s",
           n * (n - 1) / 2, n * (n - 1) / 2 == 1 ? "" : "s", o->bytes, o->iters, v->median / 1e9);
    puts("| node | GPUs | NIC | directory | its links' median | verdict |\n|---|---|---|---|---|---|");
    for (int i = 0; i < n; i++) {
        char median[32] = "-";
        if (n > 1)
            snprintf(median, sizeof median, "%.3f GB/s", node_median(links, n, i) / 1e9);
        printf("| %s | %s | %s | %s | %s | %s |\n", nodes[i].host, nodes[i].gpus, nodes[i].nic, nodes[i].dir, median,
               nodes[i].failed ? "**failed**" : v->slow_node[i] ? "**slow links**" : "ok");
    }
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (links[a * n + b].bytes_per_s < (1 - o->threshold) * v->median)
                printf("slow link: %s <-> %s at %.3f GB/s (%.0f%% of the median), latency %.1f us\n", nodes[a].host,
                       nodes[b].host, links[a * n + b].bytes_per_s / 1e9, 100 * links[a * n + b].bytes_per_s / v->median,
                       links[a * n + b].latency_s * 1e6);
}

struct json_out {
    const struct node_report *nodes;
    const struct link_figures *links;
    int n;
    const struct verdict *v;
};

static int fill_json(FILE *out, const void *arg)
{
    const struct json_out *j = arg;
    json_t *doc = json_object(), *nodes = json_array(), *links = json_array();
    for (int i = 0; i < j->n; i++)
        json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "node", j->nodes[i].host, "gpus",
                                               j->nodes[i].gpus, "nic", j->nodes[i].nic, "dir", j->nodes[i].dir,
                                               "failed", j->nodes[i].failed, "slow_links", j->v->slow_node[i]));
    for (int a = 0; a < j->n; a++)
        for (int b = a + 1; b < j->n; b++)
            json_array_append_new(links, json_pack("{s:s, s:s, s:f, s:f}", "a", j->nodes[a].host, "b", j->nodes[b].host,
                                                   "bytes_per_s", j->links[a * j->n + b].bytes_per_s, "latency_s",
                                                   j->links[a * j->n + b].latency_s));
    json_object_set_new(doc, "format", json_string("dtrain-check"));
    json_object_set_new(doc, "median_bytes_per_s", json_real(j->v->median));
    json_object_set_new(doc, "nodes", nodes);
    json_object_set_new(doc, "links", links);
    int rc = json_dumpf(doc, out, JSON_INDENT(1)) == 0 && fputc('\n', out) != EOF ? 0 : -1;
    json_decref(doc);
    return rc;
}

/* Rank 0's last words: the table, the JSON, and the nodes to exclude. Returns the exit status. */
static int conclude_check(const struct node_report *nodes, const struct link_figures *links, int n,
                    const struct check_options *o)
{
    struct verdict v;
    struct dt_err err;
    if (judge_nodes(nodes, links, n, o->threshold, &v) < 0)
        return fputs("dtrain-check: out of memory\n", stderr), 2;
    print_report(nodes, links, n, o, &v);
    int rc = 0;
    struct json_out j = {nodes, links, n, &v};
    if (o->json && atomic_write(o->json, fill_json, &j, &err) < 0)
        rc = (fprintf(stderr, "dtrain-check: %s\n", err.msg), 2);
    struct hostlist bad;
    hostlist_init(&bad);
    for (int i = 0; i < n; i++)
        if (v.bad[i])
            hostlist_push(&bad, nodes[i].host, strlen(nodes[i].host), &err);
    char *folded = bad.count ? hostlist_compress(&bad) : NULL;
    if (folded)
        fprintf(stderr, "dtrain-check: failed: %s (above): sbatch --exclude=%s avoids %s\n", folded, folded,
                bad.count == 1 ? "it" : "them");
    else if (v.slow_links)   /* named, but no node to exclude: a link no sbatch option avoids */
        fprintf(stderr, "dtrain-check: warning: %d slow link%s (above), no node behind them all\n", v.slow_links,
                v.slow_links == 1 ? "" : "s");
    rc = rc ? rc : bad.count ? 1 : 0;
    free(folded);
    hostlist_free(&bad);
    free(v.slow_node), free(v.bad);
    return rc;
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-check");   /* a full disk is an error, not an empty table */
    struct check_options o;
    int rc = parse_check_options(argc, argv, &o);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    struct dt_err err;
    struct comm *comm = comm_mpi_init(&argc, &argv, false, &err);
    if (!comm)
        return fprintf(stderr, "dtrain-check: %s\n", err.msg), 2;
    struct node_report mine = {0};
    snprintf(mine.host, sizeof mine.host, "%.63s", comm->hostname);
    check_gpus(&mine);
    check_nic(&mine, comm->world > 1);
    check_dir(&mine, &o);
    int n = comm->world;
    struct node_report *nodes = calloc((size_t)n, sizeof *nodes);
    struct link_figures *links = calloc((size_t)n * n, sizeof *links);
    rc = nodes && links ? 0 : dt_fail(&err, "out of memory");
    if (rc == 0)
        rc = comm->allgather(comm, &mine, sizeof mine, nodes, &err);
    if (rc == 0 && n > 1)
        rc = check_links(comm, o.bytes, o.iters, o.one_at_a_time, links, &err);
    int status = rc < 0 ? (fprintf(stderr, "dtrain-check: rank %d on %s: %s\n", comm->rank, comm->hostname, err.msg), 2)
                        : comm->rank == 0 ? conclude_check(nodes, links, n, &o) : 0;
    free(nodes), free(links);
    long worst = status;   /* every rank exits with rank 0's verdict, so srun's status is it */
    if (rc == 0 && comm->sum_long(comm, &worst, &err) < 0)
        worst = 2;
    comm->finalize(comm);
    return worst > 2 ? 2 : (int)worst;
}
