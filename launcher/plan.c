/* plan.c - build, apply and print a node's binding plan (see plan.h). */
#include "launcher/plan.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Piece `piece` of `parts` even, disjoint pieces of `set`, in whole cores when there are enough
 * cores (SMT siblings stay together), else in PUs; with fewer PUs than parts, one PU each. */
static hwloc_bitmap_t split_cpus(hwloc_topology_t hw, hwloc_const_cpuset_t set, int parts, int piece)
{
    hwloc_bitmap_t out = hwloc_bitmap_alloc();
    hwloc_obj_type_t units[] = {HWLOC_OBJ_CORE, HWLOC_OBJ_PU};
    for (int u = 0; u < 2; u++) {
        int count = hwloc_get_nbobjs_inside_cpuset_by_type(hw, set, units[u]);
        if (count < parts)
            continue;
        for (int i = piece * count / parts; i < (piece + 1) * count / parts; i++) {
            hwloc_obj_t obj = hwloc_get_obj_inside_cpuset_by_type(hw, set, units[u], (unsigned)i);
            hwloc_bitmap_or(out, out, obj->cpuset);
        }
        hwloc_bitmap_and(out, out, set);
        return out;
    }
    /* More ranks than PUs: one PU each, round-robin, so they share as little as they can. */
    int pus = hwloc_get_nbobjs_inside_cpuset_by_type(hw, set, HWLOC_OBJ_PU);
    if (pus > 0)
        hwloc_bitmap_copy(out, hwloc_get_obj_inside_cpuset_by_type(hw, set, HWLOC_OBJ_PU, (unsigned)(piece % pus))->cpuset);
    else
        hwloc_bitmap_copy(out, set);
    return out;
}

void plan_nic_device(const struct topo *topo, int nic, char *buf, size_t size)
{
    buf[0] = '\0';
    if (nic < 0)
        return;
    const struct topo_nic *n = &topo->nics[nic];
    if (n->rdma_device[0] && n->port)
        snprintf(buf, size, "%s:%d", n->rdma_device, n->port);
    else
        snprintf(buf, size, "%s", n->rdma_device[0] ? n->rdma_device : n->netdev);
}

/* The NIC named by --nic: an RDMA device, a netdev or a bus id. */
static int find_nic(const struct topo *topo, const char *name)
{
    for (int n = 0; n < topo->num_nics; n++) {
        const struct topo_nic *nic = &topo->nics[n];
        if (strcmp(nic->rdma_device, name) == 0 || strcmp(nic->netdev, name) == 0 || strcmp(nic->busid, name) == 0)
            return n;
    }
    return -1;
}

/* The step's GPUs as indices into topo->gpus, checked against the node. */
static int resolve_gpus(const struct topo *topo, const struct plan_request *req, int *gpus, struct dt_err *err)
{
    int wanted = req->gpus_per_node;
    if (wanted > topo->num_gpus) {   /* name the node, not where its topology was read from */
        char host[256] = "?", where[sizeof topo->source + 16];
        if (strcmp(topo->source, "this machine") == 0) {
            if (gethostname(host, sizeof host) == 0)
                host[sizeof host - 1] = '\0';
            snprintf(where, sizeof where, "this node (%s)", host);
        } else {
            snprintf(where, sizeof where, "%s", topo->source);
        }
        return dt_fail(err, "--gpus-per-node %d, but %s has %d GPU%s: run where there are GPUs (sbatch --gres=gpu:%d, "
                       "or a GPU partition), or ask for CPU ranks with --gpus-per-node 0", wanted, where, topo->num_gpus,
                       topo->num_gpus == 1 ? "" : "s", wanted);
    }
    if (req->step_gpus && req->num_step_gpus < wanted)
        return dt_fail(err, "--gpus-per-node %d, but the step was given only %d GPUs on this node", wanted,
                       req->num_step_gpus);
    for (int i = 0; i < wanted; i++) {
        int index = req->step_gpus ? req->step_gpus[i] : i;
        if (index < 0 || index >= topo->num_gpus)
            return dt_fail(err, "Slurm gave this step GPU %d, but %s has only GPUs 0-%d", index, topo->source,
                           topo->num_gpus - 1);
        gpus[i] = index;
    }
    return 0;
}

/* Chooses each GPU rank's NIC: the least used of its nearest ones. */
static void choose_nics(const struct topo *topo, struct plan *plan)
{
    int uses[TOPO_MAX_NICS] = {0};
    for (int r = 0; r < plan->num_ranks; r++) {
        struct rank_binding *b = &plan->ranks[r];
        if (b->gpu < 0)
            continue;
        const struct topo_gpu *gpu = &topo->gpus[b->gpu];
        for (int i = 0; i < gpu->num_nearest; i++) {
            int n = gpu->nearest[i];
            if (b->nic < 0 || uses[n] < uses[b->nic])
                b->nic = n;
        }
        if (b->nic >= 0)
            uses[b->nic]++;
    }
}

