/* A configuration put to use: command-line values over its keys, the
 * context options and the dataset it describes (setup.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../core/ranks.h"
#include "../core/rng.h"
#include "setup.h"

/* value into a field of size bytes; false when it does not fit. */
static bool copy_value(char *field, size_t size, const char *value)
{
    if (!*value || strlen(value) >= size)
        return false;
    strcpy(field, value);
    return true;
}

gcn_status gcn_model_config_set(gcn_model_config *cfg, const char *key, const char *value,
                                char *err, size_t err_size)
{
    char expected[128] = "";
    gcn_device device;
    int index;
    if (!cfg || !key || !value) {
        snprintf(expected, sizeof expected, "a configuration, a key and a value");
    } else if (!strcmp(key, "device")) {
        if (gcn_device_parse(value, &device, &index) != GCN_OK ||
            !copy_value(cfg->device, sizeof cfg->device, value))
            snprintf(expected, sizeof expected, "auto, cpu, cuda or cuda:N");
    } else if (!strcmp(key, "precision")) {
        if (strcmp(value, "fp32") && strcmp(value, "tf32") && strcmp(value, "bf16")) {
            snprintf(expected, sizeof expected, "fp32, tf32 or bf16");
        } else {
            cfg->tf32 = value[0] == 't';
            cfg->bf16 = value[0] == 'b';
        }
    } else if (!strcmp(key, "threads")) {
        char *end;
        long n = strtol(value, &end, 10);
        if (end == value || *end || n < 0 || n > GCN_MAX_THREADS)
            snprintf(expected, sizeof expected, "0 (the CPUs the process may use) to %d",
                     GCN_MAX_THREADS);
        else
            cfg->threads = (int)n;
    } else if (!strcmp(key, "ranks") || !strcmp(key, "devices")) {
        char *end;
        long n = strtol(value, &end, 10);
        if (end == value || *end || n < 1 || n > GCN_MAX_RANKS) {
            snprintf(expected, sizeof expected, "1 to %d", GCN_MAX_RANKS);
        } else {
            cfg->ranks = (int)n;
            cfg->nccl = key[0] == 'd';
        }
    } else if (!strcmp(key, "cuda_graph") || !strcmp(key, "sparse_input")) {
        if (strcmp(value, "on") && strcmp(value, "off"))
            snprintf(expected, sizeof expected, "on or off");
        else
            *(key[0] == 'c' ? &cfg->cuda_graph : &cfg->sparse_input) = value[1] == 'n';
    } else if (!strcmp(key, "labels")) {
        int32_t k;
        if (gcn_dataset_labels_parse(NULL, value, &k) != GCN_OK ||
            !copy_value(cfg->labels, sizeof cfg->labels, value))
            snprintf(expected, sizeof expected, "file or random:K with K in [2, 65536]");
    } else {
        struct { const char *key; char *field; size_t size; } strings[] = {
            {"spmm", cfg->spmm, sizeof cfg->spmm},
            {"reorder", cfg->reorder, sizeof cfg->reorder},
            {"root", cfg->root, sizeof cfg->root},
            {"cache_dir", cfg->cache_dir, sizeof cfg->cache_dir},
            {"features", cfg->features, sizeof cfg->features},
        };
        size_t i = 0, n = sizeof strings / sizeof *strings;
        while (i < n && strcmp(key, strings[i].key))
            i++;
        if (i == n)
            snprintf(expected, sizeof expected, "a key: device, precision, threads, ranks, "
                                                "devices, cuda_graph, sparse_input, spmm, "
                                                "reorder, root, cache_dir, features or "
                                                "labels");
        else if (!copy_value(strings[i].field, strings[i].size, value))
            snprintf(expected, sizeof expected, "a value of 1 to %zu characters",
                     strings[i].size - 1);
    }
    if (!expected[0])
        return GCN_OK;
    if (err && err_size)
        snprintf(err, err_size, "%s '%s': expected %s", key ? key : "(null)",
                 value ? value : "(null)", expected);
    return GCN_ERR_INVALID_ARG;
}

gcn_status gcn_model_config_ctx_opts(const gcn_model_config *cfg, gcn_ctx_opts *opts)
{
    if (!cfg || !opts)
        return GCN_ERR_INVALID_ARG;
    gcn_device device;
    int index;
    gcn_status st = gcn_device_parse(cfg->device, &device, &index);
    if (st != GCN_OK)
        return st;
    opts->device = device;
    opts->device_index = index;
    opts->seed = cfg->seed;
    opts->tf32 = cfg->tf32;
    opts->threads = cfg->threads;
    return GCN_OK;
}

/* The reordering a run on several ranks needs: its partition, parts:N
 * ("auto" picks it; parts:N:nnz, :nnz+K and :range are parts too). */
static gcn_status ranks_reorder(gcn_ctx *ctx, const gcn_model_config *cfg, char *spec,
                                size_t size)
{
    if (cfg->readout.enabled)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "a graph-level model trains on one rank "
                         "(%d asked for): its batches are whole graphs", cfg->ranks);
    gcn_reorder_opts o;
    if (strcmp(cfg->reorder, "auto") &&
        (gcn_reorder_parse(NULL, cfg->reorder, &o) != GCN_OK ||
         o.method != GCN_REORDER_PARTS || o.n_parts != cfg->ranks))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                         "reorder %s: a run on %d ranks orders the nodes by its partition, "
                         "parts:%d[:nnz[+K]][:range]", cfg->reorder, cfg->ranks, cfg->ranks);
    snprintf(spec, size, "parts:%d", cfg->ranks);
    if (strcmp(cfg->reorder, "auto"))
        snprintf(spec, size, "%s", cfg->reorder);
    return GCN_OK;
}

gcn_status gcn_model_config_load_dataset(gcn_ctx *ctx, const gcn_model_config *cfg,
                                         const char *spec, gcn_dataset **ds)
{
    if (!ctx || !cfg || !spec || !ds)
        return GCN_ERR_INVALID_ARG;
    gcn_dataset_opts o = gcn_dataset_default_opts();
    char parts[64];
    o.root = cfg->root;
    o.cache_dir = cfg->cache_dir[0] ? cfg->cache_dir : NULL;
    o.features = cfg->features;
    o.labels = cfg->labels;
    o.normalize_features = cfg->normalize_features;
    if (cfg->ranks > 1 || cfg->nccl) {
        GCN_TRY(ranks_reorder(ctx, cfg, parts, sizeof parts));
        o.reorder = parts;
    } else { /* auto: the order as loaded (gcntrain then times METIS's against it) */
        o.reorder = strcmp(cfg->reorder, "none") && strcmp(cfg->reorder, "auto") ? cfg->reorder
                                                                                  : NULL;
    }
    gcn_rng_seed(ctx, cfg->data_seed);
    return gcn_dataset_load(ctx, ds, spec, &o);
}
