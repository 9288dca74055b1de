/* scaling_headers.c - what a published scaling table's column headers name (see scaling_headers.h). */
#include "formats/scaling_headers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/scaling_cells.h"
#include "formats/table.h"

/* The header's words, lower case, letters and digits only ("Speed-up" -> "speed up", "FP 32" ->
 * "fp32"), space-separated, into out. */
void scaling_header_words(const char *header, char *out, size_t size)
{
    size_t n = 0;
    for (const char *c = header; *c && n + 2 < size; c++) {
        if (c > header && isupper((unsigned char)*c) && islower((unsigned char)c[-1]) && n + 3 < size)
            out[n++] = ' ';   /* a camel-cased name's words: "AvgTime" is "avg time" */
        if (isalnum((unsigned char)*c))
            out[n++] = (char)tolower((unsigned char)*c);
        else if (n > 0 && out[n - 1] != ' ' && !(c[0] == ' ' && n >= 2 && strncmp(out + n - 2, "fp", 2) == 0 &&
                                                 isdigit((unsigned char)c[1])))
            out[n++] = ' ';
    }
    while (n > 0 && out[n - 1] == ' ')
        n--;
    out[n] = '\0';
}

bool scaling_has_word(const char *words, const char *word)
{
    size_t len = strlen(word);
    for (const char *at = strstr(words, word); at; at = strstr(at + 1, word))
        if ((at == words || at[-1] == ' ') && (at[len] == ' ' || at[len] == '\0'))
            return true;
    return false;
}

/* What a job-size header counts, plural ("gpus", "nodes", "accelerators", "cores", "mpi ranks"),
 * or NULL: its words but "number of", "num", "total", "count", "n" are one such noun. */
static const char *count_of(const char *words)
{
    static const struct { const char *word, *plural; } nouns[] = {
        {"gpus", "GPUs"}, {"gpu", "GPUs"}, {"nodes", "nodes"}, {"node", "nodes"}, {"workers", "workers"},
        {"worker", "workers"}, {"ranks", "ranks"}, {"rank", "ranks"}, {"accelerators", "accelerators"},
        {"accelerator", "accelerators"}, {"devices", "devices"}, {"device", "devices"}, {"chips", "chips"},
        {"tpus", "TPUs"}, {"gcds", "GCDs"}, {"cores", "cores"}, {"processes", "processes"}, {"procs", "processes"},
        {"tasks", "tasks"}, {"cpus", "CPUs"}, {"np", "processes"}, {"threads", "threads"}, {"thread", "threads"}};
    static const char *const filler[] = {"number", "of", "num", "total", "count", "n", "no", "mpi", "the"};
    char copy[256];
    const char *noun = NULL;
    snprintf(copy, sizeof copy, "%s", words);
    for (char *w = strtok(copy, " "); w; w = strtok(NULL, " ")) {
        bool skip = false;
        for (size_t i = 0; i < sizeof filler / sizeof filler[0] && !skip; i++)
            skip = strcmp(w, filler[i]) == 0;
        if (skip)
            continue;
        const char *found = NULL;
        for (size_t i = 0; i < sizeof nouns / sizeof nouns[0] && !found; i++)
            found = strcmp(w, nouns[i].word) == 0 ? nouns[i].plural : NULL;
        if (!found || noun)
            return NULL;   /* another word ("GPUs per node", "batch"), or a second noun */
        noun = found;
    }
    return noun;
}

/* A GPU or node count: the rows' job sizes. */
static bool is_count(const char *words)
{
    return count_of(words) != NULL;
}

/* A throughput: "Throughput - TF32", "Mixed precision img/s", "Frames/s with TF32", "fps",
 * "images_per_sec", a simulation's "Performance (ns/day)", "Steps per hour", "TFLOPS". */
static bool is_rate(const char *raw, const char *words)
{
    static const char *const per[] = {"/s", "/sec", "/second", "/min", "/minute", "/h", "/hr", "/hour", "/day", "/d"};
    for (size_t i = 0; i < sizeof per / sizeof per[0]; i++) {
        const char *at = strstr(raw, per[i]);
        if (at && !isalpha((unsigned char)at[strlen(per[i])]))
            return true;
    }
    return scaling_has_word(words, "throughput") || scaling_has_word(words, "performance") || strstr(words, "flops") ||
           scaling_has_word(words, "fps") || strstr(words, "per sec") || strstr(words, "per minute") ||
           strstr(words, "per hour") || strstr(words, "per day");
}

/* A time unit's word ("s", "sec", "ms", "seconds", "min", "hours"). */
static bool is_time_word(const char *word, size_t len)
{
    static const char *const units[] = {"s", "sec", "secs", "second", "seconds", "ms", "us", "min", "mins",
                                        "minute", "minutes", "h", "hr", "hrs", "hour", "hours"};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strlen(units[i]) == len && strncmp(word, units[i], len) == 0)
            return true;
    return false;
}

