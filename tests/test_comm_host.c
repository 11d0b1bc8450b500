/* Host-memory collectives over the local transport: broadcast, gather and
 * scatter of byte counts that are not whole words (and of none), from any
 * root, on 1 to 5 ranks, each rank's bytes checked against what the
 * sender wrote. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "core/comm_host.h"

/* Rank r's byte k in a collective: depends on both, so a misplaced or
 * shifted byte shows. */
static unsigned char byte_of(int r, int64_t k)
{
    return (unsigned char)(31 * r + 7 * k + 1);
}

typedef struct job {
    int root;
    bool ok[8];
} job;

static bool check_broadcast(gcn_ctx *ctx, int root)
{
    unsigned char buf[13];
    for (int k = 0; k < 13; k++)
        buf[k] = gcn_ctx_rank(ctx) == root ? byte_of(root, k) : 0;
    if (gcn_comm_broadcast_host(ctx, buf, 13, root) != GCN_OK)
        return false;
    for (int k = 0; k < 13; k++)
        if (buf[k] != byte_of(root, k))
            return false;
    return true;
}

/* Rank r sends r * 3 + 1 bytes (r == 1 sends none). */
static int64_t gather_len(int r)
{
    return r == 1 ? 0 : r * 3 + 1;
}

static bool check_gather(gcn_ctx *ctx, int root)
{
    int me = gcn_ctx_rank(ctx), n = gcn_ctx_ranks(ctx);
    unsigned char mine[32];
    for (int k = 0; k < gather_len(me); k++)
        mine[k] = byte_of(me, k);
    unsigned char *all = NULL;
    int64_t lens[8];
    if (gcn_comm_gather_host(ctx, mine, gather_len(me), root, (void **)&all, lens) != GCN_OK)
        return false;
    bool ok = (all != NULL) == (me == root);
    int64_t at = 0;
    for (int p = 0; p < n; p++) {
        ok = ok && lens[p] == gather_len(p);
        for (int64_t k = 0; all && k < gather_len(p); k++)
            ok = ok && all[at + k] == byte_of(p, k);
        at += gather_len(p);
    }
    free(all);
    return ok;
}

static bool check_scatter(gcn_ctx *ctx, int root)
{
    int me = gcn_ctx_rank(ctx), n = gcn_ctx_ranks(ctx);
    unsigned char send[128];
    int64_t lens[8], at = 0;
    for (int p = 0; p < n; p++) {
        lens[p] = gather_len(p);
        for (int64_t k = 0; k < lens[p]; k++)
            send[at + k] = byte_of(p, k);
        at += lens[p];
    }
    unsigned char *got = NULL;
    int64_t len = -1;
    if (gcn_comm_scatter_host(ctx, me == root ? send : NULL, me == root ? lens : NULL, root,
                              (void **)&got, &len) != GCN_OK)
        return false;
    bool ok = len == gather_len(me) && (got != NULL) == (len > 0);
    for (int64_t k = 0; ok && k < len; k++)
        ok = got[k] == byte_of(me, k);
    free(got);
    return ok;
}

static gcn_status run_rank(gcn_ctx *ctx, int rank, void *user)
{
    job *j = user;
    j->ok[rank] = check_broadcast(ctx, j->root) && check_gather(ctx, j->root) &&
                  check_scatter(ctx, j->root);
    return GCN_OK;
}

Test(comm_host, broadcast_gather_and_scatter_move_every_byte)
{
    gcn_ctx *main = test_cpu_ctx(1);
    for (int n = 1; n <= 5; n++)
        for (int root = 0; root < n; root += n > 2 ? n - 2 : 1) {
            gcn_ctx_opts o = gcn_ctx_default_opts();
            o.device = GCN_DEVICE_CPU;
            o.threads = 1;
            gcn_ranks *g = NULL;
            cr_assert_eq(gcn_ranks_create(main, &g, n, GCN_COMM_LOCAL, &o), GCN_OK);
            job j = {.root = root};
            cr_assert_eq(gcn_ranks_run(main, g, run_rank, &j), GCN_OK, "%s",
                         gcn_last_error(main));
            for (int r = 0; r < n; r++)
                cr_assert(j.ok[r], "%d ranks, root %d: rank %d", n, root, r);
            gcn_ranks_free(&g);
        }
    gcn_ctx_free(&main);
}
