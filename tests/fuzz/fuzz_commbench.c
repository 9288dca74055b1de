/* fuzz_commbench.c - libFuzzer target: any bytes as dtrain-commbench --json, read by predict as a
 * link (--inter/--intra) and as a job size's allreduce (--allreduce). Invariants: no crash or
 * leak; a link read is a finite alpha-beta line (beta above 0) or a curve of 2 to CURVE_POINTS
 * sizes, increasing, times finite and above 0; an allreduce read has 2 to LINK_MAX_RANKS ranks;
 * a refusal says why, naming the input. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/links.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_curve(const struct link_point *curve, int points)
{
    if (points < 2 || points > CURVE_POINTS)
        abort();
    for (int i = 0; i < points; i++)
        if (!(curve[i].bytes > 0) || !(curve[i].seconds > 0) || !isfinite(curve[i].seconds) ||
            (i > 0 && !(curve[i].bytes > curve[i - 1].bytes)))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)data, size, 0, &jerr);
    if (!doc)
        return 0;
    char why[512] = "";
    struct link_cost link;
    static struct link_curves curves;
    if (link_from_json(doc, "in.json", "allreduce", true, &link, &curves, why, sizeof why) == 0) {
        if (link.points > 0 && link.streamed)
            check_curve(link.streamed, link.streamed_points);
        if (link.points > 0)
            check_curve(link.curve, link.points);
        else if (!(link.beta > 0) || !isfinite(link.beta) || !(link.alpha >= 0) || !isfinite(link.alpha))
            abort();
    } else if (!strstr(why, "in.json")) {
        abort();
    }
    static struct measured_allreduce m;
    why[0] = '\0';
    if (allreduce_from_json(doc, "in.json", &m, why, sizeof why) == 0) {
        if (m.ranks < 2 || m.ranks > LINK_MAX_RANKS)
            abort();
        check_curve(m.cost.curve, m.cost.points);
        if (m.cost.streamed)
            check_curve(m.cost.streamed, m.cost.streamed_points);
    } else if (!strstr(why, "in.json")) {
        abort();
    }
    json_decref(doc);
    return 0;
}
