/* dtrain_rankinfo.c - `dtrain-rankinfo`: a rank prints where it is and what it was given, one line.
 * Used by `make demo` and the tests to see from inside what dtrain exported. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/version.h"
#include "common/stdout_check.h"

/* The process's memory policy, as "bind:0-1" (no libnuma needed: the raw system call). */
static void format_mempolicy(char *out, size_t size)
{
    static const char *const modes[] = {"default", "preferred", "bind", "interleave", "local", "preferred-many"};
    int mode = -1;
    unsigned long mask[16] = {0};
    if (syscall(SYS_get_mempolicy, &mode, mask, sizeof mask * 8, NULL, 0UL) < 0 || mode < 0) {
        snprintf(out, size, "?");
        return;
    }
    size_t used = (size_t)snprintf(out, size, "%s", mode < 6 ? modes[mode] : "other");
    int nodes = (int)(sizeof mask * 8);
    const char *sep = ":";
    for (int node = 0; node < nodes && used < size; node++) {
        if (!(mask[node / 64] >> (node % 64) & 1))
            continue;
        int last = node;
        while (last + 1 < nodes && (mask[(last + 1) / 64] >> ((last + 1) % 64) & 1))
            last++;
        int n = last > node ? snprintf(out + used, size - used, "%s%d-%d", sep, node, last)
                            : snprintf(out + used, size - used, "%s%d", sep, node);
        used += n > 0 ? (size_t)n : 0;
        sep = ",";
        node = last;
    }
}

static const char *env_or(const char *name, const char *fallback)
{
    const char *value = getenv(name);
    return value ? value : fallback;
}

/* The CPUs this process may run on, as "0-3,6". */
static void format_affinity(char *out, size_t size)
{
    cpu_set_t set;
    out[0] = '\0';
    if (sched_getaffinity(0, sizeof set, &set) < 0) {
        snprintf(out, size, "?");
        return;
    }
    size_t used = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && used < size; cpu++) {
        if (!CPU_ISSET(cpu, &set))
            continue;
        int last = cpu;
        while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set))
            last++;
        int n = last > cpu ? snprintf(out + used, size - used, "%s%d-%d", used ? "," : "", cpu, last)
                           : snprintf(out + used, size - used, "%s%d", used ? "," : "", cpu);
        used += n > 0 ? (size_t)n : 0;
        cpu = last;
    }
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-rankinfo");   /* a full disk is an error, not an empty table */
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        puts("Usage: dtrain-rankinfo, as the program dtrain starts: dtrain [OPTIONS] -- dtrain-rankinfo\n\n"
             "Prints one line about the rank it runs as: RANK/WORLD_SIZE, LOCAL_RANK/LOCAL_WORLD_SIZE,\n"
             "NODE_RANK, the host, MASTER_ADDR:MASTER_PORT, DTRAIN_GPU, DTRAIN_NIC, the CPUs it may\n"
             "run on (sched_getaffinity) and its memory policy (get_mempolicy: mode:nodes).\n"
             "Run it under dtrain to see what each rank is given, e.g.\n"
             "  dtrain --ranks 2 -- dtrain-rankinfo");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0)
        return printf("dtrain-rankinfo %s\n", DTRAIN_VERSION) < 0;
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    char cpus[1024], mems[256];
    format_affinity(cpus, sizeof cpus);
    format_mempolicy(mems, sizeof mems);
    printf("rank %s/%s local %s/%s node %s host %s master %s:%s gpu %s nic %s cpus %s mem %s\n", env_or("RANK", "?"),
           env_or("WORLD_SIZE", "?"), env_or("LOCAL_RANK", "?"), env_or("LOCAL_WORLD_SIZE", "?"),
           env_or("NODE_RANK", "?"), host, env_or("MASTER_ADDR", "?"), env_or("MASTER_PORT", "?"),
           env_or("DTRAIN_GPU", "-"), env_or("DTRAIN_NIC", "-"), cpus, mems);
    return fflush(stdout) == 0 ? 0 : 1;
}
