/* topo.c - load a node's topology with hwloc; find GPUs, NICs and each GPU's nearest NICs. */
#include "topology/topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

/* Parent chains longer than this do not occur (the DGX-2's 5 PLX levels are ~12 deep). */
#define TOPO_MAX_CHAIN 256

const char *topo_tier_name(enum topo_tier tier)
{
    static const char *const names[] = {"switch", "hostbridge", "numa", "overlap", "package", "cross", "none"};
    return names[tier];
}

const char *topo_nic_kind_name(enum topo_nic_kind kind)
{
    static const char *const names[] = {"InfiniBand", "OmniPath", "EFA", "Slingshot", "RDMA-Ethernet",
                                        "Ethernet", "Network"};
    return names[kind];
}

static void format_busid(hwloc_obj_t pci, char *buf, size_t size)
{
    snprintf(buf, size, "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain, pci->attr->pcidev.bus,
             pci->attr->pcidev.dev, pci->attr->pcidev.func);
}

static bool is_gpu(hwloc_obj_t pci)
{
    unsigned vendor = pci->attr->pcidev.vendor_id, cls = pci->attr->pcidev.class_id;
    if (vendor != 0x10de && vendor != 0x1002)
        return false;
    if (vendor == 0x1002 && pci->attr->pcidev.device_id == 0x515e)
        return false;   /* ATI ES1000: the BMC's VGA chip on many servers */
    if (pci->subtype && strcmp(pci->subtype, "NVSwitch") == 0)
        return false;
    return cls == 0x0300 || cls == 0x0302 || cls == 0x0380 || cls == 0x1200;
}

/* The RDMA port to use: the first active one (state 4), else the first listed. */
static int rdma_port(hwloc_obj_t osdev)
{
    int first = 0;
    for (unsigned i = 0; i < osdev->infos_count; i++) {
        int port;
        char rest[16];
        if (sscanf(osdev->infos[i].name, "Port%dState%15s", &port, rest) != 1 || port <= 0)
            continue;
        if (strcmp(osdev->infos[i].value, "4") == 0)
            return port;
        if (!first || port < first)
            first = port;
    }
    return first;
}

/* Reads a PCI device's OS devices into nic; returns whether it has any network-ish one. */
static bool read_nic_osdevs(hwloc_obj_t pci, struct topo_nic *nic)
{
    bool found = false;
    for (hwloc_obj_t child = pci->io_first_child; child; child = child->next_sibling) {
        if (child->type != HWLOC_OBJ_OS_DEVICE || !child->name)
            continue;
        if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS && !nic->rdma_device[0]) {
            snprintf(nic->rdma_device, sizeof nic->rdma_device, "%s", child->name);
            nic->port = rdma_port(child);
            found = true;
        } else if (child->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK && !nic->netdev[0]) {
            snprintf(nic->netdev, sizeof nic->netdev, "%s", child->name);
            found = true;
        }
    }
    return found;
}

static enum topo_nic_kind nic_kind(const struct topo_nic *nic, hwloc_obj_t pci)
{
    if (nic->pci_class == 0x0207 || nic->pci_class == 0x0c06)
        return TOPO_NIC_INFINIBAND;
    if (nic->pci_class == 0x0208)
        return TOPO_NIC_OMNIPATH;
    if (nic->vendor == 0x17db || (pci->subtype && strcmp(pci->subtype, "Slingshot") == 0))
        return TOPO_NIC_SLINGSHOT;
    if (nic->vendor == 0x1d0f && nic->rdma_device[0])
        return TOPO_NIC_EFA;
    if (nic->rdma_device[0])
        return TOPO_NIC_RDMA_ETHERNET;
    return nic->pci_class == 0x0200 ? TOPO_NIC_ETHERNET : TOPO_NIC_OTHER;
}

static int by_busid(const void *a, const void *b, size_t offset)
{
    return strcmp((const char *)a + offset, (const char *)b + offset);
}
static int gpu_by_busid(const void *a, const void *b) { return by_busid(a, b, offsetof(struct topo_gpu, busid)); }
static int nic_by_busid(const void *a, const void *b) { return by_busid(a, b, offsetof(struct topo_nic, busid)); }

