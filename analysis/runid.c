/* runid.c - a notebook run's model, nodes and GPUs from its headings (see runid.h). */
#include "runid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A host name as the seeds write them: letters then digits ("lm6", "gn01"). Returns its length. */
static size_t node_name_length(const char *s)
{
    size_t letters = 0, digits = 0;
    while (isalpha((unsigned char)s[letters]))
        letters++;
    while (isdigit((unsigned char)s[letters + digits]))
        digits++;
    return letters > 0 && digits > 0 ? letters + digits : 0;
}

/* A node name then its figure ("lm6-120.7", "lm6-198.38-1.648x") or its GPUs ("lm1:2x2080ti"); a model
 * name looks like a node name ("ResNet18") but is followed by other words ("ResNet18-2080ti"). */
bool runid_is_run_heading(const char *heading)
{
    size_t n = node_name_length(heading);
    if (n == 0)
        return false;
    if (heading[n] == ':')
        return isdigit((unsigned char)heading[n + 1]);
    if (heading[n] != '-' || !isdigit((unsigned char)heading[n + 1]))
        return false;
    char *end;
    strtod(heading + n + 1, &end);
    return *end == '\0' || *end == '-' || *end == ',' || *end == ' ';
}

/* "2x2080ti" at s: the count, or 0 when s is not a count of GPUs ("1.96x, " is a speedup). */
static int gpu_count_at(const char *s, const char *start)
{
    if (!isdigit((unsigned char)*s) || (s > start && (isdigit((unsigned char)s[-1]) || s[-1] == '.')))
        return 0;
    char *end;
    long count = strtol(s, &end, 10);
    if (*end != 'x' || !isalnum((unsigned char)end[1]) || count <= 0 || count > 4096)
        return 0;
    return (int)count;
}

/* "lm1:2x2080ti, lm6:2x2080ti": every "node:NxGPU" of one heading. Returns how many. */
static int parse_node_list(const char *heading, struct run_identity *id)
{
    int found = 0;
    for (const char *s = heading; *s && found < RUNID_MAX_NODES; s++) {
        if (s > heading && isalnum((unsigned char)s[-1]))
            continue;
        size_t n = node_name_length(s);
        int gpus = n > 0 && s[n] == ':' ? gpu_count_at(s + n + 1, s) : 0;
        if (gpus == 0)
            continue;
        snprintf(id->node[found], sizeof id->node[found], "%.*s", (int)n, s);
        id->node_gpus[found++] = gpus;
        s += n;
    }
    return found;
}

/* The GPU count a heading states: "2x2080ti" or "2 GPUs". 0 when it states none. */
static int stated_gpus(const char *heading)
{
    for (const char *s = heading; *s; s++) {
        int gpus = gpu_count_at(s, heading);
        if (gpus > 0)
            return gpus;
        char *end;
        if (isdigit((unsigned char)*s) && (s == heading || !isalnum((unsigned char)s[-1]))) {
            long count = strtol(s, &end, 10);
            if (strncmp(end, " GPU", 4) == 0 && count > 0 && count <= 4096)
                return (int)count;
        }
    }
    return 0;
}

/* A model heading is any below the top that names neither a run nor a GPU set ("in 2x2080ti");
 * the model is its text up to the first '-' or ','. */
static void find_model(const char levels[6][128], struct run_identity *id)
{
    for (int d = 1; d < 6; d++) {
        const char *h = levels[d];
        if (!isalpha((unsigned char)h[0]) || runid_is_run_heading(h) || strncmp(h, "in ", 3) == 0)
            continue;
        size_t n = strcspn(h, "-,");
        while (n > 0 && h[n - 1] == ' ')
            n--;
        snprintf(id->model, sizeof id->model, "%.*s", (int)n, h);
        return;
    }
}

void runid_from_headings(const char levels[6][128], struct run_identity *id)
{
    *id = (struct run_identity){.gpus = 1};
    find_model(levels, id);
    for (int d = 5; d >= 0 && id->node_count == 0; d--)
        id->node_count = parse_node_list(levels[d], id);
    if (id->node_count > 0) {
        id->gpus = 0;
        for (int i = 0; i < id->node_count; i++)
            id->gpus += id->node_gpus[i];
        return;
    }
    for (int d = 5; d >= 0; d--) {
        if (levels[d][0] && runid_is_run_heading(levels[d]) && id->node_count == 0) {
            snprintf(id->node[0], sizeof id->node[0], "%.*s", (int)node_name_length(levels[d]), levels[d]);
            id->node_count = 1;
        }
        int gpus = stated_gpus(levels[d]);
        if (gpus > 0) {
            id->gpus = gpus;
            break;
        }
    }
    if (id->node_count == 1)
        id->node_gpus[0] = id->gpus;
}

void runid_headline(const char *title, char *out, int size)
{
    char text[128];
    snprintf(text, sizeof text, "%s", title);
    out[0] = '\0';
    char *baseline = strcasestr(text, "baseline");
    if (baseline) {   /* ", baseline: 81.84" follows the figure and its speedup */
        *baseline = '\0';
        char *comma = strrchr(text, ',');
        if (!comma)
            return;
        *comma = '\0';
    }
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == ' ')
        text[--n] = '\0';
    if (n > 0 && text[n - 1] == 'x') {   /* "-2.95x": the speedup */
        char *dash = strrchr(text, '-');
        if (!dash)
            return;
        *dash = '\0';
        n = strlen(text);
    }
    char *start = text + n;
    while (start > text && (isdigit((unsigned char)start[-1]) || start[-1] == '.'))
        start--;
    if (start == text + n || start == text || !strchr("- ,", start[-1]) || !isdigit((unsigned char)*start))
        return;
    char *end;
    strtod(start, &end);
    if (*end == '\0')
        snprintf(out, (size_t)size, "%s", start);
}

void runid_nodes(const struct run_identity *id, char *out, int size)
{
    int used = 0;
    out[0] = '\0';
    for (int i = 0; i < id->node_count && used < size; i++)
        used += snprintf(out + used, (size_t)(size - used), "%s%s", i ? "+" : "", id->node[i]);
    if (id->node_count == 0)
        snprintf(out, (size_t)size, "-");
}
