/* JSON model configurations: strict parsing with cJSON.  Unknown keys,
 * wrong types, values out of range and missing required fields are errors
 * that name the file and the key path. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"
#include "../core/ranks.h"
#include "../datasets/dataset.h"
#include "config.h"

typedef struct parser {
    const char *source;
    char *err;
    size_t err_size;
} parser;

static gcn_status fail(parser *p, const char *path, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (p->err && p->err_size)
        snprintf(p->err, p->err_size, "%s: %s: %s", p->source, path, msg);
    return GCN_ERR_FORMAT;
}

gcn_model_config gcn_model_config_default(void)
{
    gcn_model_config c;
    memset(&c, 0, sizeof c);
    c.optim = gcn_optim_default_opts(GCN_OPTIM_ADAM);
    c.optim.lr = 0.01f;
    c.epochs = 200;
    c.runs = 1;
    strcpy(c.device, "auto");
    strcpy(c.spmm, "auto");
    c.cuda_graph = true;
    c.sparse_input = true;
    c.ranks = 1;
    strcpy(c.reorder, "auto");
    strcpy(c.root, "data");
    strcpy(c.features, "file");
    strcpy(c.labels, "file");
    c.download = true;
    c.batch_size = GCN_GRAPH_BATCH_SIZE;
    return c;
}

/* ---- typed getters ------------------------------------------------------ */

static gcn_status get_number(parser *p, const cJSON *v, const char *path, double lo, double hi,
                             bool hi_open, const char *range, double *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        (hi_open ? v->valuedouble >= hi : v->valuedouble > hi))
        return fail(p, path, "expected a number in %s", range);
    *out = v->valuedouble;
    return GCN_OK;
}

static gcn_status get_int(parser *p, const cJSON *v, const char *path, double lo, double hi,
                          int64_t *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return fail(p, path, "expected an integer in [%.0f, %.0f]", lo, hi);
    *out = (int64_t)v->valuedouble;
    return GCN_OK;
}

static gcn_status get_float(parser *p, const cJSON *v, const char *path, double lo, double hi,
                            bool hi_open, const char *range, float *out)
{
    double d = 0.0;
    GCN_TRY(get_number(p, v, path, lo, hi, hi_open, range, &d));
    *out = (float)d;
    return GCN_OK;
}

/* A count in [1, hi]. */
static gcn_status get_count(parser *p, const cJSON *v, const char *path, double hi, int *out)
{
    int64_t i = 0;
    GCN_TRY(get_int(p, v, path, 1, hi, &i));
    *out = (int)i;
    return GCN_OK;
}

static gcn_status get_bool(parser *p, const cJSON *v, const char *path, bool *out)
{
    if (!cJSON_IsBool(v))
        return fail(p, path, "expected true or false");
    *out = cJSON_IsTrue(v);
    return GCN_OK;
}

/* A string from a fixed set; *out is its index. */
static gcn_status get_choice(parser *p, const cJSON *v, const char *path,
                             const char *const *choices, int n, int *out)
{
    char list[160] = "";
    for (int i = 0; i < n; i++) {
        if (cJSON_IsString(v) && !strcmp(v->valuestring, choices[i])) {
            *out = i;
            return GCN_OK;
        }
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 choices[i]);
    }
    return fail(p, path, "expected one of %s", list);
}

static gcn_status get_string(parser *p, const cJSON *v, const char *path, char *out, size_t size)
{
    if (!cJSON_IsString(v) || strlen(v->valuestring) == 0 || strlen(v->valuestring) >= size)
        return fail(p, path, "expected a non-empty string of at most %zu characters", size - 1);
    strcpy(out, v->valuestring);
    return GCN_OK;
}

/* cJSON keeps every copy of a repeated key; a strict reader refuses them.
 * prefix is the object's own path ("" at the top level). */
static gcn_status check_unique_keys(parser *p, const cJSON *obj, const char *prefix)
{
    for (const cJSON *v = obj->child; v; v = v->next)
        for (const cJSON *w = obj->child; w != v; w = w->next)
            if (!strcmp(v->string, w->string)) {
                char path[160];
                snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", v->string);
                return fail(p, path, "duplicate key");
            }
    return GCN_OK;
}

