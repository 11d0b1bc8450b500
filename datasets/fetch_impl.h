/* Internal to the dataset fetcher (fetch.c): the catalog of downloadable
 * datasets (catalog.c), the HTTP transfer (transfer.c) and the safe zip
 * unpacking (archive.c).  Not installed. */
#ifndef GCN_DATASETS_FETCH_IMPL_H
#define GCN_DATASETS_FETCH_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include "../core/internal.h"
#include "fetch.h"

/* How a dataset is published: one zip archive, or Planetoid's raw files
 * (ind.NAME.x, ...) in one folder. */
typedef enum gcn_fetch_kind { GCN_FETCH_ZIP, GCN_FETCH_PLANETOID } gcn_fetch_kind;

/* The raw files of a Planetoid dataset, ind.NAME.<part>. */
extern const char *const gcn_planetoid_parts[8];

/* Where a named dataset comes from and where it goes under the root. */
typedef struct gcn_catalog_entry {
    gcn_fetch_kind kind;
    char name[80];        /* "ogbn-arxiv", "tu:PROTEINS", "cora" */
    char url[1200];       /* the archive's address, or the folder of Planetoid's files
                           * (the mirror's when one is set) */
    char file[96];        /* the archive's file name ("arxiv.zip"), or "ind.cora" */
    char subdir[16];      /* the folder under root holding it: "", "tu" or "planetoid" */
    char top[64];         /* the folder the archive unpacks to: "arxiv" */
    char dest[64];        /* the folder the loader reads: "ogbn_arxiv" */
    int64_t max_unpacked; /* a larger declared uncompressed size is refused */
} gcn_catalog_entry;

/* Fills e for spec with the given mirror (NULL or "": the publisher's
 * address); false when spec is not a downloadable name. */
bool gcn_catalog_find(const char *spec, const char *mirror, gcn_catalog_entry *e);

/* The mirror opts ask for: opts->mirror, else $GCN_DATASET_MIRROR, else NULL. */
const char *gcn_catalog_mirror(const gcn_fetch_opts *opts);

/* Downloads url into the file at path (created, or resumed with a Range
 * request after a dropped connection, up to a few times), reporting
 * progress through o; a download over 1 GB is announced through gcn_log,
 * one over 5 GB refused unless o->allow_large.  On failure the message
 * names url and the reason; the caller removes the file. */
gcn_status gcn_transfer(gcn_ctx *ctx, const char *url, const char *path,
                        const gcn_fetch_opts *o, int64_t *bytes);

/* Unpacks the zip archive at path into the folder dest, refusing (before
 * writing anything) entries with absolute paths, ".." components or link
 * types, and a declared uncompressed size over max_bytes or 1000 times the
 * compressed size; every entry's CRC-32 is checked as it is written.
 * Messages name `label` (the archive) and the entry. */
gcn_status gcn_archive_unpack(gcn_ctx *ctx, const char *path, const char *label,
                              const char *dest, int64_t max_bytes);

/* Converts the Planetoid raw files dir/raw/ind.name.* (Python pickles)
 * into the plain-text folder dir/ that the loader reads (edges.txt,
 * features.txt, labels.txt, train/val/test.txt, meta.txt).  Errors name
 * the file. */
gcn_status gcn_planetoid_convert(gcn_ctx *ctx, const char *dir, const char *name);

#endif
