/* gcn_dataset: a graph with node features, labels and a train/valid/test
 * split in host memory, loaded from OGB, plain-text, edge-list, Matrix
 * Market or TU files (with a binary cache) or generated; batches and folds
 * of a TU graph collection; docs/datasets.md. */
#ifndef GCN_DATASET_H
#define GCN_DATASET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/csr.h"
#include "../core/tensor.h"
#include "graph.h"
#include "reorder.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gcn_dataset {
    char name[64];
    int32_t n_nodes;
    gcn_graph *graph;     /* after the symmetrize / remove_self_loops options */
    int64_t n_raw_edges;  /* distinct directed entries as stored in the files */
    int32_t n_features;   /* 0: structure only */
    float *features;      /* [n_nodes, n_features] row-major, or NULL */
    char feature_source[32]; /* "file", "random:D", "degree", "none" or "sbm" */
    int32_t *labels;      /* [n_nodes], -1 = unlabelled, or NULL */
    int32_t n_classes;
    int32_t *train, *valid, *test; /* node ids, or NULL when the list is empty */
    int32_t n_train, n_valid, n_test;
    bool split_drawn;     /* the loader drew the split (none was shipped) */
    bool from_cache;      /* read from the binary cache instead of parsed */
    /* The reordering applied to every array above (NULL: original order);
     * owned by the dataset. */
    gcn_reorder *reorder;
    /* The binary cache's path, beside which reorderings are kept ("": none,
     * or longer than the field), and whether that folder is writable. */
    char cache_path[1024];
    bool cache_writable;
    /* A collection of graphs (TU): graph g holds nodes [graph_ptr[g],
     * graph_ptr[g + 1]) and no edge leaves it.  n_graphs 0 and the arrays
     * NULL for a single graph. */
    int32_t n_graphs;
    int32_t *graph_ptr;          /* [n_graphs + 1] */
    int32_t *graph_labels;       /* [n_graphs]: 0 .. n_graph_classes - 1, or NULL */
    int32_t n_graph_classes;
    int32_t *graph_label_values; /* [n_graph_classes]: the file's label of each class,
                                  * ascending */
    /* "" for the dataset's own node labels, or the substitute that replaced
     * them ("random:K"). */
    char label_source[32];
} gcn_dataset;

typedef struct gcn_dataset_opts {
    size_t size; /* sizeof in the caller's build, set by gcn_dataset_default_opts */
    const char *root;      /* where names resolve; default "data" */
    /* NULL or "file": the dataset's own features (an error if a format that
     * should have them lacks the file); "random:D": D seeded N(0,1) columns
     * from the context's GCN_RNG_DATA stream; "degree": one column,
     * log(1 + degree); "none": no features. */
    const char *features;
    bool normalize_features; /* divide each row by its sum (Kipf's Planetoid preprocessing) */
    bool symmetrize;         /* graph = A + A^T (default true) */
    bool remove_self_loops;  /* drop stored self-loops (default true; GCN adds I itself) */
    /* "auto" (default): the shipped split, else one drawn from GCN_RNG_SPLIT;
     * "file": the shipped split or an error; "random": always drawn. */
    const char *split;
    const char *split_scheme; /* OGB split/<scheme>; NULL: the only one present */
    int32_t train_per_class;  /* drawn split: labelled nodes per class for training (20) */
    int32_t n_valid, n_test;  /* drawn split: sizes (500, 1000), clipped to what is left */
    bool cache;               /* read/write the binary cache (default true) */
    const char *cache_dir;    /* NULL: <dataset dir>/processed (never written when read-only) */
    /* NULL or "none": original node order; otherwise a gcn_reorder_parse
     * spec ("degree", "metis", "metis:16,256"), applied last, after the
     * graph, feature and split options.  With the cache on, a dataset read
     * from files keeps the permutation in a file beside its cache. */
    const char *reorder;
    /* NULL or "file": the dataset's own node labels (none for a bare graph
     * file); "random:K": every node labelled uniformly in [0, K) from the
     * context's GCN_RNG_DATA stream, after any substitute features, so
     * that a graph without labels can be trained (for timing: accuracy is
     * chance).  A split is then drawn unless one is shipped. */
    const char *labels;
} gcn_dataset_opts;

GCN_API gcn_dataset_opts gcn_dataset_default_opts(void);

