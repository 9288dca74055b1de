/* topo.h - a node's GPUs, NICs and NUMA nodes from hwloc, and which NIC is nearest each GPU.
 *
 * Debian's hwloc has no CUDA/NVML plugin, so GPUs are found as PCI devices (vendor NVIDIA 0x10de
 * or AMD 0x1002; class VGA 0x0300, 3D 0x0302, display 0x0380 or accelerator 0x1200; not the ATI
 * ES1000 BMC chip 1002:515e) and numbered by PCI bus id, the order CUDA uses with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID. OS devices (cuda0, nvml0, rsmi0) name them in reports only.
 */
#ifndef TOPO_H
#define TOPO_H

#include <stdbool.h>

#include <hwloc.h>

#include "common/dt_error.h"

/* Per node: DGX-2 has 16 GPUs, Frontier-class nodes 8 GCDs; 64 leaves room for odd machines. */
#define TOPO_MAX_GPUS 64
#define TOPO_MAX_NICS 64

/* How near a NIC is to a GPU, nearest first (see topo_affinity.c). */
enum topo_tier {
    TOPO_TIER_SWITCH,       /* below one PCI-to-PCI bridge (a switch or root port) */
    TOPO_TIER_HOSTBRIDGE,   /* below one host bridge */
    TOPO_TIER_NUMA,         /* same NUMA node(s) */
    TOPO_TIER_OVERLAP,      /* one's locality includes the other's */
    TOPO_TIER_PACKAGE,      /* same processor package */
    TOPO_TIER_CROSS,        /* across packages */
    TOPO_TIER_NONE,         /* no NIC at all */
};

enum topo_nic_kind {
    TOPO_NIC_INFINIBAND, TOPO_NIC_OMNIPATH, TOPO_NIC_EFA, TOPO_NIC_SLINGSHOT, TOPO_NIC_RDMA_ETHERNET,
    TOPO_NIC_ETHERNET, TOPO_NIC_OTHER,
};

struct topo_nic {
    hwloc_obj_t pci;
    char busid[16];            /* "0000:c5:00.0" */
    unsigned vendor, device, pci_class;
    enum topo_nic_kind kind;
    bool rdma;                 /* OpenFabrics device, IB/OPA class, or Slingshot */
    char rdma_device[32];      /* "mlx5_0", "hfi1_0", "rdmap197s0": what NCCL_IB_HCA names; "" if none */
    int port;                  /* the RDMA port to use (first active one), 0 when unknown */
    char netdev[32];           /* "ib0", "ens2", "hsi0": NCCL_SOCKET_IFNAME; "" if none */
    hwloc_obj_t ancestor;      /* the non-I/O object it hangs below */
};

struct topo_gpu {
    hwloc_obj_t pci;
    char busid[16];
    unsigned vendor, device, pci_class;
    char osdevs[128];          /* "cuda0,nvml0" where hwloc had the plugins, else "" */
    hwloc_obj_t ancestor;      /* its non-I/O ancestor: the cores to bind near it */
    /* The nearest NICs (indices into topo.nics), all equally near. */
    int nearest[TOPO_MAX_NICS];
    int num_nearest;
    enum topo_tier tier;
};

struct topo {
    hwloc_topology_t hw;
    char source[4096];         /* the XML file, or "this machine" */
    struct topo_gpu gpus[TOPO_MAX_GPUS];
    int num_gpus;
    struct topo_nic nics[TOPO_MAX_NICS];
    int num_nics;
    bool nearest_over_rdma;    /* nearest NICs chosen among RDMA NICs (false: the node has none) */
};

/* Loads the topology of this machine (xml_path NULL; hwloc itself honours HWLOC_XMLFILE) or of a
 * saved hwloc XML file, with PCI bridges, devices and OS devices kept, then finds GPUs and NICs
 * and each GPU's nearest NICs. Returns 0, or -1 with err naming the file and what is wrong. */
int topo_load(struct topo *topo, const char *xml_path, struct dt_err *err);

/* Like topo_load; with this_system the XML is taken as an export of this machine (the cache). */
int topo_load_ex(struct topo *topo, const char *xml_path, bool this_system, struct dt_err *err);

/* Loads an XML export of this machine held in memory (the cache, read through a checked file
 * descriptor); topo->source says "this machine". */
int topo_load_this_machine_xml(struct topo *topo, const char *xml, int length, struct dt_err *err);

/* Loads this machine's topology through a per-node cache: an XML export in the user's private
 * directory `cache_dir`/dtrain-topo-UID (0700; refused unless it is a real directory of this user
 * that nobody else may write), named by host, boot id and hwloc version, written atomically by whichever rank discovers first while
 * the others wait on a lock, then loaded by them (0.1 ms here instead of ~10 ms of discovery).
 * A cache that does not load or does not match this machine's cpu count is rewritten. cache_dir
 * NULL: $DTRAIN_TOPO_CACHE, else /dev/shm, else $TMPDIR or /tmp. Nothing in the cache is followed:
 * a symlink or another user's file there is reported on stderr and the topology discovered
 * without the cache. *from_cache says which way it went. Returns 0, or -1 with err. */
int topo_load_cached(struct topo *topo, const char *cache_dir, bool *from_cache, struct dt_err *err);

void topo_free(struct topo *topo);

/* How near NIC n is to GPU g: the tier, and for ties within a tier the bridge depth (deeper is
 * nearer) and the hop count through the common ancestor (fewer is nearer). */
struct topo_distance {
    enum topo_tier tier;
    int bridge_depth;
    int hops;
};
struct topo_distance topo_distance(const struct topo *topo, hwloc_obj_t a, hwloc_obj_t b);

/* Labels for reports. */
const char *topo_tier_name(enum topo_tier tier);
const char *topo_nic_kind_name(enum topo_nic_kind kind);

/* NUMA nodes (os indices, CPU-less GPU-memory nodes left out) local to an object's non-I/O
 * ancestor, as a list "0,1" written into buf. */
void topo_numa_list(const struct topo *topo, hwloc_obj_t ancestor, char *buf, size_t size);

/* The package (logical index) an object's ancestor belongs to, or -1 when it spans several. */
int topo_package_of(const struct topo *topo, hwloc_obj_t ancestor);

#endif