/* "file", "none", "degree" or "random:D" with D in [1, 2^20], as the
 * dataset loader accepts them. */
static gcn_status get_features(parser *p, const cJSON *v, const char *path, char *out, size_t size)
{
    static const char expected[] =
        "expected \"file\", \"none\", \"degree\" or \"random:D\" with D in [1, 1048576]";
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size)
        return fail(p, path, "%s", expected);
    const char *s = v->valuestring;
    bool ok = !strcmp(s, "file") || !strcmp(s, "none") || !strcmp(s, "degree");
    if (!strncmp(s, "random:", 7)) {
        char *end = NULL;
        errno = 0;
        long d = strtol(s + 7, &end, 10);
        ok = end != s + 7 && !*end && !errno && d >= 1 && d <= (1L << 20);
    }
    if (!ok)
        return fail(p, path, "%s", expected);
    strcpy(out, s);
    return GCN_OK;
}

static gcn_status get_labels(parser *p, const cJSON *v, const char *path, char *out, size_t size)
{
    int32_t k;
    if (!cJSON_IsString(v) || strlen(v->valuestring) >= size ||
        gcn_dataset_labels_parse(NULL, v->valuestring, &k) != GCN_OK)
        return fail(p, path, "expected \"file\" or \"random:K\" with K in [2, 65536]");
    strcpy(out, v->valuestring);
    return GCN_OK;
}

/* ---- sections ------------------------------------------------------------- */

static const char *const layer_types[] = {"gcn", "gin", "linear"};
static const char *const activations[] = {"none", "relu", "elu"};
static const char *const norms[] = {"none", "batch"};

static gcn_status parse_layer_key(parser *p, const cJSON *v, const char *path, gcn_layer_config *l,
                                  bool *has_type, bool *has_out)
{
    const char *k = v->string;
    double d = 0.0;
    int c;
    if (!strcmp(k, "type")) {
        GCN_TRY(get_choice(p, v, path, layer_types, 3, &c));
        l->type = (gcn_layer_type)c;
        *has_type = true;
    } else if (!strcmp(k, "out")) {
        *has_out = true;
        if (cJSON_IsString(v) && !strcmp(v->valuestring, "classes"))
            l->out = 0;
        else if (get_int(p, v, path, 1, 1 << 20, &l->out) != GCN_OK)
            return fail(p, path, "expected an integer in [1, 1048576] or \"classes\"");
    } else if (!strcmp(k, "hidden")) {
        GCN_TRY(get_int(p, v, path, 1, 1 << 20, &l->hidden));
    } else if (!strcmp(k, "bias")) {
        GCN_TRY(get_bool(p, v, path, &l->bias));
    } else if (!strcmp(k, "norm")) {
        GCN_TRY(get_choice(p, v, path, norms, 2, &c));
        l->batchnorm = c == 1;
    } else if (!strcmp(k, "activation")) {
        GCN_TRY(get_choice(p, v, path, activations, 3, &c));
        l->activation = (gcn_activation)c;
    } else if (!strcmp(k, "dropout")) {
        GCN_TRY(get_number(p, v, path, 0, 1, true, "[0, 1)", &d));
        l->dropout = (float)d;
    } else if (!strcmp(k, "weight_decay")) {
        GCN_TRY(get_number(p, v, path, 0, 1, false, "[0, 1]", &d));
        l->weight_decay = (float)d;
    } else if (!strcmp(k, "eps")) {
        GCN_TRY(get_number(p, v, path, -1, 1e6, false, "[-1, 1e6]", &d));
        l->eps = (float)d;
    } else if (!strcmp(k, "train_eps")) {
        GCN_TRY(get_bool(p, v, path, &l->train_eps));
    } else {
        return fail(p, path, "unknown key");
    }
    return GCN_OK;
}

