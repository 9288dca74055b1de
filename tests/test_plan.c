/* test_plan.c - binding plans: against the shared topologies' README for 1, 2, 4 and all GPUs,
 * invariants on every topology, CPU ranks, the binding's exports, and requests that cannot fit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/launch.h"
#include "launcher/plan.h"
#include "formats/table.h"
#include "tests/testutil.h"
#include "topology/topo.h"

static const char *const shared_files[] = {
    "juwels-booster-2s-epyc7402-nps4-4a100-4hdr.xml", "lassen-power9-2s-4v100-2x2port-edr.xml",
    "tioga-1s-epyc7a53-nps4-8mi250x-gcd-4slingshot.xml", "aws-g4dn-metal-2s-8t4-efa-noib.xml",
    "threadripper-1s-4die-2numa-nvidia+amd-gpu-noib.xml", "quartz-2s-broadwell-cpuonly-opa.xml",
    "tuolumne-4s-mi300a-spx-4slingshot.xml", "dgx2h-2s-16v100-nvswitch-trimmed-nonic.xml",
};
static const char *const own_files[] = {"2s-8gpu-8hca-pcie-switches.xml", "2s-cpuonly-1eth.xml"};

static bool topology_path(char *path, size_t size, const char *name, bool shared)
{
    char relative[512];
    snprintf(relative, sizeof relative, shared ? "topologies/%s" : "topo/%s", name);
    if (shared)
        return tu_shared(path, size, relative);
    tu_fixture(path, size, relative);
    return true;
}

static void load_topology(struct topo *topo, const char *path)
{
    struct dt_err err;
    int rc = topo_load(topo, path, &err);
    if (rc < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void build_plan(const struct topo *topo, int ranks, int gpus, struct plan *plan)
{
    struct plan_request req = {.ranks = ranks, .gpus_per_node = gpus};
    struct dt_err err;
    int rc = plan_build(topo, &req, plan, &err);
    if (rc < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
}

static bool is_nearest(const struct topo_gpu *gpu, int nic)
{
    for (int i = 0; i < gpu->num_nearest; i++)
        if (gpu->nearest[i] == nic)
            return true;
    return false;
}

/* What must hold for any plan on any node. */
static void check_invariants(const char *name, const struct topo *topo, const struct plan *plan)
{
    int uses[TOPO_MAX_NICS] = {0};
    for (int r = 0; r < plan->num_ranks; r++)
        if (plan->ranks[r].nic >= 0)
            uses[plan->ranks[r].nic]++;
    for (int r = 0; r < plan->num_ranks; r++) {
        const struct rank_binding *b = &plan->ranks[r];
        assert_false(hwloc_bitmap_iszero(b->cpuset));
        /* cpus disjoint from every other rank's, unless their common locality has fewer PUs
         * than ranks (the trimmed DGX-2: 8 GPUs on a package of 2 PUs) */
        for (int o = r + 1; o < plan->num_ranks; o++) {
            if (!hwloc_bitmap_intersects(b->cpuset, plan->ranks[o].cpuset))
                continue;
            /* a rank's locality: its GPU's cpus, or for a CPU rank its NUMA node's */
            hwloc_bitmap_t locality = hwloc_bitmap_alloc(), other = hwloc_bitmap_alloc();
            int sharing = 0;
            for (int k = -1; k < plan->num_ranks; k++) {
                const struct rank_binding *rk = &plan->ranks[k < 0 ? r : k];
                hwloc_bitmap_t into = k < 0 ? locality : other;
                if (rk->gpu >= 0)
                    hwloc_bitmap_copy(into, topo->gpus[rk->gpu].ancestor->cpuset);
                else
                    hwloc_cpuset_from_nodeset(topo->hw, into, rk->nodeset);
                sharing += k >= 0 && hwloc_bitmap_isequal(other, locality);
            }
            bool crowded = hwloc_bitmap_weight(locality) < sharing;
            hwloc_bitmap_free(locality);
            hwloc_bitmap_free(other);
            if (!crowded)
                print_error("%s: ranks %d and %d share cpus\n", name, r, o);
            assert_true(crowded);
            assert_int_equal(hwloc_bitmap_weight(b->cpuset), 1);   /* and then share one PU at most */
        }
        if (b->gpu < 0)
            continue;
        const struct topo_gpu *gpu = &topo->gpus[b->gpu];
        /* cpus inside the GPU's locality, memory on its NUMA node(s) */
        assert_true(hwloc_bitmap_isincluded(b->cpuset, gpu->ancestor->cpuset));
        assert_true(hwloc_bitmap_isequal(b->nodeset, gpu->ancestor->nodeset));
        if (gpu->num_nearest == 0) {
            assert_int_equal(b->nic, -1);
            continue;
        }
        /* a nearest NIC, and none doubled while an equally near one is free */
        assert_true(is_nearest(gpu, b->nic));
        for (int i = 0; i < gpu->num_nearest; i++) {
            if (uses[gpu->nearest[i]] < uses[b->nic] - 1)
                print_error("%s: rank %d shares NIC %d (%d uses) while NIC %d has %d\n", name, r, b->nic,
                            uses[b->nic], gpu->nearest[i], uses[gpu->nearest[i]]);
            assert_true(uses[gpu->nearest[i]] >= uses[b->nic] - 1);
        }
    }
}

