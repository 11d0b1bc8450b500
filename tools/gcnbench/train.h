/* gcnbench train's shared state (train.c): its options, one dataset's
 * measurements, the bench, and what train_ranks.c adds for runs on several
 * ranks. */
#ifndef GCNBENCH_TRAIN_H
#define GCNBENCH_TRAIN_H

#include "bench.h"
#include "tools/common/config_options.h"

enum { EXIT_RUNTIME = 1, EXIT_INPUT = 2, MAX_EPOCHS = 1000000 };

/* Warm-up epochs beyond --warmup while the selector is still profiling. */
enum { MAX_EXTRA_WARMUP = 1000 };

typedef struct train_opts {
    const char *config, *out;
    const char *datasets[GCNBENCH_MAX_LIST];
    int n_datasets;
    const char *set[N_CLI_CONFIG]; /* the shared options' values, NULL where not given */
    long epochs, warmup;
    long long seed; /* -1: the configuration's */
    bool breakdown;
} train_opts;

/* One rank's figures over the timed epochs (a run on several ranks). */
typedef struct rank_measured {
    size_t peak;
    gcn_comm_stats comm, layer[GCN_COMM_MAX_LAYERS]; /* the timed epochs' traffic */
} rank_measured;

/* One dataset's measurements: per timed epoch, its times; per profiled
 * epoch, device time by category; then the memory figures. */
typedef struct measured {
    float *train_ms, *eval_ms, *epoch_ms, *cat_ms[GCN_PROF_N_CATEGORIES], *span_ms;
    int n_profiled, n_graph; /* profiled epochs; timed epochs that replayed a graph */
    size_t peak, peak_timed, steady;
    gcn_train_memory mem;
    gcn_train_best best;
    int64_t n_nodes, nnz;
    int64_t sparse_nnz; /* of the sparse input, -1 when the features are dense */
    int warmup; /* warm-up epochs run */
    char dataset[64];
    char features[32], labels[32]; /* the dataset's sources: "file" or a substitute */
    int n_ranks; /* 1 for one context */
    rank_measured rank[GCN_MAX_RANKS];
} measured;

typedef struct train_bench {
    train_opts o;
    gcn_model_config cfg;
    char name[64];
    gcn_ctx *ctx;
    char device[128];
    char *lines; /* the JSON lines so far, for --out */
    size_t lines_len;
    FILE *lines_f;
} train_bench;

/* MiB of a byte count. */
static inline double train_mib(double bytes)
{
    return bytes / (1024.0 * 1024.0);
}

/* Trains the dataset on the configuration's ranks (--ranks or --gpus):
 * warm-up and timed epochs, with each rank's peak and traffic written to
 * *m.  Returns an exit status after saying why on failure. */
int train_run_ranks(train_bench *b, const char *spec, measured *m);

/* Where the dataset's features and labels came from, into m. */
void train_sources(const gcn_dataset *ds, measured *m);

/* The line's multi-rank keys (ranks, transport, rank_peak_mib, comm). */
void train_write_comm(const train_bench *b, const measured *m, FILE *f);

#endif
