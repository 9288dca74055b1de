/* plan.h - the binding plan of one node: for each local rank its GPU, NIC, NUMA nodes and cores.
 *
 * Rank r gets the r-th GPU the step was given (Slurm's node-global indices, counted in PCI bus
 * order), the NIC nearest that GPU (the least used one among equally near NICs, so no NIC is
 * doubled while an equally near one is free), and the cores of the GPU's non-I/O ancestor, split
 * evenly and disjointly between the ranks that share it (whole cores, SMT siblings together).
 * CPU ranks are spread over the NUMA nodes in blocks and split each node's cores the same way. */
#ifndef PLAN_H
#define PLAN_H

#include <stdbool.h>
#include <stdio.h>

#include "common/dt_error.h"
#include "topology/topo.h"

struct plan_request {
    int ranks;                /* local ranks on this node */
    int gpus_per_node;        /* 0: CPU ranks */
    const int *step_gpus;     /* node-global GPU indices of the step; NULL: GPUs 0..gpus_per_node-1 */
    int num_step_gpus;
    const char *nic;          /* --nic: a device ("mlx5_0"), netdev ("ib0") or bus id; "none"; NULL: nearest */
    bool no_bind;             /* --no-bind: plan GPUs and NICs, leave cores and memory alone */
    hwloc_const_cpuset_t allowed;   /* the cpus dtrain itself may run on (taskset, a cgroup): ranks
                                     * stay inside them; NULL: the whole topology (a saved XML) */
};

struct rank_binding {
    int local_rank;
    int gpu;                  /* index into topo->gpus; -1 for a CPU rank */
    int visible_index;        /* its place among the step's GPUs: the CUDA device index in share mode */
    int nic;                  /* index into topo->nics; -1 when none */
    hwloc_bitmap_t cpuset;    /* the cores it may run on (empty with no_bind) */
    hwloc_bitmap_t nodeset;   /* NUMA nodes for its memory (empty: no memory binding) */
};

struct plan {
    int num_ranks;
    struct rank_binding *ranks;
    bool bind;                /* cores and memory are bound */
    char ib_hcas[1024];       /* NCCL_IB_HCA: the node's usable HCAs with ports, "mlx5_0:1,mlx5_1:1" */
};

/* Builds the plan for every local rank of the node. Returns 0, or -1 with err when the request
 * does not fit the node: more GPUs than it has, a GPU index it lacks, an unknown --nic. */
int plan_build(const struct topo *topo, const struct plan_request *req, struct plan *plan, struct dt_err *err);

void plan_free(struct plan *plan);

/* Binds the calling process (cores, then memory policy) as planned for one rank; both survive
 * exec. Returns 0, or -1 with err. */
int plan_apply(const struct topo *topo, const struct rank_binding *binding, struct dt_err *err);

/* "mlx5_0:1" (device:port), the netdev, or "" for the rank's NIC. */
void plan_nic_device(const struct topo *topo, int nic, char *buf, size_t size);

/* The whole node's plan: a table, or one JSON object. */
void plan_print(FILE *out, const struct topo *topo, const struct plan *plan, const char *host);
void plan_print_json(FILE *out, const struct topo *topo, const struct plan *plan, const char *host);

#endif