static void test_invariants_on_every_topology(void **state)
{
    (void)state;
    int checked = 0;
    for (int shared = 0; shared < 2; shared++) {
        int count = shared ? 8 : 2;
        for (int f = 0; f < count; f++) {
            char path[4096];
            const char *name = shared ? shared_files[f] : own_files[f];
            if (!topology_path(path, sizeof path, name, shared))
                continue;
            struct topo topo;
            load_topology(&topo, path);
            int sizes[] = {1, 2, 4, topo.num_gpus};
            for (int s = 0; s < 4; s++) {
                if (sizes[s] > topo.num_gpus || sizes[s] == 0 || (s == 3 && sizes[3] <= 4))
                    continue;
                struct plan plan;
                build_plan(&topo, sizes[s], sizes[s], &plan);
                check_invariants(name, &topo, &plan);
                plan_free(&plan);
                checked++;
            }
            for (int ranks = 1; ranks <= 8; ranks *= 2) {   /* CPU ranks */
                struct plan plan;
                build_plan(&topo, ranks, 0, &plan);
                check_invariants(name, &topo, &plan);
                plan_free(&plan);
                checked++;
            }
            topo_free(&topo);
        }
    }
    print_message("%d plans checked\n", checked);
    assert_true(checked >= 8);
}

/* Each rank's GPU, NUMA and NIC against the README's table of the shared topologies. */
static void test_plans_match_the_topologies_readme(void **state)
{
    (void)state;
    char path[4096];
    FILE *readme = tu_shared(path, sizeof path, "topologies/README.md") ? fopen(path, "r") : NULL;
    if (!readme) {
        tu_skip("../shared/topologies not present");
    }
    /* README rows: | GPU | bus id | id | osdevs | ancestor | NUMA | pkg | local PUs | nearest | tier | */
    char line[4096], file[512] = "";
    struct { char busid[16], numa[16], pus[256], nearest[512]; } rows[TOPO_MAX_GPUS];
    int num_rows = 0, plans = 0;
    bool more = true;
    while (more) {
        more = fgets(line, sizeof line, readme) != NULL;
        if ((!more || strncmp(line, "### `", 5) == 0) && file[0] && num_rows > 0) {
            char relative[600];
            snprintf(relative, sizeof relative, "topologies/%s", file);
            tu_shared(path, sizeof path, relative);
            struct topo topo;
            load_topology(&topo, path);
            int sizes[] = {1, 2, 4, num_rows};
            for (int s = 0; s < 4; s++) {
                if (sizes[s] > num_rows || (s == 3 && num_rows <= 4))
                    continue;
                struct plan plan;
                build_plan(&topo, sizes[s], sizes[s], &plan);
                for (int r = 0; r < sizes[s]; r++) {
                    const struct rank_binding *b = &plan.ranks[r];
                    char numa[64], cpus[512];
                    topo_numa_list(&topo, topo.gpus[b->gpu].ancestor, numa, sizeof numa);
                    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, b->cpuset);
                    assert_string_equal(topo.gpus[b->gpu].busid, rows[r].busid);   /* rank r: GPU r by bus id */
                    assert_string_equal(numa, rows[r].numa);
                    hwloc_bitmap_t local = hwloc_bitmap_alloc();
                    hwloc_bitmap_list_sscanf(local, rows[r].pus);
                    if (!hwloc_bitmap_isincluded(b->cpuset, local))
                        print_error("%s rank %d: cpus %s outside the GPU's %s\n", file, r, cpus, rows[r].pus);
                    assert_true(hwloc_bitmap_isincluded(b->cpuset, local));
                    hwloc_bitmap_free(local);
                    if (b->nic >= 0)
                        assert_non_null(strstr(rows[r].nearest, topo.nics[b->nic].busid));
                    else
                        assert_string_equal(rows[r].nearest, "none");
                }
                plan_free(&plan);
                plans++;
            }
            topo_free(&topo);
            num_rows = 0;
        }
        if (!more)
            break;
        if (strncmp(line, "### `", 5) == 0) {
            snprintf(file, sizeof file, "%.*s", (int)strcspn(line + 5, "`"), line + 5);
            continue;
        }
        char *cell[12];
        int n = table_cells(line, cell, 12);
        /* GPU rows have 10 cells and a vendor:device (class) third cell with a GPU class */
        if (n != 10 || cell[0][0] < '0' || cell[0][0] > '9' || !strchr(cell[9], '(') || num_rows == TOPO_MAX_GPUS)
            continue;
        snprintf(rows[num_rows].busid, sizeof rows[0].busid, "%s", cell[1]);
        snprintf(rows[num_rows].numa, sizeof rows[0].numa, "%s", cell[5]);
        snprintf(rows[num_rows].pus, sizeof rows[0].pus, "%s", cell[7]);
        snprintf(rows[num_rows].nearest, sizeof rows[0].nearest, "%s", cell[8]);
        num_rows++;
    }
    fclose(readme);
    print_message("%d plans checked against the README\n", plans);
    assert_true(plans >= 20);
}

