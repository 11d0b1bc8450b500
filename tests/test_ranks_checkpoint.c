/* Checkpoints and predictions over ranks on the CPU: a checkpoint written
 * by N ranks resumes on M ranks or on one context (and one context's on N
 * ranks) to the losses of the run that never stopped, and the ranks'
 * predictions are one context's, in the original node order.  The losses
 * agree within 1e-5 relative, not to the bit: each rank sums its rows'
 * neighbours and the gradients in another order than one context does
 * (docs/distributed.md, "Agreement"). */
#include <criterion/criterion.h>

#include "ranks_ckpt_check.h"

Test(ranks_checkpoint, saved_on_2_resumes_on_3)
{
    ranks_ckpt_round_trip(GCN_DEVICE_CPU, GCN_COMM_LOCAL, 2, 2, 3, 1e-5);
}

Test(ranks_checkpoint, saved_on_3_resumes_on_one_context)
{
    ranks_ckpt_round_trip(GCN_DEVICE_CPU, GCN_COMM_LOCAL, 1, 3, 1, 1e-5);
}

Test(ranks_checkpoint, one_contexts_resumes_on_4)
{
    ranks_ckpt_round_trip(GCN_DEVICE_CPU, GCN_COMM_LOCAL, 1, 1, 4, 1e-5);
}

Test(ranks_checkpoint, ranks_write_one_contexts_file)
{
    ranks_ckpt_same_file(GCN_DEVICE_CPU, GCN_COMM_LOCAL, 3);
}

Test(ranks_checkpoint, a_bad_file_stops_every_rank_with_rank_0s_message)
{
    ranks_ckpt_bad_file(GCN_DEVICE_CPU, GCN_COMM_LOCAL, 3);
}

Test(ranks_checkpoint, predictions_on_ranks_are_one_contexts)
{
    ranks_ckpt_predictions(GCN_DEVICE_CPU, GCN_COMM_LOCAL, 3, 1e-5f);
}
