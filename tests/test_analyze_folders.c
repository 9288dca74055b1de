/* test_analyze_folders.c - the analyzer on the folders and tables people have: a sweep's folder
 * holding the analyzer's own table and plots beside the records, hand-made tables as labs write
 * them (other column names, runtimes in seconds or MM:SS, a spreadsheet's export), values rounded
 * as printed, a gnuplot that fails, and the same records read twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/analyze_util.h"
#include "tests/testutil.h"

/* A sweep's folder: its records, the table made of them, its plots. Reading the folder again
 * gives the same table, not the table plus a "corrected" copy of itself. */
static void test_folder_passes_over_own_outputs(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-folder-XXXXXX", records[4200], moved[128], table[128], plots[128], path[160];
    assert_non_null(mkdtemp(dir));
    clean_records(records, sizeof records);
    snprintf(moved, sizeof moved, "%s/records.jsonl", dir);
    char *text = tu_read_file(records);
    assert_non_null(text);
    assert_int_equal(tu_write_file(moved, text), 0);
    free(text);
    unlink(records);
    struct tu_result first, again, named, plot;
    run_analyze((char *[]){"table", dir, NULL}, &first);
    assert_int_equal(first.status, 0);
    snprintf(table, sizeof table, "%s/table.md", dir);
    assert_int_equal(tu_write_file(table, first.out), 0);
    assert_true(strncmp(first.out, "<!-- dtrain-analyze table", 25) == 0);
    snprintf(plots, sizeof plots, "%s/plots/sweep", dir);
    run_analyze((char *[]){"plot", "-o", plots, dir, NULL}, &plot);
    assert_int_equal(plot.status, 0);
    snprintf(path, sizeof path, "%s-result-table.dat", plots);
    assert_int_equal(access(path, F_OK), -1);   /* the table was not drawn again as a hand-made one */
    run_analyze((char *[]){"table", dir, NULL}, &again);
    assert_int_equal(again.status, 0);
    assert_string_equal(again.out, first.out);
    assert_true(tu_contains(again.err, "passed over"));
    run_analyze((char *[]){"table", table, NULL}, &named);
    assert_int_equal(named.status, 2);
    assert_true(tu_contains(named.err, "table.md: a table dtrain-analyze wrote"));
    tu_result_free(&first), tu_result_free(&again), tu_result_free(&named), tu_result_free(&plot);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* The runs are printed to the second, so their mean is off by up to half a second: a speedup the
 * lab computed from unrounded times (0.65) is not "corrected" to what the rounded ones give
 * (10 / 16 = 0.63); one no rounding explains (0.80) is. */
static void test_no_correction_within_printed_precision(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-precision-XXXXXX", path[128];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/lab.md", dir);
    static const char header[] = "| #Nodes | #GPUs | Epoch | Batchsize | Steps | Runtime | Speedup | Node(s) |\n"
                                 "|---|---|---|---|---|---|---|---|\n"
                                 "| 1 | 1 | 1 | 64 | 100 | 0:00:10 | - | gn01 |\n"
                                 "| 1 | 1 | 1 | 64 | 100 | 0:00:10 | - | gn01 |\n"
                                 "| **1** | **1** | **1** | **64** | **100** | **0:00:10** | **1.00** | **Avg** |\n"
                                 "| 1 | 2 | 1 | 64 | 50 | 0:00:16 | - | gn01 |\n";
    char text[1024];
    const char *given[] = {"0.65", "0.80"};
    for (int i = 0; i < 2; i++) {
        snprintf(text, sizeof text, "%s| **1** | **2** | **1** | **64** | **50** | **0:00:16** | **%s** | **Avg** |\n",
                 header, given[i]);
        assert_int_equal(tu_write_file(path, text), 0);
        struct tu_result r;
        run_analyze((char *[]){"table", path, NULL}, &r);
        assert_int_equal(r.status, 0);
        assert_true((strstr(r.out, "| **0.62** | **Avg** |  |  |") != NULL) == (i == 0));
        assert_true((strstr(r.out, "| **0.62** | **Avg** |  | 0.8 |") != NULL) == (i == 1));
        tu_result_free(&r);
    }
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* gnuplot failing half way (an empty picture, as "x_min should not equal x_max!" left) leaves no
 * file and an error in dtrain's words. */
static void test_failed_plot_leaves_no_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-badplot-XXXXXX", fake[128], prefix[128], records[4200];
    assert_non_null(mkdtemp(dir));
    snprintf(fake, sizeof fake, "%s/bin", dir);
    assert_int_equal(mkdir(fake, 0755), 0);
    snprintf(fake, sizeof fake, "%s/bin/gnuplot", dir);
    assert_int_equal(tu_write_file(fake, "#!/bin/sh\n"
                     ": > \"$(sed -n \"s/^set output '\\(.*\\)'$/\\1/p\" \"$1\" | head -n 1)\"\n"
                     "echo 'x_min should not equal x_max!' >&2\nexit 1\n"), 0);
    assert_int_equal(chmod(fake, 0755), 0);
    char *old_path = strdup(getenv("PATH")), new_path[4200];
    snprintf(new_path, sizeof new_path, "%s/bin:%s", dir, old_path);
    setenv("PATH", new_path, 1);
    snprintf(prefix, sizeof prefix, "%s/out/p", dir);
    clean_records(records, sizeof records);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, records, NULL}, &r);
    setenv("PATH", old_path, 1);
    free(old_path);
    unlink(records);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "no picture is written"));
    struct tu_result listing;
    snprintf(prefix, sizeof prefix, "%s/out", dir);
    assert_int_equal(tu_run((char *[]){"ls", "-A", prefix, NULL}, NULL, &listing), 0);
    assert_string_equal(listing.out, "");   /* no 0-byte PNG, no script, no data */
    tu_result_free(&r), tu_result_free(&listing);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A study of one configuration has one x value: gnuplot's x range must not collapse to it ("x_min
 * should not equal x_max!"): the plot draws its point. */
