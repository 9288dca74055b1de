/* launch.h - from an allocation and what the user asked for to one rank's environment and exec. */
#ifndef LAUNCH_H
#define LAUNCH_H

#include <stdbool.h>
#include <stdio.h>

#include "launcher/alloc.h"
#include "common/dt_error.h"
#include "launcher/plan.h"

/* MASTER_PORT for a Slurm step: 61000 + (job id x 61 + step id) % 4536, i.e. 61000..65535, above
 * Linux's default ephemeral range (32768-60999) so no outgoing connection holds it; the same on every
 * rank of a step, another for each step of the job running beside it. */
#define LAUNCH_PORT_BASE 61000
#define LAUNCH_PORT_SPAN 4536
#define LAUNCH_PORT_JOB_STRIDE 61

/* Whether nothing on this host listens on port (bind with SO_REUSEADDR, so a closed connection's
 * TIME_WAIT does not count). 0, or -1 with err naming the port, the host and the fix. */
int launch_port_free(int port, const char *host, struct dt_err *err);

/* The port the watchers of a step (dtrain --watch) report to rank 0's on: the step's MASTER_PORT
 * moved half the span on, so it is the step's own too; 0 when nothing identifies the job. */
int launch_watch_port(const struct allocation *alloc, char *const *envp);

/* What the user asked for on the command line; -1 where not given. */
struct launch_request {
    int nodes;
    int gpus_per_node;    /* 0: CPU ranks; with gpus_auto, this node's count once resolved */
    bool gpus_auto;       /* --gpus-per-node auto: each node runs one rank per GPU it was given */
    int ranks;            /* local mode: how many CPU ranks to start */
    bool dry_run;
    bool verbose;
    bool label;           /* local mode: prefix output lines with the rank */
    bool plan_only;       /* --plan: print the node's plan and exit */
    bool json;            /* --plan --json */
    const char *topology; /* --topology FILE: a saved hwloc XML instead of this machine */
    const char *nic;      /* --nic NAME|none */
    bool no_bind;
    bool isolate;         /* --gpu-visibility isolate: CUDA_VISIBLE_DEVICES = the rank's GPU only */
    bool report_bindings;
    bool watch;           /* --watch: stay the program's parent and name a stalled rank */
    double watch_stall_s; /* --watch-stall SEC */
    const char *watch_report;   /* --watch-report FILE */
};

/* --gpus-per-node auto: req->gpus_per_node becomes this node's GPU count, from what Slurm (or
 * CUDA_VISIBLE_DEVICES) says it was given, else, in local mode, topology_gpus (the GPUs hwloc
 * found; -1 when not looked up). A node given none runs CPU ranks. Under Slurm or mpirun the
 * node's tasks must be one per GPU: -1 with err naming the node, its tasks and GPUs and the fix.
 * Nothing to do without auto. */
int launch_resolve_auto(struct launch_request *req, const struct allocation *alloc, int topology_gpus,
                        bool *announce, struct dt_err *err);

/* Whether this task should say, once for its node, that Slurm gave GPUs that no --gpus-per-node
 * asks for (the ranks would run without one bound): the node's count, or 0. */
int launch_unused_gpus(const struct launch_request *req, const struct allocation *alloc);

/* Checks the request against the allocation. Returns 0 when they agree, or -1 with err naming both
 * numbers and the srun/sbatch (or mpirun) option that fixes it; *announce then says whether this
 * task is the one that prints it, so a step of many tasks prints it once (or once per node, for
 * what differs per node). */
int launch_check(const struct launch_request *req, const struct allocation *alloc, bool *announce,
                 struct dt_err *err);

/* How many ranks local mode starts for this request (1 when nothing asks for more). */
int launch_local_ranks(const struct launch_request *req);

/* Variables one rank exports: the common set (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
 * NODE_RANK, MASTER_ADDR, MASTER_PORT) and dtrain's own DTRAIN_*. */
#define LAUNCH_MAX_EXPORTS 40

/* The longest NAME=value one environment string may be (Linux's MAX_ARG_STRLEN, 32 pages). */
#define LAUNCH_MAX_ENV_STRING (32 * 4096)

