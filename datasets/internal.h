/* Internal to datasets/: allocation and growable-array helpers, the
 * record reader every parser uses, the format loaders and the
 * binary cache.  Not installed. */
#ifndef GCN_DATASETS_INTERNAL_H
#define GCN_DATASETS_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "../core/internal.h"
#include "dataset.h"

/* ---- memory --------------------------------------------------------- */

/* malloc/calloc of count * size bytes (at least one byte), with overflow
 * check; GCN_ERR_NOMEM names the size on failure. */
gcn_status gcn_ds_malloc(gcn_ctx *ctx, void **p, size_t count, size_t size);
gcn_status gcn_ds_calloc(gcn_ctx *ctx, void **p, size_t count, size_t size);

/* Growable arrays: push amortised O(1). */
typedef struct gcn_i32vec {
    int32_t *data;
    int64_t len, cap;
} gcn_i32vec;

typedef struct gcn_i64vec {
    int64_t *data;
    int64_t len, cap;
} gcn_i64vec;

gcn_status gcn_vec_grow(gcn_ctx *ctx, void **data, int64_t *cap, size_t elem);

static inline gcn_status gcn_i32vec_push(gcn_ctx *ctx, gcn_i32vec *v, int32_t x)
{
    if (v->len == v->cap)
        GCN_TRY(gcn_vec_grow(ctx, (void **)&v->data, &v->cap, sizeof *v->data));
    v->data[v->len++] = x;
    return GCN_OK;
}

static inline gcn_status gcn_i64vec_push(gcn_ctx *ctx, gcn_i64vec *v, int64_t x)
{
    if (v->len == v->cap)
        GCN_TRY(gcn_vec_grow(ctx, (void **)&v->data, &v->cap, sizeof *v->data));
    v->data[v->len++] = x;
    return GCN_OK;
}

/* ---- record reader --------------------------------------------------- */

/* How a format's lines become records. */
typedef struct gcn_record_fmt {
    char sep;                   /* ',' for CSV; 0: fields separated by runs of blanks */
    int min_fields, max_fields; /* a record with another count is an error naming both */
    bool rest;                  /* the last of max_fields runs to the end of the line */
    const char *comments;       /* a line whose first non-blank character is one of
                                 * these is skipped; NULL: no comments */
    bool blank_records;         /* blank lines are records (one line per node), not
                                 * skipped */
} gcn_record_fmt;

/* Streams a plain or gzip file (its first bytes say which; gzip members
 * one after the other, as gzip writes them, and nothing else after the
 * last) one line at a time through a single buffer and splits its lines
 * into fields.  A UTF-8 byte-order mark opening the file is skipped. */
typedef struct gcn_reader {
    gcn_ctx *ctx;
    int fd;
    bool gzip;              /* inflating through zs */
    bool in_member;         /* inside a gzip member (else between or after them) */
    bool raw_eof;           /* every byte of the file has been read into raw */
    z_stream zs;            /* zs.next_in, avail_in: raw bytes not consumed yet */
    unsigned char *raw;     /* the file's bytes as read */
    uint64_t file_bytes;    /* the file's size */
    char *path;
    char *buf;
    size_t cap, start, end; /* unread bytes are buf[start, end) */
    long line_no;           /* of the line last returned */
    bool eof;
    gcn_record_fmt fmt;     /* the records to read next; a parser may change it */
    char **fields;          /* of the last record: n_fields of them, at most
                             * fmt.max_fields stored (fields_cap slots) */
    int n_fields, fields_cap;
} gcn_reader;

/* Called by gcn_reader_each with each record's fields (r->n_fields of
 * them, NUL-terminated, surrounding blanks removed, valid until it returns
 * and modifiable), then once with fields NULL at the end of the file, so
 * that checks of the whole file fail naming it; a failure stops the
 * reading and is returned. */
typedef gcn_status (*gcn_record_fn)(gcn_reader *r, char **fields, void *user);

/* Opens path, passes its records of fmt to fn (gcn_reader_each) and closes
 * it.  Fails naming the file, and the line where there is one: missing or
 * unreadable files (GCN_ERR_IO), a field count outside the format's range,
 * what gcn_reader_line fails on, and what fn fails on. */
gcn_status gcn_read_records(gcn_ctx *ctx, const char *path, const gcn_record_fmt *fmt,
                            gcn_record_fn fn, void *user);

