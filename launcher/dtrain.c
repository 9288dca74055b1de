/* dtrain.c - `dtrain`: check the allocation, export each rank's place, exec the program (or start
 * the ranks locally when no launcher is present). */
#include <getopt.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/alloc.h"
#include "common/dt_parse.h"
#include "launcher/hints.h"
#include "launcher/launch.h"
#include "launcher/local.h"
#include "launcher/plan.h"
#include "launcher/watch.h"
#include "topology/topo.h"
#include "common/version.h"
#include "common/stdout_check.h"

extern char **environ;

static const char usage_text[] =
    "Usage: dtrain [options] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM as one rank of a data-parallel job. Under srun (or mpirun) dtrain reads the\n"
    "allocation, checks it against --nodes and --gpus-per-node, exports the rank's place and\n"
    "execs PROGRAM in its own process (no shell, exit status kept). Without a launcher it starts\n"
    "the ranks itself on this node (local mode, like torchrun's standalone mode): that is for\n"
    "programs that rendezvous themselves (torch.distributed's env://); an MPI program's ranks\n"
    "come from mpirun -np N dtrain ... or srun, and dtrain's own MPI tools refuse to run as\n"
    "local copies.\n"
    "\n"
    "Options:\n"
    "  -N, --nodes N           the job must span N nodes (checked; mismatch: exit 2)\n"
    "  -g, --gpus-per-node M   M GPUs and one rank per GPU on each node; 0 = CPU ranks;\n"
    "                          auto = one rank per GPU each node was given, whatever the\n"
    "                          others got (3 on one node, 2 on another; a node given none\n"
    "                          runs CPU ranks). Without -g ranks run as CPU ranks, and a\n"
    "                          node Slurm gave GPUs says so once\n"
    "  -n, --ranks K           local mode: start K CPU ranks (default 1, or M with -g M)\n"
    "  -l, --label             local mode: prefix each output line with \"RANK: \"\n"
    "      --dry-run           print what this task would export and exec, then exit 0\n"
    "\n"
    "Binding (from the node's hardware, read with hwloc):\n"
    "      --plan              print the node's binding plan (every local rank) and exit\n"
    "      --json              with --plan: one JSON object\n"
    "  -t, --topology FILE     plan from a saved hwloc XML (lstopo --of xml) instead of this\n"
    "                          machine; nothing is bound then\n"
    "      --nic NAME|none     use this NIC (mlx5_0, ib0 or a bus id) for every rank, or none\n"
    "      --no-bind           leave cores and memory alone (GPU and NIC are still chosen)\n"
    "      --gpu-visibility M  share (default): every GPU of the step stays visible and\n"
    "                          DTRAIN_GPU is the rank's device index, so CUDA IPC/P2P and NCCL's\n"
    "                          intra-node paths work and cuda:LOCAL_RANK code runs unchanged;\n"
    "                          isolate: CUDA_VISIBLE_DEVICES = the rank's GPU only (device 0)\n"
    "      --report-bindings   each rank prints where it runs to stderr at start\n"
    "  -v, --verbose           say what is exported and which set values are kept\n"
    "\n"
    "Watching (any program; dtrain-train has its own watchdog too):\n"
    "      --watch             stay the program's parent instead of exec'ing it: output,\n"
    "                          signals and exit status pass through unchanged, and each\n"
    "                          rank's dtrain follows its program's progress (output written,\n"
    "                          5% of a core or more over the last second, its GPU busy where\n"
    "                          NVML says) four times a second and reports it to rank 0's (on\n"
    "                          the step's MASTER_PORT + 2268, wrapping within 61000-65535).\n"
    "                          When a rank makes no progress for --watch-stall seconds, rank 0\n"
    "                          names the one the others wait for (rank, host, for how long,\n"
    "                          stopped / asleep in a read / waiting on disk / gone) and ends\n"
    "                          the step with exit status 3\n"
    "      --watch-stall SEC   the time without progress that is a stall (60); longer than\n"
    "                          any pause the program makes on purpose (a checkpoint, an\n"
    "                          evaluation) while the other ranks sleep waiting for it\n"
    "      --watch-report FILE rank 0 writes the stalled rank there as one JSON line\n"
    "                          ({\"rank\":2,\"stalled_s\":61.0,\"host\":\"gn03\",\"state\":...})\n"
    "  -h, --help              this text\n"
    "  -V, --version           the version\n"
    "\n"
    "Exported for the program (a value already set in the environment is kept, never\n"
    "overwritten): RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR MASTER_PORT,\n"
    "and DTRAIN_LAUNCHER DTRAIN_NODES DTRAIN_NODELIST DTRAIN_JOB_ID DTRAIN_JOB_NAME DTRAIN_STEP_ID\n"
    "DTRAIN_GPUS_PER_NODE\n"
    "DTRAIN_GPU (the rank's index among the GPUs CUDA sees). MASTER_ADDR is the first node of\n"
    "the step (under mpirun on fewer nodes than the job's: this node in a world of one, else\n"
    "not exported); MASTER_PORT is 61000 + (job id x 61 + step id) % 4536, the same on every rank\n"
    "of a step, another for each step running beside it (rank 0 checks it is free). Binding adds\n"
    "CUDA_DEVICE_ORDER=PCI_BUS_ID, NCCL_IB_HCA (every HCA of the node, the same on every rank),\n"
    "UCX_NET_DEVICES, NCCL_SOCKET_IFNAME and OMPI_MCA_btl_tcp_if_include (the rank's own NIC),\n"
    "DTRAIN_GPU_BUSID, DTRAIN_NIC, DTRAIN_NUMA and DTRAIN_CPUS.\n"
    "\n"
    "Each rank gets the GPU Slurm gave it, the NIC nearest that GPU (a shared PCIe switch beats\n"
    "a shared host bridge, then the same NUMA node, then the same package; equally near NICs are\n"
    "spread over the ranks) and an even, disjoint share of the cores near its GPU. CPU ranks\n"
    "(--gpus-per-node 0) are spread over the NUMA nodes. The node's topology is discovered once\n"
    "and cached in /dev/shm for its other ranks (DTRAIN_TOPO_CACHE=DIR to move it).\n"
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
    "  dtrain --plan --gpus-per-node 4\n"
    "      how 4 GPU ranks would be bound on this node\n"
    "\n"
    "Exit status: PROGRAM's; 2 for bad usage or an allocation that does not match the request;\n"
    "127 when PROGRAM is not found, 126 when it cannot be run; 3 when --watch ended a stalled\n"
    "step. In local mode, the first failing rank's status (128 + signal when killed); the other\n"
    "ranks are stopped within 2 s.\n";

