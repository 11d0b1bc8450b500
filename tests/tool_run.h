/* Running the built tools from a test: GCN_TOOLS names the folder they are
 * in (build by default); their exit status, stdout and stderr come back. */
#ifndef GCN_TEST_TOOL_RUN_H
#define GCN_TEST_TOOL_RUN_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tool_result {
    int code;
    char out[1 << 16], err[1 << 12];
} tool_result;

/* Runs GCN_TOOLS/tool with the NULL-terminated arguments (at most 30); the
 * test fails if it cannot start or does not exit normally. */
void tool_run(tool_result *r, const char *tool, const char *const *args);

/* The file's first size - 1 bytes, NUL-terminated (empty when unreadable). */
void tool_slurp(const char *path, char *buf, size_t size);

bool tool_exists(const char *path);

#endif
