/* Fixtures for the dataset tests: a scratch folder under /tmp, files
 * written into it (".gz" names are gzip-compressed with zlib), and checks
 * on the context's error message, on graphs and on reorderings. */
#ifndef GCN_TEST_DATASET_HELPERS_H
#define GCN_TEST_DATASET_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gcn.h"

/* The real data, relative to the repository root the tests run in. */
#define SHARED_DATA "../shared/data"

/* A new empty folder /tmp/gcn-ds-XXXXXX; caller removes it with ds_rmtree
 * and frees the string. */
char *ds_tmpdir(void);

/* Removes a folder and everything under it. */
void ds_rmtree(const char *dir);

/* Writes dir/rel (creating missing folders); gzip when rel ends in ".gz". */
void ds_write(const char *dir, const char *rel, const char *text);
void ds_write_bytes(const char *dir, const char *rel, const void *data, size_t n);

/* Copies a file byte for byte to dir/rel (creating missing folders). */
void ds_copy(const char *from, const char *dir, const char *rel);

/* "dir/rel" in a static buffer (valid until the next call). */
const char *ds_path(const char *dir, const char *rel);

/* What the context of the last ds_logging_ctx call logged: a line
 * "WARN message" or "INFO message" per message. */
extern char ds_notices[8192];

/* A CPU context with the seed that logs at INFO level into ds_notices,
 * which it empties. */
gcn_ctx *ds_logging_ctx(uint64_t seed);

/* Options for fixture loads: root = dir, cache off unless a test asks. */
gcn_dataset_opts ds_opts(const char *dir);

/* Asserts that loading spec fails with st and that the message contains
 * every one of the NULL-terminated needles (file name, line, reason). */
void ds_expect_fail(gcn_ctx *ctx, const char *spec, const gcn_dataset_opts *opts,
                    gcn_status st, ...);

/* A 5-node, 6-edge OGB folder dir/ogbn_toy ("ogbn-toy") with 3 features
 * and a time split. */
void ds_write_ogb_toy(const char *dir);

/* Loads spec, asserting that it succeeds. */
gcn_dataset *ds_load_ok(gcn_ctx *ctx, const char *spec, const gcn_dataset_opts *opts);

/* One damaged file: its name, the text it gets, and how a load must fail
 * (status, and two pieces of the message: where and why). */
typedef struct ds_bad_file {
    const char *file, *text;
    gcn_status st;
    const char *where, *why;
} ds_bad_file;

/* For each of the n cases, in a fresh folder: fixture(dir) writes a valid
 * dataset, the case's file under dir/sub is replaced by its text, and
 * loading spec must fail as the case says. */
void ds_expect_bad_files(gcn_ctx *ctx, void (*fixture)(const char *dir), const char *sub,
                         const char *spec, const ds_bad_file *cases, size_t n);

/* prefix, then m edge lines "src<sep>dst\n" with ids in [base, base + n)
 * drawn by a fixed LCG, so that the text does not compress to nothing; a
 * new string (caller frees), *len its length. */
char *ds_random_edges(const char *prefix, int m, int n, int base, char sep, size_t *len);

/* Damages the gzip file at path: kind 0 cuts it in half, 1 flips 40 bytes
 * of the deflate stream, 2 flips a bit of the stored CRC-32.  Returns a
 * piece of the message zlib's reason leads to. */
const char *ds_damage_gzip(const char *path, int kind);

/* Whether two datasets hold identical graphs, features, labels, splits and
 * graph collections. */
bool ds_same(const gcn_dataset *a, const gcn_dataset *b);

/* Asserts that r reorders n nodes: order is a permutation, position its
 * inverse, and each level's parts run from 0 to n without empty parts,
 * every boundary of a coarser level being one of the finer level. */
void ds_check_reorder(const gcn_reorder *r, int32_t n);

/* The graph of m edges src -> dst (gcn_graph_from_coo), and its reordering
 * by a gcn_reorder_parse spec; the test fails on any error. */
gcn_graph *ds_coo(gcn_ctx *ctx, int32_t n, int64_t m, const int32_t *src, const int32_t *dst);
gcn_reorder *ds_compute_reorder(gcn_ctx *ctx, const gcn_graph *g, const char *spec);

/* Every array of b (features, labels, split lists, graph) is a's renumbered
 * by b->reorder. */
void ds_expect_follows(const gcn_dataset *a, const gcn_dataset *b);

/* Asserts that two graphs are equal: row_ptr, col_idx and values. */
void ds_expect_same_graph(const gcn_graph *a, const gcn_graph *b);

/* A collection written into a new folder by `write` and loaded as spec on
 * a CPU context that keeps its log (ds_notices); ds_fixture_close frees
 * all of it and removes the folder. */
typedef struct ds_fixture {
    char *dir;
    gcn_ctx *ctx;
    gcn_dataset_opts o;
    gcn_dataset *ds;
} ds_fixture;

ds_fixture ds_fixture_open(void (*write)(const char *dir), const char *spec);
void ds_fixture_close(ds_fixture *f);

/* A learnable TU collection dir/tu/shapes ("tu:shapes" with root dir):
 * n_graphs graphs alternating between class "1", a cycle, and class "2", a
 * star, of 5 + (g / 2) % 6 nodes each, every node with node label 1. */
void ds_write_tu_shapes(const char *dir, int n_graphs);

/* tu:shapes from dir (ds_write_tu_shapes) with its split set to outer fold
 * `outer` of k stratified folds drawn from seed (gcn_graph_fold_split;
 * fold, when not NULL, receives the folds).  The test fails on any error. */
gcn_dataset *ds_load_shapes_fold(gcn_ctx *ctx, const char *dir, int32_t k, uint64_t seed,
                                 int32_t outer, bool inner_valid, int32_t *fold);

/* A trainer of the graph-level configuration `json` on ds from seed, after
 * `epochs` epochs whose losses and validation and test accuracies go to the
 * arrays that are not NULL.  Caller frees; the test fails on any error. */
gcn_trainer *ds_train_graphs(gcn_ctx *ctx, const char *json, const gcn_dataset *ds,
                             uint64_t seed, int epochs, float *loss, double *valid, double *test);

/* Loads tu:<name> from the shared data (cached in cache_dir, or not cached
 * when it is NULL), or NULL when the collection is absent. */
gcn_dataset *ds_load_tu(gcn_ctx *ctx, const char *name, const char *cache_dir);

#endif
