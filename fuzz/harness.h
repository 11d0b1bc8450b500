/* Fuzzing entry points for the dataset parsers, shared by the libFuzzer
 * targets (fuzz/fuzz_*.c) and the test that replays the seed corpora and
 * the inputs kept in fuzz/regress/<target>/.  Each lays the bytes out as
 * files in a fresh scratch folder, loads them, uses the result (adjacency
 * matrices, upload; a batch and folds of a graph collection), frees
 * everything and returns how it went: GCN_OK when the dataset loaded and
 * every use of it succeeded, else the first failing status
 * (GCN_ERR_INVALID_ARG for an input too short for its leading bytes).
 * The libFuzzer targets ignore it; tests/test_dataset_fuzz.c compares it
 * with the outcome each kept input's name states. */
#ifndef GCN_FUZZ_HARNESS_H
#define GCN_FUZZ_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Input layout: one flag byte (bit 0 gzip, bits 1-4 bytes cut off the gzip
 * stream, bit 5 CSV name), then the edge list. */
gcn_status gcn_fuzz_edgelist(const uint8_t *data, size_t size);

/* Same flag byte, then the Matrix Market file. */
gcn_status gcn_fuzz_mtx(const uint8_t *data, size_t size);

/* Flag byte (bit 0 features "degree" instead of the file, bit 1 no
 * symmetrisation, bit 2 row-normalise, bit 3 random split), then meta.txt,
 * edges.txt, labels.txt, features.txt, train.txt, val.txt, test.txt
 * separated by 0x1E bytes; a file is absent when its section is. */
gcn_status gcn_fuzz_textdir(const uint8_t *data, size_t size);

/* Two bytes: a mask of the sections to gzip, then the same bits as
 * textdir's flag byte in bits 0-3 and a gzip cut of 0-15 bytes in bits 4-7;
 * then num-node-list, num-edge-list, edge, node-label, node-feat, and
 * split train, valid, test, separated by 0x1E. */
gcn_status gcn_fuzz_ogb(const uint8_t *data, size_t size);

/* Flag byte (bit 0 gzip every file, bit 1 features "degree" instead of
 * the file, bit 2 no symmetrisation), then the TU files graph_indicator,
 * A, graph_labels, node_labels, node_attributes, edge_labels separated by
 * 0x1E; a file is absent when its section is. */
gcn_status gcn_fuzz_tu(const uint8_t *data, size_t size);

/* The bytes as a cache file; when it is at least a header long, the
 * harness fixes both checksums first so the checks behind them are
 * reached, and reads it with the fingerprint it claims.  A file the reader
 * refuses (it logs why and would rebuild the cache) is GCN_ERR_FORMAT. */
gcn_status gcn_fuzz_cache(const uint8_t *data, size_t size);

/* The bytes as one of Planetoid's pickles (datasets/pickle.h): unpickled,
 * then read as a NumPy array when it is one. */
gcn_status gcn_fuzz_pickle(const uint8_t *data, size_t size);

#endif