static int discover_topology(struct topo *topo, struct dt_err *err)
{
    for (hwloc_obj_t pci = NULL; (pci = hwloc_get_next_pcidev(topo->hw, pci));) {
        if (is_gpu(pci)) {
            if (topo->num_gpus == TOPO_MAX_GPUS)
                return dt_fail(err, "%s: more than %d GPUs", topo->source, TOPO_MAX_GPUS);
            struct topo_gpu *gpu = &topo->gpus[topo->num_gpus++];
            gpu->pci = pci;
            gpu->vendor = pci->attr->pcidev.vendor_id;
            gpu->device = pci->attr->pcidev.device_id;
            gpu->pci_class = pci->attr->pcidev.class_id;
            format_busid(pci, gpu->busid, sizeof gpu->busid);
            gpu->ancestor = hwloc_get_non_io_ancestor_obj(topo->hw, pci);
            for (hwloc_obj_t os = pci->io_first_child; os; os = os->next_sibling)
                if (os->type == HWLOC_OBJ_OS_DEVICE && os->name)
                    snprintf(gpu->osdevs + strlen(gpu->osdevs), sizeof gpu->osdevs - strlen(gpu->osdevs),
                             "%s%s", gpu->osdevs[0] ? "," : "", os->name);
            continue;
        }
        struct topo_nic nic = {.pci = pci, .vendor = pci->attr->pcidev.vendor_id,
                               .device = pci->attr->pcidev.device_id, .pci_class = pci->attr->pcidev.class_id};
        bool has_osdev = read_nic_osdevs(pci, &nic);
        if ((nic.pci_class >> 8) != 0x02 && nic.pci_class != 0x0c06 && !has_osdev)
            continue;
        if (topo->num_nics == TOPO_MAX_NICS)
            return dt_fail(err, "%s: more than %d network devices", topo->source, TOPO_MAX_NICS);
        format_busid(pci, nic.busid, sizeof nic.busid);
        nic.kind = nic_kind(&nic, pci);
        nic.rdma = nic.rdma_device[0] || nic.kind == TOPO_NIC_INFINIBAND || nic.kind == TOPO_NIC_OMNIPATH ||
                   nic.kind == TOPO_NIC_SLINGSHOT;
        nic.ancestor = hwloc_get_non_io_ancestor_obj(topo->hw, pci);
        topo->nics[topo->num_nics++] = nic;
    }
    /* hwloc lists devices in tree order; CUDA (PCI_BUS_ID) and users count by bus id. */
    qsort(topo->gpus, (size_t)topo->num_gpus, sizeof topo->gpus[0], gpu_by_busid);
    qsort(topo->nics, (size_t)topo->num_nics, sizeof topo->nics[0], nic_by_busid);
    return 0;
}

int topo_package_of(const struct topo *topo, hwloc_obj_t ancestor)
{
    if (ancestor->type == HWLOC_OBJ_PACKAGE)
        return (int)ancestor->logical_index;
    hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topo->hw, HWLOC_OBJ_PACKAGE, ancestor);
    if (package)
        return (int)package->logical_index;
    /* Above the packages (a Machine): it belongs to one only if its cpus fit in one. */
    hwloc_obj_t cover = hwloc_get_obj_covering_cpuset(topo->hw, ancestor->cpuset);
    while (cover && cover->type != HWLOC_OBJ_PACKAGE)
        cover = cover->parent;
    return cover && hwloc_bitmap_isincluded(ancestor->cpuset, cover->cpuset) ? (int)cover->logical_index : -1;
}

void topo_numa_list(const struct topo *topo, hwloc_obj_t ancestor, char *buf, size_t size)
{
    buf[0] = '\0';
    size_t used = 0;
    for (hwloc_obj_t numa = NULL; (numa = hwloc_get_next_obj_by_type(topo->hw, HWLOC_OBJ_NUMANODE, numa));) {
        if (numa->subtype && strcmp(numa->subtype, "GPUMemory") == 0)
            continue;   /* a GPU's own memory exposed as a CPU-less node: not where to bind */
        if (!hwloc_bitmap_isset(ancestor->nodeset, numa->os_index))
            continue;
        int n = snprintf(buf + used, size - used, "%s%u", used ? "," : "", numa->os_index);
        if (n < 0 || (size_t)n >= size - used)
            break;
        used += (size_t)n;
    }
}

