/* alloc.c - read the allocation from Slurm, Open MPI or torch-style variables (see alloc.h). */
#include "launcher/alloc.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dt_parse.h"

/* Ranks in one job: far above the largest MPI jobs run, and small enough for int arithmetic. */
#define ALLOC_MAX_RANKS (1 << 24)
/* Tasks Slurm may start on one node (its own MAX_TASKS_PER_NODE is 512 by default). */
#define ALLOC_MAX_TASKS_PER_NODE 65536

const char *env_lookup(char *const *envp, const char *name)
{
    size_t len = strlen(name);
    for (; envp && *envp; envp++)
        if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
            return *envp + len + 1;
    return NULL;
}

/* The first of two variables that is set; *which says which one. */
static const char *lookup_either(char *const *envp, const char *first, const char *second, const char **which)
{
    const char *value = env_lookup(envp, first);
    *which = first;
    if (!value && second) {
        value = env_lookup(envp, second);
        *which = second;
    }
    return value;
}

/* Reads an integer variable. Returns 1 when set and valid, 0 when unset, -1 when malformed. */
static int read_int(char *const *envp, const char *name, int min, int max, int *out, struct dt_err *err)
{
    const char *value = env_lookup(envp, name);
    if (!value)
        return 0;
    if (dt_parse_int(value, min, max, out) < 0)
        return dt_fail(err, "%s=\"%s\" is not a whole number from %d to %d", name, value, min, max);
    return 1;
}

static int require_int(char *const *envp, const char *name, int min, int max, int *out, struct dt_err *err)
{
    int rc = read_int(envp, name, min, max, out, err);
    if (rc == 0)
        return dt_fail(err, "%s is not set (it is needed to know this task's place in the job)", name);
    return rc < 0 ? -1 : 0;
}

const char *alloc_source_name(enum alloc_source source)
{
    switch (source) {
    case ALLOC_SLURM: return "slurm";
    case ALLOC_MPIRUN: return "mpirun";
    case ALLOC_TORCH: return "torch";
    case ALLOC_LOCAL: break;
    }
    return "local";
}

int alloc_parse_tasks_per_node(const char *text, int *counts, int max_nodes, struct dt_err *err)
{
    const char *p = text;
    int nodes = 0;
    for (;;) {
        char *end;
        long tasks = strtol(p, &end, 10);
        if (end == p || *p == '-' || *p == '+' || *p == ' ' || tasks < 1 || tasks > ALLOC_MAX_TASKS_PER_NODE)
            return dt_fail(err, "\"%s\": expected a task count at character %ld", text, (long)(p - text) + 1);
        p = end;
        long repeat = 1;
        if (*p == '(') {
            if (p[1] != 'x')
                return dt_fail(err, "\"%s\": expected \"(xN)\" at character %ld", text, (long)(p - text) + 1);
            const char *digits = p + 2;
            repeat = strtol(digits, &end, 10);
            if (end == digits || *digits == '-' || *digits == '+' || *digits == ' ' || repeat < 1 || *end != ')')
                return dt_fail(err, "\"%s\": expected \"(xN)\" at character %ld", text, (long)(p - text) + 1);
            p = end + 1;
        }
        if (repeat > max_nodes - nodes)
            return dt_fail(err, "\"%s\" describes more than %d nodes", text, max_nodes);
        for (long i = 0; i < repeat; i++)
            counts[nodes++] = (int)tasks;
        if (*p == '\0')
            return nodes;
        if (*p != ',')
            return dt_fail(err, "\"%s\": expected ',' at character %ld", text, (long)(p - text) + 1);
        p++;
    }
}

/* Expands the nodelist in `var` into alloc->hosts. */
static int read_nodelist(struct allocation *alloc, const char *var, const char *value, struct dt_err *err)
{
    alloc->nodelist_var = var;
    free(alloc->nodelist);
    if (!(alloc->nodelist = strdup(value)))
        return dt_fail(err, "out of memory");
    if (hostlist_expand(value, &alloc->hosts, err) < 0)
        return dt_wrap(err, "%s", var);
    return 0;
}