static gcn_status parse_layers(parser *p, const cJSON *arr, gcn_model_config *cfg)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1)
        return fail(p, "layers", "expected a non-empty array of layer objects");
    if (cJSON_GetArraySize(arr) > GCN_MAX_LAYERS)
        return fail(p, "layers", "at most %d layers", GCN_MAX_LAYERS);
    const cJSON *obj;
    int i = 0;
    cJSON_ArrayForEach(obj, arr) {
        char path[96];
        snprintf(path, sizeof path, "layers[%d]", i);
        if (!cJSON_IsObject(obj))
            return fail(p, path, "expected an object");
        GCN_TRY(check_unique_keys(p, obj, path));
        gcn_layer_config *l = &cfg->layers[i];
        *l = (gcn_layer_config){.bias = true, .weight_decay = -1.0f};
        bool has_type = false, has_out = false;
        const cJSON *v;
        cJSON_ArrayForEach(v, obj) {
            char kp[160];
            snprintf(kp, sizeof kp, "%s.%s", path, v->string);
            GCN_TRY(parse_layer_key(p, v, kp, l, &has_type, &has_out));
        }
        if (!has_type || !has_out)
            return fail(p, path, "missing required key \"%s\"", has_type ? "out" : "type");
        if (l->type != GCN_LAYER_GIN && (l->hidden || l->train_eps || l->eps != 0.0f))
            return fail(p, path, "hidden, eps and train_eps apply to gin layers only");
        i++;
    }
    cfg->n_layers = i;
    return GCN_OK;
}

static const char *const optim_types[] = {"sgd", "adam", "adamw"};

static gcn_status parse_optimizer(parser *p, const cJSON *obj, gcn_optim_opts *o)
{
    if (!cJSON_IsObject(obj))
        return fail(p, "optimizer", "expected an object");
    GCN_TRY(check_unique_keys(p, obj, "optimizer"));
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(obj, "type");
    int c;
    if (!type)
        return fail(p, "optimizer", "missing required key \"type\"");
    GCN_TRY(get_choice(p, type, "optimizer.type", optim_types, 3, &c));
    *o = gcn_optim_default_opts((gcn_optim_kind)c);
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char path[96];
        snprintf(path, sizeof path, "optimizer.%s", v->string);
        const char *k = v->string;
        if (!strcmp(k, "type"))
            continue;
        if (!strcmp(k, "lr"))
            GCN_TRY(get_float(p, v, path, 0, 10, false, "[0, 10]", &o->lr));
        else if (!strcmp(k, "weight_decay"))
            GCN_TRY(get_float(p, v, path, 0, 10, false, "[0, 10]", &o->weight_decay));
        else if (!strcmp(k, "momentum"))
            GCN_TRY(get_float(p, v, path, 0, 10, false, "[0, 10]", &o->momentum));
        else if (!strcmp(k, "dampening"))
            GCN_TRY(get_float(p, v, path, 0, 10, false, "[0, 10]", &o->dampening));
        else if (!strcmp(k, "beta1"))
            GCN_TRY(get_float(p, v, path, 0, 1, true, "[0, 1)", &o->beta1));
        else if (!strcmp(k, "beta2"))
            GCN_TRY(get_float(p, v, path, 0, 1, true, "[0, 1)", &o->beta2));
        else if (!strcmp(k, "eps"))
            GCN_TRY(get_float(p, v, path, 0, 1, false, "[0, 1]", &o->eps));
        else if (!strcmp(k, "nesterov"))
            GCN_TRY(get_bool(p, v, path, &o->nesterov));
        else
            return fail(p, path, "unknown key");
    }
    if (o->kind != GCN_OPTIM_SGD && (o->momentum != 0 || o->dampening != 0 || o->nesterov))
        return fail(p, "optimizer", "momentum, dampening and nesterov apply to sgd only");
    if (o->nesterov && (o->momentum <= 0 || o->dampening != 0))
        return fail(p, "optimizer.nesterov", "needs momentum > 0 and dampening 0");
    return GCN_OK;
}

/* "lr_step": {"every": N, "gamma": g}, PyTorch's StepLR. */
static gcn_status parse_lr_step(parser *p, const cJSON *obj, gcn_model_config *cfg)
{
    if (!cJSON_IsObject(obj))
        return fail(p, "lr_step", "expected an object {\"every\": N, \"gamma\": g}");
    GCN_TRY(check_unique_keys(p, obj, "lr_step"));
    const cJSON *every = cJSON_GetObjectItemCaseSensitive(obj, "every");
    const cJSON *gamma = cJSON_GetObjectItemCaseSensitive(obj, "gamma");
    if (!every || !gamma)
        return fail(p, "lr_step", "needs both \"every\" and \"gamma\"");
    if (cJSON_GetArraySize(obj) != 2)
        return fail(p, "lr_step", "unknown key (only \"every\" and \"gamma\")");
    GCN_TRY(get_count(p, every, "lr_step.every", 1e7, &cfg->lr_every));
    return get_float(p, gamma, "lr_step.gamma", 0, 1, false, "[0, 1]", &cfg->lr_gamma);
}

