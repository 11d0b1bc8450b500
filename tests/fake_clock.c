/* The selector tests' fake clock (fake_clock.h). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "fake_clock.h"
#include "helpers.h"

static gcn_status fake_start(gcn_ctx *ctx, void *user, void **mark)
{
    (void)ctx;
    fake_clock *f = user;
    cr_assert_lt(f->n_marks, MAX_MARKS);
    fake_mark *m = &f->marks[f->n_marks++];
    m->cand = f->cand;
    m->ms = f->ms[f->cand][f->runs[f->cand]++ % N_TABLE];
    m->live = true;
    f->starts++;
    f->outstanding++;
    *mark = m;
    return GCN_OK;
}

static gcn_status fake_stop(gcn_ctx *ctx, void *user, void *mark)
{
    (void)ctx;
    (void)user;
    fake_mark *m = mark;
    cr_assert(m->live && !m->stopped, "stop of a released or stopped mark");
    m->stopped = true;
    return GCN_OK;
}

static gcn_status fake_poll(gcn_ctx *ctx, void *user, void *mark, bool *done, float *ms)
{
    (void)ctx;
    fake_clock *f = user;
    fake_mark *m = mark;
    cr_assert(m->live && m->stopped, "poll of a released or running mark");
    f->polls++;
    *done = m->polls++ >= f->delay;
    if (*done)
        *ms = m->ms;
    return GCN_OK;
}

static void fake_release(void *user, void *mark)
{
    fake_clock *f = user;
    fake_mark *m = mark;
    cr_assert(m->live, "mark released twice");
    m->live = false;
    f->released++;
    f->outstanding--;
}

/* n candidates of the given base times, each sample within +-noise of its
 * base (relative, seeded).  Freed with free(). */
fake_clock *fake_new(int n, const float *base, float noise)
{
    fake_clock *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    cr_assert_leq(n, MAX_CANDS);
    f->n = n;
    uint64_t seed = 7;
    for (int c = 0; c < n; c++) {
        float u[N_TABLE];
        test_fill_uniform(&seed, u, N_TABLE, -1.0f, 1.0f);
        for (int k = 0; k < N_TABLE; k++)
            f->ms[c][k] = base[c] * (1.0f + noise * u[k]);
    }
    return f;
}

int live_marks_of(const fake_clock *f, int cand)
{
    int k = 0;
    for (int i = 0; i < f->n_marks; i++)
        k += f->marks[i].live && f->marks[i].cand == cand;
    return k;
}

gcn_select_opts opts_of(int warmup, int samples, double prune)
{
    gcn_select_opts o = {.warmup = warmup, .samples = samples, .prune = prune, .rounds = 1};
    return o;
}

gcn_select_clock fake_clock_of(fake_clock *f)
{
    gcn_select_clock clock = {fake_start, fake_stop, fake_poll, fake_release, f};
    return clock;
}

gcn_selector *make(gcn_ctx *ctx, fake_clock *f, gcn_select_opts o)
{
    gcn_select_clock clock = fake_clock_of(f);
    gcn_selector *sel = NULL;
    cr_assert_eq(gcn_selector_create(ctx, &sel, f->n, &o, &clock), GCN_OK, "%s",
                 gcn_last_error(ctx));
    return sel;
}

/* One call as the SpMM op makes it: next, then the run, bracketed when
 * timed.  Returns the candidate; *timed (may be NULL) says how it ran. */
int step(gcn_ctx *ctx, gcn_selector *sel, fake_clock *f, bool *timed)
{
    int cand = -1;
    bool t = true;
    cr_assert_eq(gcn_selector_next(ctx, sel, &cand, &t), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert(cand >= 0 && cand < f->n, "candidate %d", cand);
    cr_assert_eq(gcn_selector_state(sel, cand), GCN_CAND_ACTIVE);
    if (t) {
        f->cand = cand;
        cr_assert_eq(gcn_selector_start(ctx, sel, cand), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_selector_stop(ctx, sel, cand, 1), GCN_OK, "%s", gcn_last_error(ctx));
    }
    if (timed)
        *timed = t;
    return cand;
}

/* Steps until the selector locks; returns the locked candidate. */
int run_until_locked(gcn_ctx *ctx, gcn_selector *sel, fake_clock *f, int max_calls)
{
    int cand = -1;
    for (int i = 0; !gcn_selector_locked(sel, &cand); i++) {
        cr_assert_lt(i, max_calls, "no lock after %d calls", max_calls);
        step(ctx, sel, f, NULL);
    }
    return cand;
}

gcn_select_opts two_rounds(int warmup, int samples, double prune)
{
    gcn_select_opts o = opts_of(warmup, samples, prune);
    o.rounds = 2;
    return o;
}

void fake_done(gcn_ctx **ctx, gcn_selector **sel, fake_clock *f)
{
    gcn_selector_free(sel);
    free(f);
    gcn_ctx_free(ctx);
}
