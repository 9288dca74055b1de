/* test_published_forms.c - more forms of published scaling tables, each found on a table that
 * was misread or refused: job sizes in a row's words and ranges, other names for job sizes, job
 * sizes as columns, CSV files, several settings or series under one header, notes beside findings
 * and the reference method comparison as published (tests/fixtures/published/ and tables/). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "formats/scaling_cells.h"
#include "formats/scaling_headers.h"
#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* Job sizes written in a row's words ("8x A100", "2 nodes") under a header that names none
 * ("Configuration", "Setup"), and ranges ("17,900-18,300", "3-3.5 h", "7.6-7.7x"): read, a range as
 * its middle within its ends; a range of a ratio is off only where no value between the ends of
 * what it came from falls in it. Such tables were passed over ("it lacks the GPUs"). */
static void test_counts_in_cells_and_ranges(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/counts-in-cells.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "\"Setup\" the job sizes (its cells count nodes); \"Time to train\" a time, a "
                                   "range as its middle within its ends"));
    assert_true(tu_contains(r.out, "counts-in-cells.md:11: Speedup 7.6-7.7 at 8 GPUs does not follow from Throughput "
                                   "(img/s): 17900-18300 / 2450 = 7.39 (7.304-7.471 with their rounding)"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 8 | 17900-18300 | 7.39 | 0.92 |"));
    assert_true(tu_contains(r.out, "| nodes | Time to train (s) | Speedup | Efficiency |"));
    assert_true(tu_contains(r.out, "| 4 | 10800-12600 | 3.08 | 0.77 |"));
    tu_result_free(&r);
}

/* Job sizes under other names ("# Accelerators", "Cores"; GPUs over "MPI ranks" where a table has
 * both), times in the unit the header names ("(minutes)"), rates per day ("ns/day"). */
static void test_job_sizes_by_other_names(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/other-job-size-names.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, ":8: read as a scaling table: \"# Accelerators\" the job sizes"));
    assert_true(tu_contains(r.out, ":15: read as a scaling table: \"Cores\" the job sizes"));
    assert_true(tu_contains(r.out, ":22: read as a scaling table: \"GPUs\" the job sizes; \"Performance (ns/day)\" a "
                                   "throughput"));
    assert_true(tu_contains(r.out, ":25: Speedup 6.5 at 8 GPUs does not follow from Performance (ns/day): 48 / 7.9 = "
                                   "6.08"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_true(tu_contains(r.out, "| 8 | 7230 | 1.00 | 1.00 |\n| 64 | 1092 | 6.62 | 0.83 |"));   /* minutes, in s */
    tu_result_free(&r);
}

/* Job sizes as the header's columns ("1*8": a node of 8 GPUs; "2 GPUs"), a row a model, the
 * measure said by the line or heading above: each row a scaling table of its own; blank and "OOM"
 * cells did not run; a table of GPU counts without a measure (batch sizes) is none. */
static void test_sizes_as_columns(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/megatron-transposed.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "# megatron bert 345m: Number of samples trained per second"));
    assert_true(tu_contains(r.out, "| 128 | 1149.4 | 25.71 | 0.20 |"));
    assert_true(tu_contains(r.out, "| 32 | 46.9 | 14.94 | 0.47 |"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/sizes-as-columns.md");
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 1 | 28800 | 1.00 | 1.00 |\n| 2 | 15000 | 1.92 | 0.96 |\n| 4 | 7800 | 3.69 | 0.92 |"));
    assert_true(tu_contains(r.out, "# BERT-Base: Training time per epoch (min)"));
    assert_true(tu_contains(r.out, "| 2 | 36000 | 1.00 | 1.00 |\n| 4 | 19200 | 1.88 | 0.94 |"));
    assert_false(tu_contains(r.out, "Global batch"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "read as a scaling table: \"ResNet-50\", a row, its GPUs the header's columns; "
                                   "\"Training time per epoch (min)\" a time"));
    assert_true(tu_contains(r.out, "audit: 2 tables, 5 rows read"));
    tu_result_free(&r);
}

/* Scaling tables saved as CSV (a sweep script's "gpus,time,fps,frames"; a spreadsheet's export
 * with ';' and decimal commas): read as the Markdown ones, line numbers the file's. They were
 * refused ("no run record and no result table"). */
static void test_csv_scaling_tables(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/scaling-results.csv");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 8 | 71.0 | 5.81 | 0.73 |"));    /* 412.6 / 71.0 s */
    assert_true(tu_contains(r.out, "| 8 | 1.141 | 5.82 | 0.73 |"));   /* 1.141 / 0.196 frames/s */
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/scaling-decimal-commas.csv");
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "scaling-decimal-commas.csv:5: Speedup 7.41 at 8 GPUs does not follow from "
                                   "Durchsatz (Bilder/s): 2790.0 / 380.2 = 7.338"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
}

