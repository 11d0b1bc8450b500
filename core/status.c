/* Status names and the per-context error message. */
#include <stdio.h>
#include <string.h>

#include "internal.h"

const char *gcn_status_str(gcn_status st)
{
    switch (st) {
    case GCN_OK: return "ok";
    case GCN_ERR_INVALID_ARG: return "invalid argument";
    case GCN_ERR_SHAPE: return "shape mismatch";
    case GCN_ERR_DEVICE: return "device error";
    case GCN_ERR_NOMEM: return "out of memory";
    case GCN_ERR_IO: return "i/o error";
    case GCN_ERR_FORMAT: return "malformed input";
    case GCN_ERR_CUDA: return "CUDA error";
    case GCN_ERR_UNSUPPORTED: return "unsupported";
    case GCN_ERR_NOT_FOUND: return "not found";
    case GCN_ERR_NUMERIC: return "non-finite value";
    case GCN_ERR_STATE: return "invalid state";
    case GCN_ERR_DTYPE: return "dtype mismatch";
    }
    return "unknown status";
}

gcn_status gcn_set_error(gcn_ctx *ctx, gcn_status st, const char *file, int line,
                         const char *fmt, ...)
{
    if (!ctx)
        return st;
    const char *base = strrchr(file, '/');
    char msg[sizeof ctx->err - 64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(ctx->err, sizeof ctx->err, "%s (%s:%d)", msg, base ? base + 1 : file, line);
    gcn_log(ctx, GCN_LOG_DEBUG, "%s: %s", gcn_status_str(st), ctx->err);
    return st;
}

gcn_status gcn_error_prefix(gcn_ctx *ctx, gcn_status st, const char *fmt, ...)
{
    if (!ctx)
        return st;
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t w = strlen(what), old = strlen(ctx->err), room = sizeof ctx->err - 1 - w - 2;
    old = old < room ? old : room;
    memmove(ctx->err + w + 2, ctx->err, old);
    memcpy(ctx->err, what, w);
    memcpy(ctx->err + w, ": ", 2);
    ctx->err[w + 2 + old] = '\0';
    return st;
}

const char *gcn_last_error(const gcn_ctx *ctx)
{
    return ctx ? ctx->err : "no context";
}

void gcn_log(gcn_ctx *ctx, gcn_log_level level, const char *fmt, ...)
{
    if (!ctx || !ctx->log_fn || level > ctx->log_level)
        return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx->log_fn(level, msg, ctx->log_user);
}
