/* The selector's CUDA clock in a build without CUDA (make CUDA=0): no
 * context is on a GPU, so none is asked for; NULL says there is none. */
#include "select.h"

const gcn_select_clock *gcn_select_cuda_clock(void)
{
    return NULL;
}