/* Loads a dataset.  spec is one of
 *   - a name: "ogbn-arxiv" / "ogbn_arxiv" (any ogbn-*), "cora", "citeseer",
 *     "pubmed", "blogcatalog", "flickr", a folder or file under root, or a
 *     graph file under <root>/graphs without its extension ("Wiki-Vote");
 *   - "tu:NAME": the TU collection in <root>/tu/NAME (or the folder NAME);
 *   - a path to an OGB folder, a plain-text folder (edges.txt ...), a TU
 *     folder (NAME/NAME_A.txt ...), an edge list (.txt, .el, .csv,
 *     optionally .gz) or a Matrix Market file (.mtx, .mtx.gz);
 *   - a generator: "sbm[:k=v,...]", "rmat[:k=v,...]", "chunglu[:k=v,...]",
 *     "synthetic" (= sbm with its defaults).
 * opts may be NULL for the defaults.  Errors name the file and line.
 * Caller frees with gcn_dataset_free. */
GCN_API gcn_status gcn_dataset_load(gcn_ctx *ctx, gcn_dataset **ds, const char *spec,
                                    const gcn_dataset_opts *opts);

/* Accepts NULL and sets *ds to NULL. */
GCN_API void gcn_dataset_free(gcn_dataset **ds);

/* Computes the reordering o of ds->graph and applies it to the graph, the
 * feature rows, the labels and the split lists (ids renumbered, each list
 * sorted ascending); ds->reorder keeps it, so outputs can speak original
 * ids again.  GCN_REORDER_NONE changes nothing and leaves ds->reorder NULL.
 * A dataset already reordered is GCN_ERR_STATE.  On failure ds is as it
 * was. */
GCN_API gcn_status gcn_dataset_reorder(gcn_ctx *ctx, gcn_dataset *ds, const gcn_reorder_opts *o);

/* A reordering computed on a host thread of its own, so a run can train on
 * the dataset as loaded meanwhile. */
typedef struct gcn_reorder_job gcn_reorder_job;

/* Starts a new thread that computes the reordering o (degree or METIS) of
 * ds->graph and then a renumbered copy of ds.  The permutation is read
 * from the file beside ds's cache when that file is current, and written
 * there otherwise.  METIS's seed is drawn now from the context's
 * GCN_RNG_PARTITION stream, as gcn_dataset_reorder draws it, so both use
 * the same cached file.  ds must stay unchanged until the job is freed.
 * The job's thread sends its messages to ctx's log function.  Caller
 * frees with gcn_reorder_job_free. */
GCN_API gcn_status gcn_reorder_job_start(gcn_ctx *ctx, const gcn_dataset *ds,
                                         const gcn_reorder_opts *o, gcn_reorder_job **out);

/* Whether the job has ended (successfully or not); never waits. */
GCN_API bool gcn_reorder_job_done(const gcn_reorder_job *job);

/* Waits for the job to end, then gives the renumbered copy of the dataset
 * (ds with ->reorder set), which the caller then owns and frees with
 * gcn_dataset_free; the job's error (METIS's, an I/O or memory failure)
 * otherwise.  GCN_ERR_STATE when the copy was taken already. */
GCN_API gcn_status gcn_reorder_job_take(gcn_ctx *ctx, gcn_reorder_job *job, gcn_dataset **out);

/* Stops the job at its next METIS call (a running call finishes first),
 * waits for its thread and frees what it holds.  Accepts NULL and sets
 * *job to NULL. */
GCN_API void gcn_reorder_job_free(gcn_reorder_job **job);

/* One paragraph: name, nodes, edges, degree statistics, features, classes,
 * split, reordering.  Writes at most size bytes (NUL-terminated) and
 * returns the length the whole text needs, as snprintf does. */
GCN_API int gcn_dataset_describe(const gcn_dataset *ds, char *buf, size_t size);

typedef enum gcn_adjacency {
    GCN_ADJ_GCN = 0, /* D^-1/2 (A + I) D^-1/2 */
    GCN_ADJ_RAW      /* A: entries 1, no self-loops added (GIN sums neighbours) */
} gcn_adjacency;

/* The dataset's graph as a gcn_csr on the context's device, with the
 * community levels of its METIS reordering attached (gcn_reorder_attach),
 * so the selector tries the subgraph kernels.  Caller frees with
 * gcn_csr_free. */
GCN_API gcn_status gcn_dataset_adjacency(gcn_ctx *ctx, const gcn_dataset *ds, gcn_adjacency kind,
                                         gcn_csr **out);

/* The same matrix as a host graph (values NULL for GCN_ADJ_RAW: all ones),
 * without community levels.  Caller frees with gcn_graph_free. */
GCN_API gcn_status gcn_dataset_adjacency_graph(gcn_ctx *ctx, const gcn_dataset *ds,
                                               gcn_adjacency kind, gcn_graph **out);

