/* The options gcntrain and gcnbench train share (config_options.h): the
 * table, the lookup of an option, its help text, and applying the values
 * given to a configuration. */
#include <string.h>

#include "config_options.h"

/* Help text is indented to this column after a name and value. */
enum { HELP_COLUMN = 24 };

const cli_config_option_info cli_config_options[N_CLI_CONFIG] = {
    [CLI_ROOT] = {"root", "DIR", "root",
                  "where dataset names resolve (default: the config's, else data)"},
    [CLI_CACHE_DIR] = {"cache-dir", "DIR", "cache_dir",
                       "keep dataset caches and the reorderings of generated graphs\n"
                       "(METIS, parts) in DIR (default: each dataset's processed/)"},
    [CLI_DEVICE] = {"device", "cpu|cuda|cuda:N|auto", "device",
                    "the device to run on (default: the config's device)"},
    [CLI_PRECISION] = {"precision", "fp32|tf32|bf16", "precision",
                       "fp32, tf32 matmuls, or bf16 storage of features, activations\n"
                       "and their gradients, bf16 matmuls summing in fp32, fp32\n"
                       "parameters, statistics and loss (default: the config's\n"
                       "precision)"},
    [CLI_THREADS] = {"threads", "N", "threads",
                     "CPU threads (default: the config's, else 0: the CPUs the\n"
                     "process may use, its affinity and cgroup quota; shared out\n"
                     "between ranks)"},
    [CLI_RANKS] = {"ranks", "N", "ranks",
                   "partition the graph over N ranks on the one --device (the\n"
                   "local transport): the single-device model, every rank's code"},
    [CLI_GPUS] = {"gpus", "N", "devices",
                  "partition the graph over N GPUs (from --device's), one rank\n"
                  "each, joined by NCCL (libnccl.so.2, or GCN_NCCL_LIBRARY)"},
    [CLI_SPMM] = {"spmm", "MODE", "spmm",
                  "auto (the adaptive selector, the default), auto-deterministic,\n"
                  "a kernel name (rowsplit) or a strategy (intra_smem@256,\n"
                  "intra_smem+inter_csr@256)"},
    [CLI_REORDER] = {"reorder", "SPEC", "reorder",
                     "auto (the default: on a GPU, training starts on the order as\n"
                     "loaded while metis:256,4096 is computed on a host thread,\n"
                     "then keeps whichever order trains an epoch faster, a\n"
                     "decision saved beside the dataset cache; the CPU keeps the\n"
                     "order as loaded), none, degree, metis\n"
                     "(community sizes 16,256,4096), metis:S[,S...], parts:N (the\n"
                     "partition of N ranks; with --ranks N or --gpus N, auto) or\n"
                     "parts:N:nnz (balanced by non-zeros; :nnz+K: each node weighs\n"
                     "its non-zeros + K), parts:N:range (no METIS: N runs of the\n"
                     "node order)"},
    [CLI_CUDA_GRAPH] = {"cuda-graph", "on|off", "cuda_graph",
                        "replay steady-state epochs as one CUDA graph (default: the\n"
                        "config's cuda_graph, on)"},
    [CLI_SPARSE_INPUT] = {"sparse-input", "on|off", "sparse_input",
                          "input features that are mostly zeros go to the first\n"
                          "layer as a sparse matrix (default: the config's\n"
                          "sparse_input, on)"},
    [CLI_FEATURES] = {"features", "random:D|degree|file|none", "features",
                      "substitute node features (e.g. for ogbn-arxiv without node-feat)"},
    [CLI_LABELS] = {"labels", "file|random:K", "labels",
                    "substitute node labels, K classes drawn uniformly from the data\n"
                    "seed, and a drawn split unless one is shipped: graph files have\n"
                    "no labels (for timing; accuracy is chance, and the dataset line\n"
                    "says so)"},
};

int cli_config_option_find(const char *arg)
{
    if (strncmp(arg, "--", 2))
        return -1;
    for (int i = 0; i < N_CLI_CONFIG; i++)
        if (!strcmp(arg + 2, cli_config_options[i].name))
            return i;
    return -1;
}

void cli_config_options_help(FILE *f)
{
    for (int i = 0; i < N_CLI_CONFIG; i++) {
        const cli_config_option_info *o = &cli_config_options[i];
        int width = fprintf(f, "  --%s %s", o->name, o->value);
        if (width >= HELP_COLUMN)
            fprintf(f, "\n%*s", HELP_COLUMN, "");
        else
            fprintf(f, "%*s", HELP_COLUMN - width, "");
        for (const char *s = o->help; *s; s++) {
            fputc(*s, f);
            if (*s == '\n')
                fprintf(f, "%*s", HELP_COLUMN, "");
        }
        fputc('\n', f);
    }
}

bool cli_config_options_apply(gcn_model_config *cfg, const char *const values[N_CLI_CONFIG],
                              const char *tool)
{
    char err[512];
    for (int i = 0; i < N_CLI_CONFIG; i++)
        if (values[i] &&
            gcn_model_config_set(cfg, cli_config_options[i].key, values[i], err, sizeof err) !=
                GCN_OK) {
            fprintf(stderr, "%s: --%s\n", tool, err);
            return false;
        }
    return true;
}
