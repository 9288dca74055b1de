/* alloc.h - the allocation: job, step and this task, read from the launcher's environment.
 *
 * Sources, the first that applies wins:
 *   mpirun  - OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK,LOCAL_SIZE}; under mpirun the SLURM_LOCALID and
 *             SLURM_NODEID a task inherits are those of Open MPI's orted step, not of the rank;
 *   slurm   - an srun step: SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, SLURM_STEP_* (falling back
 *             to the job's SLURM_NTASKS, SLURM_TASKS_PER_NODE, SLURM_JOB_NODELIST);
 *   torch   - RANK and WORLD_SIZE already set by another launcher (torchrun, a wrapper);
 *   local   - none of these: dtrain starts the ranks itself on this node. A Slurm batch script or
 *             salloc shell (a job but no step) is local too; its job id is still read.
 */
#ifndef ALLOC_H
#define ALLOC_H

#include <stdbool.h>

#include "common/dt_error.h"
#include "common/hostlist.h"

/* GPUs one node may list: the largest nodes have 16 GPUs (DGX-2); MIG can split each into 7. */
#define ALLOC_MAX_GPUS 128

enum alloc_source { ALLOC_LOCAL, ALLOC_SLURM, ALLOC_MPIRUN, ALLOC_TORCH };

struct allocation {
    enum alloc_source source;
    bool in_slurm_job;            /* SLURM_JOB_ID is set */
    char job_id[32];              /* digits; "" outside Slurm */
    char step_id[32];             /* digits; "" outside an srun step */
    char *job_name;               /* SLURM_JOB_NAME, any length; NULL outside Slurm */
    char hostname[256];           /* SLURMD_NODENAME (checked: a host name, in the node list), else gethostname() */

    /* The nodes of the step (of the job under mpirun), as Slurm wrote them (any length; NULL when
     * no list is known) and expanded. */
    char *nodelist;
    const char *nodelist_var;     /* which variable held it, for messages */
    struct hostlist hosts;        /* empty when no nodelist is known */

    int num_nodes;
    const char *num_nodes_var;
    int node_rank;                /* this node's index in the step */
    int world_size;
    int rank;
    int local_size;               /* tasks on this node */
    int local_rank;

    /* Tasks on each node of the step (SLURM_STEP_TASKS_PER_NODE expanded); NULL outside Slurm. */
    int *tasks_per_node;
    const char *tasks_per_node_var;
    char tasks_per_node_text[256];

    /* GPUs Slurm gave this node: -1 when no variable says. */
    int gpus_on_node;
    const char *gpus_var;         /* the variable the count came from */
    /* What CUDA will see (CUDA_VISIBLE_DEVICES), as entries (indices, GPU-/MIG- UUIDs). */
    char visible_gpus[ALLOC_MAX_GPUS][64];
    int num_visible_gpus;         /* -1 when CUDA_VISIBLE_DEVICES is unset */
    /* The node's global GPU indices for this step (SLURM_STEP_GPUS, else SLURM_JOB_GPUS). */
    int gpu_ids[ALLOC_MAX_GPUS];
    int num_gpu_ids;

    int cpus_on_node;             /* SLURM_CPUS_ON_NODE; -1 when unset */
};

/* Reads the allocation from an environment (a NULL-terminated "NAME=value" array, like environ).
 * Returns 0, or -1 with err naming the variable and value that are malformed or inconsistent:
 * Slurm's identity is checked, not trusted (numeric job and step ids, a node name that is a host
 * name and is the step's node SLURM_NODEID, task 0 on the step's first node), and nothing is cut
 * to fit a buffer: a value too long for its field is an error. */
int alloc_from_env(struct allocation *alloc, char *const *envp, struct dt_err *err);

void alloc_free(struct allocation *alloc);

/* The value of `name` in envp, or NULL. */
const char *env_lookup(char *const *envp, const char *name);

/* Expands Slurm's tasks-per-node form "2(x3),1" into counts[] (2,2,2,1). Returns how many nodes
 * it describes, or -1 with err set (also when more than max_nodes). */
int alloc_parse_tasks_per_node(const char *text, int *counts, int max_nodes, struct dt_err *err);

const char *alloc_source_name(enum alloc_source source);

#endif
