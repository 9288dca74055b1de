/* launch.c - check a request against the allocation, compute a rank's exports, exec the program. */
#include "launcher/launch.h"

#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---------- checks ---------- */

static int check_nodes(const struct launch_request *req, const struct allocation *a, bool *announce,
                       struct dt_err *err)
{
    if (req->nodes < 0 || req->nodes == a->num_nodes)
        return 0;
    *announce = a->rank == 0;
    switch (a->source) {
    case ALLOC_LOCAL:
        if (a->in_slurm_job)
            return dt_fail(err, "--nodes %d, but dtrain runs in Slurm job %s outside an srun step, so it "
                           "can start ranks on this node only: launch it with srun --nodes=%d ... dtrain ...",
                           req->nodes, a->job_id, req->nodes);
        return dt_fail(err, "--nodes %d, but there is no Slurm allocation here and local mode runs on this "
                       "node only: use --nodes 1, or run under srun --nodes=%d (sbatch --nodes=%d)",
                       req->nodes, req->nodes, req->nodes);
    case ALLOC_SLURM:
        return dt_fail(err, "--nodes %d, but this step runs on %d nodes (%s, %s=%s): ask Slurm for %d "
                       "with sbatch --nodes=%d or srun --nodes=%d", req->nodes, a->num_nodes, a->num_nodes_var,
                       a->nodelist_var, a->nodelist, req->nodes, req->nodes, req->nodes);
    case ALLOC_MPIRUN:
    case ALLOC_TORCH:
        break;
    }
    return dt_fail(err, "--nodes %d, but the launcher placed ranks on %d nodes (%s = %d / %d): start %d "
                   "ranks per node on %d nodes (mpirun --map-by ppr:%d:node)", req->nodes, a->num_nodes,
                   a->num_nodes_var, a->world_size, a->local_size, a->local_size, req->nodes, a->local_size);
}

static int check_tasks_per_node(const struct launch_request *req, const struct allocation *a, bool *announce,
                                struct dt_err *err)
{
    int gpus = req->gpus_per_node;
    if (gpus <= 0 || a->source == ALLOC_LOCAL || req->gpus_auto)   /* auto: each node checked its own */
        return 0;
    if (a->source == ALLOC_SLURM) {
        for (int node = 0; node < a->num_nodes; node++) {
            if (a->tasks_per_node[node] == gpus)
                continue;
            *announce = a->rank == 0;
            return dt_fail(err, "--gpus-per-node %d starts one task per GPU, but this step runs %d tasks on %s "
                           "(%s=%s): use srun --ntasks-per-node=%d (or sbatch --ntasks-per-node=%d), or "
                           "--gpus-per-node auto where nodes run different numbers of GPUs", gpus,
                           a->tasks_per_node[node], hostlist_nth(&a->hosts, (size_t)node),
                           a->tasks_per_node_var, a->tasks_per_node_text, gpus, gpus);
        }
        return 0;
    }
    if (a->local_size == gpus)
        return 0;
    *announce = a->local_rank == 0;
    return dt_fail(err, "--gpus-per-node %d starts one rank per GPU, but the launcher put %d ranks on %s: "
                   "start %d per node (mpirun --map-by ppr:%d:node)", gpus, a->local_size, a->hostname, gpus, gpus);
}

static int check_gpus(const struct launch_request *req, const struct allocation *a, bool *announce,
                      struct dt_err *err)
{
    int gpus = req->gpus_per_node;
    if (gpus <= 0)
        return 0;
    if (req->ranks > 0 && a->source == ALLOC_LOCAL && req->ranks != gpus) {
        *announce = true;
        return dt_fail(err, "--ranks %d and --gpus-per-node %d disagree: local mode starts one rank per GPU",
                       req->ranks, gpus);
    }
    *announce = a->local_rank == 0;
    if (a->gpus_on_node < 0) {
        if (!a->in_slurm_job)
            return 0;   /* nothing says how many this node has; binding reads the hardware */
        return dt_fail(err, "--gpus-per-node %d, but Slurm gave %s no GPUs (none of SLURM_GPUS_ON_NODE, "
                       "SLURM_STEP_GPUS, SLURM_JOB_GPUS, CUDA_VISIBLE_DEVICES is set): ask for them with "
                       "sbatch --gpus-per-node=%d (or --gres=gpu:%d)", gpus, a->hostname, gpus, gpus);
    }
    if (gpus <= a->gpus_on_node)
        return 0;
    if (!a->in_slurm_job)
        return dt_fail(err, "--gpus-per-node %d, but %s lists only %d GPUs on %s", gpus, a->gpus_var,
                       a->gpus_on_node, a->hostname);
    return dt_fail(err, "--gpus-per-node %d, but Slurm gave %s %d GPUs (%s): ask for %d with "
                   "sbatch --gpus-per-node=%d (or --gres=gpu:%d)", gpus, a->hostname, a->gpus_on_node,
                   a->gpus_var, gpus, gpus, gpus);
}