/* Copies a Slurm id that must be a non-empty run of digits (SLURM_JOB_ID, SLURM_STEP_ID). */
static int read_id(const char *var, const char *value, char *out, size_t size, struct dt_err *err)
{
    size_t len = strlen(value);
    if (len == 0 || len >= size || strspn(value, "0123456789") != len)
        return dt_fail(err, "%s=\"%s\" is not a Slurm id (1 to %zu digits)", var, value, size - 1);
    memcpy(out, value, len + 1);
    return 0;
}

/* A node name as Slurm's slurm.conf allows it (letters, digits, '-', '_', '.'). */
static int read_node_name(const char *var, const char *value, char *out, size_t size, struct dt_err *err)
{
    size_t len = strlen(value);
    if (len == 0 || len >= size ||
        strspn(value, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") != len)
        return dt_fail(err, "%s=\"%s\" is not a node name (1 to %zu letters, digits, '-', '_' or '.')", var, value,
                       size - 1);
    memcpy(out, value, len + 1);
    return 0;
}

/* Splits a comma list into alloc->visible_gpus (CUDA_VISIBLE_DEVICES: indices or UUIDs). */
static int read_visible_gpus(struct allocation *alloc, const char *value, struct dt_err *err)
{
    alloc->num_visible_gpus = 0;
    for (const char *p = value; *p;) {
        size_t len = strcspn(p, ",");
        if (len == 0 || len >= sizeof alloc->visible_gpus[0])
            return dt_fail(err, "CUDA_VISIBLE_DEVICES=\"%s\": entry %d is empty or too long", value,
                           alloc->num_visible_gpus + 1);
        if (alloc->num_visible_gpus == ALLOC_MAX_GPUS)
            return dt_fail(err, "CUDA_VISIBLE_DEVICES=\"%s\" lists more than %d GPUs", value, ALLOC_MAX_GPUS);
        memcpy(alloc->visible_gpus[alloc->num_visible_gpus], p, len);
        alloc->visible_gpus[alloc->num_visible_gpus++][len] = '\0';
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Parses "0,1,3" (SLURM_STEP_GPUS, SLURM_JOB_GPUS) into alloc->gpu_ids. */
static int read_gpu_ids(struct allocation *alloc, const char *var, const char *value, struct dt_err *err)
{
    char item[32];
    for (const char *p = value; *p;) {
        size_t len = strcspn(p, ",");
        int id;
        if (len == 0 || len >= sizeof item || alloc->num_gpu_ids == ALLOC_MAX_GPUS)
            return dt_fail(err, "%s=\"%s\" is not a list of GPU indices", var, value);
        memcpy(item, p, len);
        item[len] = '\0';
        if (dt_parse_int(item, 0, INT_MAX, &id) < 0)
            return dt_fail(err, "%s=\"%s\": \"%s\" is not a GPU index", var, value, item);
        alloc->gpu_ids[alloc->num_gpu_ids++] = id;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* GPUs and CPUs of this node, whatever launched us. */
static int read_node_resources(struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    const char *visible = env_lookup(envp, "CUDA_VISIBLE_DEVICES");
    if (visible && read_visible_gpus(alloc, visible, err) < 0)
        return -1;
    const char *ids_var;
    const char *ids = lookup_either(envp, "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", &ids_var);
    if (ids && read_gpu_ids(alloc, ids_var, ids, err) < 0)
        return -1;
    int rc = read_int(envp, "SLURM_GPUS_ON_NODE", 0, ALLOC_MAX_GPUS, &alloc->gpus_on_node, err);
    if (rc < 0)
        return -1;
    if (rc == 1) {
        alloc->gpus_var = "SLURM_GPUS_ON_NODE";
    } else if (ids) {
        alloc->gpus_on_node = alloc->num_gpu_ids;
        alloc->gpus_var = ids_var;
    } else if (visible) {
        alloc->gpus_on_node = alloc->num_visible_gpus;
        alloc->gpus_var = "CUDA_VISIBLE_DEVICES";
    }
    return read_int(envp, "SLURM_CPUS_ON_NODE", 1, INT_MAX, &alloc->cpus_on_node, err) < 0 ? -1 : 0;
}

/* Is this task where its variables say? Slurm starts task 0 on the step's first node (MASTER_ADDR
 * relies on it), and SLURMD_NODENAME is node SLURM_NODEID of the step's list. */
static int check_slurm_identity(const struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    if (alloc->rank == 0 && alloc->node_rank != 0)
        return dt_fail(err, "SLURM_PROCID=0 on SLURM_NODEID=%d: task 0 runs on the step's first node", alloc->node_rank);
    if (!env_lookup(envp, "SLURMD_NODENAME"))
        return 0;
    ssize_t found = hostlist_find(&alloc->hosts, alloc->hostname);
    if (found < 0)
        return dt_fail(err, "SLURMD_NODENAME=%s is not in %s=%s", alloc->hostname, alloc->nodelist_var, alloc->nodelist);
    if (found != alloc->node_rank)
        return dt_fail(err, "SLURMD_NODENAME=%s is node %zd of %s=%s, but SLURM_NODEID=%d", alloc->hostname, found,
                       alloc->nodelist_var, alloc->nodelist, alloc->node_rank);
    return 0;
}

/* An srun step: every fact from SLURM_* variables, checked against each other. */
static int read_slurm_step(struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    alloc->source = ALLOC_SLURM;
    if (require_int(envp, "SLURM_PROCID", 0, ALLOC_MAX_RANKS, &alloc->rank, err) < 0 ||
        require_int(envp, "SLURM_LOCALID", 0, ALLOC_MAX_TASKS_PER_NODE, &alloc->local_rank, err) < 0 ||
        require_int(envp, "SLURM_NODEID", 0, HOSTLIST_MAX_NAMES, &alloc->node_rank, err) < 0)
        return -1;
    const char *var;
    const char *nodelist = lookup_either(envp, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", &var);
    if (!nodelist)
        nodelist = lookup_either(envp, "SLURM_NODELIST", NULL, &var);
    if (!nodelist)
        return dt_fail(err, "SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST) is not set");
    if (read_nodelist(alloc, var, nodelist, err) < 0)
        return -1;

    alloc->num_nodes = (int)alloc->hosts.count;
    alloc->num_nodes_var = alloc->nodelist_var;
    const char *count = lookup_either(envp, "SLURM_STEP_NUM_NODES", "SLURM_NNODES", &var);
    if (count) {
        int n;
        if (dt_parse_int(count, 1, HOSTLIST_MAX_NAMES, &n) < 0)
            return dt_fail(err, "%s=\"%s\" is not a node count", var, count);
        if (n != alloc->num_nodes)
            return dt_fail(err, "%s=%d but %s=%s names %d nodes", var, n, alloc->nodelist_var,
                           alloc->nodelist, alloc->num_nodes);
        alloc->num_nodes_var = var;
    }

    const char *tasks = lookup_either(envp, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", &var);
    if (!tasks)
        tasks = lookup_either(envp, "SLURM_NPROCS", NULL, &var);
    if (!tasks)
        return dt_fail(err, "SLURM_STEP_NUM_TASKS (or SLURM_NTASKS) is not set");
    if (dt_parse_int(tasks, 1, ALLOC_MAX_RANKS, &alloc->world_size) < 0)
        return dt_fail(err, "%s=\"%s\" is not a task count", var, tasks);

    const char *per_node = lookup_either(envp, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", &var);
    if (!per_node)
        return dt_fail(err, "SLURM_STEP_TASKS_PER_NODE (or SLURM_TASKS_PER_NODE) is not set");
    alloc->tasks_per_node_var = var;
    snprintf(alloc->tasks_per_node_text, sizeof alloc->tasks_per_node_text, "%s", per_node);
    alloc->tasks_per_node = calloc((size_t)alloc->num_nodes, sizeof(int));
    if (!alloc->tasks_per_node)
        return dt_fail(err, "out of memory");
    int described = alloc_parse_tasks_per_node(per_node, alloc->tasks_per_node, alloc->num_nodes, err);
    if (described < 0)
        return dt_wrap(err, "%s (for the %d nodes of %s)", var, alloc->num_nodes, alloc->nodelist);
    long total = 0;
    for (int i = 0; i < described; i++)
        total += alloc->tasks_per_node[i];
    if (described != alloc->num_nodes || total != alloc->world_size)
        return dt_fail(err, "%s=%s describes %d tasks on %d nodes, but the step has %d tasks on %d nodes",
                       var, per_node, (int)total, described, alloc->world_size, alloc->num_nodes);

    if (alloc->rank >= alloc->world_size)
        return dt_fail(err, "SLURM_PROCID=%d is not below the step's %d tasks", alloc->rank, alloc->world_size);
    if (alloc->node_rank >= alloc->num_nodes)
        return dt_fail(err, "SLURM_NODEID=%d is not below the step's %d nodes", alloc->node_rank, alloc->num_nodes);
    alloc->local_size = alloc->tasks_per_node[alloc->node_rank];
    if (alloc->local_rank >= alloc->local_size)
        return dt_fail(err, "SLURM_LOCALID=%d but %s gives node %d only %d tasks", alloc->local_rank, var,
                       alloc->node_rank, alloc->local_size);
    return check_slurm_identity(alloc, envp, err);
}

/* mpirun's world is some of the Slurm job's nodes, and which ones mpirun's variables do not say:
 * a world of one node is this node; of more, the node list is left unknown (no MASTER_ADDR or
 * DTRAIN_NODELIST is made up from the job's list, whose first node may be none of the world's). */
static int world_within_job(struct allocation *alloc, struct dt_err *err)
{
    hostlist_free(&alloc->hosts);
    hostlist_init(&alloc->hosts);
    free(alloc->nodelist);
    alloc->nodelist = NULL;
    alloc->nodelist_var = "no list: mpirun's world is some of the job's nodes";
    if (alloc->num_nodes > 1)
        return 0;
    return read_nodelist(alloc, "the host (mpirun's world is this one node of the job)", alloc->hostname, err);
}

/* Open MPI's mpirun: ranks from OMPI_COMM_WORLD_*; nodes from the Slurm job when there is one. */
static int read_mpirun(struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    alloc->source = ALLOC_MPIRUN;
    if (require_int(envp, "OMPI_COMM_WORLD_SIZE", 1, ALLOC_MAX_RANKS, &alloc->world_size, err) < 0 ||
        require_int(envp, "OMPI_COMM_WORLD_RANK", 0, alloc->world_size - 1, &alloc->rank, err) < 0 ||
        require_int(envp, "OMPI_COMM_WORLD_LOCAL_SIZE", 1, alloc->world_size, &alloc->local_size, err) < 0 ||
        require_int(envp, "OMPI_COMM_WORLD_LOCAL_RANK", 0, alloc->local_size - 1, &alloc->local_rank, err) < 0)
        return -1;
    /* mpirun's default mapping fills each node's slots in turn, so with equal counts per node the
     * node index is rank / local size; a different --map-by makes only NODE_RANK approximate. */
    alloc->num_nodes = (alloc->world_size + alloc->local_size - 1) / alloc->local_size;
    alloc->num_nodes_var = "OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_LOCAL_SIZE";
    alloc->node_rank = alloc->rank / alloc->local_size;
    const char *var;
    const char *nodelist = lookup_either(envp, "SLURM_JOB_NODELIST", "SLURM_NODELIST", &var);
    if (nodelist && alloc->in_slurm_job) {
        if (read_nodelist(alloc, var, nodelist, err) < 0)
            return -1;
        /* an mpirun on some of the job's nodes (-np 2 on its second node of two) is a world of
         * fewer nodes, in which the job's index is no node: the mapping guess stands */
        if ((size_t)alloc->num_nodes < alloc->hosts.count)
            return world_within_job(alloc, err);
        /* the world is the job's nodes: where we really are beats the mapping guess */
        ssize_t mine = hostlist_find(&alloc->hosts, alloc->hostname);
        if (mine >= 0 && mine < alloc->num_nodes)
            alloc->node_rank = (int)mine;
    }
    return 0;
}

/* Variables another launcher (torchrun, a wrapper script) already set. */
static int read_torch(struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    alloc->source = ALLOC_TORCH;
    if (require_int(envp, "WORLD_SIZE", 1, ALLOC_MAX_RANKS, &alloc->world_size, err) < 0 ||
        require_int(envp, "RANK", 0, alloc->world_size - 1, &alloc->rank, err) < 0)
        return -1;
    alloc->local_size = alloc->world_size;
    if (read_int(envp, "LOCAL_WORLD_SIZE", 1, alloc->world_size, &alloc->local_size, err) < 0)
        return -1;
    alloc->local_rank = alloc->rank % alloc->local_size;   /* ranks fill each node in turn, as torchrun's */
    if (read_int(envp, "LOCAL_RANK", 0, alloc->local_size - 1, &alloc->local_rank, err) < 0)
        return -1;
    alloc->num_nodes = (alloc->world_size + alloc->local_size - 1) / alloc->local_size;
    alloc->num_nodes_var = "WORLD_SIZE / LOCAL_WORLD_SIZE";
    alloc->node_rank = alloc->rank / alloc->local_size;
    int rc = read_int(envp, "NODE_RANK", 0, alloc->num_nodes - 1, &alloc->node_rank, err);
    if (rc == 0)
        rc = read_int(envp, "GROUP_RANK", 0, alloc->num_nodes - 1, &alloc->node_rank, err);
    return rc < 0 ? -1 : 0;
}

/* No launcher: dtrain itself is the launcher on this one node. */
static int read_local(struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    alloc->source = ALLOC_LOCAL;
    alloc->num_nodes = 1;
    alloc->num_nodes_var = alloc->in_slurm_job ? "no srun step" : "no Slurm allocation";
    alloc->world_size = alloc->local_size = 1;
    const char *var;
    const char *nodelist = lookup_either(envp, "SLURM_JOB_NODELIST", "SLURM_NODELIST", &var);
    if (alloc->in_slurm_job && nodelist)
        return read_nodelist(alloc, var, nodelist, err);   /* for reports; ranks stay on this node */
    return 0;
}

int alloc_from_env(struct allocation *alloc, char *const *envp, struct dt_err *err)
{
    memset(alloc, 0, sizeof *alloc);
    hostlist_init(&alloc->hosts);
    alloc->gpus_on_node = alloc->num_visible_gpus = alloc->cpus_on_node = -1;
    alloc->gpus_var = "no GPU variable";

    const char *var;
    const char *value = lookup_either(envp, "SLURMD_NODENAME", NULL, &var);
    int rc = 0;
    if (value)
        rc = read_node_name(var, value, alloc->hostname, sizeof alloc->hostname, err);
    else if (gethostname(alloc->hostname, sizeof alloc->hostname - 1) < 0)
        snprintf(alloc->hostname, sizeof alloc->hostname, "localhost");
    if (rc == 0 && (value = lookup_either(envp, "SLURM_JOB_ID", "SLURM_JOBID", &var))) {
        alloc->in_slurm_job = true;
        rc = read_id(var, value, alloc->job_id, sizeof alloc->job_id, err);
    }
    if (rc == 0 && (value = lookup_either(envp, "SLURM_JOB_NAME", NULL, &var)) && !(alloc->job_name = strdup(value)))
        rc = dt_fail(err, "out of memory");
    bool in_step = false;
    if (rc == 0 && (value = lookup_either(envp, "SLURM_STEP_ID", "SLURM_STEPID", &var))) {
        in_step = alloc->in_slurm_job;
        rc = read_id(var, value, alloc->step_id, sizeof alloc->step_id, err);
    }
    if (rc < 0) {
        alloc_free(alloc);
        return -1;
    }

    if (env_lookup(envp, "OMPI_COMM_WORLD_SIZE"))
        rc = read_mpirun(alloc, envp, err);
    else if (in_step)
        rc = read_slurm_step(alloc, envp, err);
    else if (env_lookup(envp, "RANK") && env_lookup(envp, "WORLD_SIZE"))
        rc = read_torch(alloc, envp, err);
    else
        rc = read_local(alloc, envp, err);
    if (rc == 0)
        rc = read_node_resources(alloc, envp, err);
    if (rc < 0)
        alloc_free(alloc);
    return rc;
}

void alloc_free(struct allocation *alloc)
{
    free(alloc->nodelist);
    free(alloc->job_name);
    alloc->nodelist = alloc->job_name = NULL;
    hostlist_free(&alloc->hosts);
    free(alloc->tasks_per_node);
    alloc->tasks_per_node = NULL;
}