static void test_one_x_value_draws_a_point(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-onex-XXXXXX", records[128], prefix[128], png[160];
    assert_non_null(mkdtemp(dir));
    snprintf(records, sizeof records, "%s/records.jsonl", dir);
    FILE *f = fopen(records, "w");
    assert_non_null(f);
    write_record(f, 1, 1, 100, 10.0, NULL, NULL);
    write_record(f, 1, 1, 100, 11.0, NULL, NULL);
    fclose(f);
    snprintf(prefix, sizeof prefix, "%s/plots/one", dir);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, records, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "x_min should not equal x_max"));
    snprintf(png, sizeof png, "%s-speedup.png", prefix);
    struct stat st;
    assert_int_equal(stat(png, &st), 0);
    assert_true(st.st_size > 1000);
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* Runs table on tests/fixtures/tables/NAME. */
static void table_of_fixture(const char *name, struct tu_result *r)
{
    char path[4200];
    fixture(path, sizeof path, name);
    run_analyze((char *[]){"table", path, NULL}, r);
}

/* Labs' own column names and units; no Speedup column, no Avg rows; absent columns print "-". */
static void test_lab_tables_as_labs_write_them(void **state)
{
    (void)state;
    struct tu_result r;
    table_of_fixture("lab.md", &r);   /* Nodes | GPUs/node | Batch size | Time (s) | Hosts */
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| **2** | **2** | **-** | **64** | **-** | **0:00:26.5** | **3.77** | **Avg** |"));
    assert_null(strstr(r.err, "read as seconds"));   /* the header said (s) */
    tu_result_free(&r);
    table_of_fixture("lab-mmss.csv", &r);   /* num_nodes,gpus_per_node,epochs,wall_time as M:SS */
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "| **2** | **1** | **1** | **-** | **-** | **0:00:51.8** | **1.93** | **Avg** |"));
    tu_result_free(&r);
    table_of_fixture("lab-minutes.csv", &r);   /* Time (min) */
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "**0:05:30.0** | **1.82** | **Avg** |"));
    tu_result_free(&r);
}