int launch_resolve_auto(struct launch_request *req, const struct allocation *a, int topology_gpus, bool *announce,
                        struct dt_err *err)
{
    if (!req->gpus_auto)
        return 0;
    *announce = a->local_rank == 0;
    int gpus = a->gpus_on_node >= 0 ? a->gpus_on_node : a->source == ALLOC_LOCAL ? topology_gpus : 0;
    req->gpus_per_node = gpus > 0 ? gpus : 0;
    if (gpus <= 0 || a->source == ALLOC_LOCAL || a->source == ALLOC_TORCH || a->local_size == gpus)
        return 0;
    if (a->source == ALLOC_MPIRUN)
        return dt_fail(err, "--gpus-per-node auto starts one rank per GPU, but the launcher put %d ranks on %s, "
                       "which was given %d GPUs (%s): start %d there (mpirun -H %s:%d,...)", a->local_size,
                       a->hostname, gpus, a->gpus_var, gpus, a->hostname, gpus);
    return dt_fail(err, "--gpus-per-node auto starts one task per GPU, but this step runs %d tasks on %s (%s=%s) "
                   "and Slurm gave it %d GPUs (%s): ask for one task per GPU on every node (srun "
                   "--gpus-per-task=1 with -n the total, or a heterogeneous job with each node's count)",
                   a->local_size, a->hostname, a->tasks_per_node_var, a->tasks_per_node_text, gpus, a->gpus_var);
}

int launch_unused_gpus(const struct launch_request *req, const struct allocation *a)
{
    bool asked = req->gpus_per_node >= 0 || req->gpus_auto;
    if (asked || a->local_rank != 0 || !a->in_slurm_job || a->gpus_on_node <= 0)
        return 0;
    return a->gpus_on_node;
}

int launch_check(const struct launch_request *req, const struct allocation *alloc, bool *announce,
                 struct dt_err *err)
{
    *announce = true;
    if (req->ranks > 0 && alloc->source != ALLOC_LOCAL)
        return dt_fail(err, "--ranks %d is for local mode; under %s the launcher starts the ranks (%d here)",
                       req->ranks, alloc_source_name(alloc->source), alloc->world_size);
    if (check_nodes(req, alloc, announce, err) < 0 || check_gpus(req, alloc, announce, err) < 0 ||
        check_tasks_per_node(req, alloc, announce, err) < 0)
        return -1;
    return 0;
}

int launch_local_ranks(const struct launch_request *req)
{
    if (req->gpus_per_node > 0)
        return req->gpus_per_node;
    return req->ranks > 0 ? req->ranks : 1;
}

/* ---------- exports ---------- */

struct rank_place launch_place_of(const struct allocation *a)
{
    return (struct rank_place){
        .rank = a->rank, .world_size = a->world_size, .local_rank = a->local_rank,
        .local_size = a->local_size, .node_rank = a->node_rank, .num_nodes = a->num_nodes,
    };
}

static void add_export(struct rank_exports *out, char *const *envp, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_export(struct rank_exports *out, char *const *envp, const char *name, const char *fmt, ...)
{
    struct export_var *var = &out->vars[out->count++];
    var->name = name;
    var->user_value = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&var->value, fmt, ap) < 0)
        var->value = NULL;
    va_end(ap);
    if (!var->value || strlen(name) + 1 + strlen(var->value) >= LAUNCH_MAX_ENV_STRING) {
        out->unfit = out->unfit ? out->unfit : name;
        if (!var->value)
            return;
    }
    const char *current = env_lookup(envp, name);
    var->user_value = current && strcmp(current, var->value) != 0 ? current : NULL;
}

