/* Structs a caller fills (options, kernel descriptions) start with
 * `size_t size`, the sizeof its own build saw.  A library built later, with
 * fields appended, reads what the caller's build knew and takes defaults
 * for the rest, so programs keep working across versions. */
#include <string.h>

#include "internal.h"

gcn_status gcn_struct_import(gcn_ctx *ctx, const char *what, void *dst, const void *defaults,
                             size_t full, const void *src)
{
    size_t size;
    memcpy(&size, src, sizeof size);
    if (size < sizeof size || size > full)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "%s: size is %zu, not that of a known version (this library's is %zu; "
                         "start from its default function)", what, size, full);
    memcpy(dst, defaults, full);
    memcpy(dst, src, size);
    memcpy(dst, &full, sizeof full);
    return GCN_OK;
}
