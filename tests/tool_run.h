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

/* A tool started without waiting for it: its process and the files its
 * stdout and stderr go to (readable while it runs). */
typedef struct tool_proc {
    int pid;
    char out[32], err[32];
} tool_proc;

/* Starts GCN_TOOLS/tool as tool_run does; the test fails if it cannot. */
void tool_start(tool_proc *p, const char *tool, const char *const *args);

/* Waits for a started tool and collects its output: r->code is its exit
 * status, or -1 when a signal ended it (returned, else 0). */
int tool_wait(tool_proc *p, tool_result *r);

/* The file's first size - 1 bytes, NUL-terminated (empty when unreadable). */
void tool_slurp(const char *path, char *buf, size_t size);

bool tool_exists(const char *path);

/* How many times needle occurs in the file's first MiB. */
int tool_count(const char *path, const char *needle);

/* Fails the test unless text is one line of error after any lines of
 * "gcntrain: warning: " (a run that loaded data or trained first may have
 * said something about the machine, such as OpenBLAS's kernels). */
void tool_expect_one_line(const char *text);

/* Two prediction files of nodes (CSV: node, class, one probability per
 * class) agree: the same header and nodes, every probability within tol,
 * and each class the same unless the two classes' probabilities tie
 * within tol, for all but at most `differ` nodes.  Returns the rows. */
int tool_expect_same_predictions(const char *a, const char *b, double tol, int differ);

/* rm -rf dir (the test fails if that fails). */
void tool_remove_dir(const char *dir);

#endif