/* What the options say together (each alone was checked as it was read). */
static int check_request(const struct launch_request *req, bool has_program)
{
    if (req->watch && req->ranks > 1)
        return fputs("dtrain: --watch watches the ranks a launcher started (srun, mpirun); local mode's --ranks "
                     "are supervised by dtrain already (one that fails stops the others)\n", stderr), 2;
    if (req->json && !req->plan_only)
        return fputs("dtrain: --json goes with --plan\n", stderr), 2;
    if (!has_program && !req->plan_only) {
        fputs("dtrain: no PROGRAM given (dtrain [options] -- PROGRAM [ARGS...]; try --help)\n", stderr);
        return 2;
    }
    return 0;
}

enum { O_WATCH = 256, O_WATCH_STALL, O_WATCH_REPORT };

static int parse_options(int argc, char **argv, struct launch_request *req)
{
    static const struct option options[] = {
        {"nodes", required_argument, NULL, 'N'},
        {"gpus-per-node", required_argument, NULL, 'g'},
        {"ranks", required_argument, NULL, 'n'},
        {"label", no_argument, NULL, 'l'},
        {"dry-run", no_argument, NULL, 'D'},
        {"verbose", no_argument, NULL, 'v'},
        {"plan", no_argument, NULL, 'P'},
        {"json", no_argument, NULL, 'J'},
        {"topology", required_argument, NULL, 't'},
        {"nic", required_argument, NULL, 'I'},
        {"no-bind", no_argument, NULL, 'B'},
        {"gpu-visibility", required_argument, NULL, 'G'},
        {"report-bindings", no_argument, NULL, 'R'},
        {"watch", no_argument, NULL, O_WATCH},
        {"watch-stall", required_argument, NULL, O_WATCH_STALL},
        {"watch-report", required_argument, NULL, O_WATCH_REPORT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    *req = (struct launch_request){.nodes = -1, .gpus_per_node = -1, .ranks = -1, .watch_stall_s = 60};
    int opt;
    /* '+': stop at PROGRAM, so its own options are left alone even without "--". */
    while ((opt = getopt_long(argc, argv, "+N:g:n:lt:vhV", options, NULL)) != -1) {
        switch (opt) {
        case 'N':
            if (dt_parse_int(optarg, 1, HOSTLIST_MAX_NAMES, &req->nodes) < 0)
                return fprintf(stderr, "dtrain: --nodes \"%s\" is not a node count of 1 or more\n", optarg), 2;
            break;
        case 'g':
            if (strcmp(optarg, "auto") == 0)
                req->gpus_auto = true;
            else if (dt_parse_int(optarg, 0, ALLOC_MAX_GPUS, &req->gpus_per_node) < 0)
                return fprintf(stderr, "dtrain: --gpus-per-node \"%s\" is not auto or a number from 0 to %d\n",
                               optarg, ALLOC_MAX_GPUS), 2;
            break;
        case 'n':
            if (dt_parse_int(optarg, 1, LOCAL_MAX_RANKS, &req->ranks) < 0) {
                if (!hint_mpirun_option(stderr, argv[optind - 1]))   /* "-np 2" reads as -n "p" */
                    fprintf(stderr, "dtrain: --ranks \"%s\" is not a number from 1 to %d\n", optarg, LOCAL_MAX_RANKS);
                return 2;
            }
            break;
        case 'l': req->label = true; break;
        case 'D': req->dry_run = true; break;
        case 'v': req->verbose = true; break;
        case 'P': req->plan_only = true; break;
        case 'J': req->json = true; break;
        case 't': req->topology = optarg; break;
        case 'I': req->nic = optarg; break;
        case 'B': req->no_bind = true; break;
        case 'R': req->report_bindings = true; break;
        case O_WATCH: req->watch = true; break;
        case O_WATCH_STALL:
            if (dt_parse_double(optarg, 1, 1e6, &req->watch_stall_s) < 0)
                return fprintf(stderr, "dtrain: --watch-stall \"%s\" is not a number of seconds from 1 to 1e6\n",
                               optarg), 2;
            break;
        case O_WATCH_REPORT: req->watch_report = optarg; break;
        case 'G':
            if (strcmp(optarg, "isolate") && strcmp(optarg, "share"))
                return fprintf(stderr, "dtrain: --gpu-visibility \"%s\": say isolate or share\n", optarg), 2;
            req->isolate = strcmp(optarg, "isolate") == 0;
            break;
        case 'h': fputs(usage_text, stdout); exit(0);
        case 'V': printf("dtrain %s\n", DTRAIN_VERSION); exit(0);
        default:
            hint_mpirun_option(stderr, argv[optind - 1]);
            fputs("Try 'dtrain --help'.\n", stderr);
            return 2;
        }
    }
    return check_request(req, optind < argc);
}

/* The node's topology (cached per node, or a saved XML) and the plan for its local ranks. */
static int prepare_binding(const struct launch_request *req, const struct allocation *alloc, int local_ranks,
                           struct node_bind *nb, struct dt_err *err)
{
    memset(nb, 0, sizeof *nb);
    const char *xml = req->topology ? req->topology : getenv("HWLOC_XMLFILE");
    bool from_cache;
    if ((xml ? topo_load(&nb->topo, xml, err) : topo_load_cached(&nb->topo, NULL, &from_cache, err)) < 0)
        return -1;
    /* With --gpus-per-task Slurm shows each task only its own GPU: plan the others around it. */
    int step_gpus[ALLOC_MAX_GPUS], num_step_gpus = alloc->num_gpu_ids;
    int wanted = req->gpus_per_node > 0 ? req->gpus_per_node : 0;
    memcpy(step_gpus, alloc->gpu_ids, sizeof step_gpus);
    if (num_step_gpus == 1 && wanted > 1 && alloc->local_rank < wanted) {
        int mine = alloc->gpu_ids[0], next = 0;
        for (int r = 0; r < wanted; r++) {
            if (next == mine)
                next++;
            step_gpus[r] = r == alloc->local_rank ? mine : next++;
        }
        num_step_gpus = wanted;
    }
    /* This node's own topology: the ranks stay inside the cpus dtrain was given (taskset, srun's
     * --cpu-bind); a saved XML is another machine's, planned whole. */
    hwloc_bitmap_t allowed = xml ? NULL : hwloc_bitmap_alloc();
    if (allowed && hwloc_get_cpubind(nb->topo.hw, allowed, HWLOC_CPUBIND_PROCESS) < 0)
        hwloc_bitmap_free(allowed), allowed = NULL;
    struct plan_request pr = {.ranks = local_ranks, .gpus_per_node = wanted,
                              .step_gpus = num_step_gpus > 0 ? step_gpus : NULL, .num_step_gpus = num_step_gpus,
                              .nic = req->nic, .no_bind = req->no_bind, .allowed = allowed};
    int rc = plan_build(&nb->topo, &pr, &nb->plan, err);
    hwloc_bitmap_free(allowed);
    if (rc < 0) {
        topo_free(&nb->topo);
        return -1;
    }
    nb->apply = nb->plan.bind && hwloc_topology_is_thissystem(nb->topo.hw);
    return 0;
}

static void release_binding(struct node_bind *nb)
{
    plan_free(&nb->plan);
    topo_free(&nb->topo);
}

/* Rank 0 of a launcher's job rendezvouses on the MASTER_PORT dtrain chose: is it free on its host?
 * (A port the user set is theirs to choose.) */
static bool master_port_taken(const struct allocation *alloc, const struct rank_place *place,
                              const struct rank_exports *exports, struct dt_err *err)
{
    if (place->rank != 0 || alloc->source == ALLOC_LOCAL)
        return false;
    const struct export_var *port = launch_export_find(exports, "MASTER_PORT");
    return port && !port->user_value && launch_port_free(atoi(port->value), alloc->hostname, err) < 0;
}

/* --watch: the program as this process's watched child; its status (see watch_run). */
static int run_watched(const struct launch_request *req, const struct allocation *alloc,
                       const struct rank_place *place, char **argv, int *raise_signal, struct dt_err *err)
{
    /* rank 0 is where MASTER_ADDR says (the user's, where set: the exports are applied by now) */
    const char *rank0_host = getenv("MASTER_ADDR");
    if (!rank0_host || !rank0_host[0])
        rank0_host = launch_master_addr(alloc, place);
    struct watch_setup setup = {.rank = place->rank, .world_size = place->world_size, .host = alloc->hostname,
                                .rank0_host = rank0_host ? rank0_host : alloc->hostname,
                                .port = launch_watch_port(alloc, environ), .stall_s = req->watch_stall_s,
                                .report_path = place->rank == 0 ? req->watch_report : NULL,
                                .verbose = req->verbose};
    if (setup.world_size > 1 && setup.port == 0) {
        if (place->rank == 0)
            fprintf(stderr, "dtrain: watch: nothing identifies this job (no Slurm job id, no mpirun job id), so the "
                    "ranks' watchers have no port to meet on: each rank is watched alone\n");
        setup.world_size = 1;   /* rank 0 judges itself only; the others report nowhere */
    }
    return watch_run(argv, &setup, raise_signal, err);
}

/* Exports, binds and execs one rank (or, with --watch, runs it as a watched child: then its
 * status, and *raise_signal the signal that killed it); returns only on failure, with the exit
 * status. */
static int exec_rank(const struct launch_request *req, const struct allocation *alloc, const struct node_bind *nb,
                     const struct rank_place *place, int port, char **argv, int *raise_signal)
{
    struct rank_exports exports;
    struct rank_bind bind = {&nb->topo, &nb->plan, &nb->plan.ranks[place->local_rank]};
    launch_exports(req, alloc, place, port, environ, &exports);
    launch_export_binding(req, alloc, &bind, environ, &exports);
    struct dt_err err;
    if (launch_exports_check(&exports, &err) < 0 || master_port_taken(alloc, place, &exports, &err)) {
        launch_exports_free(&exports);
        return fprintf(stderr, "dtrain: rank %d: %s\n", place->rank, err.msg), 2;
    }
    if (req->dry_run) {
        launch_print(stdout, alloc, place, &exports, argv);
        launch_exports_free(&exports);
        return 0;
    }
    launch_report_kept(&exports, place->rank, req->verbose);
    if (req->verbose)
        launch_print(stderr, alloc, place, &exports, argv);
    if (req->report_bindings)
        launch_report_binding(alloc, place, &bind);
    int status = 0;
    if (nb->apply && plan_apply(&nb->topo, bind.binding, &err) < 0)
        status = 2;
    else if (launch_apply(&exports, &err) < 0)
        status = 1;
    else {
        if (alloc->source == ALLOC_SLURM && place->rank == 0 && hint_step_lacks_pmix() &&
            hint_program_uses_mpi(argv, getenv("PATH")))
            fprintf(stderr, "dtrain: warning: %s loads MPI, but this srun step has no PMIx: Open MPI will stop with "
                    "\"OPAL ERROR: Unreachable\". Start the step with srun --mpi=pmix (or MpiDefault=pmix in "
                    "slurm.conf)\n", hint_program_file(argv));
        if (alloc->source == ALLOC_SLURM && place->rank == 0 && hint_het_step_under_pmix()) {
            int version = hint_slurm_version();
            if (version < 2411)
                hint_warn_het_step(stderr, version);
        }
        if (!req->watch) {
            status = launch_exec(argv, &err);
        } else if ((status = run_watched(req, alloc, place, argv, raise_signal, &err)) >= 0) {
            launch_exports_free(&exports);
            return status;   /* the watched program's */
        } else {
            status = 1;   /* it could not be started */
        }
    }
    fprintf(stderr, "dtrain: rank %d: %s\n", place->rank, err.msg);
    launch_exports_free(&exports);
    return status;
}

static int run_local(const struct launch_request *req, const struct allocation *alloc, const struct node_bind *nb,
                     char **argv, int *raise_signal)
{
    int ranks = launch_local_ranks(req);
    if (req->dry_run || (ranks == 1 && !req->label)) {
        /* One rank needs no supervisor: exec, so signals and the exit status are the program's. */
        int port = local_free_port();
        for (int rank = 0; rank < ranks; rank++) {
            struct rank_place place = {.rank = rank, .world_size = ranks, .local_rank = rank,
                                       .local_size = ranks, .node_rank = 0, .num_nodes = 1};
            int status = exec_rank(req, alloc, nb, &place, port, argv, raise_signal);
            if (!req->dry_run)
                return status;
        }
        return 0;
    }
    struct dt_err err;
    int status = local_run(req, alloc, nb, argv, &err);
    if (status < 0)
        return fprintf(stderr, "dtrain: %s\n", err.msg), 1;
    return status;
}

/* Every rank of a step fails the same check, and one says why. Under srun --kill-on-bad-exit the
 * first rank to exit takes the others down: a silent rank that exits first can kill the one that
 * would have printed the message before it did (seen in the cluster test: job FAILED, no message).
 * The silent ones wait a second, so the rank with the message goes first; that one waits a little
 * too, since srun of Slurm 22.05 can learn of its exit before the message's bytes and end the step
 * without them (seen too: "task 0: Exited with exit code 2", no message). */
static void give_the_message_time(bool announcer)
{
    nanosleep(announcer ? &(struct timespec){0, 300000000} : &(struct timespec){1, 0}, NULL);
}

/* --gpus-per-node auto made this node's count (local mode without a GPU variable: the GPUs the
 * topology shows); without -g, a node Slurm gave GPUs says once that none is bound. */
static int resolve_gpus(struct launch_request *req, const struct allocation *alloc, bool *announce,
                        struct dt_err *err)
{
    int topology_gpus = -1;
    if (req->gpus_auto && alloc->source == ALLOC_LOCAL && alloc->gpus_on_node < 0) {
        struct topo topo;
        const char *xml = req->topology ? req->topology : getenv("HWLOC_XMLFILE");
        bool from_cache;
        if ((xml ? topo_load(&topo, xml, err) : topo_load_cached(&topo, NULL, &from_cache, err)) < 0)
            return *announce = true, -1;
        topology_gpus = topo.num_gpus;
        topo_free(&topo);
    }
    int unused = launch_unused_gpus(req, alloc);
    if (unused > 0)
        fprintf(stderr, "dtrain: Slurm gave %s %d GPU%s (%s), but no --gpus-per-node asks for them: the ranks run "
                "without a GPU bound (--gpus-per-node auto binds one to each)\n", alloc->hostname, unused,
                unused == 1 ? "" : "s", alloc->gpus_var);
    return launch_resolve_auto(req, alloc, topology_gpus, announce, err);
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain");   /* a full disk is an error, not an empty table */
    struct launch_request req;
    int rc = parse_options(argc, argv, &req);
    if (rc != 0)
        return rc;
    char **program = argv + optind;
    int raise_signal = 0;

    struct allocation alloc;
    struct dt_err err;
    if (alloc_from_env(&alloc, environ, &err) < 0) {
        fprintf(stderr, "dtrain: %s\n", err.msg);
        return 2;
    }
    bool announce;
    if (resolve_gpus(&req, &alloc, &announce, &err) < 0 || launch_check(&req, &alloc, &announce, &err) < 0) {
        if (announce)
            fprintf(stderr, "dtrain: %s\n", err.msg);
        if (alloc.source != ALLOC_LOCAL)
            give_the_message_time(announce);
        alloc_free(&alloc);
        return 2;
    }
    bool local = alloc.source == ALLOC_LOCAL;
    struct node_bind nb;
    if (prepare_binding(&req, &alloc, local ? launch_local_ranks(&req) : alloc.local_size, &nb, &err) < 0) {
        if (alloc.local_rank == 0)   /* the same on every rank of the node: one says it */
            fprintf(stderr, "dtrain: %s\n", err.msg);
        alloc_free(&alloc);
        return 2;
    }
    if (req.plan_only) {
        if (alloc.local_rank == 0)
            (req.json ? plan_print_json : plan_print)(stdout, &nb.topo, &nb.plan, alloc.hostname);
        rc = 0;
    } else if (local) {
        rc = run_local(&req, &alloc, &nb, program, &raise_signal);
    } else {
        struct rank_place place = launch_place_of(&alloc);
        rc = exec_rank(&req, &alloc, &nb, &place, 0, program, &raise_signal);
    }
    release_binding(&nb);
    alloc_free(&alloc);
    if (raise_signal > 0)
        watch_exit_like(rc, raise_signal);   /* a watched program killed by a signal: so is dtrain */
    return rc;
}
