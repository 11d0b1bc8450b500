/* MergePath-SpMM planning on the host: the paper's cost per feature width,
 * the worker count raised to fill the GPU, and the lanes per worker.  The
 * diagonal search itself is gcn_merge_path_search in plan.h, run on
 * the GPU by the plan (mergepath.cu) and here by the tests. */
#include <math.h>

#include "plan.h"

/* Feature widths and costs from the paper (ISPASS'23, per-F tuning). */
static const int cost_feat[] = {2, 4, 8, 16, 32, 64, 128};
static const int cost_items[] = {50, 15, 15, 20, 30, 35, 50};
#define N_COST ((int)(sizeof cost_feat / sizeof cost_feat[0]))

int gcn_mergepath_default_cost(int feat)
{
    if (feat <= cost_feat[0])
        return cost_items[0];
    if (feat >= cost_feat[N_COST - 1])
        return cost_items[N_COST - 1];
    int i = 0;
    while (cost_feat[i + 1] < feat)
        i++;
    double t = (log2((double)feat) - log2((double)cost_feat[i])) /
               (log2((double)cost_feat[i + 1]) - log2((double)cost_feat[i]));
    return (int)lround(cost_items[i] + t * (cost_items[i + 1] - cost_items[i]));
}

int gcn_mergepath_cost(int feat, int64_t items, int64_t target_workers, int knob)
{
    if (knob > 0)
        return knob;
    int64_t cost = gcn_mergepath_default_cost(feat);
    if (target_workers > 0 && items / cost < target_workers) {
        cost = items / target_workers;
        if (cost < 1)
            cost = 1;
    }
    return (int)cost;
}

int gcn_mergepath_lanes(int vecs)
{
    return vecs <= 32 ? vecs : 32 * ((vecs + 31) / 32);
}