struct topo_distance topo_distance(const struct topo *topo, hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t chain[TOPO_MAX_CHAIN];
    int len = 0;
    for (hwloc_obj_t x = b; x && len < TOPO_MAX_CHAIN; x = x->parent)
        chain[len++] = x;
    /* Lowest common ancestor by parent chains: hwloc_get_common_ancestor_obj compares depths,
     * which are negative for I/O objects, and may walk past the root. */
    int a_hops = 0, b_hops = -1;
    hwloc_obj_t lca = NULL;
    for (hwloc_obj_t x = a; x && !lca; x = x->parent, a_hops++)
        for (int i = 0; i < len; i++)
            if (chain[i] == x) {
                lca = x;
                b_hops = i;
                break;
            }
    struct topo_distance d = {.tier = TOPO_TIER_CROSS, .bridge_depth = 0, .hops = lca ? a_hops - 1 + b_hops : 1 << 20};
    if (lca && lca->type == HWLOC_OBJ_BRIDGE) {
        d.bridge_depth = (int)lca->attr->bridge.depth;
        d.tier = lca->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST ? TOPO_TIER_HOSTBRIDGE : TOPO_TIER_SWITCH;
        return d;
    }
    hwloc_obj_t ga = hwloc_get_non_io_ancestor_obj(topo->hw, a), na = hwloc_get_non_io_ancestor_obj(topo->hw, b);
    /* Empty nodesets (PUs of a die without memory) say nothing about nearness. */
    bool known = !hwloc_bitmap_iszero(ga->nodeset) && !hwloc_bitmap_iszero(na->nodeset);
    int ga_package = topo_package_of(topo, ga), na_package = topo_package_of(topo, na);
    if (known && hwloc_bitmap_isequal(ga->nodeset, na->nodeset))
        d.tier = TOPO_TIER_NUMA;
    else if (known && (hwloc_bitmap_isincluded(ga->nodeset, na->nodeset) || hwloc_bitmap_isincluded(na->nodeset, ga->nodeset)))
        d.tier = TOPO_TIER_OVERLAP;
    else if (ga_package >= 0 && ga_package == na_package)
        d.tier = TOPO_TIER_PACKAGE;
    return d;
}

/* Is x nearer than y? Tier first; within a tier the deeper bridge, then fewer hops. */
static int compare_distance(struct topo_distance x, struct topo_distance y)
{
    if (x.tier != y.tier)
        return x.tier < y.tier ? -1 : 1;
    if (x.bridge_depth != y.bridge_depth)
        return x.bridge_depth > y.bridge_depth ? -1 : 1;
    return (x.hops > y.hops) - (x.hops < y.hops);
}

static void find_nearest_nics(struct topo *topo)
{
    topo->nearest_over_rdma = false;
    for (int n = 0; n < topo->num_nics; n++)
        topo->nearest_over_rdma |= topo->nics[n].rdma;
    for (int g = 0; g < topo->num_gpus; g++) {
        struct topo_gpu *gpu = &topo->gpus[g];
        struct topo_distance best = {.tier = TOPO_TIER_NONE};
        gpu->num_nearest = 0;
        for (int n = 0; n < topo->num_nics; n++) {
            if (topo->nearest_over_rdma && !topo->nics[n].rdma)
                continue;   /* plain Ethernet only where a node has nothing better */
            struct topo_distance d = topo_distance(topo, gpu->pci, topo->nics[n].pci);
            int cmp = gpu->num_nearest ? compare_distance(d, best) : -1;
            if (cmp < 0) {
                best = d;
                gpu->num_nearest = 0;
            }
            if (cmp <= 0)
                gpu->nearest[gpu->num_nearest++] = n;
        }
        gpu->tier = best.tier;
    }
}

int topo_load(struct topo *topo, const char *xml_path, struct dt_err *err)
{
    return topo_load_ex(topo, xml_path, false, err);
}

/* hwloc's plug-ins from Debian's libhwloc-plugins (which Open MPI pulls in) that dtrain has no
 * use for: PCI devices come from sysfs through hwloc's Linux backend without libpciaccess (which
 * also leaks), GPUs are found as PCI devices, and OpenCL/OpenGL probing is slow. XML is read by
 * hwloc's own minimal parser, which reads every export hwloc writes: its libxml2 reader crashed
 * (NULL) and leaked on damaged files that the minimal one refuses cleanly (fuzz_topo). Only hwloc's own
 * variable controls this, read when its components start (the first hwloc_topology_init), so it
 * is set around that and removed again: the program dtrain execs must not inherit it. A
 * blacklist the user set is left alone. */
#define TOPO_PLUGINS_BLACKLIST "hwloc_pci,hwloc_gl,hwloc_opencl,hwloc_xml_libxml"

static int init_without_plugins(hwloc_topology_t *hw)
{
    bool ours = getenv("HWLOC_PLUGINS_BLACKLIST") == NULL;
    if (ours)
        setenv("HWLOC_PLUGINS_BLACKLIST", TOPO_PLUGINS_BLACKLIST, 1);
    int rc = hwloc_topology_init(hw);
    int saved = errno;
    if (ours)
        unsetenv("HWLOC_PLUGINS_BLACKLIST");
    errno = saved;
    return rc;
}

