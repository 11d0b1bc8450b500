/* libFuzzer target: TU graph collections (DS_A.txt, DS_graph_indicator.txt ...).
 * The input layout is described in harness.h. */
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gcn_fuzz_tu(data, size);
    return 0;
}
