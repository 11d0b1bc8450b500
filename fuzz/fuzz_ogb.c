/* libFuzzer target: OGB node-property folders, gzip included.
 * The input layout is described in harness.h. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gcn_fuzz_ogb(data, size);
    return 0;
}