/* Splits the cpus of each rank's locality object among the ranks that share it, inside the cpus
 * dtrain was allowed (a rank whose locality has none of them gets its share of those). */
static void split_localities(const struct topo *topo, struct plan *plan, hwloc_obj_t *where,
                             hwloc_const_cpuset_t allowed)
{
    for (int r = 0; r < plan->num_ranks; r++) {
        int sharing = 0, mine = 0;
        for (int other = 0; other < plan->num_ranks; other++) {
            if (where[other] != where[r])
                continue;
            if (other < r)
                mine++;
            sharing++;
        }
        struct rank_binding *b = &plan->ranks[r];
        hwloc_bitmap_free(b->cpuset);
        b->cpuset = split_cpus(topo->hw, where[r]->cpuset, sharing, mine);
        if (allowed && b->cpuset) {
            hwloc_bitmap_and(b->cpuset, b->cpuset, allowed);
            if (hwloc_bitmap_iszero(b->cpuset)) {
                hwloc_bitmap_free(b->cpuset);
                b->cpuset = split_cpus(topo->hw, allowed, plan->num_ranks, r);
            }
        }
        /* PUs of a die without memory have an empty nodeset: then memory is not bound. */
        hwloc_bitmap_copy(b->nodeset, where[r]->nodeset);
    }
}

/* The NUMA nodes that have cpus, in os order, for spreading CPU ranks. */
static int cpu_numa_nodes(const struct topo *topo, hwloc_obj_t *nodes, int max)
{
    int count = 0;
    for (hwloc_obj_t numa = NULL; (numa = hwloc_get_next_obj_by_type(topo->hw, HWLOC_OBJ_NUMANODE, numa)) && count < max;)
        if (!hwloc_bitmap_iszero(numa->cpuset))
            nodes[count++] = numa;
    return count;
}

static void list_hcas(const struct topo *topo, struct plan *plan)
{
    plan->ib_hcas[0] = '\0';
    for (int n = 0; n < topo->num_nics; n++) {
        if (!topo->nics[n].rdma_device[0])
            continue;
        char device[64];
        plan_nic_device(topo, n, device, sizeof device);
        size_t used = strlen(plan->ib_hcas);
        snprintf(plan->ib_hcas + used, sizeof plan->ib_hcas - used, "%s%s", used ? "," : "", device);
    }
}

int plan_build(const struct topo *topo, const struct plan_request *req, struct plan *plan, struct dt_err *err)
{
    memset(plan, 0, sizeof *plan);
    int gpus[TOPO_MAX_GPUS];
    if (req->gpus_per_node > 0 && resolve_gpus(topo, req, gpus, err) < 0)
        return -1;
    int forced_nic = -1;
    if (req->nic && strcmp(req->nic, "none") != 0 && (forced_nic = find_nic(topo, req->nic)) < 0)
        return dt_fail(err, "--nic %s: no such network device in %s (try dtrain-topo)", req->nic, topo->source);
    hwloc_obj_t numa[TOPO_MAX_GPUS * 4];
    int num_numa = cpu_numa_nodes(topo, numa, (int)(sizeof numa / sizeof numa[0]));
    plan->num_ranks = req->ranks;
    plan->bind = !req->no_bind;
    plan->ranks = calloc((size_t)req->ranks, sizeof *plan->ranks);
    hwloc_obj_t *where = calloc((size_t)req->ranks, sizeof *where);
    if (!plan->ranks || !where) {
        free(where);
        plan_free(plan);
        return dt_fail(err, "out of memory");
    }
    for (int r = 0; r < req->ranks; r++) {
        struct rank_binding *b = &plan->ranks[r];
        *b = (struct rank_binding){.local_rank = r, .gpu = -1, .visible_index = -1, .nic = -1,
                                   .cpuset = hwloc_bitmap_alloc(), .nodeset = hwloc_bitmap_alloc()};
        if (req->gpus_per_node > 0) {
            b->visible_index = r % req->gpus_per_node;
            b->gpu = gpus[b->visible_index];
            where[r] = topo->gpus[b->gpu].ancestor;
        } else {
            where[r] = num_numa > 0 ? numa[(long)r * num_numa / req->ranks] : hwloc_get_root_obj(topo->hw);
        }
    }
    choose_nics(topo, plan);
    for (int r = 0; r < req->ranks; r++)
        if (forced_nic >= 0 || (req->nic && strcmp(req->nic, "none") == 0))
            plan->ranks[r].nic = forced_nic;
    if (plan->bind)
        split_localities(topo, plan, where, req->allowed);
    free(where);
    list_hcas(topo, plan);
    return 0;
}