/* What a careful reader says beside the findings: a ratio over another run at the baseline's size
 * (HiFiGAN's two runs at 1 GPU) is a note, not a slip; a ratio cut to its digits is said to be;
 * series under one header (sequence length 128 and 512) each over its own smallest job. */
static void test_notes_beside_findings(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/dle-more-forms.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, ":72: Strong scaling - mixed precision is over line 72's run at 1 GPUs (7596.32), not "
                                   "line 71's (6522.37)"));
    assert_true(tu_contains(r.out, "= 2.295 (2.2950-2.2957 with their rounding); it is the ratio cut to its digits, not "
                                   "rounded"));
    assert_true(tu_contains(r.out, "the rows of Batch size / GPU (TF32 and FP16) 16  and 32, Sequence length 512"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "published/dle-resnet50.md");   /* 7.76 for 7.779 is no cut: a slip */
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(lines_with(r.out, "cut to its digits"), 2);
    assert_false(tu_contains(r.out, "= 7.779 (7.7673-7.7913 with their rounding); it is"));
    tu_result_free(&r);
}

/* The reference method comparison as its authors' repository publishes it: the 1 GPU column a
 * single figure (the baseline), no Baseline column. Every row was skipped ("a value cell is not
 * mean +- std"); now read, the 1-GPU figure each row's baseline. */
static void test_method_table_as_published(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/ddl-benchmarks-methods.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "audit: 1 table, 63 rows read, 0 lines skipped; 14 findings"));
    assert_true(tu_contains(r.out, "methods.md:14: 1015.400 +- 1.26 at 4 GPUs is more than 4 x its Baseline 253.1 "
                                   "(1012.4) by more than its std: 100.3% efficiency"));
    assert_int_equal(lines_with(r.out, "a spread of zero"), 6);
    assert_false(tu_contains(r.out, "253.1 at 1 GPUs: a spread of zero"));   /* one figure: no spread to judge */
    tu_result_free(&r);
}

/* Ranges as cells print them; Slurm's "2-05" (two days five hours) and a falling pair are none. */
static void test_range_cells(void **state)
{
    (void)state;
    struct scaling_cell c = scaling_read_cell("24-26 hours", SCALING_TIME, 1);
    assert_true(fabs(c.value - 25 * 3600) < 1e-6 && fabs(c.unit - 3 * 3600) < 1e-6);
    assert_true(fabs(c.low - 24 * 3600) < 1e-6 && fabs(c.high - 26 * 3600) < 1e-6);
    c = scaling_read_cell("1.7-1.8\xC3\x97", SCALING_ACROSS, 1);   /* x as the multiplication sign */
    assert_true(fabs(c.value - 1.75) < 1e-9 && fabs(c.unit - 0.2) < 1e-9);
    c = scaling_read_cell("3 to 5 min", SCALING_TIME, 1);
    assert_true(fabs(c.value - 240) < 1e-9 && c.low == 180 && c.high == 300);
    c = scaling_read_cell("12\xE2\x80\x93" "14 h", SCALING_TIME, 1);   /* an en dash */
    assert_true(fabs(c.value - 13 * 3600) < 1e-6);
    c = scaling_read_cell("2-05", SCALING_TIME, 1);
    assert_true(c.value == 2 && c.high == 0);
    c = scaling_read_cell("5-3", SCALING_RATE, 1);
    assert_true(c.value == 5 && c.high == 0);
    c = scaling_read_cell("7.2k img/s", SCALING_RATE, 1);   /* k, M, G: thousands and more of a rate */
    assert_true(fabs(c.value - 7200) < 1e-6 && fabs(c.unit - 100) < 1e-6);
    assert_true(fabs(scaling_read_cell("1.2M", SCALING_RATE, 1).value - 1.2e6) < 1e-3);
    assert_true(scaling_read_cell("8 GB/s", SCALING_RATE, 1).value == 8);   /* a unit, not a suffix */
    assert_true(scaling_read_cell("5m", SCALING_TIME, 1).value == 300);     /* a time's m is minutes */
    const char *noun = NULL;
    assert_true(scaling_cell_is_count("**2 GPUs**", &noun) && strcmp(noun, "GPUs") == 0);
    assert_true(scaling_cell_is_count("4 nodes (32 GPUs)", &noun) && strcmp(noun, "nodes") == 0);
    assert_true(scaling_cell_is_count("8x A100", &noun) && strcmp(noun, "GPUs") == 0);
    assert_false(scaling_cell_is_count("2x faster", &noun));
    assert_false(scaling_cell_is_count("1.5 GPUs", &noun));
    assert_false(scaling_cell_is_count("Per-GPU batch", &noun));
}

