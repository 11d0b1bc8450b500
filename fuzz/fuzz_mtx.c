/* libFuzzer target: Matrix Market files.
 * The input layout is described in harness.h. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gcn_fuzz_mtx(data, size);
    return 0;
}
