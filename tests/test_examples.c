/* The programs in examples/ build and run (make test builds them first), so
 * the embedding API they show cannot drift from the library. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tool_run.h"

Test(examples, train_loop_learns_the_karate_club_split, .timeout = 120)
{
    static tool_result r;
    const char *args[] = {NULL};
    tool_run(&r, "examples/train_loop", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    const char *final = strstr(r.out, "final accuracy ");
    cr_assert_not_null(final, "%s", r.out);
    /* two labelled members of 34; the published GCN result misses one or two */
    cr_assert_geq(atof(final + strlen("final accuracy ")), 0.9, "%s", r.out);
}

Test(examples, user_kernel_runs_forced_and_among_the_selector_candidates, .timeout = 120)
{
    static tool_result r;
    const char *args[] = {NULL};
    tool_run(&r, "examples/user_kernel", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "agree to 0") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "2 candidates, locked") != NULL, "%s", r.out);
    cr_assert(strstr(r.out, "local_rows") != NULL, "%s", r.out);
}

Test(examples, ranks_loop_trains_the_karate_club_on_two_ranks, .timeout = 120)
{
    static tool_result r;
    const char *args[] = {NULL};
    tool_run(&r, "examples/ranks_loop", args);
    cr_assert_eq(r.code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "on 2 ranks of") != NULL, "%s", r.out);
    const char *final = strstr(r.out, "final accuracy ");
    cr_assert_not_null(final, "%s", r.out);
    cr_assert_geq(atof(final + strlen("final accuracy ")), 0.9, "%s", r.out);
}
