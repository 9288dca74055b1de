/* dtrain.c - `dtrain`: check the allocation, export each rank's place, exec the program (or start
 * the ranks locally when no launcher is present). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "dt_parse.h"
#include "launch.h"
#include "local.h"
#include "version.h"

extern char **environ;

static const char usage_text[] =
    "Usage: dtrain [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM as one rank of a data-parallel job. Under srun (or mpirun) dtrain reads the\n"
    "allocation, checks it against --nodes and --gpus-per-node, exports the rank's place and\n"
    "execs PROGRAM in its own process (no shell, exit status kept). Without a launcher it starts\n"
    "the ranks itself on this node (local mode, like torchrun's standalone mode).\n"
    "\n"
    "Options:\n"
    "  -N, --nodes N           the job must span N nodes (checked; mismatch: exit 2)\n"
    "  -g, --gpus-per-node M   M GPUs and one rank per GPU on each node; 0 = CPU ranks\n"
    "  -n, --ranks K           local mode: start K CPU ranks (default 1, or M with -g M)\n"
    "  -l, --label             local mode: prefix each output line with \"RANK: \"\n"
    "      --dry-run           print what this task would export and exec, then exit 0\n"
    "  -v, --verbose           say what is exported and which set values are kept\n"
    "  -h, --help              this text\n"
    "  -V, --version           the version\n"
    "\n"
    "Exported for the program (a value already set in the environment is kept, never\n"
    "overwritten): RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR MASTER_PORT,\n"
    "and DTRAIN_LAUNCHER DTRAIN_NODES DTRAIN_NODELIST DTRAIN_JOB_ID DTRAIN_GPUS_PER_NODE\n"
    "DTRAIN_GPU (the rank's index among the GPUs CUDA sees). MASTER_ADDR is the first node of\n"
    "the step; MASTER_PORT is 61000 + job id %% 4536, the same on every rank.\n"
    "\n"
    "Examples:\n"
    "  srun --mpi=pmix dtrain --nodes 2 --gpus-per-node 4 -- dtrain-train --model resnet18\n"
    "      in an sbatch job of 2 nodes x 4 tasks with --gpus-per-node=4\n"
    "  mpirun -np 4 dtrain --gpus-per-node 0 -- dtrain-train --model lenet\n"
    "      MPI programs outside Slurm: mpirun starts the ranks, dtrain places each\n"
    "  dtrain --ranks 2 --label -- python3 train.py\n"
    "      two local ranks of a non-MPI program (torch.distributed reads the variables)\n"
    "  srun -N2 --ntasks-per-node=2 dtrain --dry-run -- env\n"
    "      what each task would get\n"
    "\n"
    "Exit status: PROGRAM's; 2 for bad usage or an allocation that does not match the request;\n"
    "127 when PROGRAM is not found, 126 when it cannot be run. In local mode, the first failing\n"
    "rank's status (128 + signal when killed); the other ranks are stopped within 2 s.\n";

static int parse_options(int argc, char **argv, struct launch_request *req)
{
    static const struct option options[] = {
        {"nodes", required_argument, NULL, 'N'},
        {"gpus-per-node", required_argument, NULL, 'g'},
        {"ranks", required_argument, NULL, 'n'},
        {"label", no_argument, NULL, 'l'},
        {"dry-run", no_argument, NULL, 'D'},
        {"verbose", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    *req = (struct launch_request){.nodes = -1, .gpus_per_node = -1, .ranks = -1};
    int opt;
    /* '+': stop at PROGRAM, so its own options are left alone even without "--". */
    while ((opt = getopt_long(argc, argv, "+N:g:n:lvhV", options, NULL)) != -1) {
        switch (opt) {
        case 'N':
            if (dt_parse_int(optarg, 1, HOSTLIST_MAX_NAMES, &req->nodes) < 0)
                return fprintf(stderr, "dtrain: --nodes \"%s\" is not a node count of 1 or more\n", optarg), 2;
            break;
        case 'g':
            if (dt_parse_int(optarg, 0, ALLOC_MAX_GPUS, &req->gpus_per_node) < 0)
                return fprintf(stderr, "dtrain: --gpus-per-node \"%s\" is not a number from 0 to %d\n", optarg,
                               ALLOC_MAX_GPUS), 2;
            break;
        case 'n':
            if (dt_parse_int(optarg, 1, LOCAL_MAX_RANKS, &req->ranks) < 0)
                return fprintf(stderr, "dtrain: --ranks \"%s\" is not a number from 1 to %d\n", optarg,
                               LOCAL_MAX_RANKS), 2;
            break;
        case 'l': req->label = true; break;
        case 'D': req->dry_run = true; break;
        case 'v': req->verbose = true; break;
        case 'h': fputs(usage_text, stdout); exit(0);
        case 'V': printf("dtrain %s\n", DTRAIN_VERSION); exit(0);
        default: fputs("Try 'dtrain --help'.\n", stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs("dtrain: no PROGRAM given (dtrain [options] -- PROGRAM [ARGS...]; try --help)\n", stderr);
        return 2;
    }
    return 0;
}

static int run_local(const struct launch_request *req, const struct allocation *alloc, char **argv)
{
    int ranks = launch_local_ranks(req);
    struct dt_err err;
    if (req->dry_run || (ranks == 1 && !req->label)) {
        /* One rank needs no supervisor: exec, so signals and the exit status are the program's. */
        int port = local_free_port();
        for (int rank = 0; rank < ranks; rank++) {
            struct rank_place place = {.rank = rank, .world_size = ranks, .local_rank = rank,
                                       .local_size = ranks, .node_rank = 0, .num_nodes = 1};
            struct rank_exports exports;
            launch_exports(req, alloc, &place, port, environ, &exports);
            if (req->dry_run) {
                launch_print(stdout, alloc, &place, &exports, argv);
                continue;
            }
            launch_report_kept(&exports, rank, req->verbose);
            if (req->verbose)
                launch_print(stderr, alloc, &place, &exports, argv);
            if (launch_apply(&exports, &err) < 0)
                return fprintf(stderr, "dtrain: %s\n", err.msg), 1;
            int status = launch_exec(argv, &err);
            fprintf(stderr, "dtrain: %s\n", err.msg);
            return status;
        }
        return 0;
    }
    int status = local_run(req, alloc, argv, &err);
    if (status < 0)
        return fprintf(stderr, "dtrain: %s\n", err.msg), 1;
    return status;
}

static int run_launched(const struct launch_request *req, const struct allocation *alloc, char **argv)
{
    struct rank_place place = launch_place_of(alloc);
    struct rank_exports exports;
    launch_exports(req, alloc, &place, 0, environ, &exports);
    if (req->dry_run) {
        launch_print(stdout, alloc, &place, &exports, argv);
        return 0;
    }
    launch_report_kept(&exports, place.rank, req->verbose);
    if (req->verbose)
        launch_print(stderr, alloc, &place, &exports, argv);
    struct dt_err err;
    if (launch_apply(&exports, &err) < 0)
        return fprintf(stderr, "dtrain: %s\n", err.msg), 1;
    int status = launch_exec(argv, &err);
    fprintf(stderr, "dtrain: rank %d: %s\n", place.rank, err.msg);
    return status;
}

int main(int argc, char **argv)
{
    struct launch_request req;
    int rc = parse_options(argc, argv, &req);
    if (rc != 0)
        return rc;
    char **program = argv + optind;

    struct allocation alloc;
    struct dt_err err;
    if (alloc_from_env(&alloc, environ, &err) < 0) {
        fprintf(stderr, "dtrain: %s\n", err.msg);
        return 2;
    }
    bool announce;
    if (launch_check(&req, &alloc, &announce, &err) < 0) {
        if (announce)
            fprintf(stderr, "dtrain: %s\n", err.msg);
        alloc_free(&alloc);
        return 2;
    }
    rc = alloc.source == ALLOC_LOCAL ? run_local(&req, &alloc, program) : run_launched(&req, &alloc, program);
    alloc_free(&alloc);
    return rc;
}
