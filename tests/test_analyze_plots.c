/* test_analyze_plots.c - dtrain-analyze throughput (trainer logs as rows, records as method
 * tables) and plot (gnuplot pictures of records, result tables, notebooks and method tables). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <math.h>

#include "tests/analyze_util.h"
#include "tests/testutil.h"


static void test_throughput_reads_any_names(void **state)
{
    (void)state;
    char dir[4200];
    tu_fixture(dir, sizeof dir, "logs-names");
    struct tu_result r;
    run_analyze((char *[]){"throughput", dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| Single node 1 GPUs / VGG19-4090 / lm6-100.5 | VGG19 | lm6 | 1 |"));
    assert_true(tu_contains(r.out, "| Single node 1 GPUs / ViT-B16-H100-SXM / gn01-50.0 | ViT-B16 | gn01 | 1 |"));
    assert_true(tu_contains(r.out, "| Single node 1 GPUs / ResNet50-A100 / gn02-70.0 | ResNet50 | gn02 | 1 |"));
    /* the 2-GPU runs find their 1-GPU baselines under the names read right */
    assert_true(tu_contains(r.out, "| VGG19 | lm6 | 2 | 1 | 190.00 | 190.0 | 1.89x | 94.5% |"));
    assert_true(tu_contains(r.out, "| ViT-B16 | gn01 | 2 | 1 | 95.00 | 95.0 | 1.90x | 95.0% |"));
    assert_true(tu_contains(r.out, "slurm-77.out:3 | - | resnet18 | gn[01-02] | 8 | 2 | 810.50 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", dir, "--format", "csv", NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Log,Line,Run,Model,Node(s),GPUs,Steps logged,Peak data/sec,Headline,Headline is peak,"
                                   "Speedup,Efficiency,Epochs,Final accuracy\n"));
    assert_true(tu_contains(r.out, "\"VGG19\",\"lm6\",2,1,190.00,190.0,yes,1.8905,0.9453,0,\n"));
    tu_result_free(&r);
    char methods[4200];
    tu_fixture(methods, sizeof methods, "methods");
    run_analyze((char *[]){"throughput", "-f", "csv", methods, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "Model,BS,Tag,Method,Baseline,1 GPU mean,1 GPU std,2 GPUs mean,2 GPUs std"));
    assert_true(tu_contains(r.out, "\"lenet\",64,\"1gbit\",\"bsp-a2a\",1005.0,1005.000,7.071,1950.000,50.000"));
    assert_null(strstr(r.out, "+-"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", "--help", NULL}, &r);
    assert_true(tu_contains(r.out, "Usage: dtrain-analyze throughput"));
    assert_null(strstr(r.out, "Usage: dtrain-analyze table"));
    tu_result_free(&r);
}

static void test_throughput_of_logs(void **state)
{
    (void)state;
    char dir[4200];
    tu_fixture(dir, sizeof dir, "logs");
    struct tu_result r;
    run_analyze((char *[]){"throughput", dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    /* srun --label prefixes, both Step spellings, ". Test accuracy", peak not the last Step */
    assert_true(tu_contains(r.out, "slurm-1234.out:2 | - | - | - | 1 | 4 | 113.32 | - | - | - | 2 | 0.9186 |"));
    /* the path of headings names the run; a heading without log lines is no run */
    assert_true(tu_contains(r.out, "notebook.md:3 | Single node, MNIST / ResNet18-2x2080ti-128batch_size / "
                                   "lm1-160.70-1.96x, baseline: 81.84 | ResNet18 | lm1 | 2 | 2 | 160.70 | 160.70 | - | - | 1 | 0.8801 |"));
    assert_null(strstr(r.out, "no-log-lines"));
    assert_true(tu_contains(r.out, "notebook.md:8 | Single node, MNIST / ResNet50-2x2080ti-128batch_size | ResNet50 | - | 2 | 1 | 60.44 | - | - | - | 0 | - |"));
    tu_result_free(&r);

    char seed[4200];
    bool shared_missing = false;   /* the reference logs' checks are skipped without ../shared */
    if (tu_shared(seed, sizeof seed, "seeds/000_685292da7d634812.txt")) {   /* the reference experiments' notebook: each heading's figure is its peak Step value */
        run_analyze((char *[]){"throughput", seed, NULL}, &r);
        assert_true(tu_contains(r.out, "ResNet18-2080ti / lm6-120.7 | ResNet18 | lm6 | 1 | 9 | 120.70 | 120.7 | 1.00x | 100.0% | 4 | 0.9352 |"));
        /* "## lm1-41.9" sits at the model's level: still ResNet50's lm1 baseline */
        assert_true(tu_contains(r.out, "ResNet50-2080ti / lm1-41.9 | ResNet50 | lm1 | 1 | 9 | 41.90 | 41.9 | 1.00x |"));
        /* "# Single node 2 GPUs / ## ResNet101 / ### lm1-...": speedup against lm1's own 1-GPU run */
        assert_true(tu_contains(r.out, "ResNet101 / lm1-41.82-1.92x, baseline: 21.73 | ResNet101 | lm1 | 2 | 9 | 41.82 | 41.82 | "
                                       "1.92x | 96.2% | 4 | 0.9703 |"));
        assert_true(tu_contains(r.out, "lm6-198.38-1.648x, baseline: 120.7 | ResNet18 | lm6 | 2 | 9 | 198.38 | 198.38 | 1.64x | 82.2% |"));
        tu_result_free(&r);
    } else {
        shared_missing = true;
    }
    if (tu_shared(seed, sizeof seed, "seeds/001_3998dbd99d4aa271.txt")) {   /* node mixes; the Transformer's own baselines */
        run_analyze((char *[]){"throughput", seed, NULL}, &r);
        assert_true(tu_contains(r.out, "| ResNet18 | lm1 | 3 | 9 | 241.89 | 241.8, not the peak | 2.96x | 98.5% |"));
        assert_true(tu_contains(r.out, "128batch_size, 339.75-4.15x, baseline: 81.84 | ResNet18 | lm1+lm6 | 5 | 9 | 339.75 | "
                                       "339.75 | 4.15x | 83.0% |"));
        assert_true(tu_contains(r.out, "lm1-305.78-3.73x, baseline: 81.82 | Transformer 6 layer | lm1 | 4 | 9 | 305.78 | "
                                       "305.78 | 3.74x | 93.4% |"));
        /* the headline figures that are not their peaks are flagged */
        assert_true(tu_contains(r.out, "| 122.41 | 122.25, not the peak |"));
        assert_true(tu_contains(r.out, "| 231.70 | 231.64, not the peak |"));
        tu_result_free(&r);
    } else {
        shared_missing = true;
    }
    /* records: the method table, mean +- sample std of each model/batch/tag/method at each rank count */
    tu_fixture(dir, sizeof dir, "methods");
    char ps_dir[4096];
    tu_fixture(ps_dir, sizeof ps_dir, "methods-ps");
    run_analyze((char *[]){"throughput", dir, ps_dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| Model | BS | Tag | Method | Baseline | 1 GPU | 2 GPUs | 4 GPUs |"));
    assert_true(tu_contains(r.out, "| lenet | 64 | 1gbit | bsp-a2a | 1005.0 | 1005.000 +- 7.07 | 1950.000 +- 50.00 | "
                                   "2500.000 +- 0.00 |"));
    assert_true(tu_contains(r.out, "| lenet | 64 | 10gbit | bsp-a2a | 1020.0 | 1020.000 +- 0.00 | 1990.000 +- 0.00 | "
                                   "3920.000 +- 28.28 |"));
    /* parameter servers: the columns count workers, not the server ranks (3 ranks with one server;
     * 4 ranks on 2 nodes, colocated: 2 workers) */
    assert_true(tu_contains(r.out, "| lenet | 64 | 1gbit | bsp-ps (servers=1 partition=4096000) | 1005.0 | - | "
                                   "1900.000 +- 0.00 | - |"));
    assert_true(tu_contains(r.out, "| lenet | 64 | 1gbit | bsp-ps (servers=colocated partition=4096000) | 1005.0 | - | "
                                   "1800.000 +- 0.00 | - |"));
    assert_true(tu_contains(r.err, "throughput: 0 log runs, 12 records read, 0 not completed (left out), 0 lines skipped"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", "--format", "csv", dir, NULL}, &r);
    assert_true(tu_contains(r.out, "\"lenet\",64,\"1gbit\",\"bsp-a2a\",1005.0,1005.000,7.071,1950.000,50.000,2500.000,0.000\n"));
    tu_result_free(&r);
    run_analyze((char *[]){"throughput", "--format", "xml", dir, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--format \"xml\": expected md or csv"));
    tu_result_free(&r);

    run_analyze((char *[]){"throughput", "/nonexistent.log", NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "/nonexistent.log: No such file or directory"));
    tu_result_free(&r);
    if (shared_missing)
        tu_skip("the reference trainer logs (../shared/seeds) are not here: only the fixtures' part ran");
}

/* Runs a plot command that must succeed and returns what it wrote to PREFIX.EXT (free it). */
static char *plots_drawn(char **args, const char *prefix, const char *ext)
{
    struct tu_result r;
    run_analyze(args, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    char path[4300];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    char *text = tu_read_file(path);
    assert_non_null(text);
    return text;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* A real PNG: its signature, the 800x500 the script asks for, and more bytes than a blank canvas
 * compresses to (about 2 KB); the SVG holds the ideal line and the series. */
static void test_plot_renders_pictures(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-XXXXXX", prefix[64], path[128], records[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/plots/scaling", dir);   /* the folder plots is made */
    clean_records(records, sizeof records);
    struct tu_result r;
    run_analyze((char *[]){"plot", "--output", prefix, records, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    const char *pictures[] = {"speedup.png", "throughput.png"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s-%s", prefix, pictures[i]);
        unsigned char head[24];
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        assert_int_equal(fread(head, 1, sizeof head, f), sizeof head);
        fclose(f);
        assert_memory_equal(head, "\x89PNG\r\n\x1a\n", 8);
        assert_int_equal((head[16] << 24) | (head[17] << 16) | (head[18] << 8) | head[19], 900);
        assert_int_equal((head[20] << 24) | (head[21] << 16) | (head[22] << 8) | head[23], 500);
        assert_true(file_size(path) > 8000);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s-speedup.svg", prefix);
    char *svg = tu_read_file(path);
    assert_non_null(svg);
    assert_true(tu_contains(svg, "ideal") && tu_contains(svg, "1 GPU per node") && tu_contains(svg, "<path"));
    free(svg);
    const char *leftovers[] = {"speedup.svg", "throughput.svg"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s-%s", prefix, leftovers[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s.dat", prefix);
    char *data = tu_read_file(path);
    assert_non_null(data);
    assert_true(tu_contains(data, "# 1 GPU per node\n1 1.0000 1000.00 1 0.0909 0.00\n2 2.0000 1000.00 2 0.2571 0.00\n"));
    free(data);
    unlink(path);
    unlink(records);
    snprintf(path, sizeof path, "%s.gp", prefix);
    unlink(path);

    assert_int_equal(tu_remove_tree(dir), 0);
}

/* Job sizes that double over 8x or more get a log2 axis (4 and 256 GPUs apart as 2048 and 8192). */
static void test_plot_axis_doubles_where_sizes_do(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-XXXXXX", prefix[64], path[128], table[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/total", dir);
    tu_fixture(table, sizeof table, "tables/total-gpus.md");
    struct tu_result r;
    run_analyze((char *[]){"plot", "--output", prefix, "--baseline", "1x4", table, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    snprintf(path, sizeof path, "%s.gp", prefix);
    char *script = tu_read_file(path);
    assert_non_null(script);
    assert_true(tu_contains(script, "set logscale x 2\nset xrange [3.2:10240]"));
    assert_true(tu_contains(script, "set xtics (4, 256, 2048, 8192)"));
    free(script);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A line per tag (two link speeds) and per method, each against its own baseline runs. */
static void test_plot_series_by_tag_and_method(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-XXXXXX", prefix[64], path[128], records[4200];
    assert_non_null(mkdtemp(dir));
    struct tu_result r;
    char *data, *script;
    FILE *out;
    /* one line per tag (two link speeds), each against its own 1-rank runs */
    snprintf(prefix, sizeof prefix, "%s/links", dir);
    tu_fixture(records, sizeof records, "methods");
    data = plots_drawn((char *[]){"plot", "--series", "tag", "--output", prefix, records, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# 1gbit\n1 1.0000 1015.05 1 0.0070 7.14\n2 1.9395 1969.50 2 0.0497 50.50\n"
                                  "4 2.4876 2525.00 4 0.0000 0.00\n"));
    assert_true(tu_contains(data, "# 10gbit\n1 1.0000 1030.20 1 0.0000 0.00\n2 1.9510 2009.90 2 0.0000 0.00\n"
                                  "4 3.8430 3959.20 4 0.0277 28.57\n"));
    free(data);
    /* a series keeps its colour in both figures (the ideal line takes none of theirs), the key
     * sits outside the data, the repeats' spread is drawn */
    snprintf(path, sizeof path, "%s.gp", prefix);
    script = tu_read_file(path);
    assert_non_null(script);
    assert_true(tu_contains(script, "set key outside"));
    assert_true(tu_contains(script, "index 1 using 1:2:5 with yerrorlines linetype 2 pointtype 7 title '10gbit'"));
    assert_true(tu_contains(script, "index 1 using 1:3:6 with yerrorlines linetype 2 pointtype 7 title '10gbit'"));
    assert_true(tu_contains(script, "set xlabel 'GPUs (nodes x GPUs per node)'"));
    assert_true(tu_contains(script, "set xrange [0.5:4.5]"));   /* 1-4 GPUs: a linear axis */
    assert_true(tu_contains(script, "set ylabel 'speedup over the baseline (bars: +-1 std of the runs)'"));
    assert_true(tu_contains(script, "set ylabel 'data/sec: peak rate, mean of the runs (bars: +-1 std)'"));
    assert_true(tu_contains(script, "noenhanced"));   /* a '_' in a name is not a subscript */
    free(script);
    const char *made[] = {".dat", ".gp", "-speedup.png", "-speedup.svg", "-throughput.png", "-throughput.svg"};
    for (int i = 0; i < 6; i++) {
        snprintf(path, sizeof path, "%s%s", prefix, made[i]);
        assert_true(file_size(path) > 0);
        unlink(path);
    }
    run_analyze((char *[]){"plot", "--series", "color", "--output", prefix, records, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "--series \"color\": expected gpus-per-node, tag or method"));
    tu_result_free(&r);

    /* a line per method: one run on the baseline's one GPU serves every method (the reference comparison's one
     * Baseline), and a parameter server's job counts its workers, not its server ranks */
    char methods[4200];
    snprintf(methods, sizeof methods, "%s/methods.jsonl", dir);
    out = fopen(methods, "w");
    assert_non_null(out);
    write_record2(out, 1, 1, 1876, 100, "comm", json_string("bsp-a2a"), NULL, NULL);
    write_record2(out, 2, 2, 938, 50, "comm", json_string("wfbp-a2a"), NULL, NULL);
    write_record2(out, 3, 3, 938, 80, "comm", json_string("bsp-ps"), "comm_options", json_string("servers=1"));
    fclose(out);
    snprintf(prefix, sizeof prefix, "%s/m", dir);
    data = plots_drawn((char *[]){"plot", "--series", "method", "-o", prefix, methods, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# wfbp-a2a\n1 1.0000 1000.00 1 0.0000 0.00\n2 2.0000 "));
    assert_true(tu_contains(data, "# bsp-ps\n1 1.0000 1000.00 1 0.0000 0.00\n2 1.2500 "));   /* 2 workers, 100 / 80 */
    free(data);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* The x axis says what the runs were: CPU ranks, or emulated GPUs. */
static void test_plot_names_ranks_and_emulated_gpus(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-XXXXXX", prefix[64];
    assert_non_null(mkdtemp(dir));
    struct tu_result r;
    char *script;
    /* CPU ranks are called so; runs of two experiments in one line are refused, --where picks */
    char cpu[4200];
    snprintf(cpu, sizeof cpu, "%s/cpu.jsonl", dir);
    FILE *out = fopen(cpu, "w");
    assert_non_null(out);
    write_record(out, 1, 1, 1876, 100, "gpus_per_node", json_integer(0));
    write_record(out, 1, 2, 938, 50, "gpus_per_node", json_integer(0));
    write_record(out, 1, 2, 938, 40, "batch_per_replica", json_integer(128));
    fclose(out);
    snprintf(prefix, sizeof prefix, "%s/cpu", dir);
    run_analyze((char *[]){"plot", "-o", prefix, cpu, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "the records mixes experiments"));
    assert_true(tu_contains(r.err, "--where KEY=VALUE"));
    tu_result_free(&r);
    script = plots_drawn((char *[]){"plot", "-o", prefix, cpu, "--where", "batch=64", NULL}, prefix, "gp");
    assert_true(tu_contains(script, "set xlabel 'CPU ranks (nodes x ranks per node)'"));
    assert_true(tu_contains(script, "title '2 ranks per node'"));
    free(script);
    /* emulated runs (--emulate: CPU ranks standing for GPUs) are drawn as emulated GPUs */
    snprintf(cpu, sizeof cpu, "%s/emulated.jsonl", dir);
    out = fopen(cpu, "w");
    assert_non_null(out);
    write_record2(out, 1, 1, 1876, 100, "gpus_per_node", json_integer(0), "emulation",
                  json_string("profile=r50.json rate=253.1 dilate=16"));
    write_record2(out, 2, 2, 938, 50, "gpus_per_node", json_integer(0), "emulation",
                  json_string("profile=r50.json rate=253.1 dilate=16"));
    fclose(out);
    snprintf(prefix, sizeof prefix, "%s/emulated", dir);
    script = plots_drawn((char *[]){"plot", "-o", prefix, cpu, NULL}, prefix, "gp");
    assert_true(tu_contains(script, "set xlabel 'emulated GPUs (nodes x GPUs per node)'"));
    free(script);

    assert_int_equal(tu_remove_tree(dir), 0);
}

/* The documents people already have, drawn: a hand-made table (from its corrected means) and,
 * where ../shared is present, the reference experiments' notebooks of trainer logs and their method table. */
static void test_plot_draws_tables_notebooks_and_method_tables(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plotdocs-XXXXXX", prefix[128], path[256], table[4200];
    assert_non_null(mkdtemp(dir));
    fixture(table, sizeof table, "clean.md");
    snprintf(prefix, sizeof prefix, "%s/table", dir);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, table, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    snprintf(path, sizeof path, "%s.dat", prefix);
    char *data = tu_read_file(path);
    assert_non_null(data);
    assert_true(tu_contains(data, "# 1 node\n1 1.0000 "));
    assert_true(tu_contains(data, "# 1 GPU per node\n1 1.0000 "));
    free(data);

    const char *shared = getenv("DTRAIN_SHARED");
    if (!shared) {
        assert_int_equal(tu_remove_tree(dir), 0);
        tu_skip("the reference experiments (../shared/seeds) are not here");
    }
    char seed[4200];
    snprintf(seed, sizeof seed, "%s/seeds/000_685292da7d634812.txt", shared);
    snprintf(prefix, sizeof prefix, "%s/000", dir);
    data = plots_drawn((char *[]){"plot", "-o", prefix, seed, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# ResNet18 on lm6\n1 1.0000 120.70 1 0.0000 0.00\n2 1.6436 198.38 1"));
    free(data);

    snprintf(seed, sizeof seed, "%s/seeds/001_3998dbd99d4aa271.txt", shared);
    snprintf(prefix, sizeof prefix, "%s/001", dir);
    run_analyze((char *[]){"plot", "-o", prefix, seed, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);

    snprintf(seed, sizeof seed, "%s/seeds/004_fa976a34413c7ab4.txt", shared);
    snprintf(prefix, sizeof prefix, "%s/004", dir);
    run_analyze((char *[]){"plot", "-o", prefix, seed, NULL}, &r);
    assert_int_equal(r.status, 0);
    tu_result_free(&r);
    /* a chart per model and link, a line per method, the values at the GPU counts the Baselines
     * support (the header's extra "1 GPU" column read as the audit reads it) */
    snprintf(path, sizeof path, "%s-resnet-50-64-10gbe-with-tcp-ip.dat", prefix);
    data = tu_read_file(path);
    assert_non_null(data);
    assert_true(tu_contains(data, "# BSP-A2A\n4 3.6548 925.02 0 0.0175 4.42\n8 5.0663 1282.28"));
    assert_true(tu_contains(data, "# MG-WFBP\n"));
    free(data);
    snprintf(path, sizeof path, "%s-bert-large-8-100gbib-with-rdma-speedup.png", prefix);
    assert_true(file_size(path) > 8000);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A hand-made trace of two steps (tests/fixtures/timeline): step 1 of 10 ms (forward 3, backward
 * 5, exchange wait 1, update 1; transfers at 4, 6 and 8 ms, backward ending at 8: 4 ms under way
 * during backward), step 2 of 12 ms (3, 6, 2, 1; transfers at 27 and 28.5 ms, backward ending at
 * 29: 2 ms). The means, and a file that is no trace. */
/* predict on the three-layer profile test_exchange.c works out by hand (2 workers, a link of
 * 1000 bytes/s and 0.5 s; one server, partitions of 2500 bytes): every method's step to 1e-9
 * through the command line (options after the profile), and bad input refused with exit 2. With
 * 2500-byte partitions ByteScheduler's allreduce cuts layer 1 in two (2500 + 500): layer 1's sums
 * are back at 15 instead of 14, and the period grows from 13.5 to 14.5. */
/* A lab's notebook with runs across two nodes named by node lists ("gpu3:2x3090, gpu7:2x3090"):
 * a chart line per node and one for the pair, whose speedup is against the slower node's 1-GPU
 * run (the pair runs at its pace); and a method table whose header has a GPU column too many,
 * read shifted as the audit reads it (its unreadable cell said, exit 2). */
static void test_plot_of_a_two_node_notebook_and_a_shifted_method_table(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-nb-XXXXXX", prefix[4200], notebook[4200], methods[4200];
    assert_non_null(mkdtemp(dir));
    tu_fixture(notebook, sizeof notebook, "notebooks/two-nodes.md");
    snprintf(prefix, sizeof prefix, "%s/nb", dir);
    char *data = plots_drawn((char *[]){"plot", "-o", prefix, notebook, NULL}, prefix, "dat");
    free(data);
    /* two notebooks: a chart each, named by its file */
    char other[4200];
    tu_fixture(other, sizeof other, "logs/notebook.md");
    snprintf(prefix, sizeof prefix, "%s/nb-two-nodes-md", dir);
    char base[4200];
    snprintf(base, sizeof base, "%s/nb", dir);
    data = plots_drawn((char *[]){"plot", "-o", base, notebook, other, NULL}, prefix, "dat");
    assert_true(tu_contains(data, "# VGG11 on gpu7\n1 1.0000 61.50 1 0.0000 0.00\n2 1.9333 118.90 1"));
    assert_true(tu_contains(data, "# VGG11 on gpu3+gpu7\n2 1.9935 122.60 2 0.0000 0.00\n4 3.9154 240.80 2"));
    free(data);
    tu_fixture(methods, sizeof methods, "tables/methods-broken.md");
    snprintf(prefix, sizeof prefix, "%s/methods", dir);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, methods, NULL}, &r);
    assert_int_equal(r.status, 2);
    tu_result_free(&r);
    snprintf(prefix, sizeof prefix, "%s/methods.dat", dir);
    data = tu_read_file(prefix);
    assert_non_null(data);   /* "1 GPU" is the extra column: 1890.5 stands under 2 GPUs */
    assert_true(tu_contains(data, "# BSP-A2A\n2 1.8905 1890.50 0 0.0040 4.00\n4 3.6002 3600.25"));
    free(data);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A sweep's folder: its records, and beside them the jobs' .out and step logs. The records' chart
 * is drawn once; the logs (the same runs) are passed over and said so (a 2-node sweep drew 54
 * pictures, one set a log, "1 GPU, mlp on -"). A folder of logs alone is still drawn. */
static void test_plot_of_a_sweep_folder_draws_its_records_once(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-plot-sweep-XXXXXX", records[4200], log[4200], copy[4300], prefix[4300];
    assert_non_null(mkdtemp(dir));
    clean_records(records, sizeof records);
    snprintf(copy, sizeof copy, "%s/records.jsonl", dir);
    assert_int_equal(rename(records, copy), 0);
    tu_fixture(log, sizeof log, "logs/slurm-1234.out");
    char *text = tu_read_file(log);
    assert_non_null(text);
    for (int job = 1; job <= 3; job++) {
        snprintf(copy, sizeof copy, "%s/dtrain-%d.out", dir, job);
        FILE *f = fopen(copy, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
    }
    free(text);
    snprintf(prefix, sizeof prefix, "%s/study", dir);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, dir, NULL}, &r);
    assert_int_equal(r.status, 0);
    int pictures = 0;
    for (const char *p = r.out; (p = strstr(p, "-speedup.png")); p++)
        pictures++;
    assert_int_equal(pictures, 1);
    assert_true(tu_contains(r.out, "/study-speedup.png"));
    assert_true(tu_contains(r.err, "3 log runs found beside the run records passed over"));
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plot_of_a_sweep_folder_draws_its_records_once),
        cmocka_unit_test(test_plot_of_a_two_node_notebook_and_a_shifted_method_table),
        cmocka_unit_test(test_throughput_of_logs),
        cmocka_unit_test(test_throughput_reads_any_names),
        cmocka_unit_test(test_plot_renders_pictures),
        cmocka_unit_test(test_plot_series_by_tag_and_method),
        cmocka_unit_test(test_plot_axis_doubles_where_sizes_do),
        cmocka_unit_test(test_plot_names_ranks_and_emulated_gpus),
        cmocka_unit_test(test_plot_draws_tables_notebooks_and_method_tables),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