static void test_gpu_hca_pairs_plan(void **state)
{
    (void)state;
    char path[4096];
    topology_path(path, sizeof path, "2s-8gpu-8hca-pcie-switches.xml", false);
    struct topo topo;
    load_topology(&topo, path);
    struct plan plan;
    build_plan(&topo, 8, 8, &plan);
    for (int r = 0; r < 8; r++) {
        char device[32], want[32], cpus[64], want_cpus[64];
        plan_nic_device(&topo, plan.ranks[r].nic, device, sizeof device);
        snprintf(want, sizeof want, "mlx5_%d:1", 7 - r);   /* its switch partner */
        assert_string_equal(device, want);
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, plan.ranks[r].cpuset);
        snprintf(want_cpus, sizeof want_cpus, "%d-%d", r * 4, r * 4 + 3);   /* 4 of its socket's 16 PUs */
        assert_string_equal(cpus, want_cpus);
    }
    assert_string_equal(plan.ib_hcas, "mlx5_7:1,mlx5_6:1,mlx5_5:1,mlx5_4:1,mlx5_3:1,mlx5_2:1,mlx5_1:1,mlx5_0:1");
    plan_free(&plan);

    /* Slurm gave the step GPUs 6 and 7: ranks 0 and 1 drive them, near their HCAs and socket 1. */
    int step[] = {6, 7};
    struct plan_request req = {.ranks = 2, .gpus_per_node = 2, .step_gpus = step, .num_step_gpus = 2};
    struct dt_err err;
    assert_int_equal(plan_build(&topo, &req, &plan, &err), 0);
    assert_int_equal(plan.ranks[1].gpu, 7);
    assert_int_equal(plan.ranks[1].visible_index, 1);
    char cpus[64];
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, plan.ranks[1].cpuset);
    assert_string_equal(cpus, "24-31");
    plan_free(&plan);

    /* Cores split in whole cores: 16 PUs = 8 cores of 2; 3 ranks get 2, 3 and 3 cores. */
    int one[] = {0, 0, 0};
    req = (struct plan_request){.ranks = 3, .gpus_per_node = 3, .step_gpus = one, .num_step_gpus = 3};
    assert_int_equal(plan_build(&topo, &req, &plan, &err), 0);
    for (int r = 0; r < 3; r++)
        assert_int_equal(hwloc_bitmap_weight(plan.ranks[r].cpuset) % 2, 0);   /* SMT siblings together */
    plan_free(&plan);
    topo_free(&topo);
}

static void test_cpu_ranks_spread_over_numa_nodes(void **state)
{
    (void)state;
    char path[4096];
    topology_path(path, sizeof path, "2s-cpuonly-1eth.xml", false);
    struct topo topo;
    load_topology(&topo, path);
    struct plan plan;
    build_plan(&topo, 4, 0, &plan);
    const char *want_cpus[] = {"0-1", "2-3", "4-5", "6-7"}, *want_numa[] = {"0", "0", "1", "1"};
    for (int r = 0; r < 4; r++) {
        char cpus[64], numa[64];
        hwloc_bitmap_list_snprintf(cpus, sizeof cpus, plan.ranks[r].cpuset);
        hwloc_bitmap_list_snprintf(numa, sizeof numa, plan.ranks[r].nodeset);
        assert_string_equal(cpus, want_cpus[r]);
        assert_string_equal(numa, want_numa[r]);
        assert_int_equal(plan.ranks[r].gpu, -1);
    }
    plan_free(&plan);
    topo_free(&topo);
}

