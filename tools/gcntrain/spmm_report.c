/* gcntrain: what the SpMM selector chose (a table on stdout, JSON lines in
 * the log) and its choices kept for later runs or in --spmm-choices FILE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gcntrain.h"

/* The trainer's adjacency matrices, tagged for choices files. */
static int trainer_mats(const gcn_trainer *tr, const gcn_csr *mats[2], const char *tags[2])
{
    int n = 0;
    static const char *const names[2] = {"gcn", "raw"};
    const gcn_adjacency kinds[2] = {GCN_ADJ_GCN, GCN_ADJ_RAW};
    for (int k = 0; k < 2; k++)
        if (gcn_trainer_adjacency(tr, kinds[k])) {
            mats[n] = gcn_trainer_adjacency(tr, kinds[k]);
            tags[n++] = names[k];
        }
    return n;
}

#define MAX_SITES 16

static void log_site(session *s, int run, const char *tag, const gcn_spmm_site_info *t)
{
    char ms[4][32];
    log_line(&s->log,
             "{\"run\":%d,\"spmm_site\":\"%s\",\"feat\":%d,\"transposed\":%s,"
             "\"mode\":\"%s\",\"chosen\":\"%s\",\"runner_up\":\"%s\","
             "\"candidates\":%d,\"profiled_calls\":%lld,\"chosen_ms\":%s,"
             "\"runner_up_ms\":%s,\"cusparse_ms\":%s,\"setup_ms\":%s,\"self_alpha\":%g,"
             "\"block_part\":%d}",
             run + 1, tag, t->feat, t->transposed ? "true" : "false", t->mode, t->chosen,
             t->runner_up, t->n_candidates, (long long)t->profiled_calls,
             json_number(ms[0], sizeof ms[0], "%.6g", t->chosen_ms),
             json_number(ms[1], sizeof ms[1], "%.6g", t->runner_up_ms),
             json_number(ms[2], sizeof ms[2], "%.6g", t->cusparse_ms),
             json_number(ms[3], sizeof ms[3], "%.6g", t->setup_ms), (double)t->self_alpha,
             t->block_part);
}

bool spmm_locked(const session *s, const gcn_trainer *tr)
{
    if (!gcn_trainer_spmm_locked(tr))
        return false;
    for (int k = 0; s->trainers && k < gcn_ranks_count(s->ranks); k++)
        if (!gcn_trainer_spmm_locked(s->trainers[k]))
            return false;
    return true;
}

bool report_spmm(session *s, int run, const gcn_trainer *tr)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    gcn_spmm_site_info info[2][MAX_SITES];
    if (!spmm_locked(s, tr))
        return false;
    int n_mats = trainer_mats(tr, mats, tags), n[2] = {0, 0};
    for (int m = 0; m < n_mats; m++)
        n[m] = gcn_spmm_sites(mats[m], info[m], MAX_SITES);
    bool choice = false;
    for (int m = 0; m < n_mats; m++)
        for (int i = 0; i < n[m] && i < MAX_SITES; i++)
            choice |= info[m][i].n_candidates > 1;
    if (!choice)
        return true;
    printf("spmm       %-14s %-30s %9s  %-30s %9s %11s\n", "call site", "chosen", "ms",
           "runner-up", "ms", "cusparse ms");
    for (int m = 0; m < n_mats; m++)
        for (int i = 0; i < n[m] && i < MAX_SITES; i++) {
            const gcn_spmm_site_info *t = &info[m][i];
            char site[48], self[24] = "";
            static const char *const parts[] = {"", ":own", ":halo"};
            if (t->self_alpha != 0.0f)
                snprintf(self, sizeof self, "+%gI", (double)t->self_alpha);
            snprintf(site, sizeof site, "%s%s%s%s x %d", tags[m], parts[t->block_part], self,
                     t->transposed ? "^T" : "", t->feat);
            printf("           %-14s %-30s %9.4f  %-30s %9.4f %11.4f%s\n", site, t->chosen,
                   t->chosen_ms, t->runner_up[0] ? t->runner_up : "-", t->runner_up_ms,
                   t->cusparse_ms,
                   !t->locked ? "  (one product: not profiled)"
                              : t->profiled_calls ? "" : "  (a loaded choice)");
            log_site(s, run, tags[m], t);
        }
    fflush(stdout);
    return true;
}

/* On every rank: its trainer's choices read from (or written to) the
 * file, a collective through which rank 0 reads or writes the file. */
static gcn_status read_rank(gcn_ctx *ctx, gcn_trainer *tr, void *path)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    int n = trainer_mats(tr, mats, tags);
    return gcn_spmm_choices_read(ctx, path, mats, tags, n);
}

static gcn_status write_rank(gcn_ctx *ctx, gcn_trainer *tr, void *path)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    int n = trainer_mats(tr, mats, tags);
    return gcn_spmm_choices_write(ctx, path, mats, tags, n);
}

gcn_status load_choices(session *s, const gcn_trainer *tr, bool *from_file)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    int n = trainer_mats(tr, mats, tags);
    int exists = s->a.spmm_choices && access(s->a.spmm_choices, F_OK) == 0;
    gcn_status st = job_agree(s, AGREE_ROOT, &exists); /* in a job, rank 0 reads it */
    if (st != GCN_OK)
        return st;
    *from_file = exists;
    if (*from_file && s->trainers)
        return on_every_rank(s, read_rank, (void *)s->a.spmm_choices);
    if (*from_file)
        return gcn_spmm_choices_read(s->ctx, s->a.spmm_choices, mats, tags, n);
    if (s->trainers) /* each run on ranks profiles, unless a file has its choices */
        return GCN_OK;
    FILE *f = s->choices ? fmemopen(s->choices, s->choices_len, "r") : NULL;
    if (!f)
        return GCN_OK;
    st = gcn_spmm_choices_load(s->ctx, f, "the first run's choices", mats, tags, n);
    fclose(f);
    return st;
}

gcn_status save_choices(session *s, const gcn_trainer *tr, bool from_file)
{
    const gcn_csr *mats[2];
    const char *tags[2];
    int n = trainer_mats(tr, mats, tags);
    gcn_status st = GCN_OK;
    if (s->a.spmm_choices && !from_file) {
        signals_hold(true);
        st = s->trainers ? on_every_rank(s, write_rank, (void *)s->a.spmm_choices)
                         : gcn_spmm_choices_write(s->ctx, s->a.spmm_choices, mats, tags, n);
        signals_hold(false);
    }
    if (s->trainers)
        return st;
    FILE *f = st != GCN_OK || s->choices ? NULL : open_memstream(&s->choices, &s->choices_len);
    if (!f)
        return st;
    st = gcn_spmm_choices_save(s->ctx, f, mats, tags, n);
    fclose(f);
    if (st != GCN_OK) {
        free(s->choices);
        s->choices = NULL;
    }
    return st;
}