struct export_var {
    const char *name;
    char *value;              /* any length up to the limit above; owned */
    const char *user_value;   /* non-NULL: the environment already had another value; it is kept */
};

/* The node's binding as dtrain prepared it; apply is false with --no-bind or when the topology
 * is not this machine's (--topology, HWLOC_XMLFILE). */
struct node_bind {
    struct topo topo;
    struct plan plan;
    bool apply;
};

/* What binding adds to a rank's exports: the node's topology, its plan and the rank's part. */
struct rank_bind {
    const struct topo *topo;
    const struct plan *plan;
    const struct rank_binding *binding;
};

struct rank_exports {
    struct export_var vars[LAUNCH_MAX_EXPORTS];
    int count;
    const char *unfit;        /* the first variable that could not be made (too long, no memory) */
};

/* The place of one rank: from the allocation, or chosen by local mode for each rank it starts. */
struct rank_place {
    int rank, world_size;
    int local_rank, local_size;
    int node_rank, num_nodes;
};

struct rank_place launch_place_of(const struct allocation *alloc);

/* Where rank 0 runs, as MASTER_ADDR says: the step's first node (127.0.0.1 in local mode); NULL
 * when the launcher does not say. */
const char *launch_master_addr(const struct allocation *alloc, const struct rank_place *place);

/* Fills the exports of `place`, given the current environment `envp` (user values win) and the
 * master port local mode chose (0 elsewhere). */
void launch_exports(const struct launch_request *req, const struct allocation *alloc,
                    const struct rank_place *place, int local_port, char *const *envp,
                    struct rank_exports *out);

/* Adds the binding's variables: CUDA_DEVICE_ORDER=PCI_BUS_ID, the GPU selection (DTRAIN_GPU, and
 * CUDA_VISIBLE_DEVICES in isolate mode, the one variable dtrain narrows even when set, since
 * isolation was asked for), NCCL_IB_HCA (the node's HCAs, the same on every rank: NCCL picks the
 * nearest itself), UCX_NET_DEVICES, NCCL_SOCKET_IFNAME and OMPI_MCA_btl_tcp_if_include for the
 * rank's own NIC (interfaces only when they have an IPv4 address in this network namespace), and
 * DTRAIN_GPU_BUSID, DTRAIN_NIC, DTRAIN_NUMA, DTRAIN_CPUS. */
void launch_export_binding(const struct launch_request *req, const struct allocation *alloc,
                           const struct rank_bind *bind, char *const *envp, struct rank_exports *out);

/* One stderr line saying where a rank runs (--report-bindings). */
void launch_report_binding(const struct allocation *alloc, const struct rank_place *place,
                           const struct rank_bind *bind);

/* Says whether every export was made whole: -1 with err naming a value too long for the
 * environment (never cut to fit). */
int launch_exports_check(const struct rank_exports *exports, struct dt_err *err);

void launch_exports_free(struct rank_exports *exports);

/* The export named `name`, or NULL; and the value the program sees under that name (the user's
 * where it was kept), NULL where it is not exported. */
const struct export_var *launch_export_find(const struct rank_exports *exports, const char *name);
const char *launch_export_value(const struct rank_exports *exports, const char *name);

/* Sets the exports in this process's environment (skipping kept ones). Returns 0 or -1. */
int launch_apply(const struct rank_exports *exports, struct dt_err *err);

/* Prints the exports as shell lines ("export RANK=0", kept values with a comment) and, when argv
 * is not NULL, the exec line, shell-quoted; comments show control characters as \xHH, so no
 * value can end a comment and start a command. */
void launch_print(FILE *out, const struct allocation *alloc, const struct rank_place *place,
                  const struct rank_exports *exports, char *const *argv);

/* Prints one stderr line per kept variable that differs from what dtrain would set: always for
 * the rank-identity variables (a stale RANK deadlocks a rendezvous), the others with verbose. */
void launch_report_kept(const struct rank_exports *exports, int rank, bool verbose);

/* execvp(argv) and, when it returns, the exit status a shell would give: 127 when the program is
 * not found, 126 when it cannot be run; err says why. */
int launch_exec(char *const *argv, struct dt_err *err);

#endif
