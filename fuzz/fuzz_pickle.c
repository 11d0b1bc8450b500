/* libFuzzer target: Planetoid's Python pickles (datasets/pickle.c).
 * The input layout is described in harness.h. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gcn_fuzz_pickle(data, size);
    return 0;
}