static gcn_status parse_dataset(parser *p, const cJSON *obj, gcn_model_config *cfg)
{
    if (!cJSON_IsObject(obj))
        return fail(p, "dataset", "expected an object");
    GCN_TRY(check_unique_keys(p, obj, "dataset"));
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        char path[96];
        snprintf(path, sizeof path, "dataset.%s", v->string);
        if (!strcmp(v->string, "root"))
            GCN_TRY(get_string(p, v, path, cfg->root, sizeof cfg->root));
        else if (!strcmp(v->string, "cache_dir"))
            GCN_TRY(get_string(p, v, path, cfg->cache_dir, sizeof cfg->cache_dir));
        else if (!strcmp(v->string, "features"))
            GCN_TRY(get_features(p, v, path, cfg->features, sizeof cfg->features));
        else if (!strcmp(v->string, "labels"))
            GCN_TRY(get_labels(p, v, path, cfg->labels, sizeof cfg->labels));
        else if (!strcmp(v->string, "normalize_features"))
            GCN_TRY(get_bool(p, v, path, &cfg->normalize_features));
        else if (!strcmp(v->string, "download"))
            GCN_TRY(get_bool(p, v, path, &cfg->download));
        else if (!strcmp(v->string, "seed")) {
            int64_t seed;
            GCN_TRY(get_int(p, v, path, 0, 9007199254740991.0, &seed));
            cfg->data_seed = (uint64_t)seed;
        }
        else
            return fail(p, path, "unknown key");
    }
    return GCN_OK;
}

static gcn_status parse_device(parser *p, const cJSON *v, char *out, size_t size)
{
    GCN_TRY(get_string(p, v, "device", out, size));
    gcn_device device;
    int idx;
    if (gcn_device_parse(out, &device, &idx) == GCN_OK)
        return GCN_OK;
    return fail(p, "device", "expected \"auto\", \"cpu\", \"cuda\" or \"cuda:N\"");
}

static const char *const reorder_methods[] = {"auto", "none", "degree", "metis"};

/* "reorder": a spec string ("metis:256") or {"method": ..., "part_size": N}
 * (or "part_sizes": [N, ...]), checked by gcn_reorder_parse; kept as the
 * spec string. */
static gcn_status parse_reorder(parser *p, const cJSON *v, char *out, size_t size)
{
    if (cJSON_IsString(v)) {
        GCN_TRY(get_string(p, v, "reorder", out, size));
        gcn_reorder_opts o;
        if (strcmp(out, "auto") != 0 && gcn_reorder_parse(NULL, out, &o) != GCN_OK)
            return fail(p, "reorder", "expected \"auto\", \"none\", \"degree\", \"metis\", "
                        "\"metis:S[,S...]\" with sizes ascending in [2, 16777216] or "
                        "\"parts:N[:nnz[+K]][:range]\" with N in [1, 4096]");
        return GCN_OK;
    }
    if (!cJSON_IsObject(v))
        return fail(p, "reorder", "expected a string or an object");
    GCN_TRY(check_unique_keys(p, v, "reorder"));
    int method = -1, n = 0;
    char sizes[48] = "";
    const cJSON *k;
    cJSON_ArrayForEach(k, v) {
        char path[96];
        snprintf(path, sizeof path, "reorder.%s", k->string);
        if (!strcmp(k->string, "method")) {
            GCN_TRY(get_choice(p, k, path, reorder_methods, 4, &method));
        } else if (!strcmp(k->string, "part_size") || !strcmp(k->string, "part_sizes")) {
            bool list = !strcmp(k->string, "part_sizes");
            if (list != cJSON_IsArray(k) || n > 0)
                return fail(p, path, list ? "expected an array of integers" : "expected an integer");
            const cJSON *e = list ? k->child : k;
            for (; e && n < GCN_REORDER_MAX_LEVELS; e = list ? e->next : NULL, n++) {
                int64_t s;
                GCN_TRY(get_int(p, e, path, 2, 1 << 24, &s));
                snprintf(sizes + strlen(sizes), sizeof sizes - strlen(sizes), "%s%lld",
                         n ? "," : "", (long long)s);
            }
        } else {
            return fail(p, path, "unknown key");
        }
    }
    if (method < 0)
        return fail(p, "reorder", "missing required key \"method\"");
    if (n > 0 && method != 3)
        return fail(p, "reorder", "part sizes apply to method \"metis\" only");
    snprintf(out, size, "%s%s%s", reorder_methods[method], n ? ":" : "", sizes);
    gcn_reorder_opts o;
    if (method != 0 && gcn_reorder_parse(NULL, out, &o) != GCN_OK)
        return fail(p, "reorder", "part sizes must ascend, at most %d of them",
                    GCN_REORDER_MAX_LEVELS);
    return GCN_OK;
}

