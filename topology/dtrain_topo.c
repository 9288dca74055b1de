/* dtrain_topo.c - `dtrain-topo`: a node's GPUs, NICs and NUMA nodes and how near each GPU is to
 * each NIC, from hwloc (this machine or a saved XML). */
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology/topo.h"
#include "common/version.h"
#include "common/stdout_check.h"

static const char usage_text[] =
    "Usage: dtrain-topo [options]\n"
    "\n"
    "Prints the GPUs (numbered by PCI bus id, as CUDA_DEVICE_ORDER=PCI_BUS_ID does), the network\n"
    "devices, the NUMA nodes with their cpus, and a GPU x NIC matrix of how near each pair is,\n"
    "nearest first:\n"
    "  switch      both below one PCI switch or root port\n"
    "  hostbridge  both below one PCI host bridge\n"
    "  numa        attached to the same NUMA node(s)\n"
    "  overlap     one's NUMA locality includes the other's\n"
    "  package     the same processor package\n"
    "  cross       different packages\n"
    "A '*' marks each GPU's nearest NIC(s): RDMA NICs (InfiniBand, Omni-Path, EFA, Slingshot,\n"
    "RoCE) when the node has any, else any NIC.\n"
    "\n"
    "Options:\n"
    "  -t, --topology FILE  read a saved hwloc XML (lstopo --of xml) instead of this machine;\n"
    "                       HWLOC_XMLFILE=FILE does the same\n"
    "  -j, --json           one JSON object instead of text\n"
    "  -h, --help           this text\n"
    "  -V, --version        the version\n"
    "\n"
    "Examples:\n"
    "  dtrain-topo\n"
    "  dtrain-topo --topology node.xml --json | jq '.gpus[] | {busid, nearest_nics}'\n"
    "\n"
    "Exit status: 0, or 2 when the topology cannot be read.\n";

static void nearest_names(const struct topo *topo, const struct topo_gpu *gpu, char *buf, size_t size)
{
    buf[0] = '\0';
    for (int i = 0; i < gpu->num_nearest; i++) {
        const struct topo_nic *nic = &topo->nics[gpu->nearest[i]];
        const char *name = nic->rdma_device[0] ? nic->rdma_device : nic->netdev[0] ? nic->netdev : nic->busid;
        snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "", name);
    }
    if (!buf[0])
        snprintf(buf, size, "-");
}

static void print_text(const struct topo *topo)
{
    printf("Topology of %s: %d GPUs, %d network devices\n\n", topo->source, topo->num_gpus, topo->num_nics);
    printf("NUMA nodes:\n");
    for (hwloc_obj_t numa = NULL; (numa = hwloc_get_next_obj_by_type(topo->hw, HWLOC_OBJ_NUMANODE, numa));) {
        char cpus[512];
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, numa->cpuset);
        printf("  node %-3u cpus %-24s package %d%s\n", numa->os_index, cpus[0] ? cpus : "(none)",
               topo_package_of(topo, numa), numa->subtype ? " (GPU memory)" : "");
    }
    printf("\nGPUs (CUDA_DEVICE_ORDER=PCI_BUS_ID order):\n");
    printf("  %-4s %-13s %-10s %-6s %-8s %-24s %-14s %s\n", "GPU", "bus id", "id", "NUMA", "package", "cpus", "nearest NIC", "names");
    for (int g = 0; g < topo->num_gpus; g++) {
        const struct topo_gpu *gpu = &topo->gpus[g];
        char numa[64], cpus[512], nearest[256], id[16];
        topo_numa_list(topo, gpu->ancestor, numa, sizeof numa);
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, gpu->ancestor->cpuset);
        nearest_names(topo, gpu, nearest, sizeof nearest);
        snprintf(id, sizeof id, "%04x:%04x", gpu->vendor, gpu->device);
        printf("  %-4d %-13s %-10s %-6s %-8d %-24s %-14s %s\n", g, gpu->busid, id, numa,
               topo_package_of(topo, gpu->ancestor), cpus, nearest, gpu->osdevs[0] ? gpu->osdevs : "-");
    }
    printf("\nNetwork devices%s:\n", topo->nearest_over_rdma ? "" : " (none is RDMA: nearest is chosen among all)");
    printf("  %-4s %-13s %-14s %-5s %-16s %-12s %-6s %s\n", "NIC", "bus id", "kind", "RDMA", "device:port", "netdev", "NUMA", "package");
    for (int n = 0; n < topo->num_nics; n++) {
        const struct topo_nic *nic = &topo->nics[n];
        char numa[64], device[48];
        topo_numa_list(topo, nic->ancestor, numa, sizeof numa);
        if (nic->rdma_device[0] && nic->port)
            snprintf(device, sizeof device, "%s:%d", nic->rdma_device, nic->port);
        else
            snprintf(device, sizeof device, "%s", nic->rdma_device[0] ? nic->rdma_device : "-");
        printf("  %-4d %-13s %-14s %-5s %-16s %-12s %-6s %d\n", n, nic->busid, topo_nic_kind_name(nic->kind),
               nic->rdma ? "yes" : "no", device, nic->netdev[0] ? nic->netdev : "-", numa,
               topo_package_of(topo, nic->ancestor));
    }
    if (topo->num_gpus == 0 || topo->num_nics == 0)
        return;
    printf("\nGPU x NIC (* = nearest):\n        ");
    for (int n = 0; n < topo->num_nics; n++)
        printf(" NIC%-8d", n);
    printf("\n");
    for (int g = 0; g < topo->num_gpus; g++) {
        printf("  GPU%-3d", g);
        for (int n = 0; n < topo->num_nics; n++) {
            struct topo_distance d = topo_distance(topo, topo->gpus[g].pci, topo->nics[n].pci);
            bool nearest = false;
            for (int i = 0; i < topo->gpus[g].num_nearest; i++)
                nearest |= topo->gpus[g].nearest[i] == n;
            printf(" %-10s%s", topo_tier_name(d.tier), nearest ? "*" : " ");
        }
        printf("\n");
    }
}