void plan_free(struct plan *plan)
{
    for (int r = 0; plan->ranks && r < plan->num_ranks; r++) {
        hwloc_bitmap_free(plan->ranks[r].cpuset);
        hwloc_bitmap_free(plan->ranks[r].nodeset);
    }
    free(plan->ranks);
    plan->ranks = NULL;
}

int plan_apply(const struct topo *topo, const struct rank_binding *b, struct dt_err *err)
{
    if (!hwloc_bitmap_iszero(b->cpuset) && hwloc_set_cpubind(topo->hw, b->cpuset, HWLOC_CPUBIND_PROCESS) < 0) {
        char cpus[512];
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, b->cpuset);
        return dt_fail(err, "cannot bind local rank %d to cpus %s: %s", b->local_rank, cpus, strerror(errno));
    }
    /* Linux keeps a memory policy per thread (PROCESS would fail with ENOSYS): without the flag
     * hwloc binds the calling, still single-threaded process, and the policy survives exec.
     * STRICT makes it MPOL_BIND, as numactl --membind; hwloc's default is only a preference. */
    if (!hwloc_bitmap_iszero(b->nodeset) &&
        hwloc_set_membind(topo->hw, b->nodeset, HWLOC_MEMBIND_BIND, HWLOC_MEMBIND_BYNODESET | HWLOC_MEMBIND_STRICT) < 0) {
        char nodes[256];
        hwloc_bitmap_list_snprintf(nodes, sizeof nodes, b->nodeset);
        return dt_fail(err, "cannot bind local rank %d's memory to NUMA node(s) %s: %s", b->local_rank, nodes,
                       strerror(errno));
    }
    return 0;
}

void plan_print(FILE *out, const struct topo *topo, const struct plan *plan, const char *host)
{
    fprintf(out, "# binding plan of %s (%s): %d local ranks%s\n", host, topo->source, plan->num_ranks,
            plan->bind ? "" : ", cores and memory not bound (--no-bind)");
    fprintf(out, "%-5s %-4s %-13s %-16s %-12s %-6s %s\n", "rank", "GPU", "GPU bus id", "NIC", "netdev", "NUMA", "cpus");
    for (int r = 0; r < plan->num_ranks; r++) {
        const struct rank_binding *b = &plan->ranks[r];
        char nic[64], cpus[512], nodes[128], gpu[8];
        plan_nic_device(topo, b->nic, nic, sizeof nic);
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, b->cpuset);
        hwloc_bitmap_list_snprintf(nodes, sizeof nodes, b->nodeset);
        snprintf(gpu, sizeof gpu, "%d", b->gpu);
        fprintf(out, "%-5d %-4s %-13s %-16s %-12s %-6s %s\n", r, b->gpu >= 0 ? gpu : "-",
                b->gpu >= 0 ? topo->gpus[b->gpu].busid : "-", nic[0] ? nic : "-",
                b->nic >= 0 && topo->nics[b->nic].netdev[0] ? topo->nics[b->nic].netdev : "-",
                nodes[0] ? nodes : "-", plan->bind ? cpus : "(not bound)");
    }
    fprintf(out, "NCCL_IB_HCA=%s\n", plan->ib_hcas[0] ? plan->ib_hcas : "(no HCA)");
}

void plan_print_json(FILE *out, const struct topo *topo, const struct plan *plan, const char *host)
{
    json_t *ranks = json_array();
    for (int r = 0; r < plan->num_ranks; r++) {
        const struct rank_binding *b = &plan->ranks[r];
        char nic[64], cpus[512], nodes[128];
        plan_nic_device(topo, b->nic, nic, sizeof nic);
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, b->cpuset);
        hwloc_bitmap_list_snprintf(nodes, sizeof nodes, b->nodeset);
        json_array_append_new(ranks, json_pack("{s:i, s:i, s:s, s:i, s:s, s:s, s:s, s:s}", "local_rank", r, "gpu",
            b->gpu, "gpu_busid", b->gpu >= 0 ? topo->gpus[b->gpu].busid : "", "visible_index", b->visible_index,
            "nic", nic, "netdev", b->nic >= 0 ? topo->nics[b->nic].netdev : "", "numa", nodes,
            "cpus", plan->bind ? cpus : ""));
    }
    json_t *doc = json_pack("{s:s, s:s, s:b, s:s, s:o}", "host", host, "topology", topo->source, "bind", plan->bind,
                            "nccl_ib_hca", plan->ib_hcas, "ranks", ranks);
    json_dumpf(doc, out, JSON_INDENT(2));
    fputc('\n', out);
    json_decref(doc);
}