/* Features, labels and split on the context's device.  Every field is a new
 * reference the caller frees; a field is NULL where the dataset has nothing
 * (no features, no labels, an empty split list). */
typedef struct gcn_dataset_device {
    gcn_tensor *features; /* [n_nodes, n_features] */
    gcn_index *labels;    /* [n_nodes] */
    gcn_index *train, *valid, *test;
} gcn_dataset_device;

GCN_API gcn_status gcn_dataset_upload(gcn_ctx *ctx, const gcn_dataset *ds, gcn_dataset_device *out);
GCN_API void gcn_dataset_device_free(gcn_dataset_device *dev);

/* Replaces the features: "random:D", "degree" or "none" (see opts). */
GCN_API gcn_status gcn_dataset_substitute_features(gcn_ctx *ctx, gcn_dataset *ds, const char *how);

/* Reads a labels option: "file" (*n_classes 0) or "random:K" with K in
 * [2, 65536] (*n_classes K); GCN_ERR_INVALID_ARG naming the value
 * otherwise (ctx may be NULL). */
GCN_API gcn_status gcn_dataset_labels_parse(gcn_ctx *ctx, const char *how, int32_t *n_classes);

/* Replaces the node labels: "random:K" (see opts). */
GCN_API gcn_status gcn_dataset_substitute_labels(gcn_ctx *ctx, gcn_dataset *ds, const char *how);

/* Divides each feature row by its sum; rows summing to 0 stay 0. */
GCN_API gcn_status gcn_dataset_normalize_features(gcn_ctx *ctx, gcn_dataset *ds);

/* Draws a split from GCN_RNG_SPLIT: per class, train_per_class labelled
 * nodes (fewer if the class is small) for training, then n_valid and n_test
 * of the remaining labelled nodes, each list sorted ascending.  Replaces any
 * split the dataset had. */
GCN_API gcn_status gcn_dataset_draw_split(gcn_ctx *ctx, gcn_dataset *ds, int32_t train_per_class,
                                          int32_t n_valid, int32_t n_test);

/* ---- graph collections: batches and folds ------------------------------ */

/* A batch of whole graphs of a collection as one graph: the block-diagonal
 * matrix of their adjacencies (ds->graph's blocks, in the order asked
 * for), the dataset node of each batch node (to gather feature rows) and
 * the batch graph of each node.  Arrays are malloc-owned by the batch. */
typedef struct gcn_graph_batch {
    int32_t n_graphs, n_nodes;
    gcn_graph *graph;   /* [n_nodes, n_nodes], host CSR */
    int32_t *node_ids;  /* [n_nodes]: dataset node id of each batch node */
    int32_t *segment;   /* [n_nodes]: 0 .. n_graphs - 1, the graph of each node */
    int32_t *graph_ptr; /* [n_graphs + 1]: batch graph k holds nodes [graph_ptr[k],
                         * graph_ptr[k + 1]) */
    int32_t *labels;    /* [n_graphs]: their labels, or NULL */
} gcn_graph_batch;

/* Builds the batch of the n graphs graph_ids (each in [0, ds->n_graphs);
 * repeats allowed) of a collection.  Caller frees with
 * gcn_graph_batch_free. */
GCN_API gcn_status gcn_graph_batch_build(gcn_ctx *ctx, const gcn_dataset *ds,
                                         const int32_t *graph_ids, int32_t n,
                                         gcn_graph_batch **out);

/* Accepts NULL and sets *b to NULL. */
GCN_API void gcn_graph_batch_free(gcn_graph_batch **b);

/* GIN's batch size, the default of graph classification. */
#define GCN_GRAPH_BATCH_SIZE 32

/* One epoch's batches: puts the n ids in a uniformly random order drawn
 * from the context's GCN_RNG_SHUFFLE stream, in place; batch b is then
 * ids[b * batch_size, min(n, (b + 1) * batch_size)), and *n_batches is
 * ceil(n / batch_size).  The same seed and call sequence give the same
 * batches. */
GCN_API gcn_status gcn_graph_shuffle_batches(gcn_ctx *ctx, int32_t *ids, int32_t n,
                                             int32_t batch_size, int32_t *n_batches);

/* Stratified k-fold split of a labelled collection: fold[g] in [0, k) for
 * each of its graphs, 2 <= k <= n_graphs.  Each class's graphs, in an
 * order drawn from seed alone (not the context's streams), are dealt to
 * the folds in turn, the turn running on from class to class, so fold
 * sizes differ by at most one and each class is split evenly (its count
 * in a fold is within one of its share). */
