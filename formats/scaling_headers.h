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

/* Whether a count header counts processes ("MPI ranks", "Cores", "Tasks"), not the devices or
 * nodes a GPU table scales over: where a table has both, its job sizes are the GPUs (or nodes). */
bool scaling_counts_processes(const char *header);

#endif