static const char *const poolings[] = {"sum", "mean", "max"};

/* "readout": {"pooling": "sum" | "mean" | "max", "jk": bool, "dropout": p}:
 * a graph-level model. */
static gcn_status parse_readout(parser *p, const cJSON *obj, gcn_readout_config *r)
{
    if (!cJSON_IsObject(obj))
        return fail(p, "readout", "expected an object {\"pooling\": ..., \"jk\": ..., "
                    "\"dropout\": ...}");
    GCN_TRY(check_unique_keys(p, obj, "readout"));
    *r = (gcn_readout_config){.enabled = true, .pooling = GCN_POOL_SUM};
    const cJSON *v;
    int c;
    cJSON_ArrayForEach(v, obj) {
        char path[96];
        snprintf(path, sizeof path, "readout.%s", v->string);
        if (!strcmp(v->string, "pooling")) {
            GCN_TRY(get_choice(p, v, path, poolings, 3, &c));
            r->pooling = (gcn_pooling)c;
        } else if (!strcmp(v->string, "jk")) {
            GCN_TRY(get_bool(p, v, path, &r->jk));
        } else if (!strcmp(v->string, "dropout")) {
            GCN_TRY(get_float(p, v, path, 0, 1, true, "[0, 1)", &r->dropout));
        } else {
            return fail(p, path, "unknown key");
        }
    }
    return GCN_OK;
}

static const char *const precisions[] = {"fp32", "tf32", "bf16"};

static gcn_status parse_top_key(parser *p, const cJSON *v, gcn_model_config *cfg, bool *has_layers)
{
    const char *k = v->string;
    int64_t i;
    int c;
    if (!strcmp(k, "name"))
        return get_string(p, v, k, cfg->name, sizeof cfg->name);
    if (!strcmp(k, "layers")) {
        *has_layers = true;
        return parse_layers(p, v, cfg);
    }
    if (!strcmp(k, "optimizer"))
        return parse_optimizer(p, v, &cfg->optim);
    if (!strcmp(k, "lr_step"))
        return parse_lr_step(p, v, cfg);
    if (!strcmp(k, "dataset"))
        return parse_dataset(p, v, cfg);
    if (!strcmp(k, "epochs"))
        return get_count(p, v, k, 1e7, &cfg->epochs);
    if (!strcmp(k, "runs"))
        return get_count(p, v, k, 1000, &cfg->runs);
    if (!strcmp(k, "seed")) {
        GCN_TRY(get_int(p, v, k, 0, 9007199254740991.0, &i));
        cfg->seed = (uint64_t)i;
        return GCN_OK;
    }
    if (!strcmp(k, "device"))
        return parse_device(p, v, cfg->device, sizeof cfg->device);
    if (!strcmp(k, "precision")) {
        GCN_TRY(get_choice(p, v, k, precisions, 3, &c));
        cfg->tf32 = c == 1;
        cfg->bf16 = c == 2;
        return GCN_OK;
    }
    if (!strcmp(k, "spmm"))
        return get_string(p, v, k, cfg->spmm, sizeof cfg->spmm);
    if (!strcmp(k, "cuda_graph"))
        return get_bool(p, v, k, &cfg->cuda_graph);
    if (!strcmp(k, "sparse_input"))
        return get_bool(p, v, k, &cfg->sparse_input);
    if (!strcmp(k, "threads")) {
        int64_t n = 0;
        GCN_TRY(get_int(p, v, k, 0, GCN_MAX_THREADS, &n));
        cfg->threads = (int)n;
        return GCN_OK;
    }
    if (!strcmp(k, "ranks") || !strcmp(k, "devices")) {
        int64_t n = 0;
        GCN_TRY(get_int(p, v, k, 1, GCN_MAX_RANKS, &n));
        cfg->ranks = (int)n;
        cfg->nccl = k[0] == 'd';
        return GCN_OK;
    }
    if (!strcmp(k, "reorder"))
        return parse_reorder(p, v, cfg->reorder, sizeof cfg->reorder);
    if (!strcmp(k, "readout"))
        return parse_readout(p, v, &cfg->readout);
    if (!strcmp(k, "batch_size"))
        return get_count(p, v, k, 1 << 20, &cfg->batch_size);
    return fail(p, k, "unknown key");
}