int launch_exports_check(const struct rank_exports *exports, struct dt_err *err)
{
    if (!exports->unfit)
        return 0;
    for (int i = 0; i < exports->count; i++) {
        const struct export_var *var = &exports->vars[i];
        if (var->name == exports->unfit && var->value)
            return dt_fail(err, "%s would be %zu bytes, more than one environment variable may hold (%d): it is "
                           "not cut, so nothing is started", var->name, strlen(var->value), LAUNCH_MAX_ENV_STRING - 1);
    }
    return dt_fail(err, "out of memory making %s", exports->unfit);
}

const struct export_var *launch_export_find(const struct rank_exports *exports, const char *name)
{
    for (int i = 0; i < exports->count; i++)
        if (strcmp(exports->vars[i].name, name) == 0)
            return &exports->vars[i];
    return NULL;
}

const char *launch_export_value(const struct rank_exports *exports, const char *name)
{
    const struct export_var *var = launch_export_find(exports, name);
    return !var ? NULL : var->user_value ? var->user_value : var->value;
}

void launch_exports_free(struct rank_exports *exports)
{
    for (int i = 0; i < exports->count; i++)
        free(exports->vars[i].value);
    exports->count = 0;
    exports->unfit = NULL;
}

/* A port every rank of the job computes alike; 0 when nothing identifies the job. */
static int shared_port(const struct allocation *a, char *const *envp, int local_port)
{
    if (a->source == ALLOC_LOCAL)
        return local_port;
    unsigned long id = 0;
    if (a->in_slurm_job) {
        /* steps of one job run at once on a node (srun ... & srun ...): each step its own port,
         * and a job's next 61 steps clear of the next job's first */
        id = strtoul(a->job_id, NULL, 10) * LAUNCH_PORT_JOB_STRIDE + strtoul(a->step_id, NULL, 10);
    } else {
        /* mpirun outside Slurm: its job id is in every rank's environment. */
        const char *job = env_lookup(envp, "OMPI_MCA_ess_base_jobid");
        if (!job)
            return 0;
        for (const char *c = job; *c; c++)
            id = id * 31 + (unsigned char)*c;
    }
    return LAUNCH_PORT_BASE + (int)(id % LAUNCH_PORT_SPAN);
}

int launch_port_free(int port, const char *host, struct dt_err *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0)
        return 0;   /* nothing to ask: the program finds out itself */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_ANY)};
    int taken = bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno == EADDRINUSE;
    close(fd);
    if (!taken)
        return 0;
    return dt_fail(err, "MASTER_PORT %d is taken on %s (another job or step of this job listens on it): rank 0 "
                   "could not rendezvous there; set MASTER_PORT to a free port for this step", port, host);
}

int launch_watch_port(const struct allocation *a, char *const *envp)
{
    int port = shared_port(a, envp, 0);
    if (port <= 0)
        return 0;
    return LAUNCH_PORT_BASE + (port - LAUNCH_PORT_BASE + LAUNCH_PORT_SPAN / 2) % LAUNCH_PORT_SPAN;
}

const char *launch_master_addr(const struct allocation *a, const struct rank_place *place)
{
    if (a->source == ALLOC_LOCAL || place->num_nodes == 1)
        return a->source == ALLOC_LOCAL ? "127.0.0.1" : a->hostname;
    if (a->hosts.count > 0)
        return hostlist_nth(&a->hosts, 0);   /* Slurm puts task 0 on the first node of the step */
    return NULL;
}

void launch_exports(const struct launch_request *req, const struct allocation *a,
                    const struct rank_place *place, int local_port, char *const *envp,
                    struct rank_exports *out)
{
    out->count = 0;
    out->unfit = NULL;
    add_export(out, envp, "RANK", "%d", place->rank);
    add_export(out, envp, "WORLD_SIZE", "%d", place->world_size);
    add_export(out, envp, "LOCAL_RANK", "%d", place->local_rank);
    add_export(out, envp, "LOCAL_WORLD_SIZE", "%d", place->local_size);
    add_export(out, envp, "NODE_RANK", "%d", place->node_rank);
    const char *addr = launch_master_addr(a, place);
    if (addr)
        add_export(out, envp, "MASTER_ADDR", "%s", addr);
    int port = shared_port(a, envp, local_port);
    if (port > 0)
        add_export(out, envp, "MASTER_PORT", "%d", port);
    add_export(out, envp, "DTRAIN_LAUNCHER", "%s", alloc_source_name(a->source));
    add_export(out, envp, "DTRAIN_NODES", "%d", place->num_nodes);
    if (a->hosts.count > 0 && a->source != ALLOC_LOCAL)
        add_export(out, envp, "DTRAIN_NODELIST", "%s", a->nodelist);
    if (a->in_slurm_job) {
        add_export(out, envp, "DTRAIN_JOB_ID", "%s", a->job_id);
        if (a->job_name && a->job_name[0])
            add_export(out, envp, "DTRAIN_JOB_NAME", "%s", a->job_name);
        if (a->step_id[0])
            add_export(out, envp, "DTRAIN_STEP_ID", "%s", a->step_id);
    }
    add_export(out, envp, "DTRAIN_GPUS_PER_NODE", "%d", req->gpus_per_node > 0 ? req->gpus_per_node : 0);
}