/* A table without Steps or Batchsize gives no samples: its speedups are drawn, no throughput of zeros. */
static void test_plot_of_a_table_without_samples(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-labplot-XXXXXX", path[4200], prefix[128], picture[160];
    assert_non_null(mkdtemp(dir));
    fixture(path, sizeof path, "lab.md");
    snprintf(prefix, sizeof prefix, "%s/lab", dir);
    struct tu_result r;
    run_analyze((char *[]){"plot", "-o", prefix, path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.err, "empty y range"));
    assert_true(tu_contains(r.out, "no throughput: the input gives no samples"));
    snprintf(picture, sizeof picture, "%s-speedup.png", prefix);
    assert_int_equal(access(picture, F_OK), 0);
    snprintf(picture, sizeof picture, "%s-throughput.png", prefix);
    assert_int_equal(access(picture, F_OK), -1);
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* A spreadsheet's "CSV UTF-8" export in a decimal-comma locale: a byte-order mark, CRLF, ';'. Its
 * empty and its malformed cell are told apart, the runtimes' unit said, the group with an unread
 * run reported incomplete rather than averaged silently. */
static void test_spreadsheet_export(void **state)
{
    (void)state;
    struct tu_result r;
    table_of_fixture("lab-excel.csv", &r);
    assert_int_equal(r.status, 2);   /* rows could not be read: the table is of the rest */
    assert_true(tu_contains(r.err, "lab-excel.csv:5: Runtime (column 4) is empty"));
    assert_true(tu_contains(r.err, "lab-excel.csv:6: Runtime (column 4) \"abc\" is not H:MM:SS, MM:SS, D-HH:MM:SS or a "
                                   "number of seconds"));
    assert_true(tu_contains(r.err, "runtimes without a unit read as seconds"));
    assert_true(tu_contains(r.out, "| **1** | **1** | **-** | **64** | **-** | **0:01:40** | **1.00** | **Avg** |"));
    assert_true(tu_contains(r.out, "| **Avg, incomplete** |"));
    assert_true(tu_contains(r.out, "Incomplete: 1 x 2, its run on line 5 could not be read"));
    tu_result_free(&r);
}

/* An audit that could read no row is no audit: exit 2, not "0 findings". */
static void test_audit_of_nothing_fails(void **state)
{
    (void)state;
    char path[4200];
    fixture(path, sizeof path, "lab-unreadable.md");
    struct tu_result r;
    run_analyze((char *[]){"audit", path, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "lab-unreadable.md:3: #Nodes (column 1) \"one\" is not a whole number"));
    assert_true(tu_contains(r.err, "nothing audited"));
    tu_result_free(&r);
}

/* A notebook's headings as labs write them: "VGG16-3090-64batch_size" names a model on a GPU known
 * by digits alone (not a node "VGG16" with a figure 3090), "8-GPUs" a count, "124M" a model's size;
 * runs whose headings name no node are compared with their model's 1-GPU run. */
static void test_lab_notebook_headings(void **state)
{
    (void)state;
    char path[4200];
    fixture(path, sizeof path, "lab-notebook.md");
    struct tu_result r;
    run_analyze((char *[]){"throughput", path, NULL}, &r);
    assert_int_equal(r.status, 0);
    assert_true(tu_contains(r.out, "VGG16-4x3090-64batch_size | VGG16 | - | 4 |"));
    assert_true(tu_contains(r.out, "VGG16-3090-64batch_size | VGG16 | - | 1 |"));
    assert_true(tu_contains(r.out, "| 3.49x |"));    /* 420.5 / 120.5 */
    assert_true(tu_contains(r.out, "ResNet-50-2xA100-256batch | ResNet-50 | - | 2 |"));
    assert_true(tu_contains(r.out, "GPT2-124M-8-GPUs | GPT2-124M | - | 8 |"));
    assert_true(tu_contains(r.out, "| 7.14x |"));    /* 5000 / 700 */
    tu_result_free(&r);
}

/* A crash's zero-filled tail before a record (the file's first bytes NUL) and a FIFO in the folder:
 * the record is read and the NUL bytes named, the FIFO passed over (it would hang a reader), a
 * FIFO named on the command line refused. */
static void test_nul_bytes_and_fifos(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-nul-XXXXXX", records[128], fifo[128];
    assert_non_null(mkdtemp(dir));
    snprintf(records, sizeof records, "%s/records.jsonl", dir);
    FILE *f = fopen(records, "w");
    assert_non_null(f);
    fwrite("\0\0\0\0\0\0\0\0", 1, 8, f);
    write_record(f, 1, 1, 100, 10.0, NULL, NULL);
    fclose(f);
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    struct tu_result r;
    run_analyze((char *[]){"table", dir, NULL}, &r);
    assert_true(tu_contains(r.err, "records.jsonl:1: 8 NUL bytes"));
    assert_true(tu_contains(r.err, "table: 1 runs read"));
    assert_true(tu_contains(r.out, "| 1 | 1 | "));
    tu_result_free(&r);
    run_analyze((char *[]){"table", fifo, NULL}, &r);
    assert_int_equal(r.status, 2);
    assert_true(tu_contains(r.err, "pipe: not a regular file or a directory"));
    tu_result_free(&r);
    assert_int_equal(tu_remove_tree(dir), 0);
}

/* The same records read twice (a file and its backup copy; a file and the folder it is in) used to
 * be counted and averaged twice. Now each run counts once, and the copies are said. */
static void test_the_same_record_read_twice_counts_once(void **state)
{
    (void)state;
    char dir[] = "/tmp/dtrain-test-copies-XXXXXX", records[4200], file[128], backup[128];
    assert_non_null(mkdtemp(dir));
    clean_records(records, sizeof records);
    snprintf(file, sizeof file, "%s/runs.jsonl", dir);
    snprintf(backup, sizeof backup, "%s/runs.jsonl.bak", dir);
    char *text = tu_read_file(records);
    assert_non_null(text);
    assert_int_equal(tu_write_file(file, text), 0);
    assert_int_equal(tu_write_file(backup, text), 0);
    free(text);
    unlink(records);
    struct tu_result once, folder, twice;
    run_analyze((char *[]){"table", file, NULL}, &once);
    assert_int_equal(once.status, 0);
    run_analyze((char *[]){"table", dir, NULL}, &folder);   /* the file and its backup */
    assert_int_equal(folder.status, 0);
    assert_string_equal(folder.out, once.out);
    assert_true(tu_contains(folder.err, "the same record as one read before (a copy): counted once"));
    /* a job's pre-flight report beside the records (pretty-printed JSON, not a record): passed
     * over, not read line by line as broken records (make methods-demo's plot failed on them) */
    unlink(backup);
    snprintf(backup, sizeof backup, "%s/check-34.json", dir);
    assert_int_equal(tu_write_file(backup, "{\n \"format\": \"dtrain-check\",\n \"nodes\": [\n  {\n   \"node\": \"gn01\"\n  }\n ]\n}\n"), 0);
    struct tu_result plot;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s/plot", dir);
    run_analyze((char *[]){"plot", "-o", prefix, dir, NULL}, &plot);
    assert_int_equal(plot.status, 0);
    assert_false(tu_contains(plot.err, "check-34.json:"));
    tu_result_free(&plot);
    run_analyze((char *[]){"table", file, dir, NULL}, &twice);   /* the file, and the folder it is in */
    assert_int_equal(twice.status, 0);
    assert_string_equal(twice.out, once.out);
    assert_true(tu_contains(twice.err, "runs.jsonl: read already"));
    assert_true(tu_contains(twice.err, "files without records passed over"));
    tu_result_free(&once), tu_result_free(&folder), tu_result_free(&twice);
    assert_int_equal(tu_remove_tree(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_folder_passes_over_own_outputs),
        cmocka_unit_test(test_no_correction_within_printed_precision),
        cmocka_unit_test(test_failed_plot_leaves_no_file),
        cmocka_unit_test(test_one_x_value_draws_a_point),
        cmocka_unit_test(test_lab_tables_as_labs_write_them),
        cmocka_unit_test(test_spreadsheet_export),
        cmocka_unit_test(test_plot_of_a_table_without_samples),
        cmocka_unit_test(test_audit_of_nothing_fails),
        cmocka_unit_test(test_lab_notebook_headings),
        cmocka_unit_test(test_nul_bytes_and_fifos),
        cmocka_unit_test(test_the_same_record_read_twice_counts_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
