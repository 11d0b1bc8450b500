/* Datasets fetched on first use: the publishers' addresses of the named
 * datasets, a resumable transfer (libcurl), safe unpacking (libzip) into a
 * temporary folder renamed into place once the loader has checked it;
 * docs/datasets.md, "Downloading". */
#ifndef GCN_FETCH_H
#define GCN_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/ctx.h"
#include "../core/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called as the download goes: bytes received so far and the archive's
 * size (0 while unknown).  Returning non-zero cancels the fetch, which then
 * fails with GCN_ERR_STATE and leaves nothing behind. */
typedef int (*gcn_fetch_progress_fn)(int64_t done, int64_t total, void *user);

typedef struct gcn_fetch_opts {
    size_t size; /* sizeof in the caller's build, set by gcn_fetch_default_opts */
    /* The base address that replaces every publisher's: files are then
     * <mirror>/ogb/<file>, <mirror>/tu/<file>, <mirror>/planetoid/<file>.  NULL: the environment's
     * GCN_DATASET_MIRROR when set, else the publishers' own addresses. */
    const char *mirror;
    bool allow_large;   /* permit a download over 5 GB (gcntrain --download) */
    int timeout_s;      /* give up when no byte came for this long (default 60) */
    gcn_fetch_progress_fn progress; /* NULL: no reports */
    void *user;         /* passed to progress */
} gcn_fetch_opts;

GCN_API gcn_fetch_opts gcn_fetch_default_opts(void);

/* Whether spec names a dataset gcn_dataset_fetch knows how to download:
 * ogbn-arxiv, ogbn-products, ogbn-proteins (or ogbn_X), cora, citeseer,
 * pubmed, tu:NAME. */
GCN_API bool gcn_dataset_fetchable(const char *spec);

/* The address spec is downloaded from with opts (NULL: defaults), written
 * into buf as snprintf would (returns the length it needs, or -1 when spec
 * is not fetchable). */
GCN_API int gcn_dataset_fetch_url(const char *spec, const gcn_fetch_opts *opts, char *buf,
                                  size_t size);

/* Downloads the named dataset into the folder gcn_dataset_load reads it
 * from under root (<root>/ogbn_arxiv, <root>/tu/NAME), unless that folder
 * exists already (no request is made; *fetched false).  The archive is
 * downloaded (resumed with Range requests when the connection drops),
 * unpacked and loaded once with the loader's checks inside a temporary
 * folder beside the destination, then renamed into place; on any failure
 * nothing is left under root.  Errors name the address, the archive and
 * entry, or the file the loader rejected.  fetched may be NULL. */
GCN_API gcn_status gcn_dataset_fetch(gcn_ctx *ctx, const char *spec, const char *root,
                                     const gcn_fetch_opts *opts, bool *fetched);

#ifdef __cplusplus
}
#endif
#endif
