/* The optimisers on the GPU against the CPU reference: each kind over one
 * parameter of awkward sizes, then more parameters than one update launch
 * holds, some without grads, bit for bit with the device step state, and
 * resuming with gcn_optim_set_steps.  Skipped without a GPU. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "gpu_helpers.h"
#include "helpers.h"
#include "optim_check.h"

typedef struct optim_case {
    bool adam, decoupled, nesterov;
    float momentum, dampening, weight_decay;
} optim_case;

static gcn_optim_opts case_opts(optim_case oc)
{
    gcn_optim_kind kind = !oc.adam ? GCN_OPTIM_SGD : oc.decoupled ? GCN_OPTIM_ADAMW : GCN_OPTIM_ADAM;
    gcn_optim_opts o = gcn_optim_default_opts(kind);
    o.lr = oc.adam ? 1e-2f : 0.05f;
    o.momentum = oc.momentum;
    o.dampening = oc.dampening;
    o.nesterov = oc.nesterov;
    o.weight_decay = oc.weight_decay;
    return o;
}

/* Three steps on both backends from the same state; parameters and state
 * must agree to 1e-6 after every step (the kernels mirror the CPU's
 * arithmetic, so in practice they agree exactly: see the test below). */
static void check_optim(gpu_pair *p, optim_case oc, int64_t n)
{
    gcn_optim_opts o = case_opts(oc);
    optim_rig r[2];
    rig_open(&r[0], p->cpu, &o, 1, &n);
    rig_open(&r[1], p->gpu, &o, 1, &n);
    const char *what[3] = {"parameter", "first state", "second state"};
    for (int step = 0; step < 3; step++) {
        rig_step(&r[0], step, false);
        rig_step(&r[1], step, false);
        for (int slot = -1; slot < 2; slot++) {
            if (slot >= 0 && !gcn_optim_state(r[0].opt, 0, slot))
                continue;
            float *want = rig_read(&r[0], 0, slot), *got = rig_read(&r[1], 0, slot);
            expect_close(got, want, n, 1e-6, what[slot + 1]);
            free(want);
            free(got);
        }
    }
    rig_close(&r[0]);
    rig_close(&r[1]);
}

Test(gpu_optim, optimiser_steps)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(7, false);
    const optim_case cases[] = {
        {false, false, false, 0.0f, 0.0f, 0.0f},  /* plain SGD */
        {false, false, false, 0.9f, 0.1f, 1e-2f}, /* momentum, dampening, decay */
        {false, false, true, 0.9f, 0.0f, 5e-4f},  /* Nesterov */
        {true, false, false, 0, 0, 0.0f},         /* Adam */
        {true, false, false, 0, 0, 1e-2f},        /* Adam, L2 */
        {true, true, false, 0, 0, 1e-2f},         /* AdamW */
    };
    const int64_t sizes[] = {1, 33, 210003};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
            check_optim(&p, cases[i], sizes[k]);
    gpu_pair_close(&p);
}

/* Five steps over RIG_MANY parameters (two update launches on the GPU, one
 * tensor striding), some without grads: after every step each parameter,
 * its state, the device step state and the host mirror equal the CPU's,
 * bit for bit. */
Test(gpu_optim, many_parameters_match_the_cpu_bit_for_bit)
{
    GPU_REQUIRED();
    enum { STEPS = 5 };
    gpu_pair p = gpu_pair_open(7, false);
    int64_t sizes[RIG_MANY];
    for (int i = 0; i < RIG_MANY; i++)
        sizes[i] = rig_many_size(i);
    for (int c = 0; c < RIG_KIND_CASES; c++) {
        gcn_optim_opts o = rig_kind_case(c);
        optim_rig r[2];
        rig_open(&r[0], p.cpu, &o, RIG_MANY, sizes);
        rig_open(&r[1], p.gpu, &o, RIG_MANY, sizes);
        for (int s = 0; s < STEPS; s++) {
            rig_step(&r[0], s, true);
            rig_step(&r[1], s, true);
            char what[96];
            for (int i = 0; i < RIG_MANY; i++)
                for (int slot = -1; slot < 2; slot++) {
                    if (slot >= 0 && !gcn_optim_state(r[0].opt, i, slot))
                        continue;
                    float *want = rig_read(&r[0], i, slot), *got = rig_read(&r[1], i, slot);
                    snprintf(what, sizeof what, "case %d step %d parameter %d slot %d", c, s, i,
                             slot);
                    expect_bits(got, want, sizes[i], sizeof *got, what);
                    free(want);
                    free(got);
                }
            int64_t count[2][RIG_MANY];
            double pow1[2][RIG_MANY] = {{0}}, pow2[2][RIG_MANY] = {{0}};
            rig_read_steps(&r[0], count[0], pow1[0], pow2[0]);
            rig_read_steps(&r[1], count[1], pow1[1], pow2[1]);
            snprintf(what, sizeof what, "case %d step %d", c, s);
            expect_bits(count[1], count[0], RIG_MANY, sizeof count[0][0], what);
            expect_bits(pow1[1], pow1[0], RIG_MANY, sizeof pow1[0][0], what);
            expect_bits(pow2[1], pow2[0], RIG_MANY, sizeof pow2[0][0], what);
            expect_bits(r[1].opt->param_steps, r[0].opt->param_steps, RIG_MANY,
                        sizeof r[0].opt->param_steps[0], what);
        }
        rig_close(&r[0]);
        rig_close(&r[1]);
    }
    gpu_pair_close(&p);
}

Test(gpu_optim, set_steps_resumes_bit_for_bit)
{
    GPU_REQUIRED();
    gpu_pair p = gpu_pair_open(7, false);
    for (int c = 0; c < RIG_KIND_CASES; c++) {
        gcn_optim_opts o = rig_kind_case(c);
        check_resume(p.gpu, &o, 7);
    }
    gpu_pair_close(&p);
}