/* Like add, but the value replaces whatever the environment had (marked not kept). */
static void add_forced(struct rank_exports *out, const char *name, const char *value)
{
    add_export(out, NULL, name, "%s", value);
}

/* Does this network namespace have the interface, with an IPv4 address? Only then may MPI and
 * NCCL be pointed at it: a name from hwloc's sysfs view can be absent inside a container. */
static bool has_ipv4(const char *ifname)
{
    struct ifaddrs *list;
    if (getifaddrs(&list) < 0)
        return false;
    bool found = false;
    for (struct ifaddrs *ifa = list; ifa && !found; ifa = ifa->ifa_next)
        found = ifa->ifa_addr && ifa->ifa_addr->sa_family == AF_INET && strcmp(ifa->ifa_name, ifname) == 0;
    freeifaddrs(list);
    return found;
}

void launch_export_binding(const struct launch_request *req, const struct allocation *a,
                           const struct rank_bind *bind, char *const *envp, struct rank_exports *out)
{
    const struct rank_binding *b = bind->binding;
    const struct topo *topo = bind->topo;
    if (b->gpu >= 0) {
        add_export(out, envp, "CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        if (req->isolate) {
            char visible[64];
            if (a->num_visible_gpus > b->visible_index)
                snprintf(visible, sizeof visible, "%s", a->visible_gpus[a->num_visible_gpus == 1 ? 0 : b->visible_index]);
            else
                snprintf(visible, sizeof visible, "%d", b->gpu);
            add_forced(out, "CUDA_VISIBLE_DEVICES", visible);
            add_export(out, envp, "DTRAIN_GPU", "0");
        } else {
            /* Its index among the GPUs CUDA sees; with --gpus-per-task Slurm shows each task one. */
            add_export(out, envp, "DTRAIN_GPU", "%d", a->num_visible_gpus == 1 ? 0 : b->visible_index);
        }
        add_export(out, envp, "DTRAIN_GPU_BUSID", "%s", topo->gpus[b->gpu].busid);
    }
    if (bind->plan->ib_hcas[0])
        add_export(out, envp, "NCCL_IB_HCA", "%s", bind->plan->ib_hcas);
    if (b->nic >= 0) {
        const struct topo_nic *nic = &topo->nics[b->nic];
        char device[64];
        plan_nic_device(topo, b->nic, device, sizeof device);
        add_export(out, envp, "DTRAIN_NIC", "%s", device);
        if (nic->rdma_device[0])
            add_export(out, envp, "UCX_NET_DEVICES", "%s", device);
        if (nic->netdev[0] && has_ipv4(nic->netdev)) {
            add_export(out, envp, "NCCL_SOCKET_IFNAME", "%s", nic->netdev);
            add_export(out, envp, "OMPI_MCA_btl_tcp_if_include", "%s", nic->netdev);
        }
    }
    if (bind->plan->bind) {
        char list[1024];
        hwloc_bitmap_list_snprintf(list, sizeof list, b->cpuset);
        add_export(out, envp, "DTRAIN_CPUS", "%s", list);
        if (!hwloc_bitmap_iszero(b->nodeset)) {
            hwloc_bitmap_list_snprintf(list, sizeof list, b->nodeset);
            add_export(out, envp, "DTRAIN_NUMA", "%s", list);
        }
    }
}