/* Line number of a byte offset, for JSON syntax errors. */
static int line_of(const char *text, const char *at)
{
    int line = 1;
    for (const char *c = text; c < at && *c; c++)
        line += *c == '\n';
    return line;
}

gcn_status gcn_model_config_parse(gcn_model_config *cfg, const char *json, const char *source,
                                  char *err, size_t err_size)
{
    parser p = {source ? source : "config", err, err_size};
    if (!cfg || !json)
        return fail(&p, "(input)", "no configuration given");
    *cfg = gcn_model_config_default();
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(json, &end, true);
    if (!root) {
        if (err && err_size)
            snprintf(err, err_size, "%s:%d: invalid JSON", p.source, line_of(json, end ? end : json));
        return GCN_ERR_FORMAT;
    }
    gcn_status st = GCN_OK;
    bool has_layers = false;
    if (!cJSON_IsObject(root)) {
        st = fail(&p, "(top level)", "expected an object");
        goto cleanup;
    }
    st = check_unique_keys(&p, root, "");
    if (st != GCN_OK)
        goto cleanup;
    const cJSON *v;
    cJSON_ArrayForEach(v, root) {
        st = parse_top_key(&p, v, cfg, &has_layers);
        if (st != GCN_OK)
            goto cleanup;
    }
    if (!has_layers)
        st = fail(&p, "layers", "missing required key");
    else if (!cfg->readout.enabled && cfg->layers[cfg->n_layers - 1].out != 0)
        st = fail(&p, "layers", "the last layer's out must be \"classes\" (or add a "
                  "\"readout\" for a graph-level model)");
    else if (cfg->batch_size != GCN_GRAPH_BATCH_SIZE && !cfg->readout.enabled)
        st = fail(&p, "batch_size", "applies to graph-level models (with a \"readout\") only");
cleanup:
    cJSON_Delete(root);
    return st;
}

gcn_status gcn_model_config_load(gcn_model_config *cfg, const char *path, char *err,
                                 size_t err_size)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        if (err && err_size)
            snprintf(err, err_size, "%s: cannot open: %s", path ? path : "(null)", strerror(errno));
        return GCN_ERR_IO;
    }
    char *text = NULL;
    size_t len = 0, cap = 0, got;
    gcn_status st = GCN_OK;
    do {
        if (len + 4096 + 1 > cap) {
            cap = 2 * cap + 8192;
            char *t = realloc(text, cap);
            if (!t) {
                st = GCN_ERR_NOMEM;
                goto cleanup;
            }
            text = t;
        }
        got = fread(text + len, 1, 4096, f);
        len += got;
    } while (got > 0 && len < (1u << 24));
    if (ferror(f) || len >= (1u << 24)) {
        if (err && err_size)
            snprintf(err, err_size, "%s: read error or file larger than 16 MiB", path);
        st = GCN_ERR_IO;
        goto cleanup;
    }
    text[len] = '\0';
    if (strlen(text) != len) {
        if (err && err_size)
            snprintf(err, err_size, "%s: contains a NUL byte", path);
        st = GCN_ERR_FORMAT;
        goto cleanup;
    }
    st = gcn_model_config_parse(cfg, text, path, err, err_size);
cleanup:
    free(text);
    fclose(f);
    return st;
}