/* The parts of gcn_read_records, for a file that opens with a header to
 * check before it is split: gcn_reader_open (fmt NULL: lines only),
 * gcn_reader_line, gcn_reader_split, then gcn_reader_each on the records
 * that follow, and gcn_reader_close. */
gcn_status gcn_reader_open(gcn_ctx *ctx, gcn_reader *r, const char *path,
                           const gcn_record_fmt *fmt);
gcn_status gcn_reader_each(gcn_reader *r, gcn_record_fn fn, void *user);

/* The next line as it is, NUL-terminated, without its "\n" or "\r\n";
 * *line is NULL at the end of the file.  The line stays valid until the
 * next call and may be modified.  Fails on corrupt or truncated gzip data,
 * NUL bytes and lines over 64 MiB. */
gcn_status gcn_reader_line(gcn_reader *r, char **line);

/* Splits a line in place into r->fields as the format says; a field count
 * outside [fmt.min_fields, fmt.max_fields] is an error naming both. */
gcn_status gcn_reader_split(gcn_reader *r, char *line);

void gcn_reader_close(gcn_reader *r);

/* The most bytes the open file's text can hold: its size, or for gzip
 * data its size times deflate's largest ratio (1032:1).  Counts that the
 * file declares are checked against it before they size an array. */
uint64_t gcn_reader_max_bytes(const gcn_reader *r);