static json_t *cpus_json(hwloc_const_bitmap_t set)
{
    char cpus[1024];
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, set);
    return json_string(cpus);
}

static json_t *to_json(const struct topo *topo)
{
    json_t *gpus = json_array(), *nics = json_array(), *numas = json_array();
    for (hwloc_obj_t numa = NULL; (numa = hwloc_get_next_obj_by_type(topo->hw, HWLOC_OBJ_NUMANODE, numa));)
        json_array_append_new(numas, json_pack("{s:i, s:o, s:i, s:b}", "os_index", (int)numa->os_index, "cpus",
                                               cpus_json(numa->cpuset), "package", topo_package_of(topo, numa),
                                               "gpu_memory", numa->subtype != NULL));
    for (int g = 0; g < topo->num_gpus; g++) {
        const struct topo_gpu *gpu = &topo->gpus[g];
        char numa[64];
        topo_numa_list(topo, gpu->ancestor, numa, sizeof numa);
        json_t *nearest = json_array();
        for (int i = 0; i < gpu->num_nearest; i++)
            json_array_append_new(nearest, json_integer(gpu->nearest[i]));
        json_array_append_new(gpus, json_pack("{s:i, s:s, s:i, s:i, s:i, s:s, s:s, s:i, s:o, s:o, s:s}",
            "index", g, "busid", gpu->busid, "vendor", gpu->vendor, "device", gpu->device, "class", gpu->pci_class,
            "names", gpu->osdevs, "numa", numa, "package", topo_package_of(topo, gpu->ancestor),
            "cpus", cpus_json(gpu->ancestor->cpuset), "nearest_nics", nearest, "tier", topo_tier_name(gpu->tier)));
    }
    for (int n = 0; n < topo->num_nics; n++) {
        const struct topo_nic *nic = &topo->nics[n];
        char numa[64];
        topo_numa_list(topo, nic->ancestor, numa, sizeof numa);
        json_array_append_new(nics, json_pack("{s:i, s:s, s:s, s:b, s:s, s:i, s:s, s:s, s:i, s:o}",
            "index", n, "busid", nic->busid, "kind", topo_nic_kind_name(nic->kind), "rdma", nic->rdma,
            "rdma_device", nic->rdma_device, "port", nic->port, "netdev", nic->netdev, "numa", numa,
            "package", topo_package_of(topo, nic->ancestor), "cpus", cpus_json(nic->ancestor->cpuset)));
    }
    return json_pack("{s:s, s:o, s:o, s:o, s:b}", "source", topo->source, "numa_nodes", numas, "gpus", gpus,
                     "nics", nics, "nearest_over_rdma", topo->nearest_over_rdma);
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-topo");   /* a full disk is an error, not an empty table */
    static const struct option options[] = {
        {"topology", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *xml = NULL;
    bool json = false;
    int opt;
    while ((opt = getopt_long(argc, argv, "t:jhV", options, NULL)) != -1) {
        switch (opt) {
        case 't': xml = optarg; break;
        case 'j': json = true; break;
        case 'h': fputs(usage_text, stdout); return 0;
        case 'V': printf("dtrain-topo %s\n", DTRAIN_VERSION); return 0;
        default: fputs("Try 'dtrain-topo --help'.\n", stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "dtrain-topo: unexpected argument \"%s\" (try --help)\n", argv[optind]);
        return 2;
    }
    struct topo topo;
    struct dt_err err;
    if (topo_load(&topo, xml, &err) < 0) {
        fprintf(stderr, "dtrain-topo: %s\n", err.msg);
        return 2;
    }
    if (json) {
        json_t *doc = to_json(&topo);
        json_dumpf(doc, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(doc);
    } else {
        print_text(&topo);
    }
    topo_free(&topo);
    return fflush(stdout) == 0 ? 0 : 1;
}
