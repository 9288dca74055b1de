/* scaling_headers.h - what the column headers of a published scaling table name: a job size
 * ("GPUs", "# Accelerators", "MPI ranks"), a throughput ("Throughput - TF32", "ns/day"), a time,
 * a ratio (strong or weak scaling, a speed-up between two columns, efficiency), and the words
 * that tell two such columns apart ("TF32", "mixed precision"). The naming half of
 * scaling_table.c. */
#ifndef SCALING_HEADERS_H
#define SCALING_HEADERS_H

#include <stdbool.h>
#include <stddef.h>

#include "formats/scaling_table.h"

/* The header's words, lower case, letters and digits only ("Speed-up" -> "speed up", "FP 32" ->
 * "fp32"), space-separated, into out. */
void scaling_header_words(const char *header, char *out, size_t size);

/* Whether words (scaling_header_words') hold word whole. */
bool scaling_has_word(const char *words, const char *word);

/* What a header names, from the header as written (raw) and its words. */
enum scaling_kind scaling_header_kind(const char *raw, const char *words);

/* The words that tell columns apart ("tf32", "mixed"), in a canonical form: AMP, FP16 and half
 * precision are all "mixed"; the words every such column has are left out. */
void scaling_header_qualifiers(const char *words, char *out, size_t size);

/* What a count column counts by its header ("GPUs", "nodes", "accelerators"; "GPUs" for a header
 * that names none). */
const char *scaling_header_noun(const char *header);

/* How well a count header names a table's job sizes, where a table has several count columns:
 * 2 the devices ("GPUs", "Accelerators", "Workers"), 1 the nodes, 0 processes ("MPI ranks",
 * "Cores", "Tasks"). A speedup and an efficiency are over the devices: "| nodes | GPUs |" with 8,
 * 16, 64 GPUs on 1, 2, 8 nodes scales over the GPUs (the nodes were taken, and the GPUs column
 * read as a throughput). */
int scaling_count_rank(const char *header);

/* Whether a row that holds no number (the caller has read its cells) is a header's second row, in
 * place of the first row ("| # of GPUs | RoBERTa base | RoBERTa base |" over "|  | CPU time (s) |
 * CUDA time (s) |"): a cell names a throughput or a time. */
bool scaling_is_sub_header(const char *row);

/* The header `top` and its second row `sub` as one header row, each column's two names joined
 * ("RoBERTa base CPU time (s)"), into *merged (its size in *size, grown as needed: it may be top's
 * own buffer). 0, or -1 out of memory. */
int scaling_merge_header(const char *top, const char *sub, char **merged, size_t *size);

/* Whether a throughput's header says it is a device's share ("Images/sec/GPU", "TFLOPS / GPU",
 * "tokens per device"): the job's rate is it times the job size. */
bool scaling_header_per_device(const char *header);

#endif