/* A time a unit of work, as written: a time unit, then "/" or " per ", then a word that is not one
 * ("s/step", "sec/iter", "ms per batch", "Seconds per epoch"): less is faster, as a time to train.
 * (A unit over a time, "img/s", is a throughput: is_rate, asked first.) */
static bool is_time_per(const char *raw)
{
    char lower[256];
    size_t n = 0;
    for (; raw[n] && n + 1 < sizeof lower; n++)
        lower[n] = (char)tolower((unsigned char)raw[n]);
    lower[n] = '\0';
    for (size_t at = 0; at < n; at++) {
        size_t after = lower[at] == '/' ? at + 1 : strncmp(lower + at, " per ", 5) == 0 ? at + 5 : 0;
        if (after == 0)
            continue;
        size_t start = at;
        while (start > 0 && isalpha((unsigned char)lower[start - 1]))
            start--;
        after += strspn(lower + after, " ");
        size_t next = after;
        while (isalpha((unsigned char)lower[next]))
            next++;
        if (start < at && is_time_word(lower + start, at - start) && next > after &&
            !is_time_word(lower + after, next - after))
            return true;
    }
    return false;
}

/* A time: "Time to train", "Training time", "Total Time", "Time/Iteration", "Runtime", "Latency",
 * "s/step". */
static bool is_time(const char *raw, const char *words)
{
    return is_time_per(raw) || scaling_has_word(words, "time") || scaling_has_word(words, "runtime") || scaling_has_word(words, "duration") ||
           scaling_has_word(words, "latency") || scaling_has_word(words, "elapsed") || scaling_has_word(words, "walltime");
}

enum scaling_kind scaling_header_kind(const char *raw, const char *words)
{
    if (is_count(words))
        return SCALING_COUNT;
    if (scaling_has_word(words, "efficiency"))
        return SCALING_EFFICIENCY;
    if (scaling_has_word(words, "scaling") || scaling_has_word(words, "scalability"))
        return SCALING_OVER_COUNTS;   /* or an efficiency, by its values (scaling_table.c) */
    if (scaling_has_word(words, "speedup") || strstr(words, "speed up"))
        return SCALING_ACROSS;   /* or over the counts, once the table's rate columns are known */
    if (is_rate(raw, words))
        return SCALING_RATE;
    return is_time(raw, words) ? SCALING_TIME : SCALING_OTHER;
}

/* Where tokens[k] begins a ratio's "over one job" ("vs 1 thread", "relative to a single GPU",
 * "over baseline"): the index after it, else k. */
static int over_a_job(char **tokens, int n, int k)
{
    static const char *const over[] = {"vs", "versus", "over", "relative", "compared", "against"};
    bool is_over = false;
    for (size_t i = 0; i < sizeof over / sizeof over[0] && !is_over; i++)
        is_over = strcmp(tokens[k], over[i]) == 0;
    int j = k + 1;
    if (!is_over && strcmp(tokens[k], "based") == 0 && j < n && strcmp(tokens[j], "on") == 0)
        is_over = true, j++;   /* "based on num_thread=1" */
    if (!is_over)
        return k;
    if (j < n && strcmp(tokens[j], "to") == 0)
        j++;
    while (j < n && (strcmp(tokens[j], "num") == 0 || strcmp(tokens[j], "number") == 0 || strcmp(tokens[j], "of") == 0))
        j++;
    if (j < n && (isdigit((unsigned char)tokens[j][0]) || strcmp(tokens[j], "one") == 0 || strcmp(tokens[j], "a") == 0))
        j++;
    if (j < n && strcmp(tokens[j], "single") == 0)
        j++;
    if (j < n && (count_of(tokens[j]) || strcmp(tokens[j], "baseline") == 0))
        return j + 1 < n && isdigit((unsigned char)tokens[j + 1][0]) ? j + 2 : j + 1;   /* "thread 1" */
    return k;
}

/* The words that tell columns apart ("tf32", "mixed"), in a canonical form: AMP, FP16 and half
 * precision are all "mixed"; the words every such column has are left out. */