/* Records "path:line: message" on the context and returns st. */
gcn_status gcn_reader_fail(gcn_reader *r, gcn_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Parses field number col (1-based, for the message) as an integer in
 * [lo, hi]; `what` names it in errors ("node id"). */
gcn_status gcn_reader_int(gcn_reader *r, const char *field, int col, int64_t lo, int64_t hi,
                          const char *what, int64_t *out);

/* Parses a float; non-numbers are GCN_ERR_FORMAT, NaN/Inf GCN_ERR_NUMERIC. */
gcn_status gcn_reader_float(gcn_reader *r, const char *field, int col, float *out);

/* ---- paths ---------------------------------------------------------- */

/* "<a>/<b>" into a new string; caller frees. */
gcn_status gcn_path_join(gcn_ctx *ctx, char **out, const char *a, const char *b);
bool gcn_path_is_dir(const char *path);
bool gcn_path_is_file(const char *path);

/* ---- shared parsing steps (parse.c) ---------------------------------- */

/* Largest node count a parser accepts from a header or count file, and the
 * largest dense feature matrix it allocates.  Fuzzing builds lower both so
 * that a claimed size cannot exhaust memory before the data disproves it. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define GCN_DS_MAX_NODES ((int64_t)1 << 16)
#define GCN_DS_MAX_FEATURE_VALUES ((int64_t)1 << 22)
#else
#define GCN_DS_MAX_NODES ((int64_t)INT32_MAX - 1)
#define GCN_DS_MAX_FEATURE_VALUES ((int64_t)1 << 40)
#endif

/* Most feature columns a dataset may have, whichever file gives them (a
 * dense row's width, a sparse entry's column, num_features). */
#define GCN_DS_MAX_FEATURES ((int64_t)1 << 20)

/* Checks that an n x d dense feature matrix fits the limits above and this
 * machine's memory before it is allocated; `where` names the file (and
 * line) that gave the sizes. */
gcn_status gcn_ds_check_dense(gcn_ctx *ctx, const char *where, int64_t n, int64_t d);

/* Most classes a dataset may have: labels are below this (the generators
 * take at most as many), so that a stray label cannot make the loader or a
 * model allocate per-class arrays of billions of entries. */
#define GCN_DS_MAX_CLASSES ((int64_t)1 << 16)

/* Checks n, the records read so far, against the count that `source`
 * gives for `what`: before a record (f set) there must be room for it, at
 * the end of the file (f NULL) there must be as many. */
gcn_status gcn_reader_check_count(gcn_reader *r, char **f, int64_t n, int64_t count,
                                  const char *what, const char *source);

/* Reads n_rows lines of comma-separated finite floats, each as many as the
 * first, into a new row-major array *x (caller frees) of *width columns;
 * `source` names what gives n_rows in count errors. */
gcn_status gcn_read_dense_rows(gcn_ctx *ctx, const char *path, int64_t n_rows,
                               const char *source, float **x, int32_t *width);

/* Reads a file holding one non-negative integer (OGB num-*-list). */
gcn_status gcn_read_count(gcn_ctx *ctx, const char *path, int64_t max, int64_t *count);

/* Reads a list of node ids in [0, n_nodes), one per line.  seen[id] (n_nodes
 * bytes, shared by the lists of one split) is set to tag; an id already
 * seen, in this or another list, is an error naming the list it was in. */
gcn_status gcn_read_id_list(gcn_ctx *ctx, const char *path, int32_t n_nodes, uint8_t *seen,
                            uint8_t tag, int32_t **ids, int32_t *n_ids);

/* Reads the three lists of a split; a missing file leaves its list empty
 * unless required. */
gcn_status gcn_read_split(gcn_ctx *ctx, gcn_dataset *ds, const char *const paths[3],
                          bool required);

/* Renumbers raw node ids (any non-negative int64) to 0..n-1 in ascending id
 * order, in place; *n_nodes receives the number of distinct ids. */
gcn_status gcn_compact_ids(gcn_ctx *ctx, int64_t *ids, int64_t n, int32_t *n_nodes);

/* ---- format loaders -------------------------------------------------- */

/* Each fills a zeroed dataset with what its files hold: graph = the stored
 * directed entries (sorted, duplicates merged, self-loops kept),
 * n_raw_edges = its nnz; features, labels, split when present. */
gcn_status gcn_load_ogb(gcn_ctx *ctx, const char *dir, const char *scheme, gcn_dataset *ds);
gcn_status gcn_load_textdir(gcn_ctx *ctx, const char *dir, gcn_dataset *ds);
gcn_status gcn_load_edgelist(gcn_ctx *ctx, const char *path, gcn_dataset *ds);
gcn_status gcn_load_mtx(gcn_ctx *ctx, const char *path, gcn_dataset *ds);

/* The TU collection `name` in dir (dir/name_A.txt ...; tu.c): also fills
 * the graph fields; node labels become one-hot features. */
gcn_status gcn_load_tu(gcn_ctx *ctx, const char *dir, const char *name, gcn_dataset *ds);

/* Whether dir holds name_A.txt or name_A.txt.gz. */
bool gcn_tu_is_folder(const char *dir, const char *name);

/* gcn_cache_fingerprint of the files a TU collection may have. */
uint64_t gcn_tu_fingerprint(const char *dir, const char *name, uint64_t salt);

/* Checks a collection's graph fields (from a cache): graph_ptr runs from 0
 * to n_nodes without empty graphs, no edge leaves its graph, labels are in
 * range and their values ascending. */
gcn_status gcn_ds_check_graphs(gcn_ctx *ctx, const gcn_dataset *ds, const char *what);

/* Puts ids[0, n) in a uniformly random order drawn from stream: each id
 * gets a 32-bit key (gcn_rng_below) and they are sorted by (key, id). */
gcn_status gcn_ds_shuffle(gcn_ctx *ctx, gcn_rng_stream stream, int32_t *ids, int32_t n);

/* gcn_ds_shuffle in the caller's scratch, key[n] and r[n], allocating
 * nothing (a trainer's shuffle every epoch). */
gcn_status gcn_ds_shuffle_with(gcn_ctx *ctx, gcn_rng_stream stream, int32_t *ids, int32_t n,
                               uint64_t *key, uint32_t *r);

/* Sorts the non-negative ids[0, n) by (key[i], ids[i]) ascending; key[i]
 * (below 2^32) goes with ids[i] and is used up. */
void gcn_ds_sort_by_key(int32_t *ids, uint64_t *key, int32_t n);

/* Fills ds when spec names a generator ("synthetic", "sbm", "rmat",
 * "chunglu", optionally followed by ":key=value,..."); otherwise leaves it
 * alone with *generated false. */
gcn_status gcn_ds_generate(gcn_ctx *ctx, const char *spec, gcn_dataset *ds, bool *generated);

/* The OGB split scheme to use in dir: `wanted`, or the only folder under
 * split/ (none: *scheme NULL).  Caller frees *scheme. */
gcn_status gcn_ogb_scheme(gcn_ctx *ctx, const char *dir, const char *wanted, char **scheme);

/* Files (relative to the folder, NULL-terminated) each folder format may
 * read, for the cache fingerprint; OGB's split files are added by scheme. */
extern const char *const gcn_ogb_files[];
extern const char *const gcn_textdir_files[];

/* Checks split lists read from a cache: ids in range, none repeated. */
gcn_status gcn_ds_check_split(gcn_ctx *ctx, const gcn_dataset *ds, const char *what);

/* Builds ds->graph from an edge list and sets n_raw_edges. */
gcn_status gcn_ds_set_graph(gcn_ctx *ctx, gcn_dataset *ds, const gcn_i32vec *src,
                            const gcn_i32vec *dst);

/* Edges read from "src dst" records, node ids in [0, hi]. */
typedef struct gcn_edge_list {
    int64_t hi, max_id; /* max_id: the largest id read, -1 before any */
    gcn_i32vec src, dst;
} gcn_edge_list;

/* Appends the edge in a record's first two fields. */
gcn_status gcn_edge_list_add(gcn_reader *r, char **f, gcn_edge_list *e);

/* ---- binary cache (cache.c) ------------------------------------------ */

#define GCN_CACHE_MAGIC "GCNDSv1\n"
#define GCN_CACHE_VERSION 2u

/* File layout: this header, then the payload: row_ptr [n_nodes + 1],
 * col_idx [nnz], features [n_nodes * n_features], labels [n_nodes] if
 * has_labels, train, valid, test, and for a collection (n_graphs > 0)
 * graph_ptr [n_graphs + 1], graph_labels [n_graphs] and
 * graph_label_values [n_graph_classes].  All host byte order.  Version 2
 * added the collection's counts and arrays. */
typedef struct gcn_cache_header {
    char magic[8];
    uint32_t version;
    uint32_t endian;       /* 0x01020304 as written */
    uint64_t fingerprint;  /* of the source files and the loader settings */
    char name[64];
    int32_t n_nodes, nnz, n_features, n_classes;
    int32_t n_train, n_valid, n_test, has_labels;
    int32_t n_graphs, n_graph_classes;
    uint64_t payload_bytes;
    uint32_t payload_crc;  /* zlib crc32 of the payload */
    uint32_t header_crc;   /* crc32 of every byte above */
} gcn_cache_header;

/* Hash of the files' names, sizes and modification times (missing files
 * count too) and a salt for loader settings. */
uint64_t gcn_cache_fingerprint(const char *dir, const char *const *files, uint64_t salt);

/* Writes ds's graph, features, labels and split to path through a
 * temporary file in the same folder and rename(). */
gcn_status gcn_cache_write(gcn_ctx *ctx, const char *path, uint64_t fingerprint,
                           const gcn_dataset *ds);

/* Loads path into a zeroed ds when it exists and is a valid, current cache
 * (*hit true).  A missing, unreadable, stale or corrupt cache leaves *hit
 * false and ds empty (all but a missing one are logged); only running out
 * of memory fails. */
gcn_status gcn_cache_read(gcn_ctx *ctx, const char *path, uint64_t fingerprint, gcn_dataset *ds,
                          bool *hit);

/* One piece of a file: bytes at data. */
typedef struct gcn_section {
    void *data;
    size_t bytes;
} gcn_section;

/* Writes the n sections one after the other to path through a temporary
 * file in the same folder (made if missing), fsync() and rename(), so that
 * readers see the old file or the whole new one. */
gcn_status gcn_file_write_atomic(gcn_ctx *ctx, const char *path, const gcn_section *s, int n);

/* Frees what a dataset holds and zeroes it (the struct itself stays). */
void gcn_ds_clear(gcn_dataset *ds);

/* ---- reordering (reorder.c, reorder_parts.c, reorder_apply.c, reorder_cache.c) */

/* "none", "degree", "metis" or "parts". */
const char *gcn_reorder_method_name(gcn_reorder_method method);

/* Checks o; sizes receives the METIS sizes it asks for (the defaults when
 * it names none), *n_sizes their count (0 unless METIS). */
gcn_status gcn_reorder_check_opts(gcn_ctx *ctx, const gcn_reorder_opts *o,
                                  int32_t sizes[GCN_REORDER_MAX_LEVELS], int *n_sizes);

/* Checks o and draws METIS's seed from GCN_RNG_PARTITION (one draw; 0 and
 * no draw for the other methods). */
gcn_status gcn_reorder_seed(gcn_ctx *ctx, const gcn_reorder_opts *o, uint32_t *seed);

/* A reordering of n_nodes with order and position allocated, no levels. */
gcn_status gcn_reorder_alloc(gcn_ctx *ctx, gcn_reorder_method method, int32_t n_nodes,
                             gcn_reorder **out);

/* part[i] in [0, nparts) for each of the n nodes of the symmetric graph
 * xadj/adjncy (no self-loops, at least one edge), from
 * METIS_PartGraphKway with the seed; vwgt NULL or [n] vertex weights. */
gcn_status gcn_metis_kway(gcn_ctx *ctx, int32_t n, int32_t *xadj, int32_t *adjncy,
                          int32_t *vwgt, int32_t nparts, uint32_t seed, int32_t *part);

/* METIS_PartGraphKway with the seed, parts numbered from 0: its return
 * code (gcn_metis_kway's call). */
int gcn_metis_run(int32_t n, int32_t *xadj, int32_t *adjncy, int32_t *vwgt, int32_t nparts,
                  uint32_t seed, int32_t *part);

/* The error of a METIS_PartGraphKway call that returned rc. */
gcn_status gcn_metis_error(gcn_ctx *ctx, int rc, int32_t n, int32_t edges, int32_t nparts);

/* A stoppable reordering cuts sets of at least this many nodes with
 * gcn_metis_kway_child: one such METIS call takes seconds to minutes. */
#define GCN_METIS_CHILD_NODES (1 << 16)

/* gcn_metis_kway (no vertex weights) in a child process, which a set *stop
 * ends at once (polled every 20 ms): GCN_ERR_STATE, as gcn_reorder_stopped
 * says.  The child runs METIS alone and sends the parts back through a
 * pipe; the caller's other threads never notice it. */
gcn_status gcn_metis_kway_child(gcn_ctx *ctx, int32_t n, int32_t *xadj, int32_t *adjncy,
                                int32_t nparts, uint32_t seed, const atomic_bool *stop,
                                int32_t *part);

/* The error of a reordering stopped before it was done. */
gcn_status gcn_reorder_stopped(gcn_ctx *ctx);

/* The PARTS reordering of g into r (allocated for g->n_nodes, no levels):
 * order and its one level, as gcn_reorder_compute documents. */
gcn_status gcn_reorder_parts(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder_opts *o,
                             uint32_t seed, gcn_reorder *r);

/* Sets r->edge_cut from g (r's graph in original ids) and r's finest
 * level. */
gcn_status gcn_reorder_count_cut(gcn_ctx *ctx, const gcn_graph *g, gcn_reorder *r);

/* gcn_reorder_compute with the METIS seed given.  stop (may be NULL) is
 * polled between METIS calls: once set, the computation ends with
 * GCN_ERR_STATE ("stopped") within one METIS call. */
gcn_status gcn_reorder_compute_seeded(gcn_ctx *ctx, const gcn_graph *g,
                                      const gcn_reorder_opts *o, uint32_t seed,
                                      const atomic_bool *stop, gcn_reorder **out);

/* gcn_reorder_compute_seeded through the permutation file beside the
 * dataset cache `cache`: read when it holds this graph's reordering for o
 * and seed, otherwise computed and (when can_write) written.  Damaged or
 * stale files are logged and replaced; only running out of memory fails
 * where computing would not. */
gcn_status gcn_reorder_cached(gcn_ctx *ctx, const gcn_graph *g, const gcn_reorder_opts *o,
                              uint32_t seed, const char *cache, bool can_write,
                              const atomic_bool *stop, gcn_reorder **out);

/* dst = src with every node-indexed array renumbered by r, in new
 * allocations (dst->reorder NULL).  On failure dst holds nothing. */
gcn_status gcn_ds_permuted(gcn_ctx *ctx, const gcn_dataset *src, const gcn_reorder *r,
                           gcn_dataset *dst);

/* gcn_dataset_reorder, through gcn_reorder_cached when cache is not NULL. */
gcn_status gcn_ds_reorder(gcn_ctx *ctx, gcn_dataset *ds, const gcn_reorder_opts *o,
                          const char *cache, bool can_write);

/* Fills a zeroed out with copies of ds's graph, features, labels and split
 * in the original node order (ds must be reordered); out->reorder is NULL.
 * Caller frees with gcn_ds_clear. */
gcn_status gcn_ds_original(gcn_ctx *ctx, const gcn_dataset *ds, gcn_dataset *out);

#endif
