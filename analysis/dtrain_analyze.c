/* dtrain_analyze.c - `dtrain-analyze`: turn result documents into findings (and, with the rest of
 * the analyzer issue, into tables and plots). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "table.h"
#include "version.h"

static const char usage_text[] =
    "Usage: dtrain-analyze COMMAND [options] FILE...\n"
    "\n"
    "Commands:\n"
    "  audit FILE...   recompute hand-made result tables (the seeds' form: #Nodes, #GPUs, Epoch,\n"
    "                  Batchsize, Steps, Runtime, Speedup, Node(s), bold Avg rows) and report,\n"
    "                  with its line, every Avg row that is not the mean, median or a trimmed\n"
    "                  mean of its runs; every speedup that does not follow from the runtimes\n"
    "                  (baseline 1 node x 1 GPU); node lists that are malformed or do not name\n"
    "                  #Nodes hosts; epochs or steps that differ within a configuration or do not\n"
    "                  match the dataset (MNIST, bigMNIST) over batch x GPUs.\n"
    "\n"
    "The table, throughput and plot commands of the analyzer issue are not in this version.\n"
    "\n"
    "Options:\n"
    "  -h, --help      this text\n"
    "  -V, --version   the version\n"
    "\n"
    "Example:\n"
    "  dtrain-analyze audit results/bigmnist.md\n"
    "\n"
    "Exit status: 0 nothing found; 1 findings; 2 bad usage, an unreadable file, or no table.\n";

static int by_line(const void *a, const void *b)
{
    return ((const struct finding *)a)->line - ((const struct finding *)b)->line;
}

static int audit_files(int argc, char **argv)
{
    int tables = 0, rows = 0, skipped = 0, findings = 0;
    for (int i = 0; i < argc; i++) {
        struct table_set set = {0};
        struct dt_err err;
        if (table_parse_file(argv[i], &set, &err) < 0) {
            fprintf(stderr, "dtrain-analyze: %s\n", err.msg);
            table_set_free(&set);
            return 2;
        }
        for (int s = 0; s < set.lines_skipped && s < 8; s++)
            fprintf(stderr, "dtrain-analyze: skipped %s\n", set.skipped[s]);
        for (int t = 0; t < set.count; t++) {
            struct audit a = {0};
            if (audit_table(&set.tables[t], &a) < 0) {
                fprintf(stderr, "dtrain-analyze: out of memory\n");
                table_set_free(&set);
                return 2;
            }
            if (a.count > 0)   /* qsort must not see the NULL of an empty list */
                qsort(a.items, (size_t)a.count, sizeof a.items[0], by_line);
            for (int f = 0; f < a.count; f++)
                printf("%s:%d: %s\n", argv[i], a.items[f].line, a.items[f].text);
            findings += a.count;
            audit_free(&a);
        }
        tables += set.count;
        rows += set.rows_read;
        skipped += set.lines_skipped;
        table_set_free(&set);
    }
    printf("audit: %d table%s, %d rows read, %d lines skipped; %d finding%s\n", tables, tables == 1 ? "" : "s", rows,
           skipped, findings, findings == 1 ? "" : "s");
    if (tables == 0) {
        fprintf(stderr, "dtrain-analyze: no result table (a header with #Nodes, #GPUs, Epoch, Batchsize, Steps, "
                "Runtime, Speedup, Node(s)) in the input\n");
        return 2;
    }
    return findings ? 1 : 0;
}

int main(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        switch (opt) {
        case 'h': fputs(usage_text, stdout); return 0;
        case 'V': printf("dtrain-analyze %s\n", DTRAIN_VERSION); return 0;
        default: fputs("Try 'dtrain-analyze --help'.\n", stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs("dtrain-analyze: no command given (try --help)\n", stderr);
        return 2;
    }
    const char *command = argv[optind];
    if (strcmp(command, "audit") != 0) {
        fprintf(stderr, "dtrain-analyze: unknown command \"%s\" (this version has: audit)\n", command);
        return 2;
    }
    if (optind + 1 >= argc) {
        fputs("dtrain-analyze: audit needs at least one FILE\n", stderr);
        return 2;
    }
    return audit_files(argc - optind - 1, argv + optind + 1);
}
