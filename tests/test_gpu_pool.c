/* gcn_segment_pool and gcn_readout on the GPU against the CPU: the same
 * bits forward and backward, for graphs of every size (empty ones included)
 * and widths that are not a multiple of a warp. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "readout_run.h"

/* y = pool(x) by offsets on ctx and x's gradient for loss = r^T y w
 * (test_weigh), both on the host. */
static void pool_on(gcn_ctx *ctx, const float *xh, const int32_t *off, int64_t segs,
                    int64_t rows, int64_t cols, gcn_pooling kind, float **y, float **dx)
{
    gcn_tensor *x = test_tensor(ctx, xh, rows, cols), *out = NULL, *loss = NULL;
    gcn_index *o = test_index(ctx, off, segs + 1);
    cr_assert_eq(gcn_tensor_set_requires_grad(x, true), GCN_OK);
    cr_assert_eq(gcn_segment_pool(ctx, x, o, kind, &out), GCN_OK, "%s", gcn_last_error(ctx));
    cr_assert_eq(test_weigh(ctx, out, &loss), GCN_OK);
    cr_assert_eq(gcn_backward(ctx, loss), GCN_OK, "%s", gcn_last_error(ctx));
    *y = test_read(ctx, out);
    *dx = test_read(ctx, gcn_tensor_grad(x));
    gcn_tensor_free(&x);
    gcn_tensor_free(&out);
    gcn_tensor_free(&loss);
    gcn_index_free(&o);
}

Test(gpu_pool, same_bits_as_the_cpu)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(21, false);
    enum { SEGS = 300 };
    int32_t off[SEGS + 1];
    uint64_t s = 77;
    off[0] = 0;
    for (int g = 0; g < SEGS; g++) { /* 0 to 127 nodes a graph, every 50th empty */
        s = s * 6364136223846793005ULL + 1;
        off[g + 1] = off[g] + (g % 50 == 0 ? 0 : (int32_t)(s >> 57));
    }
    const int64_t widths[] = {1, 40, 64, 300};
    for (size_t w = 0; w < sizeof widths / sizeof *widths; w++) {
        int64_t rows = off[SEGS], cols = widths[w];
        float *xh = host_random(&s, rows * cols, -2.0f, 2.0f);
        for (int k = 0; k < 3; k++) {
            float *yc, *dc, *yg, *dg;
            pool_on(p.cpu, xh, off, SEGS, rows, cols, (gcn_pooling)k, &yc, &dc);
            pool_on(p.gpu, xh, off, SEGS, rows, cols, (gcn_pooling)k, &yg, &dg);
            expect_same(yg, yc, SEGS * cols, "pooled");
            expect_same(dg, dc, rows * cols, "gradient");
            free(yc);
            free(dc);
            free(yg);
            free(dg);
        }
        free(xh);
    }
    gpu_pair_close(&p);
}

Test(gpu_pool, readout_same_bits_as_the_cpu)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(22, false);
    uint64_t s = 78;
    const int64_t cols[][READOUT_HEADS] = {{3, 64, 64}, {1, 40, 300}};
    for (int w = 0; w < 2; w++)
        for (int k = 0; k < 3; k++)
            for (int mode = 0; mode < 3; mode++) { /* dropout training, none, evaluation */
                /* 15 classes: 13,500 head gradients, more than a block keeps in
                 * shared memory, so the backward draws them again */
                readout_case c = readout_case_random(&s, 300, cols[w], w ? 15 : 2,
                                                     (gcn_pooling)k, mode == 1 ? 0.0f : 0.5f,
                                                     mode != 2);
                readout_result rc, rg;
                readout_run(p.cpu, &c, true, &rc);
                readout_run(p.gpu, &c, true, &rg);
                expect_same(rg.scores, rc.scores, c.segs * c.classes, "scores");
                for (int j = 0; c.training && j < READOUT_HEADS; j++) {
                    expect_same(rg.dh[j], rc.dh[j], c.rows * c.cols[j], "dh");
                    expect_same(rg.dw[j], rc.dw[j], c.cols[j] * c.classes, "dw");
                    expect_same(rg.db[j], rc.db[j], c.classes, "db");
                }
                readout_result_free(&rc);
                readout_result_free(&rg);
                readout_case_free(&c);
            }
    gpu_pair_close(&p);
}