void scaling_header_qualifiers(const char *words, char *out, size_t size)
{
    static const char *const common[] = {
        "throughput", "strong", "weak", "scaling", "scalability", "speedup", "speed", "up", "efficiency", "with", "the", "of", "avg",
        "average", "img", "imgs", "images", "image", "s", "sec", "per", "second", "samples", "sample", "time",
        "training", "train", "to", "total", "x", "multi", "gpu", "gpus", "frames", "items", "tokens", "sequences",
        "seq", "mels", "hrs", "hours", "h", "min", "number", "used", "in", "a", "for", "precision", "parallel"};
    char copy[256], *tokens[64];
    int n = 0;
    snprintf(copy, sizeof copy, "%s", words);
    out[0] = '\0';
    for (char *w = strtok(copy, " "); w && n < 64; w = strtok(NULL, " "))
        tokens[n++] = w;
    for (int k = 0; k < n; k++) {
        int past = over_a_job(tokens, n, k);
        if (past > k) {   /* "vs 1 thread", "over a single GPU": what a ratio is over, not a column's name */
            k = past - 1;
            continue;
        }
        const char *w = tokens[k];
        bool skip = false;
        for (size_t i = 0; i < sizeof common / sizeof common[0] && !skip; i++)
            skip = strcmp(w, common[i]) == 0;
        if (skip)
            continue;
        const char *canon = strcmp(w, "amp") == 0 || strcmp(w, "fp16") == 0 || strcmp(w, "half") == 0 ? "mixed"
                            : strcmp(w, "single") == 0 ? "fp32" : w;
        size_t used = strlen(out);
        if (!scaling_has_word(out, canon))
            snprintf(out + used, size - used, "%s%s", used ? " " : "", canon);
    }
}

/* What the count column counts by its header ("GPUs", "nodes", "accelerators"). */
const char *scaling_header_noun(const char *header)
{
    char words[256];
    scaling_header_words(header, words, sizeof words);
    const char *noun = count_of(words);
    return noun ? noun : "GPUs";
}

int scaling_count_rank(const char *header)
{
    const char *noun = scaling_header_noun(header);
    static const char *const processes[] = {"ranks", "processes", "tasks", "cores", "CPUs", "threads"};
    for (size_t i = 0; i < sizeof processes / sizeof processes[0]; i++)
        if (strcmp(noun, processes[i]) == 0)
            return 0;
    return strcmp(noun, "nodes") == 0 ? 1 : 2;
}

/* A header's second row: see scaling_headers.h. */
bool scaling_is_sub_header(const char *row)
{
    char *copy = strdup(row), *cells[SCALING_MAX_COLUMNS + 1];
    int n = copy ? table_cells(copy, cells, SCALING_MAX_COLUMNS + 1) : 0;
    bool measure = false;
    for (int c = 0; c < n && c < SCALING_MAX_COLUMNS && !measure; c++) {
        char words[256];
        scaling_header_words(cells[c], words, sizeof words);
        enum scaling_kind kind = scaling_header_kind(cells[c], words);
        measure = kind == SCALING_RATE || kind == SCALING_TIME;
    }
    free(copy);
    return measure;
}

/* The header `top` and its second row `sub` as one header row, each column's two names joined
 * ("RoBERTa base CPU time (s)"), into *merged (its size in *size, grown as needed). 0, or -1 out
 * of memory. */
int scaling_merge_header(const char *top, const char *sub, char **merged, size_t *size)
{
    char *top_copy = strdup(top), *sub_copy = strdup(sub), *tops[SCALING_MAX_COLUMNS + 1], *subs[SCALING_MAX_COLUMNS + 1];
    size_t need = strlen(top) + strlen(sub) + 4 * SCALING_MAX_COLUMNS + 4;
    char *out = top_copy && sub_copy && need > *size ? realloc(*merged, need) : *merged;
    if (!top_copy || !sub_copy || !out)
        return free(top_copy), free(sub_copy), -1;
    *merged = out, *size = need > *size ? need : *size;
    int n = table_cells(top_copy, tops, SCALING_MAX_COLUMNS + 1), m = table_cells(sub_copy, subs, SCALING_MAX_COLUMNS + 1);
    size_t used = (size_t)snprintf(out, *size, "|");
    for (int c = 0; c < n && used < *size; c++)
        used += (size_t)snprintf(out + used, *size - used, " %s%s%s |", tops[c], c < m && subs[c][0] ? " " : "",
                                 c < m ? subs[c] : "");
    snprintf(out + used, used < *size ? *size - used : 0, "\n");
    free(top_copy), free(sub_copy);
    return 0;
}

bool scaling_header_per_device(const char *header)
{
    static const char *const per[] = {"/gpu", "pergpu", "/device", "perdevice", "/accelerator", "peraccelerator",
                                      "/chip", "perchip"};
    char squeezed[256];
    size_t n = 0;
    for (const char *c = header; *c && n + 1 < sizeof squeezed; c++)
        if (!isspace((unsigned char)*c))
            squeezed[n++] = (char)tolower((unsigned char)*c);
    squeezed[n] = '\0';
    for (size_t i = 0; i < sizeof per / sizeof per[0]; i++)
        if (strstr(squeezed, per[i]))
            return true;
    return false;
}
