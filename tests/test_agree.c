/* gcntrain's agreement of a job's rank processes on what each decided
 * alone: every rank locked, any rank signalled, rank 0's file. */
#include <criterion/criterion.h>

#include "tools/gcntrain/agree.h"

Test(job_agree, all_holds_only_when_every_rank_has_it)
{
    const double locked[3] = {1, 1, 1}, one_not[3] = {1, 0, 1};
    cr_assert_eq(agree_combine(AGREE_ALL, locked, 3), 1);
    cr_assert_eq(agree_combine(AGREE_ALL, one_not, 3), 0);
    cr_assert_eq(agree_combine(AGREE_ALL, one_not, 1), 1, "a job of one rank is its own");
}

Test(job_agree, any_takes_the_signal_of_whichever_rank_got_one)
{
    const double none[4] = {0, 0, 0, 0}, last[4] = {0, 0, 0, 15}, two[4] = {2, 0, 15, 0};
    cr_assert_eq(agree_combine(AGREE_ANY, none, 4), 0);
    cr_assert_eq(agree_combine(AGREE_ANY, last, 4), 15);
    cr_assert_eq(agree_combine(AGREE_ANY, two, 4), 15);
}

Test(job_agree, root_is_rank_0s_whatever_the_others_see)
{
    const double only_0[3] = {1, 0, 0}, not_0[3] = {0, 1, 1};
    cr_assert_eq(agree_combine(AGREE_ROOT, only_0, 3), 1);
    cr_assert_eq(agree_combine(AGREE_ROOT, not_0, 3), 0);
}
