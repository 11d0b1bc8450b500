/* Device time by category on the GPU: over training epochs the categories
 * sum to the span of the events, the span lies within the epoch's wall
 * time, and matmuls, SpMM, the optimiser and transfers each get time; then
 * the same through gcnbench train. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "sbm_train.h"
#include "tool_run.h"

static double sum_of(const gcn_prof_times *t)
{
    double s = 0;
    for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++)
        s += t->ms[c];
    return s;
}

Test(gpu_prof, categories_sum_to_the_span_of_each_epoch, .timeout = 120)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(11, false);
    gcn_ctx *ctx = p.gpu;
    gcn_dataset *ds = NULL;
    gcn_trainer *tr = sbm_trainer(ctx, 20000, 128,
                                  "{\"layers\": [{\"type\": \"gcn\", \"out\": 128,"
                                  " \"activation\": \"relu\", \"dropout\": 0.5},"
                                  " {\"type\": \"gcn\", \"out\": \"classes\", \"dropout\": 0.5}]}",
                                  &ds);
    gcn_epoch_stats es;
    gcn_prof_times t;
    /* after the selector's profiling an epoch queues the same work each time */
    for (int e = 0; e == 0 || !gcn_trainer_spmm_locked(tr); e++) {
        cr_assert_lt(e, 200, "the selector has not locked after %d epochs", e);
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
    }
    cr_assert_null(ctx->prof, "profiler state without a profile");
    int events = -1;
    for (int e = 0; e < 5; e++) {
        cr_assert_eq(gcn_ctx_profile_begin(ctx), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_trainer_epoch(ctx, tr, &es), GCN_OK, "%s", gcn_last_error(ctx));
        cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_OK, "%s", gcn_last_error(ctx));
        /* each interval is read to about a microsecond */
        double sum = sum_of(&t), wall = es.train_ms + es.eval_ms;
        cr_assert(fabs(sum - t.span_ms) <= 1e-3 * t.events + 1e-3 * t.span_ms,
                  "categories %.4f ms, span %.4f ms over %d events", sum, t.span_ms, t.events);
        cr_assert(t.span_ms > 0 && t.span_ms <= wall + 1.0, "span %.4f ms, epoch %.4f ms",
                  t.span_ms, wall);
        for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++)
            cr_assert_gt(t.ms[c], 0, "no %s time", gcn_prof_category_name(c));
        cr_assert(events < 0 || t.events == events, "%d events, then %d", events, t.events);
        events = t.events;
    }
    cr_assert_eq(gcn_ctx_profile_end(ctx, &t), GCN_ERR_STATE);
    gcn_trainer_free(&tr);
    gcn_dataset_free(&ds);
    gpu_pair_close(&p);
}

Test(gpu_prof, bench_train_reports_the_breakdown, .timeout = 180)
{
    GPU_REQUIRED();
    tool_result *r = calloc(1, sizeof *r);
    cr_assert_not_null(r);
    tool_run(r, "gcnbench", (const char *[]){"train", "models/gcn.json", "--dataset",
                                             "sbm:nodes=20000", "--device", "cuda", "--epochs",
                                             "10", "--warmup", "20", NULL});
    cr_assert_eq(r->code, 0, "%s", r->err);
    cJSON *j = cJSON_Parse(r->out);
    cr_assert_not_null(j, "not JSON: %s", r->out);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
    cr_assert(cJSON_IsString(dev) && strcmp(dev->valuestring, "cpu"), "%s", r->out);
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(j, "gpu_ms");
    cr_assert(cJSON_IsObject(g), "%s", r->out);
    double sum = 0;
    for (int c = 0; c < GCN_PROF_N_CATEGORIES; c++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(g, gcn_prof_category_name(c));
        cr_assert(cJSON_IsNumber(v) && v->valuedouble >= 0, "%s", r->out);
        sum += v->valuedouble;
    }
    cr_assert_gt(cJSON_GetObjectItemCaseSensitive(g, "gemm")->valuedouble, 0);
    cr_assert_gt(cJSON_GetObjectItemCaseSensitive(g, "spmm")->valuedouble, 0);
    /* medians of the categories against the median span: close, not equal */
    double span = cJSON_GetObjectItemCaseSensitive(j, "gpu_span_ms")->valuedouble;
    double epoch = cJSON_GetObjectItemCaseSensitive(j, "epoch_ms")->valuedouble;
    cr_assert(fabs(sum - span) <= 0.1 * span, "categories %.4f ms, span %.4f ms", sum, span);
    cr_assert(span <= epoch * 1.1 + 1.0, "span %.4f ms, epoch %.4f ms", span, epoch);
    cJSON_Delete(j);
    free(r);
}
