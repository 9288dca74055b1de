/* runid.c - a notebook run's model, nodes and GPUs from its headings (see runid.h). */
#include "analysis/runid.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A host name as the reference experiments write them: letters then digits ("lm6", "gn01"). Returns its length. */
static size_t node_name_length(const char *s)
{
    size_t letters = 0, digits = 0;
    while (isalpha((unsigned char)s[letters]))
        letters++;
    while (isdigit((unsigned char)s[letters + digits]))
        digits++;
    return letters > 0 && digits > 0 ? letters + digits : 0;
}

/* A node name then its figure ("lm6-120.7", "lm6-198.38-1.648x") or its GPUs ("lm1:2x2080ti"). A
 * model heading can look the same ("VGG19-4090": a model and a GPU made only of digits), so a
 * figure must show a decimal point, a speedup or a baseline after it, unless the heading is the
 * one the Step lines stand under (loose). */
static bool looks_like_run(const char *heading, bool loose)
{
    size_t n = node_name_length(heading);
    if (n == 0)
        return false;
    if (heading[n] == ':')
        return isdigit((unsigned char)heading[n + 1]);
    if (heading[n] != '-' || !isdigit((unsigned char)heading[n + 1]) || strcasestr(heading, "batch"))
        return false;   /* a batch size names an experiment: "VGG16-3090-64batch_size" is a model's */
    char *end;
    strtod(heading + n + 1, &end);
    if (!(*end == '\0' || *end == '-' || *end == ',' || *end == ' '))
        return false;
    bool decimal = memchr(heading + n + 1, '.', (size_t)(end - (heading + n + 1))) != NULL;
    return loose || decimal || *end == '-' || *end == ',';
}

