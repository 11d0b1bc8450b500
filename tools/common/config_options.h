/* The command-line options gcntrain and gcnbench train share: each one
 * overrides one key of the model configuration.  One table gives each
 * option's name, value, help text and key; both tools parse and print it. */
#ifndef GCN_TOOLS_CONFIG_OPTIONS_H
#define GCN_TOOLS_CONFIG_OPTIONS_H

#include <stdbool.h>
#include <stdio.h>

#include "gcn.h"

/* The options, in the order of the table and of the help text. */
typedef enum {
    CLI_ROOT, CLI_CACHE_DIR, CLI_DEVICE, CLI_PRECISION, CLI_THREADS, CLI_RANKS, CLI_GPUS,
    CLI_SPMM, CLI_REORDER, CLI_CUDA_GRAPH, CLI_SPARSE_INPUT, CLI_FEATURES, CLI_LABELS,
    N_CLI_CONFIG
} cli_config_option;

typedef struct {
    const char *name;  /* on the command line, without its two dashes */
    const char *value; /* what it takes, as the help text shows it */
    const char *key;   /* the configuration key it sets (gcn_model_config_set) */
    const char *help;  /* its description, lines separated by '\n' */
} cli_config_option_info;

extern const cli_config_option_info cli_config_options[N_CLI_CONFIG];

/* The option that arg ("--device") names, or -1 when it names none. */
int cli_config_option_find(const char *arg);

/* Each option's help, one option a paragraph, in gcntrain's layout. */
void cli_config_options_help(FILE *f);

/* Sets the key of each option given (values[i] not NULL) on cfg.  On a bad
 * value, prints "TOOL: --KEY VALUE: expected ..." on one line and returns
 * false. */
bool cli_config_options_apply(gcn_model_config *cfg, const char *const values[N_CLI_CONFIG],
                              const char *tool);

#endif
