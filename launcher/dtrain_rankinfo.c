/* dtrain_rankinfo.c - `dtrain-rankinfo`: a rank prints where it is and what it was given, one line.
 * Used by `make demo` and the tests to see from inside what dtrain exported. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "version.h"

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
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        puts("Usage: dtrain dtrain-rankinfo\n\n"
             "Prints one line about the rank it runs as: RANK/WORLD_SIZE, LOCAL_RANK/LOCAL_WORLD_SIZE,\n"
             "NODE_RANK, the host, MASTER_ADDR:MASTER_PORT, DTRAIN_GPU and the CPUs it may run on.\n"
             "Run it under dtrain to see what each rank is given, e.g.\n"
             "  dtrain --ranks 2 -- dtrain-rankinfo");
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "--version") == 0)
        return printf("dtrain-rankinfo %s\n", DTRAIN_VERSION) < 0;
    char host[256] = "?";
    gethostname(host, sizeof host - 1);
    char cpus[1024];
    format_affinity(cpus, sizeof cpus);
    printf("rank %s/%s local %s/%s node %s host %s master %s:%s gpu %s cpus %s\n", env_or("RANK", "?"),
           env_or("WORLD_SIZE", "?"), env_or("LOCAL_RANK", "?"), env_or("LOCAL_WORLD_SIZE", "?"),
           env_or("NODE_RANK", "?"), host, env_or("MASTER_ADDR", "?"), env_or("MASTER_PORT", "?"),
           env_or("DTRAIN_GPU", "-"), cpus);
    return fflush(stdout) == 0 ? 0 : 1;
}
