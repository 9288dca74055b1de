/* exchange_methods.c - the table of gradient-exchange methods (exchange_methods.h). */
#include "common/exchange_methods.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* In the order of the reference comparison's columns (BytePS's and ByteScheduler's papers). */
const struct method_facts method_list[] = {
    {.name = "bsp-a2a", .aliases = "allreduce,bsp", .title = "BSP-A2A", .over_nccl = true,
     .help = "BSP: one allreduce of the whole gradient buffer after backward (the default; over NCCL on GPUs)"},
    {.name = "wfbp-a2a", .aliases = "wfbp", .title = "WFBP-A2A", .over_nccl = true,
     .help = "WFBP: each layer's gradients sent (non-blocking allreduce) as soon as backward has them, "
             "overlapping the layers still computing (on GPUs: host-staged, or per layer over NCCL with "
             "--gpu-transport nccl)"},
    {.name = "mg-wfbp", .aliases = "mgwfbp", .title = "MG-WFBP", .takes_threshold = true, .over_nccl = true,
     .help = "MG-WFBP: as wfbp-a2a, but consecutive layers merged into one allreduce where that saves time, "
             "planned from backward times measured in the first 5 steps and an alpha-beta cost fitted on "
             "the job's links (--comm-threshold BYTES: merged by size instead) (on GPUs: host-staged, or "
             "--gpu-transport nccl)"},
    {.name = "bytescheduler-a2a", .aliases = "bytescheduler", .title = "ByteScheduler-A2A",
     .takes_partition = true, .takes_credit = true, .over_nccl = true,
     .help = "ByteScheduler over allreduce: each layer's gradients in partitions of --partition-bytes "
             "(4096000), sent by a communication thread, the layer nearest the input first, while "
             "--credit-bytes (16000000) last; each layer's update waits only for its own sums, just "
             "before its next forward (on GPUs: host-staged, or --gpu-transport nccl)"},
    {.name = "bsp-ps", .aliases = "ps", .title = "BSP-PS", .servers = true, .takes_partition = true,
     .help = "a parameter server: the last --ps-servers ranks (1) sum the workers' gradients, pushed in "
             "partitions of --partition-bytes (4096000) after backward (on GPUs: host-staged)"},
    {.name = "wfbp-ps", .aliases = "", .title = "WFBP-PS", .servers = true, .takes_partition = true,
     .help = "as bsp-ps, each partition pushed as soon as backward has completed it (on GPUs: host-staged)"},
    {.name = "bytescheduler-ps", .aliases = "", .title = "ByteScheduler-PS", .servers = true,
     .takes_partition = true, .takes_credit = true,
     .help = "as bytescheduler-a2a over parameter servers (--ps-servers): each worker pushes its "
             "partitions by priority and credit (on GPUs: host-staged)"},
};
const int method_count = sizeof method_list / sizeof method_list[0];

/* Whether name is one of the comma-separated words of list, ignoring case. */
static bool in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *p = list; *p;) {
        size_t word = strcspn(p, ",");
        if (word == len && strncasecmp(p, name, len) == 0)
            return true;
        p += word + (p[word] == ',');
    }
    return false;
}

const struct method_facts *method_find(const char *name)
{
    for (int i = 0; i < method_count; i++)
        if (strcasecmp(method_list[i].name, name) == 0 || in_list(method_list[i].aliases, name))
            return &method_list[i];
    return NULL;
}

int method_index(const struct method_facts *m)
{
    return (int)(m - method_list);
}

const char *method_names(bool (*which)(const struct method_facts *m), const char *sep, const char *last,
                         char *text, size_t size)
{
    int chosen = 0, total = 0;
    for (int i = 0; i < method_count; i++)
        total += !which || which(&method_list[i]);
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < method_count && used < size; i++) {
        if (which && !which(&method_list[i]))
            continue;
        const char *before = chosen == 0 ? "" : chosen + 1 == total && last ? last : sep;
        used += (size_t)snprintf(text + used, size - used, "%s%s", before, method_list[i].name);
        chosen++;
    }
    return text;
}

bool method_has_servers(const struct method_facts *m)
{
    return m->servers;
}

bool method_takes_partition(const struct method_facts *m)
{
    return m->takes_partition;
}

bool method_takes_credit(const struct method_facts *m)
{
    return m->takes_credit;
}
