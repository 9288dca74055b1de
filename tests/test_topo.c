/* test_topo.c - GPU and NIC discovery and nearest NICs on real node topologies (hwloc XML).
 *
 * ../shared/topologies/README.md lists, for eight real GPU servers, each GPU's bus id, NUMA node,
 * package, local PUs, nearest NIC(s) and the tier that made them nearest. Every row is compared
 * with what topo_load finds. Without ../shared (a fresh clone) these tests are skipped; the
 * project's own fixtures (tests/fixtures/topo/) are checked either way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/table.h"
#include "tests/testutil.h"
#include "topology/topo.h"

/* The README's tier names for ours. */
static const char *readme_tier(enum topo_tier tier)
{
    static const char *const names[] = {"PCI-bridge", "hostbridge", "same-NUMA", "overlap-locality", "same-pkg",
                                        "cross-pkg", "-"};
    return names[tier];
}

static void load_or_fail(struct topo *topo, const char *path)
{
    struct dt_err err;
    int rc = topo_load(topo, path, &err);
    if (rc < 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
}

/* Checks one GPU row of the README against the loaded topology. */
static void check_gpu_row(const char *file, const struct topo *topo, char **cell)
{
    int index = atoi(cell[0]);
    assert_in_range(index, 0, topo->num_gpus - 1);
    const struct topo_gpu *gpu = &topo->gpus[index];
    char numa[64], cpus[512], where[256];
    snprintf(where, sizeof where, "%s GPU %d", file, index);
    topo_numa_list(topo, gpu->ancestor, numa, sizeof numa);
    hwloc_bitmap_list_snprintf(cpus, sizeof cpus, gpu->ancestor->cpuset);
    int package = topo_package_of(topo, gpu->ancestor);
    char nearest[512] = "";
    for (int i = 0; i < gpu->num_nearest; i++)
        snprintf(nearest + strlen(nearest), sizeof nearest - strlen(nearest), "%s%s", i ? " " : "",
                 topo->nics[gpu->nearest[i]].busid);
    /* The README names NICs as "NIC1 0000:c5:00.0 (hsi0), ...": keep the bus ids. */
    char want_nearest[512] = "";
    for (char *tok = strtok(cell[8], " ,()"); tok; tok = strtok(NULL, " ,()"))
        if (strlen(tok) == 12 && tok[4] == ':' && tok[7] == ':' && tok[10] == '.')
            snprintf(want_nearest + strlen(want_nearest), sizeof want_nearest - strlen(want_nearest), "%s%s",
                     want_nearest[0] ? " " : "", tok);
    char want_tier[64];
    snprintf(want_tier, sizeof want_tier, "%s", cell[9]);
    want_tier[strcspn(want_tier, " ")] = '\0';
    char package_text[16];
    snprintf(package_text, sizeof package_text, "%d", package);

    const char *got[] = {gpu->busid, numa, package_text, cpus, nearest, readme_tier(gpu->tier)};
    const char *want[] = {cell[1], cell[5], cell[6], cell[7], want_nearest, want_tier};
    const char *what[] = {"bus id", "NUMA", "package", "local PUs", "nearest NICs", "tier"};
    for (int i = 0; i < 6; i++) {
        if (strcmp(got[i], want[i]) != 0)
            print_error("%s: %s is \"%s\", the README says \"%s\"\n", where, what[i], got[i], want[i]);
        assert_string_equal(got[i], want[i]);
    }
}

static void test_shared_topologies_match_their_readme(void **state)
{
    (void)state;
    char path[4096];
    FILE *readme = tu_shared(path, sizeof path, "topologies/README.md") ? fopen(path, "r") : NULL;
    if (!readme) {
        tu_skip("../shared/topologies not present");
    }
    char line[4096], file[512] = "";
    struct topo topo = {0};
    bool loaded = false, in_gpus = false;
    int files = 0, gpus = 0, expected_gpus = -1;
    while (fgets(line, sizeof line, readme)) {
        if (strncmp(line, "### `", 5) == 0) {
            if (loaded) {
                assert_int_equal(topo.num_gpus, expected_gpus);
                topo_free(&topo);
            }
            snprintf(file, sizeof file, "%.*s", (int)strcspn(line + 5, "`"), line + 5);
            char relative[600];
            snprintf(relative, sizeof relative, "topologies/%s", file);
            tu_shared(path, sizeof path, relative);
            load_or_fail(&topo, path);
            loaded = true;
            in_gpus = false;
            files++;
            continue;
        }
        if (loaded && sscanf(line, "GPUs (%d, ordered", &expected_gpus) == 1) {
            in_gpus = true;
            continue;
        }
        if (loaded && strncmp(line, "NICs (", 6) == 0)
            in_gpus = false;
        char *cell[16];
        if (!in_gpus || line[0] != '|' || table_cells(line, cell, 16) != 10 || cell[0][0] < '0' || cell[0][0] > '9')
            continue;
        check_gpu_row(file, &topo, cell);
        gpus++;
    }
    if (loaded) {
        assert_int_equal(topo.num_gpus, expected_gpus);
        topo_free(&topo);
    }
    fclose(readme);
    print_message("%d topologies, %d GPUs checked against the README\n", files, gpus);
    assert_int_equal(files, 8);
    assert_true(gpus >= 40);
}

static void test_nic_names_ports_and_kinds(void **state)
{
    (void)state;
    char path[4096];
    if (!tu_shared(path, sizeof path, "topologies/juwels-booster-2s-epyc7402-nps4-4a100-4hdr.xml")) {
        tu_skip("../shared/topologies not present");
    }
    struct dt_err err;
    struct topo topo;
    assert_int_equal(topo_load(&topo, path, &err), 0);
    /* mlx5 names do not follow bus order: 0000:04:00.0 is mlx5_1. */
    assert_string_equal(topo.nics[0].busid, "0000:04:00.0");
    assert_string_equal(topo.nics[0].rdma_device, "mlx5_1");
    assert_int_equal(topo.nics[0].port, 1);
    assert_string_equal(topo.nics[0].netdev, "ib1");
    assert_int_equal(topo.nics[0].kind, TOPO_NIC_INFINIBAND);
    assert_false(topo.nics[4].rdma);   /* the Ethernet ports */
    topo_free(&topo);

    tu_shared(path, sizeof path, "topologies/tioga-1s-epyc7a53-nps4-8mi250x-gcd-4slingshot.xml");
    assert_int_equal(topo_load(&topo, path, &err), 0);
    assert_int_equal(topo.num_gpus, 8);
    assert_int_equal(topo.nics[1].kind, TOPO_NIC_SLINGSHOT);
    assert_true(topo.nics[1].rdma);
    assert_string_equal(topo.nics[1].netdev, "hsi0");
    assert_string_equal(topo.gpus[0].osdevs, "rsmi0");
    topo_free(&topo);

    tu_shared(path, sizeof path, "topologies/aws-g4dn-metal-2s-8t4-efa-noib.xml");
    assert_int_equal(topo_load(&topo, path, &err), 0);
    assert_int_equal(topo.nics[0].kind, TOPO_NIC_EFA);
    assert_string_equal(topo.nics[0].rdma_device, "rdmap197s0");
    topo_free(&topo);

    tu_shared(path, sizeof path, "topologies/dgx2h-2s-16v100-nvswitch-trimmed-nonic.xml");
    assert_int_equal(topo_load(&topo, path, &err), 0);
    assert_int_equal(topo.num_gpus, 16);   /* the 12 NVSwitches are not GPUs */
    assert_int_equal(topo.num_nics, 0);
    assert_int_equal(topo.gpus[0].tier, TOPO_TIER_NONE);
    topo_free(&topo);
}

static void fixture_path(char *path, size_t size, const char *name)
{
    char relative[512];
    snprintf(relative, sizeof relative, "topo/%s", name);
    tu_fixture(path, size, relative);
}

/* The project's own fixture: 8 GPU+HCA pairs, each pair under its own PCIe switch. */
static void test_gpu_hca_pairs_under_switches(void **state)
{
    (void)state;
    char path[4096];
    fixture_path(path, sizeof path, "2s-8gpu-8hca-pcie-switches.xml");
    struct topo topo;
    load_or_fail(&topo, path);
    assert_int_equal(topo.num_gpus, 8);
    assert_int_equal(topo.num_nics, 8);
    assert_true(topo.nearest_over_rdma);
    for (int k = 0; k < 8; k++) {
        const struct topo_gpu *gpu = &topo.gpus[k];
        char busid[16], hca[16], numa[16];
        snprintf(busid, sizeof busid, "0000:%02x:00.0", 0x12 + 0x10 * k);   /* numbered by bus id */
        assert_string_equal(gpu->busid, busid);
        assert_int_equal(gpu->num_nearest, 1);
        assert_int_equal(gpu->tier, TOPO_TIER_SWITCH);
        const struct topo_nic *nic = &topo.nics[gpu->nearest[0]];
        snprintf(busid, sizeof busid, "0000:%02x:00.0", 0x13 + 0x10 * k);   /* its switch partner */
        assert_string_equal(nic->busid, busid);
        snprintf(hca, sizeof hca, "mlx5_%d", 7 - k);   /* names run against bus order */
        assert_string_equal(nic->rdma_device, hca);
        assert_int_equal(nic->port, 1);
        topo_numa_list(&topo, gpu->ancestor, numa, sizeof numa);
        assert_string_equal(numa, k < 4 ? "0" : "1");
        assert_int_equal(topo_package_of(&topo, gpu->ancestor), k < 4 ? 0 : 1);
        /* a HCA of the same socket but another switch: host bridge; the other socket: cross */
        assert_int_equal(topo_distance(&topo, gpu->pci, topo.nics[(k ^ 1)].pci).tier, TOPO_TIER_HOSTBRIDGE);
        assert_int_equal(topo_distance(&topo, gpu->pci, topo.nics[(k + 4) % 8].pci).tier, TOPO_TIER_CROSS);
    }
    topo_free(&topo);
}

/* The project's own fixture of the NIC kinds and nearness tiers the real topologies in ../shared
 * show (tests/fixtures/topo/1s-2die-2gpu-5nic-kinds.xml): an NVSwitch and the BMC's ES1000 VGA
 * are no GPUs; Slingshot, EFA (its second port the active one) and Omni-Path are RDMA, each of its
 * kind; a GPU's OS devices are named; the die-0 GPU finds its NICs at its NUMA node, the die-1 GPU
 * at the package, and plain Ethernet is nobody's nearest where RDMA NICs exist. */
static void test_nic_kinds_and_tiers_of_a_written_topology(void **state)
{
    (void)state;
    char path[4096];
    fixture_path(path, sizeof path, "1s-2die-2gpu-5nic-kinds.xml");
    struct topo topo;
    load_or_fail(&topo, path);
    assert_int_equal(topo.num_gpus, 2);
    assert_string_equal(topo.gpus[0].osdevs, "cuda0,nvml0");
    assert_int_equal(topo.num_nics, 4);
    assert_int_equal(topo.nics[0].kind, TOPO_NIC_SLINGSHOT);
    assert_true(topo.nics[0].rdma);
    assert_string_equal(topo.nics[0].netdev, "hsn0");
    assert_int_equal(topo.nics[1].kind, TOPO_NIC_EFA);
    assert_string_equal(topo.nics[1].rdma_device, "rdmap18s0");
    assert_int_equal(topo.nics[1].port, 2);
    assert_int_equal(topo.nics[2].kind, TOPO_NIC_OMNIPATH);
    assert_int_equal(topo.nics[3].kind, TOPO_NIC_ETHERNET);
    assert_false(topo.nics[3].rdma);
    assert_true(topo.nearest_over_rdma);
    assert_int_equal(topo_distance(&topo, topo.gpus[0].pci, topo.nics[1].pci).tier, TOPO_TIER_NUMA);
    assert_int_equal(topo_distance(&topo, topo.gpus[1].pci, topo.nics[1].pci).tier, TOPO_TIER_PACKAGE);
    assert_int_equal(topo.gpus[1].num_nearest, 3);   /* the three RDMA NICs, not eno1 beside it */
    assert_int_equal(topo.gpus[1].tier, TOPO_TIER_PACKAGE);
    topo_free(&topo);
}

static void test_cpu_only_node(void **state)
{
    (void)state;
    char path[4096];
    fixture_path(path, sizeof path, "2s-cpuonly-1eth.xml");
    struct topo topo;
    load_or_fail(&topo, path);
    assert_int_equal(topo.num_gpus, 0);
    assert_int_equal(topo.num_nics, 1);
    assert_false(topo.nearest_over_rdma);
    assert_int_equal(topo.nics[0].kind, TOPO_NIC_ETHERNET);
    assert_string_equal(topo.nics[0].netdev, "eno1");
    assert_int_equal(hwloc_get_nbobjs_by_type(topo.hw, HWLOC_OBJ_NUMANODE), 2);
    assert_int_equal(hwloc_get_nbobjs_by_type(topo.hw, HWLOC_OBJ_CORE), 8);
    topo_free(&topo);
}

static void test_bad_topology_files(void **state)
{
    (void)state;
    struct topo topo;
    struct dt_err err;
    assert_int_equal(topo_load(&topo, "/nonexistent/node.xml", &err), -1);
    assert_true(tu_contains(err.msg, "topology file /nonexistent/node.xml: No such file or directory"));
    char path[4096];
    tu_fixture(path, sizeof path, "env/srun_N2x2_task0.env");
    assert_int_equal(topo_load(&topo, path, &err), -1);   /* exists, but not XML */
    assert_true(tu_contains(err.msg, path));
    /* two bytes changed in a saved topology ('m' -> 'p' at byte 1783, '_' -> 'O' at 2112) made
     * hwloc 2.9's libxml2 reader dereference NULL: an error naming the file, not a crash of this
     * process (hwloc's own parser refuses it; were it to crash, the child's load says so) */
    tu_fixture(path, sizeof path, "topo/damaged-2s-cpuonly-crashes-hwloc.xml");
    assert_int_equal(topo_load(&topo, path, &err), -1);
    print_message("%s\n", err.msg);
    assert_true(tu_contains(err.msg, path));
}

/* The cache in dir, just damaged by the caller: the next load discovers and rewrites it, the one
 * after reads it back. */
static void rewritten_then_cached(const char *dir)
{
    struct topo topo;
    struct dt_err err;
    bool from_cache = true;
    assert_int_equal(topo_load_cached(&topo, dir, &from_cache, &err), 0);
    assert_false(from_cache);
    topo_free(&topo);
    assert_int_equal(topo_load_cached(&topo, dir, &from_cache, &err), 0);
    assert_true(from_cache);
    topo_free(&topo);
}

static void test_topology_is_cached_per_node(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-topocache-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct topo topo;
    struct dt_err err;
    bool from_cache = true;
    assert_int_equal(topo_load_cached(&topo, dir, &from_cache, &err), 0);
    assert_false(from_cache);   /* first: discovered, and written */
    int pus = hwloc_get_nbobjs_by_type(topo.hw, HWLOC_OBJ_PU), gpus = topo.num_gpus, nics = topo.num_nics;
    topo_free(&topo);
    assert_int_equal(topo_load_cached(&topo, dir, &from_cache, &err), 0);
    assert_true(from_cache);    /* then: read back, the same machine */
    assert_int_equal(hwloc_get_nbobjs_by_type(topo.hw, HWLOC_OBJ_PU), pus);
    assert_int_equal(topo.num_gpus, gpus);
    assert_int_equal(topo.num_nics, nics);
    assert_true(hwloc_topology_is_thissystem(topo.hw));   /* so binding still works */
    topo_free(&topo);
    /* A damaged cache is rediscovered and replaced. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test $(stat -c %%a %s/dtrain-topo-%u) = 700 && for f in %s/dtrain-topo-%u/*.xml; do "
             "echo '<topology version=\"2.0\"><broken' > \"$f\"; done", dir, (unsigned)geteuid(), dir, (unsigned)geteuid());
    assert_int_equal(system(cmd), 0);
    rewritten_then_cached(dir);
    /* A cache whose bytes changed after it was written (here: XML that crashes hwloc put under the
     * old header, and the same without a header, as an older dtrain wrote it) is never handed to
     * hwloc: its checksum does not match, and it is rewritten. */
    char damaged[4096];
    tu_fixture(damaged, sizeof damaged, "topo/damaged-2s-cpuonly-crashes-hwloc.xml");
    for (int keep_header = 1; keep_header >= 0; keep_header--) {
        char edit[9000];
        snprintf(edit, sizeof edit, "for f in %s/dtrain-topo-%u/*.xml; do { %s cat %s; } > \"$f.new\" && "
                 "mv \"$f.new\" \"$f\"; done", dir, (unsigned)geteuid(), keep_header ? "head -n 1 \"$f\";" : "",
                 damaged);
        assert_int_equal(system(edit), 0);
        rewritten_then_cached(dir);
    }
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* Runs a shell command, as user nobody when `as_nobody` (the planting side of the tests below). */
static int run_sh(bool as_nobody, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int run_sh(bool as_nobody, const char *fmt, ...)
{
    char body[2048], cmd[2300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    if (as_nobody)
        snprintf(cmd, sizeof cmd, "setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '%s'", body);
    else
        snprintf(cmd, sizeof cmd, "%s", body);
    return system(cmd);
}

/* Loads through the cache in `base` and says whether the cache was used. */
static bool load_through_cache(const char *base)
{
    struct topo topo;
    struct dt_err err;
    bool from_cache = true;
    assert_int_equal(topo_load_cached(&topo, base, &from_cache, &err), 0);   /* never a failure */
    assert_true(hwloc_get_nbobjs_by_type(topo.hw, HWLOC_OBJ_PU) >= 1);
    assert_string_equal(topo.source, "this machine");   /* never a cache path in messages */
    topo_free(&topo);
    return from_cache;
}

/* Another user plants a directory or a symlink where the cache goes. */
static void test_cache_refuses_what_another_user_planted(void **state)
{
    (void)state;
    if (geteuid() != 0 || run_sh(false, "setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null") != 0) {
        tu_skip("planting as another user needs root and setpriv");
    }
    char base[] = "/tmp/dtrain-test-topoplant-XXXXXX";
    assert_non_null(mkdtemp(base));
    unsigned uid = (unsigned)geteuid();
    /* A world-writable sticky place like /dev/shm, and a root-owned victim beside it. */
    assert_int_equal(run_sh(false, "chmod 1777 %s && mkdir -m 700 %s/victim-dir && touch %s/victim-file", base, base, base), 0);
    /* Their directory where ours goes: refused, nothing written into it. */
    assert_int_equal(run_sh(true, "mkdir -m 777 %s/dtrain-topo-%u", base, uid), 0);
    assert_false(load_through_cache(base));
    assert_int_equal(run_sh(false, "test -z \"$(ls -A %s/dtrain-topo-%u)\"", base, uid), 0);
    /* Their symlink to a directory of ours: not followed, the victim stays empty. */
    assert_int_equal(run_sh(false, "rmdir %s/dtrain-topo-%u", base, uid), 0);
    assert_int_equal(run_sh(true, "ln -s %s/victim-dir %s/dtrain-topo-%u", base, base, uid), 0);
    assert_false(load_through_cache(base));
    assert_false(load_through_cache(base));
    assert_int_equal(run_sh(false, "test -z \"$(ls -A %s/victim-dir)\" && test -L %s/dtrain-topo-%u", base, base, uid), 0);
    assert_int_equal(tu_remove_tree(base), 0);
}

/* Inside our own directory (which only we can write) links and loose modes are refused too. */
static void test_cache_never_follows_links_inside(void **state)
{
    (void)state;
    char base[] = "/tmp/dtrain-test-topolinks-XXXXXX";
    assert_non_null(mkdtemp(base));
    unsigned uid = (unsigned)geteuid();
    assert_false(load_through_cache(base));
    assert_true(load_through_cache(base));
    /* The lock as a symlink: no lock taken through it, the file it names never made. */
    assert_int_equal(run_sh(false, "cd %s/dtrain-topo-%u && for f in *.lock; do rm \"$f\"; ln -s %s/victim-lock \"$f\"; done",
                        base, uid, base), 0);
    assert_false(load_through_cache(base));
    assert_int_equal(run_sh(false, "test ! -e %s/victim-lock", base), 0);
    assert_int_equal(run_sh(false, "rm %s/dtrain-topo-%u/*.lock", base, uid), 0);
    /* The cache as a symlink to a file of ours: not read, not written through; replaced. */
    assert_int_equal(run_sh(false, "echo precious > %s/victim-file && cd %s/dtrain-topo-%u && for f in *.xml; do rm \"$f\"; "
                               "ln -s %s/victim-file \"$f\"; done", base, base, uid, base), 0);
    assert_false(load_through_cache(base));
    assert_int_equal(run_sh(false, "test \"$(cat %s/victim-file)\" = precious && test ! -L %s/dtrain-topo-%u/*.xml",
                        base, base, uid), 0);
    assert_true(load_through_cache(base));
    /* Our directory made writable by the group: refused until it is private again. */
    assert_int_equal(run_sh(false, "chmod 770 %s/dtrain-topo-%u", base, uid), 0);
    assert_false(load_through_cache(base));
    assert_int_equal(run_sh(false, "chmod 700 %s/dtrain-topo-%u", base, uid), 0);
    assert_true(load_through_cache(base));
    assert_int_equal(tu_remove_tree(base), 0);
}

static void test_this_machine_loads(void **state)
{
    (void)state;
    struct topo topo;
    load_or_fail(&topo, NULL);
    assert_true(hwloc_get_nbobjs_by_type(topo.hw, HWLOC_OBJ_PU) >= 1);
    topo_free(&topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_topologies_match_their_readme),
        cmocka_unit_test(test_nic_names_ports_and_kinds),
        cmocka_unit_test(test_gpu_hca_pairs_under_switches),
        cmocka_unit_test(test_nic_kinds_and_tiers_of_a_written_topology),
        cmocka_unit_test(test_cpu_only_node),
        cmocka_unit_test(test_bad_topology_files),
        cmocka_unit_test(test_topology_is_cached_per_node),
        cmocka_unit_test(test_cache_refuses_what_another_user_planted),
        cmocka_unit_test(test_cache_never_follows_links_inside),
        cmocka_unit_test(test_this_machine_loads),
    };
    return cmocka_run_group_tests_name("topology", tests, NULL, NULL);
}
