/* hostlist.h - Slurm hostlist expressions ("gn[01-02,07-08]") expanded to names and folded back.
 *
 * The syntax is Slurm's: comma- (or blank-) separated elements, each literal text with bracket
 * groups of numbers and ranges; several groups in one element multiply out, the first group
 * outermost (rack[1-2]-gn[01-02] -> rack1-gn01 rack1-gn02 rack2-gn01 rack2-gn02). A range is
 * printed with the width of its low bound, zeros kept: gn[009-011] -> gn009..gn011, gn[1-10] ->
 * gn1..gn10. Expansion keeps order and duplicates, as `scontrol show hostnames` does.
 *
 * Where we deliberately differ from Slurm 22.05 (tests/test_hostlist.c checks each one):
 *   - an unclosed bracket ("gn[01-") is an error; Slurm silently yields the name "gn]";
 *   - a ']' without '[' ("gn1]") is an error; Slurm keeps it as part of the name;
 *   - range bounds are plain digits; Slurm's strtoul also takes " 1" and "+1" (and counts the
 *     blank or sign into the zero-padding width);
 *   - a bound of more than HOSTLIST_MAX_DIGITS digits is an error; Slurm saturates it;
 *   - an expression with no names at all ("", ",") is an error; Slurm returns an empty list.
 */
#ifndef HOSTLIST_H
#define HOSTLIST_H

#include <stddef.h>
#include <sys/types.h>

#include "common/dt_error.h"

/* Names one bracket range may produce. Slurm's own limit (MAX_RANGE in hostlist.c), so anything
 * Slurm accepts we accept. */
#define HOSTLIST_MAX_RANGE 65536
/* Names in one list: 16x the largest production Slurm clusters, and with HOSTLIST_MAX_NAME bounds
 * an expansion at 64 MiB, so "n[0-999]x[0-999]" cannot exhaust memory. */
#define HOSTLIST_MAX_NAMES (1u << 18)
/* Longest name, in bytes; a DNS name is at most 253. */
#define HOSTLIST_MAX_NAME 255
/* Digits in one range bound: 18 always fit in 64 bits. */
#define HOSTLIST_MAX_DIGITS 18

struct hostlist {
    char *text;       /* the names, each NUL-terminated, back to back */
    size_t text_len;
    size_t text_cap;
    size_t *offsets;  /* offsets[i]: where name i starts in text */
    size_t count;
    size_t cap;
};

void hostlist_init(struct hostlist *list);
void hostlist_free(struct hostlist *list);

/* Appends one name (len bytes, need not be NUL-terminated). Returns 0, or -1 with err set when
 * the list would exceed HOSTLIST_MAX_NAMES, the name HOSTLIST_MAX_NAME, or memory runs out. */
int hostlist_push(struct hostlist *list, const char *name, size_t len, struct dt_err *err);

/* Expands a Slurm hostlist expression, appending its names to `list` (initialised by the caller;
 * on error it is left as it was; the caller frees it with hostlist_free either way).
 * Returns 0, or -1 with err naming the expression and the 1-based character position. */
int hostlist_expand(const char *expr, struct hostlist *list, struct dt_err *err);

/* Name i (0-based); NULL when i is out of range. */
const char *hostlist_nth(const struct hostlist *list, size_t i);

/* Index of the first name equal to `name`, or -1. */
ssize_t hostlist_find(const struct hostlist *list, const char *name);

/* Folds the names into Slurm's ranged form, exactly as `scontrol show hostlist` does for the same
 * names in the same order: "gn01,gn02,gn03,gn05" -> "gn[01-03,05]". Order is kept (no sorting),
 * duplicates stay. Returns a malloc'd string (the caller frees it), or NULL when out of memory. */
char *hostlist_compress(const struct hostlist *list);

#endif