GCN_API gcn_status gcn_graph_folds(gcn_ctx *ctx, const gcn_dataset *ds, int32_t k,
                                   uint64_t seed, int32_t *fold);

/* The fold file: '#' comment lines, then line k holds the 0-based graph
 * ids (TU graph id - 1) of fold k, ascending, separated by spaces.  write
 * replaces path atomically; read checks that every graph of ds is in
 * exactly one fold, and gives the fold count in *k and fold[g] as above
 * (fold has ds->n_graphs entries). */
GCN_API gcn_status gcn_graph_folds_write(gcn_ctx *ctx, const char *path, const gcn_dataset *ds,
                                         int32_t k, const int32_t *fold);
GCN_API gcn_status gcn_graph_folds_read(gcn_ctx *ctx, const char *path, const gcn_dataset *ds,
                                        int32_t *k, int32_t *fold);

/* Sets ds's split (graph ids, ascending) for outer fold `outer` of a
 * k-fold assignment: the test graphs are that fold's; with inner_valid
 * (Errica et al.'s protocol, k >= 3) the validation graphs are fold
 * (outer + 1) mod k's, for model selection without the test fold; without
 * it (the GIN paper's protocol) there are none; the training graphs are the
 * rest.  Replaces any split ds had. */
GCN_API gcn_status gcn_graph_fold_split(gcn_ctx *ctx, gcn_dataset *ds, const int32_t *fold,
                                        int32_t k, int32_t outer, bool inner_valid);

/* ---- synthetic data --------------------------------------------------- */

/* Stochastic block model: n_classes blocks of random sizes, each node of
 * class c with expected avg_degree * homophily neighbours in c and the rest
 * in other classes; features N(mu_c, I) with class means mu_c drawn
 * N(0, feature_signal^2 I); planted split of train_per_class per class,
 * n_valid, n_test.  ordered: the classes are runs of consecutive ids
 * (node i in class floor(i * n_classes / n_nodes)) instead of drawn, so the
 * node order follows the blocks, as in graphs numbered by community. */
typedef struct gcn_sbm_opts {
    size_t size; /* sizeof in the caller's build, set by gcn_sbm_default_opts */
    int32_t n_nodes;      /* 3000 */
    int32_t n_classes;    /* 6 */
    int32_t n_features;   /* 64 */
    double avg_degree;    /* 8 */
    double homophily;     /* 0.8: share of edges inside a class */
    float feature_signal; /* 0.25 */
    int32_t train_per_class, n_valid, n_test; /* 20, 500, 1000 */
    bool ordered;                              /* false */
} gcn_sbm_opts;

GCN_API gcn_sbm_opts gcn_sbm_default_opts(void);

/* Draws from GCN_RNG_DATA and GCN_RNG_SPLIT: the same context seed gives
 * the same dataset.  The graph is symmetric without self-loops. */
GCN_API gcn_status gcn_dataset_sbm(gcn_ctx *ctx, gcn_dataset **out, const gcn_sbm_opts *opts);

/* R-MAT (Chakrabarti et al.; Graph500's Kronecker generator): n_edges
 * distinct directed edges without self-loops among n_nodes nodes, each
 * placed by recursive quadrant choice with probabilities a, b, c and
 * 1 - a - b - c (a > 0, b + c > 0), node ids randomly permuted.  Draws
 * from GCN_RNG_DATA.  Duplicates are redrawn in rounds, so n_edges may be
 * at most half of the n_nodes (n_nodes - 1) ordered pairs; a graph that
 * still lacks edges after 64 rounds is returned with a warning. */
GCN_API gcn_status gcn_graph_rmat(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes,
                                  int64_t n_edges, double a, double b, double c);

/* Chung-Lu: n_edges distinct directed edges without self-loops, each
 * endpoint drawn with probability proportional to weight[i] (the expected
 * degree sequence; finite, >= 0, at least two positive).  Draws from
 * GCN_RNG_DATA; the same limits on n_edges as gcn_graph_rmat. */
GCN_API gcn_status gcn_graph_chung_lu(gcn_ctx *ctx, gcn_graph **out, int32_t n_nodes,
                                      const double *weight, int64_t n_edges);

/* A power-law expected degree sequence w_i ~ (i + 1)^(-1 / (gamma - 1)),
 * gamma > 1, scaled to sum to 2 * n_edges and capped at n_nodes - 1, for
 * gcn_graph_chung_lu.  weight has n_nodes entries. */
GCN_API gcn_status gcn_powerlaw_weights(gcn_ctx *ctx, int32_t n_nodes, int64_t n_edges,
                                        double gamma, double *weight);

#ifdef __cplusplus
}
#endif
#endif
