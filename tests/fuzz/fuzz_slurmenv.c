/* fuzz_slurmenv.c - libFuzzer target: any bytes as a task's environment (NAME=value entries
 * separated by NUL bytes, so values may hold newlines), read as the launcher reads it, then
 * exported and printed as --dry-run prints it. Invariants: no crash or leak; an accepted
 * allocation is consistent (ranks below their sizes; under Slurm, this node in the node list at
 * SLURM_NODEID and task 0 on node 0; under mpirun, no node list longer than mpirun's world, whose
 * first node would be MASTER_ADDR); the exports are whole or refused; the printed script has
 * no line but comments, exports and the exec outside quotes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/alloc.h"
#include "launcher/launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_VARS = 64 };

static void check_allocation(const struct allocation *a)
{
    if (a->rank < 0 || a->rank >= a->world_size || a->local_rank < 0 || a->local_rank >= a->local_size ||
        a->node_rank < 0 || a->node_rank >= a->num_nodes)
        abort();
    if (a->source == ALLOC_SLURM && ((a->rank == 0 && a->node_rank != 0) || a->hosts.count != (size_t)a->num_nodes))
        abort();
    if (a->source == ALLOC_MPIRUN && a->hosts.count > (size_t)a->num_nodes)
        abort();
    if (strpbrk(a->hostname, "\n\r'\"$`;") || strpbrk(a->job_id, "\n ") || strpbrk(a->step_id, "\n "))
        abort();
}

/* Every line of the script outside single quotes starts a comment, an export or the exec. */
static void check_script(const char *text)
{
    int quoted = 0, line_start = 1;
    for (const char *c = text; *c; c++) {
        if (line_start && !quoted && strncmp(c, "# ", 2) != 0 && strncmp(c, "export ", 7) != 0 &&
            strncmp(c, "exec", 4) != 0)
            abort();
        line_start = *c == '\n';
        if (*c == '#' && !quoted) {   /* a comment runs to the end of its line */
            c = strchr(c, '\n');
            if (!c)
                return;
            line_start = 1;
            continue;
        }
        if (*c == '\\' && !quoted && c[1]) {   /* \' outside quotes is a quote character */
            c++;
            continue;
        }
        if (*c == '\'')
            quoted = !quoted;
    }
    if (quoted)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char *vars[MAX_VARS + 1];
    int n = 0;
    for (char *p = text; p < text + size && n < MAX_VARS; p += strlen(p) + 1)
        if (strchr(p, '='))
            vars[n++] = p;
    vars[n] = NULL;
    struct allocation a;
    struct dt_err err;
    if (alloc_from_env(&a, vars, &err) == 0) {
        check_allocation(&a);
        struct launch_request req = {.nodes = -1, .gpus_per_node = 0, .ranks = -1};
        struct rank_place place = launch_place_of(&a);
        struct rank_exports exports;
        launch_exports(&req, &a, &place, 0, vars, &exports);
        if (launch_exports_check(&exports, &err) == 0) {
            char *script = NULL;
            size_t length = 0;
            FILE *out = open_memstream(&script, &length);
            if (!out)
                abort();
            launch_print(out, &a, &place, &exports, (char *[]){"dtrain-train", NULL});
            fclose(out);
            check_script(script);
            free(script);
        }
        launch_exports_free(&exports);
        alloc_free(&a);
    }
    free(text);
    return 0;
}
