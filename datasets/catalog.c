/* The datasets gcn_dataset_fetch can download: their publishers' addresses
 * (OGB's dataset table, master.csv; the TU Dortmund server PyG's TUDataset
 * reads), the folder each archive unpacks to and the folder the loader
 * reads. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fetch_impl.h"

#define GIB (1024ll * 1024 * 1024)

/* OGB's node property prediction datasets with the raw CSV layout the OGB
 * loader reads.  ogbn-papers100M ships as NumPy arrays (papers100M-bin.zip),
 * which no loader reads, so it is not listed. */
static const struct {
    const char *name, *top;
    int64_t max_unpacked;
} ogb[] = {
    {"arxiv", "arxiv", 2 * GIB},
    {"products", "products", 8 * GIB},
    {"proteins", "proteins", 8 * GIB},
};

/* Planetoid (Yang et al. 2016) as PyG's Planetoid class fetches it. */
static const char *const planetoid[] = {"cora", "citeseer", "pubmed"};
const char *const gcn_planetoid_parts[8] = {"x", "y", "tx", "ty", "allx", "ally", "graph",
                                            "test.index"};

static const char planetoid_base[] = "https://github.com/kimiyoung/planetoid/raw/master/data";
static const char ogb_base[] = "http://snap.stanford.edu/ogb/data/nodeproppred";
static const char tu_base[] = "https://www.chrsmrrs.com/graphkerneldatasets";

const char *gcn_catalog_mirror(const gcn_fetch_opts *opts)
{
    const char *m = opts && opts->mirror ? opts->mirror : getenv("GCN_DATASET_MIRROR");
    return m && m[0] ? m : NULL;
}

/* "<base>/<file>", or "<mirror>/<group>/<file>" (the mirror's trailing
 * slashes dropped); without "/<file>" when file is "". */
static bool make_url(gcn_catalog_entry *e, const char *mirror, const char *base,
                     const char *group, const char *file)
{
    const char *slash = file[0] ? "/" : "";
    int n;
    if (mirror) {
        size_t len = strlen(mirror);
        while (len > 1 && mirror[len - 1] == '/')
            len--;
        n = snprintf(e->url, sizeof e->url, "%.*s/%s%s%s", (int)len, mirror, group, slash, file);
    } else {
        n = snprintf(e->url, sizeof e->url, "%s%s%s", base, slash, file);
    }
    return n > 0 && (size_t)n < sizeof e->url;
}

/* A TU collection's name: letters, digits, '_', '-' and '.', not leading. */
static bool tu_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 60 || s[0] == '.' || s[0] == '-')
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("_-.", *s))
            return false;
    return true;
}

bool gcn_catalog_find(const char *spec, const char *mirror, gcn_catalog_entry *e)
{
    memset(e, 0, sizeof *e);
    if (!spec)
        return false;
    if (strncmp(spec, "tu:", 3) == 0) {
        const char *name = spec + 3;
        if (!tu_name_ok(name))
            return false;
        snprintf(e->name, sizeof e->name, "tu:%s", name);
        snprintf(e->file, sizeof e->file, "%s.zip", name);
        snprintf(e->subdir, sizeof e->subdir, "tu");
        snprintf(e->top, sizeof e->top, "%s", name);
        snprintf(e->dest, sizeof e->dest, "%s", name);
        e->max_unpacked = 3 * GIB;
        return make_url(e, mirror, tu_base, "tu", e->file);
    }
    for (size_t i = 0; i < sizeof planetoid / sizeof *planetoid; i++)
        if (strcmp(spec, planetoid[i]) == 0) {
            e->kind = GCN_FETCH_PLANETOID;
            snprintf(e->name, sizeof e->name, "%s", spec);
            snprintf(e->file, sizeof e->file, "ind.%s", spec);
            snprintf(e->subdir, sizeof e->subdir, "planetoid");
            snprintf(e->dest, sizeof e->dest, "%s", spec);
            return make_url(e, mirror, planetoid_base, "planetoid", "");
        }
    if (strncmp(spec, "ogbn-", 5) != 0 && strncmp(spec, "ogbn_", 5) != 0)
        return false;
    for (size_t i = 0; i < sizeof ogb / sizeof *ogb; i++)
        if (strcmp(spec + 5, ogb[i].name) == 0) {
            snprintf(e->name, sizeof e->name, "ogbn-%s", ogb[i].name);
            snprintf(e->file, sizeof e->file, "%s.zip", ogb[i].name);
            snprintf(e->top, sizeof e->top, "%s", ogb[i].top);
            snprintf(e->dest, sizeof e->dest, "ogbn_%s", ogb[i].name);
            e->max_unpacked = ogb[i].max_unpacked;
            return make_url(e, mirror, ogb_base, "ogb", e->file);
        }
    return false;
}

bool gcn_dataset_fetchable(const char *spec)
{
    gcn_catalog_entry e;
    return gcn_catalog_find(spec, NULL, &e);
}

int gcn_dataset_fetch_url(const char *spec, const gcn_fetch_opts *opts, char *buf, size_t size)
{
    gcn_catalog_entry e;
    gcn_fetch_opts o = gcn_fetch_default_opts();
    if (opts && gcn_struct_import(NULL, "gcn_fetch_opts", &o, &o, sizeof o, opts) != GCN_OK)
        return -1;
    if (!gcn_catalog_find(spec, gcn_catalog_mirror(&o), &e))
        return -1;
    if (e.kind == GCN_FETCH_PLANETOID)
        return snprintf(buf, size, "%s/%s.{x,y,tx,ty,allx,ally,graph,test.index}", e.url,
                        e.file);
    return snprintf(buf, size, "%s", e.url);
}