void launch_report_binding(const struct allocation *a, const struct rank_place *place, const struct rank_bind *bind)
{
    const struct rank_binding *b = bind->binding;
    char nic[64] = "-", cpus[512] = "(not bound)", numa[128] = "-", gpu[64] = "-";
    if (b->nic >= 0)
        plan_nic_device(bind->topo, b->nic, nic, sizeof nic);
    if (bind->plan->bind)
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, b->cpuset);
    if (!hwloc_bitmap_iszero(b->nodeset))
        hwloc_bitmap_list_snprintf(numa, sizeof numa, b->nodeset);
    if (b->gpu >= 0)
        snprintf(gpu, sizeof gpu, "%d %s", b->gpu, bind->topo->gpus[b->gpu].busid);
    fprintf(stderr, "dtrain: %s rank %d local %d: gpu %s nic %s numa %s cpus %s\n", a->hostname, place->rank,
            place->local_rank, gpu, nic, numa, cpus);
}

int launch_apply(const struct rank_exports *exports, struct dt_err *err)
{
    if (launch_exports_check(exports, err) < 0)
        return -1;
    for (int i = 0; i < exports->count; i++) {
        const struct export_var *var = &exports->vars[i];
        if (!var->user_value && setenv(var->name, var->value, 1) < 0)
            return dt_fail(err, "cannot set %s: %s", var->name, strerror(errno));
    }
    return 0;
}

/* Prints text so that a POSIX shell reads it back unchanged. */
static void print_quoted(FILE *out, const char *text)
{
    if (*text && strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == strlen(text)) {
        fputs(text, out);
        return;
    }
    fputc('\'', out);
    for (; *text; text++) {
        if (*text == '\'')
            fputs("'\\''", out);
        else
            fputc(*text, out);
    }
    fputc('\'', out);
}

/* Prints text inside a shell comment: printable characters as they are, others as \xHH, so a
 * newline in a value cannot end the comment. */
static void print_in_comment(FILE *out, const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
        if (*c >= 0x20 && *c < 0x7f)
            fputc(*c, out);
        else
            fprintf(out, "\\x%02x", *c);
    }
}

void launch_print(FILE *out, const struct allocation *a, const struct rank_place *place,
                  const struct rank_exports *exports, char *const *argv)
{
    fprintf(out, "# rank %d of %d: node %d of %d (", place->rank, place->world_size, place->node_rank,
            place->num_nodes);
    print_in_comment(out, a->hostname);
    fprintf(out, "), local rank %d of %d; launcher %s", place->local_rank, place->local_size,
            alloc_source_name(a->source));
    if (a->in_slurm_job) {
        fputs(", job ", out);
        print_in_comment(out, a->job_id);
        if (a->step_id[0]) {
            fputs(" step ", out);
            print_in_comment(out, a->step_id);
        }
    }
    fputc('\n', out);
    for (int i = 0; i < exports->count; i++) {
        const struct export_var *var = &exports->vars[i];
        fprintf(out, "export %s=", var->name);
        print_quoted(out, var->user_value ? var->user_value : var->value);
        if (var->user_value) {
            fputs("  # kept: already set (dtrain would set ", out);
            print_in_comment(out, var->value);
            fputc(')', out);
        }
        fputc('\n', out);
    }
    if (!argv)
        return;
    fputs("exec", out);
    for (; *argv; argv++) {
        fputc(' ', out);
        print_quoted(out, *argv);
    }
    fputc('\n', out);
}

static bool is_identity(const char *name)
{
    static const char *const identity[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK"};
    for (size_t i = 0; i < sizeof identity / sizeof identity[0]; i++)
        if (strcmp(name, identity[i]) == 0)
            return true;
    return false;
}

void launch_report_kept(const struct rank_exports *exports, int rank, bool verbose)
{
    for (int i = 0; i < exports->count; i++) {
        const struct export_var *var = &exports->vars[i];
        if (var->user_value && (verbose || is_identity(var->name)))
            fprintf(stderr, "dtrain: rank %d: keeping %s=%s that was already set (dtrain would set %s)\n",
                    rank, var->name, var->user_value, var->value);
    }
}

int launch_exec(char *const *argv, struct dt_err *err)
{
    execvp(argv[0], argv);
    int status = errno == ENOENT || errno == ENOTDIR ? 127 : 126;
    if (errno == ENOENT && !strchr(argv[0], '/'))
        dt_fail(err, "%s: command not found (not in PATH)", argv[0]);
    else
        dt_fail(err, "%s: %s", argv[0], strerror(errno));
    return status;
}