static void test_requests_that_do_not_fit(void **state)
{
    (void)state;
    char path[4096];
    topology_path(path, sizeof path, "2s-8gpu-8hca-pcie-switches.xml", false);
    struct topo topo;
    load_topology(&topo, path);
    struct plan plan;
    struct dt_err err;
    struct plan_request req = {.ranks = 9, .gpus_per_node = 9};
    assert_int_equal(plan_build(&topo, &req, &plan, &err), -1);
    assert_true(tu_contains(err.msg, "--gpus-per-node 9, but"));
    assert_true(tu_contains(err.msg, "has 8 GPUs"));
    int step[] = {1, 9};
    req = (struct plan_request){.ranks = 2, .gpus_per_node = 2, .step_gpus = step, .num_step_gpus = 2};
    assert_int_equal(plan_build(&topo, &req, &plan, &err), -1);
    assert_true(tu_contains(err.msg, "Slurm gave this step GPU 9"));
    req = (struct plan_request){.ranks = 2, .gpus_per_node = 2, .nic = "mlx5_42"};
    assert_int_equal(plan_build(&topo, &req, &plan, &err), -1);
    assert_true(tu_contains(err.msg, "--nic mlx5_42: no such network device"));
    /* --nic by netdev, and none */
    req = (struct plan_request){.ranks = 2, .gpus_per_node = 2, .nic = "ib0"};
    assert_int_equal(plan_build(&topo, &req, &plan, &err), 0);
    assert_string_equal(topo.nics[plan.ranks[0].nic].rdma_device, "mlx5_0");
    assert_int_equal(plan.ranks[1].nic, plan.ranks[0].nic);
    plan_free(&plan);
    req = (struct plan_request){.ranks = 2, .gpus_per_node = 2, .nic = "none", .no_bind = true};
    assert_int_equal(plan_build(&topo, &req, &plan, &err), 0);
    assert_int_equal(plan.ranks[0].nic, -1);
    assert_false(plan.bind);
    assert_true(hwloc_bitmap_iszero(plan.ranks[0].cpuset));
    plan_free(&plan);
    topo_free(&topo);
}

static void test_binding_exports(void **state)
{
    (void)state;
    char path[4096];
    topology_path(path, sizeof path, "2s-8gpu-8hca-pcie-switches.xml", false);
    struct tu_env env = {0};
    tu_env_load(&env, "sbatch_gpus2_step_task2.env");   /* CUDA_VISIBLE_DEVICES=0,1, 2 tasks on gn02 */
    struct allocation alloc;
    struct dt_err err;
    assert_int_equal(alloc_from_env(&alloc, env.vars, &err), 0);
    struct topo topo;
    load_topology(&topo, path);
    struct plan plan;
    build_plan(&topo, 2, 2, &plan);
    char hca[2][1024];
    for (int isolate = 0; isolate < 2; isolate++) {
        for (int r = 0; r < 2; r++) {
            struct launch_request req = {.nodes = -1, .gpus_per_node = 2, .ranks = -1, .isolate = isolate};
            struct rank_bind bind = {&topo, &plan, &plan.ranks[r]};
            struct rank_exports e = {0};
            launch_export_binding(&req, &alloc, &bind, env.vars, &e);
            char want[16];
            snprintf(want, sizeof want, "%d", isolate ? 0 : r);
            assert_string_equal(launch_export_value(&e, "DTRAIN_GPU"), want);
            assert_string_equal(launch_export_value(&e, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
            if (isolate) {
                snprintf(want, sizeof want, "%d", r);
                assert_string_equal(launch_export_value(&e, "CUDA_VISIBLE_DEVICES"), want);   /* narrowed, though set */
            } else {
                assert_null(launch_export_value(&e, "CUDA_VISIBLE_DEVICES"));
            }
            snprintf(want, sizeof want, "mlx5_%d:1", 7 - r);
            assert_string_equal(launch_export_value(&e, "UCX_NET_DEVICES"), want);   /* the rank's own NIC */
            assert_null(launch_export_value(&e, "NCCL_SOCKET_IFNAME"));   /* ib7 has no address here */
            snprintf(hca[r], sizeof hca[r], "%s", launch_export_value(&e, "NCCL_IB_HCA"));
            launch_exports_free(&e);
        }
        assert_string_equal(hca[0], hca[1]);   /* the same NCCL_IB_HCA on every rank */
    }
    plan_free(&plan);
    topo_free(&topo);
    alloc_free(&alloc);
    tu_env_free(&env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invariants_on_every_topology),
        cmocka_unit_test(test_plans_match_the_topologies_readme),
        cmocka_unit_test(test_gpu_hca_pairs_plan),
        cmocka_unit_test(test_cpu_ranks_spread_over_numa_nodes),
        cmocka_unit_test(test_requests_that_do_not_fit),
        cmocka_unit_test(test_binding_exports),
    };
    return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