/* A table whose rows name several settings (benchmarks, machines, releases) is one table a
 * setting: a speedup is one machine's own. GROMACS on three machines gave 5.75x, Puhti's 1 GPU
 * against LUMI's 4; now only LUMI's stmv, at 0.5 and 4 GPUs, in each release. Settings at one job
 * size each: refused, saying so. */
static void test_rows_of_several_settings(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/gromacs-settings.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "# GROMACS (`2023.2-gpu`, `gromacs-stmv.sh`, LUMI): Performance (ns/day)"));
    assert_true(tu_contains(r.out, "| 0.5 | 15.564 | 1.00 | 1.00 |\n| 4 | 78.905 | 5.07 | 0.63 |"));
    assert_true(tu_contains(r.out, "| 0.5 | 16.213 | 1.00 | 1.00 |\n| 4 | 78.376 | 4.83 | 0.60 |"));
    assert_false(tu_contains(r.out, "13.725"));
    tu_result_free(&r);
    /* one setting run again on another day is two series ("mahti" in May and in September) */
    tu_fixture(path, sizeof path, "published/ml-benchmarks-settings.md");
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "# (DDP, synthetic, PyTorch 1.11.0+cu115, mahti): Img/sec"));
    assert_true(tu_contains(r.out, "| 8 | 5502.49 | 7.25 | 0.91 |"));
    assert_true(tu_contains(r.out, "# (DDP, synthetic, PyTorch 2.0.0+cu117, mahti, 2023-05-23): Img/sec"));
    assert_true(tu_contains(r.out, "| 8 | 5950.39 | 7.47 | 0.93 |"));
    assert_true(tu_contains(r.out, "# (DDP, synthetic, PyTorch 2.0.0+cu117, mahti, 2023-09-15): Img/sec"));
    assert_true(tu_contains(r.out, "| 8 | 5824.31 | 7.45 | 0.93 |"));
    assert_false(tu_contains(r.out, "Horovod"));   /* at 8 GPUs only */
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/settings-one-size-each.md");
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "its table on line 6: its rows are of several settings (System, Precision differ), "
                                   "none at two job sizes: no scaling to read"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "settings-one-size-each.md:6: not read as a scaling table: its rows are of several "
                                   "settings"));
    tu_result_free(&r);
}

/* Emphasis inside a cell ("**44** min") is not part of the number or its unit (44 min was read as
 * 44 s: 0.76x at 1024 GPUs); two machines at one job size ("8x A100-40GB", "8x A100-80GB") are two
 * settings, and "NA" a run not made. */
static void test_bold_times_and_machines(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/deepspeed-bold-times.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 1024 | 2640 | 45.30 | 0.71 |"));
    assert_true(tu_contains(r.out, "| 64 | 31248 | 3.83 | 0.96 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "deepspeed-bold-times.md:19: not read as a scaling table: its rows are of several "
                                   "settings (the words of \"GPUs\" differ)"));
    tu_result_free(&r);
}

/* Rates written with k and M ("7.2k img/s", "1.21M img/s"): thousands and millions (they were
 * read as 7.2 and 1.21: every efficiency 0.09%). */
static void test_si_suffixes(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/si-suffixes.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "si-suffixes.md:11: Scaling efficiency 0.960 at 1024 GPUs does not follow from "
                                   "Throughput: 1210000 / 950 / 1024 = 1.2438"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
}

/* A throughput a device ("Throughput (T/s/GPU)") is a share: the job's rate is it times the job
 * size (it was read as a total: 0.95x at 4 times the GPUs). Rows largest job first. */