bool runid_is_run_heading(const char *heading)
{
    return looks_like_run(heading, false);
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

static bool is_gpu_token(const char *t, size_t n);

/* A count after the GPU's name, the word at s: "A6000x2", "2080tix4", or a bare "x2". 0 if none. */
static int count_after_gpu(const char *s, const char *start)
{
    if (!isalnum((unsigned char)*s) || (s > start && isalnum((unsigned char)s[-1])))
        return 0;
    size_t n = 0;
    while (isalnum((unsigned char)s[n]))
        n++;
    const char *x = NULL;
    for (size_t i = 0; i < n; i++)
        if (s[i] == 'x' && i + 1 < n && isdigit((unsigned char)s[i + 1]))
            x = s + i;
    if (!x || (x > s && !is_gpu_token(s, (size_t)(x - s))))
        return 0;
    char *end;
    long count = strtol(x + 1, &end, 10);
    return end == s + n && count > 0 && count <= 4096 ? (int)count : 0;
}

/* The GPU count a heading states: "2x2080ti", "A6000x2", "x2", "2 GPUs", "8-GPUs", "4gpu". 0 when
 * it states none. */
static int stated_gpus(const char *heading)
{
    for (const char *s = heading; *s; s++) {
        int gpus = gpu_count_at(s, heading);
        if (gpus <= 0)
            gpus = count_after_gpu(s, heading);
        if (gpus > 0)
            return gpus;
        char *end;
        if (isdigit((unsigned char)*s) && (s == heading || !isalnum((unsigned char)s[-1]))) {
            long count = strtol(s, &end, 10);   /* "2 GPUs", "8-GPUs", "4gpu" */
            if (strncasecmp(end + (*end == ' ' || *end == '-' || *end == '_'), "GPU", 3) == 0 && count > 0 &&
                count <= 4096)
                return (int)count;
        }
    }
    return 0;
}

/* A GPU as headings name it, with its count or not: "2080ti", "4090", "A100", "2xH100", "T4". */
static bool is_gpu_token(const char *t, size_t n)
{
    size_t i = 0;
    while (i < n && isdigit((unsigned char)t[i]))
        i++;
    if (i > 0 && i < n && t[i] == 'x' && i + 1 < n)   /* "2x": a count, then the GPU */
        t += i + 1, n -= i + 1, i = 0;
    while (i < n && isdigit((unsigned char)t[i]))
        i++;
    if (i >= 3) {   /* "2080ti", "4090"; not a model's size ("124M", "175B") */
        size_t digits = i;
        while (i < n && isalpha((unsigned char)t[i]))
            i++;
        return i == n && !(n - digits == 1 && strchr("MmBbKk", t[digits]));
    }
    if (i > 0)
        return false;
    size_t letters = 0, digits = 0;   /* "A100", "MI250X", "T4", "L40S" */
    while (letters < n && isupper((unsigned char)t[letters]))
        letters++;
    while (letters + digits < n && isdigit((unsigned char)t[letters + digits]))
        digits++;
    for (i = letters + digits; i < n && isalpha((unsigned char)t[i]);)
        i++;
    /* one digit only after T, L or P (T4, L4, P4): "B3", "V2", "R2" are a model's variant, not a GPU
     * ("EfficientNet-B3-8-GPUs" was EfficientNet on B3s) */
    bool one_digit_gpu = digits > 1 || (letters == 1 && strchr("TLP", t[0]));
    return letters >= 1 && letters <= 2 && digits >= 1 && one_digit_gpu && i == n;
}

/* What may follow a GPU's name: "H100-SXM", "A100-PCIe", "A100-80GB", "H100-NVL". */
static bool is_gpu_suffix(const char *t, size_t n)
{
    if (n >= 3 && (strncasecmp(t, "SXM", 3) == 0 || strncasecmp(t, "PCIe", n) == 0 || strncasecmp(t, "NVL", n) == 0))
        return true;
    size_t digits = 0;
    while (digits < n && isdigit((unsigned char)t[digits]))
        digits++;
    return digits > 0 && n - digits == 2 && strncasecmp(t + digits, "GB", 2) == 0;
}

/* The model a heading names: its words up to the GPU ("ViT-B16-H100-SXM": ViT-B16; "VGG19-4090":
 * VGG19; "ResNet18-2x2080ti-128batch_size": ResNet18; "ResNet18-lm1:3x2080ti, ...": ResNet18). */
static void model_of(const char *heading, char *out, size_t size)
{
    size_t length = strcspn(heading, ",");
    const char *token[16];
    size_t token_length[16];
    int count = 0;
    for (const char *s = heading; s < heading + length && count < 16;) {
        size_t n = strcspn(s, "-,");
        n = s + n > heading + length ? (size_t)(heading + length - s) : n;
        bool batch = n > 0 && isdigit((unsigned char)s[0]) && memmem(s, n, "batch", 5) != NULL;
        bool gpus = n >= 3 && strncasecmp(s + strspn(s, "0123456789"), "gpu", 3) == 0;   /* "GPUs", "4gpu" */
        if (gpus && count > 0 && strspn(token[count - 1], "0123456789") == token_length[count - 1])
            count--;   /* "8-GPUs": the count goes with it */
        if (n > 0 && !batch && !gpus && !memchr(s, ':', n))   /* batch sizes, GPU counts, node lists are not the model */
            token[count] = s, token_length[count++] = n;
        s += n + (s[n] == '-');
        if (n == 0 && s[0] != '-')
            break;
    }
    int kept = count;
    while (kept > 1 && is_gpu_suffix(token[kept - 1], token_length[kept - 1]))
        kept--;
    if (kept > 1 && (is_gpu_token(token[kept - 1], token_length[kept - 1]) ||
                     count_after_gpu(token[kept - 1], heading) > 0))   /* "A6000x2", "x4" */
        kept--;
    else
        kept = count;   /* no GPU named: the suffix-like words belong to the model */
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < (kept ? kept : 1) && i < count && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%.*s", i ? "-" : "", (int)token_length[i], token[i]);
    while (used > 0 && used < size && out[used - 1] == ' ')
        out[--used] = '\0';
}

/* A model heading is any below the top that names neither a run nor a GPU set ("in 2x2080ti").
 * deepest is the heading the Step lines stand under: a run's own. */
static void find_model(const char levels[6][128], int deepest, struct run_identity *id)
{
    for (int d = 1; d < 6; d++) {
        const char *h = levels[d];
        if (!isalpha((unsigned char)h[0]) || looks_like_run(h, d == deepest) || strncmp(h, "in ", 3) == 0)
            continue;
        model_of(h, id->model, sizeof id->model);
        return;
    }
}

void runid_from_headings(const char levels[6][128], struct run_identity *id)
{
    *id = (struct run_identity){.gpus = 1};
    int deepest = 5;
    while (deepest > 0 && !levels[deepest][0])
        deepest--;
    find_model(levels, deepest, id);
    for (int d = 5; d >= 0 && id->node_count == 0; d--)
        id->node_count = parse_node_list(levels[d], id);
    if (id->node_count > 0) {
        id->gpus = 0;
        for (int i = 0; i < id->node_count; i++)
            id->gpus += id->node_gpus[i];
        return;
    }
    for (int d = 5; d >= 0; d--) {
        if (levels[d][0] && looks_like_run(levels[d], d == deepest) && id->node_count == 0) {
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
