/* A model configuration described for people (one line per layer, then
 * the readout) and hashed for checkpoints (the architecture only). */
#include <stdarg.h>
#include <stdio.h>
#include <zlib.h>

#include "config.h"

static const char *const layer_names[] = {"gcn", "gin", "linear"};
static const char *const activation_names[] = {"none", "relu", "elu"};
static const char *const pooling_names[] = {"sum", "mean", "max"};

/* snprintf at offset n of buf, tolerating a full buffer; returns n + length. */
static int append(char *buf, size_t size, int n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bool room = buf && (size_t)n < size;
    n += vsnprintf(room ? buf + n : NULL, room ? size - (size_t)n : 0, fmt, ap);
    va_end(ap);
    return n;
}

int gcn_model_config_describe(const gcn_model_config *cfg, char *buf, size_t size)
{
    int n = 0;
    for (int i = 0; i < cfg->n_layers; i++) {
        const gcn_layer_config *l = &cfg->layers[i];
        n = append(buf, size, n, "%s%s ", i ? "\n" : "", layer_names[l->type]);
        n = l->out ? append(buf, size, n, "%lld", (long long)l->out) : append(buf, size, n, "classes");
        if (l->type == GCN_LAYER_GIN)
            n = append(buf, size, n, " eps %g%s", (double)l->eps, l->train_eps ? " trained" : "");
        if (!l->bias)
            n = append(buf, size, n, " no-bias");
        if (l->batchnorm)
            n = append(buf, size, n, " batchnorm");
        if (l->activation != GCN_ACT_NONE)
            n = append(buf, size, n, " %s", activation_names[l->activation]);
        if (l->dropout > 0)
            n = append(buf, size, n, " input-dropout %g", (double)l->dropout);
    }
    const gcn_readout_config *r = &cfg->readout;
    if (r->enabled)
        n = append(buf, size, n, "\nreadout %s pooling%s, linear heads to classes%s%g",
                   pooling_names[r->pooling], r->jk ? " of the input and every layer" : "",
                   r->dropout > 0 ? ", dropout " : "", (double)r->dropout);
    return n;
}

uint32_t gcn_model_config_hash(const gcn_model_config *cfg)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    for (int i = 0; i < cfg->n_layers; i++) {
        const gcn_layer_config *l = &cfg->layers[i];
        char line[128];
        int n = snprintf(line, sizeof line, "%d %lld %lld %d %d %d %d;", (int)l->type,
                         (long long)l->out, (long long)l->hidden, l->bias, l->batchnorm,
                         (int)l->activation, l->train_eps);
        crc = crc32(crc, (const Bytef *)line, (uInt)n);
    }
    if (cfg->readout.enabled) { /* node-level models hash as before readouts existed */
        char line[64];
        int n = snprintf(line, sizeof line, "readout %d %d;", (int)cfg->readout.pooling,
                         cfg->readout.jk);
        crc = crc32(crc, (const Bytef *)line, (uInt)n);
    }
    return (uint32_t)crc;
}