static void test_a_devices_share(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/llm-foundry-per-gpu.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 512 | 1007 | 3.81 | 0.95 |"));
    assert_true(tu_contains(r.out, "| 512 | 251 | 3.80 | 0.95 |"));
    assert_false(tu_contains(r.out, "| 512 | 1007 | 0.95 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "\"Throughput (T/s/GPU)\" a throughput, a device's share"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/per-device-speedup.md");   /* audit holds a speedup to it so too */
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "per-device-speedup.md:11: Speedup 3.60 at 4 nodes does not follow from "
                                   "Images/sec/GPU: 1400 / 400 = 3.500"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
}

/* A table of nodes and GPUs (8 a node) scales over the GPUs, and a time a step ("s/step") is a time:
 * the nodes were taken for the job sizes and the GPUs and s/step columns for throughputs (speedups
 * of 2.00 and 8.00 where 1.98 and 7.49 were printed). Numbers marked as code ("`1069.2`") are
 * numbers: such a table was refused. */
static void test_nodes_and_gpus_and_times_a_step(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/marinfold-nodes-and-gpus.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 16 | 17.0 | 1.98 | 0.99 |"));
    assert_true(tu_contains(r.out, "| 64 | 4.5 | 7.49 | 0.94 |"));
    tu_result_free(&r);
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "\"GPUs\" the job sizes; \"s/step\" a time"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/code-marked-cells.md");
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "code-marked-cells.md:12: Scaling efficiency 0.80 at 4 GPUs does not follow from "
                                   "Packets/sec: 3301.0 / 1069.2 / 4 = 0.772"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
    static const struct { const char *header; enum scaling_kind kind; } kinds[] = {
        {"s/step", SCALING_TIME}, {"sec/iter", SCALING_TIME}, {"ms per batch", SCALING_TIME},
        {"Seconds per epoch", SCALING_TIME}, {"img/s", SCALING_RATE}, {"samples/sec/GPU", SCALING_RATE},
        {"Steps per hour", SCALING_RATE}, {"A100's memory", SCALING_OTHER}, {"s/s", SCALING_RATE}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char words[256];
        scaling_header_words(kinds[i].header, words, sizeof words);
        if (scaling_header_kind(kinds[i].header, words) != kinds[i].kind)
            fail_msg("\"%s\" read as kind %d, not %d", kinds[i].header, scaling_header_kind(kinds[i].header, words),
                     kinds[i].kind);
    }
    assert_true(scaling_count_rank("GPUs") > scaling_count_rank("# Nodes"));
    assert_true(scaling_count_rank("Nodes") > scaling_count_rank("MPI ranks"));
}

/* Every Speedup over the table's reference run (Baseline at 1 GPU), the multi-GPU rows a setting
 * of their own whose smallest job is 2 GPUs: read as over that run, said once, and a planted slip
 * held to it (they were five false findings, each over the setting's 2-GPU run). */
static void test_ratios_over_a_reference_run(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/diffusers-reference-run.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(lines_with(r.out, "does not follow"), 0);
    assert_true(tu_contains(r.out, "diffusers-reference-run.md:27: Speedup is over line 25's run at 1 GPUs (3675.71), "
                                   "not line 27's (1132.90): the table's reference run"));
    assert_int_equal(lines_with(r.out, "the table's reference run"), 2);
    tu_result_free(&r);
    assert_planted_slip_found("published/diffusers-reference-run.md", "| 5.12x |", "| 5.02x |",
                              ":28: Speedup 5.02 at 4 GPUs does not follow from Wall Time (s): 3675.71 / 718.15 = 5.118");
}

/* A header of two rows (a model a pair of columns over "CPU time (s)" and "CUDA time (s)") is one
 * header, each column's names joined: the table was refused. A setting named by a yes or no cell
 * is named with its column ("Kokkos yes"), not by the word alone. */
static void test_two_row_headers_and_yes_or_no_settings(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/self-explain-two-row-header.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| # of GPUs | Self-Explaining RoBERTa CPU time (s) | Speedup | Efficiency |"));
    assert_true(tu_contains(r.out, "| 4 | 6.016 | 3.99 | 1.00 |"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "published/lammps-ani-yes-no-settings.md");
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(lines_with(r.out, "the rows of Kokkos yes, System Size (atom) 20k, # of Models 1 "), 1);
    assert_int_equal(lines_with(r.out, "the rows of Kokkos no"), 2);
    assert_int_equal(lines_with(r.out, "the rows of yes"), 0);
    tu_result_free(&r);
}

/* Threads count (a CPU's thread sweep); a "scalability" whose values never pass 1 is per thread, an
 * efficiency; "vs 1 thread" and "based on num_thread=1" say what a ratio is over, not which column
 * it is of; a plain speedup beside a time to four digits and a rate to two is the time's, so a slip
 * the rate's rounding would hide is found. */
static void test_threads_scalability_and_the_precise_measure(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/hoscf-threads-scalability.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "hoscf-threads-scalability.md:15: scalability(based on num_thread=1) 0.9861 at 2 "
                                   "threads does not follow from Time/ms: 35338 / 17916.3 / 2 = 0.98620"));
    assert_true(tu_contains(r.out, "it is the ratio cut to its digits"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/precise-measure.md");
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "precise-measure.md:13: speedup vs 1 thread 5.60 at 8 threads does not follow from "
                                   "parallel ms/step: 328.8 / 59.7 = 5.508"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
}

/* Parallel sweeps as reports print them: a camel-cased "AvgTime(s)" is a time and a Mode of words a
 * setting, not a measure; a "Sequential" row is a run on one, the ratios' reference; efficiencies
 * from 2 processes divided by the whole job size are one finding, not one a row (12 findings, 11
 * false, before). */
static void test_parallel_sweeps_as_reports_print_them(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "tables/parallel-sweep-forms.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "\"AvgTime(s)\" a time"));
    assert_true(tu_contains(r.out, "parallel-sweep-forms.md:20: Speedup is over line 19's run at 1 processes"));
    assert_true(tu_contains(r.out, "parallel-sweep-forms.md:30: Speedup is over line 29's run at 1 workers (1.9865)"));
    assert_true(tu_contains(r.out, "parallel-sweep-forms.md:37: \"Efficiency\" is each speedup over 2 processes "
                                   "divided by the whole job size"));
    assert_int_equal(lines_with(r.out, "does not follow"), 0);
    assert_true(tu_contains(r.out, "; 1 finding"));
    tu_result_free(&r);
}

/* A device's share written with a spaced slash ("TFLOPS / GPU") is a share (it was tabled as a
 * total: 0.96x at 8 times the GPUs); runs each labelled by a name of their own, one a job size, are
 * one scaling, not settings run at one size each (the table was refused; its planted slip is found). */
static void test_spaced_shares_and_labelled_runs(void **state)
{
    (void)state;
    char path[4096];
    tu_fixture(path, sizeof path, "published/nemo-tflops-per-gpu.md");
    struct tu_result r;
    run_analyze((char *[]){"table", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| 16 | 1600 | 7.66 | 0.96 |"));
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/labelled-runs.md");
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 1);
    assert_true(tu_contains(r.out, "labelled-runs.md:10: Efficiency 0.75 at 4 GPUs does not follow from Time/Epoch: "
                                   "180 / 64 / 4 = 0.703"));
    assert_int_equal(lines_with(r.out, "does not follow"), 1);
    tu_result_free(&r);
    tu_fixture(path, sizeof path, "tables/settings-one-size-each.md");   /* machines, one of them run twice */
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_true(tu_contains(r.out, "none at two job sizes"));
    tu_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_in_cells_and_ranges),
        cmocka_unit_test(test_job_sizes_by_other_names),
        cmocka_unit_test(test_sizes_as_columns),
        cmocka_unit_test(test_csv_scaling_tables),
        cmocka_unit_test(test_notes_beside_findings),
        cmocka_unit_test(test_method_table_as_published),
        cmocka_unit_test(test_range_cells),
        cmocka_unit_test(test_rows_of_several_settings),
        cmocka_unit_test(test_bold_times_and_machines),
        cmocka_unit_test(test_a_devices_share),
        cmocka_unit_test(test_si_suffixes),
        cmocka_unit_test(test_nodes_and_gpus_and_times_a_step),
        cmocka_unit_test(test_ratios_over_a_reference_run),
        cmocka_unit_test(test_two_row_headers_and_yes_or_no_settings),
        cmocka_unit_test(test_threads_scalability_and_the_precise_measure),
        cmocka_unit_test(test_parallel_sweeps_as_reports_print_them),
        cmocka_unit_test(test_spaced_shares_and_labelled_runs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