/* Where the XML comes from: a file, a buffer in memory, or neither (this machine). */
struct xml_source {
    const char *path;
    const char *buffer;
    int length;
};

static int load_here(struct topo *topo, struct xml_source xml, bool this_system, struct dt_err *err);

/* hwloc 2.9 dereferences NULL inside hwloc_topology_load on some damaged XML (two flipped bytes of
 * a saved topology are enough), so a file is loaded first in a child process: a crash there is an
 * error naming the file, never this process's death. 0 when the child loaded it (or could not be
 * started: the load here then goes on as it would have), -1 with err when it died of a signal. */
static int load_survives(struct xml_source xml, bool this_system, struct dt_err *err)
{
    pid_t child = fork();
    if (child < 0)
        return 0;
    if (child == 0) {
        /* a crash must end the child: no handler of the parent's (a test runner's, a sanitizer's)
         * may catch it and carry on in the child */
        const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
        for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
            signal(fatal[i], SIG_DFL);
        int quiet = open("/dev/null", O_WRONLY);   /* hwloc's own words about the file: said below */
        if (quiet >= 0)
            dup2(quiet, STDERR_FILENO);
        struct topo trial;
        struct dt_err ignored;
        _exit(load_here(&trial, xml, this_system, &ignored) == 0 ? 0 : 1);
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFSIGNALED(status))
        return 0;
    return dt_fail(err, "topology file %s made hwloc's XML reader crash (signal %d, %s): the file is damaged; "
                   "export it again on its node (lstopo --of xml FILE)", xml.path, WTERMSIG(status),
                   strsignal(WTERMSIG(status)));
}

static int load_from(struct topo *topo, struct xml_source xml, bool this_system, struct dt_err *err)
{
    memset(topo, 0, sizeof *topo);
    if (xml.path && access(xml.path, R_OK) == 0 && load_survives(xml, this_system, err) < 0)
        return -1;
    return load_here(topo, xml, this_system, err);
}

static int load_here(struct topo *topo, struct xml_source xml, bool this_system, struct dt_err *err)
{
    memset(topo, 0, sizeof *topo);
    snprintf(topo->source, sizeof topo->source, "%s", xml.path ? xml.path : "this machine");
    if (xml.path && access(xml.path, R_OK) < 0)
        return dt_fail(err, "topology file %s: %s", xml.path, strerror(errno));
    if (init_without_plugins(&topo->hw) < 0)
        return dt_fail(err, "hwloc cannot start: %s", strerror(errno));
    /* Before load, or hwloc drops every bridge, PCI device and OS device: no GPUs, no NICs. */
    hwloc_topology_set_io_types_filter(topo->hw, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    int set = xml.path     ? hwloc_topology_set_xml(topo->hw, xml.path)
              : xml.buffer ? hwloc_topology_set_xmlbuffer(topo->hw, xml.buffer, xml.length)
                           : 0;
    if (set < 0) {
        topo_free(topo);
        return dt_fail(err, "topology %s is not an hwloc XML export (%s)", xml.path ? xml.path : "cache",
                       strerror(errno));
    }
    /* A cached export of this very machine: binding works, and the cpus and memory this process
     * may use come from the OS now (its Slurm cgroup), not from whoever wrote the cache. */
    if ((xml.path || xml.buffer) && this_system)
        hwloc_topology_set_flags(topo->hw, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM |
                                               HWLOC_TOPOLOGY_FLAG_THISSYSTEM_ALLOWED_RESOURCES);
    if (hwloc_topology_load(topo->hw) < 0) {
        int saved = errno;
        topo_free(topo);
        return dt_fail(err, "cannot load the topology of %s: %s", xml.path ? xml.path : "this machine",
                       xml.path || xml.buffer ? "not a valid hwloc XML export" : strerror(saved));
    }
    if (discover_topology(topo, err) < 0) {
        topo_free(topo);
        return -1;
    }
    find_nearest_nics(topo);
    return 0;
}

int topo_load_ex(struct topo *topo, const char *xml_path, bool this_system, struct dt_err *err)
{
    return load_from(topo, (struct xml_source){.path = xml_path}, this_system, err);
}

int topo_load_this_machine_xml(struct topo *topo, const char *xml, int length, struct dt_err *err)
{
    return load_from(topo, (struct xml_source){.buffer = xml, .length = length}, true, err);
}

void topo_free(struct topo *topo)
{
    if (topo->hw)
        hwloc_topology_destroy(topo->hw);
    topo->hw = NULL;
}
