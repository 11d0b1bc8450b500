/* Running the built tools from a test (tool_run.h). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tool_run.h"

extern char **environ;

void tool_slurp(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, size - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

bool tool_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void tool_run(tool_result *r, const char *tool, const char *const *args)
{
    const char *dir = getenv("GCN_TOOLS") ? getenv("GCN_TOOLS") : "build";
    char exe[512], out[] = "/tmp/gcn-cli-out-XXXXXX", err[] = "/tmp/gcn-cli-err-XXXXXX";
    snprintf(exe, sizeof exe, "%s/%s", dir, tool);
    close(mkstemp(out));
    close(mkstemp(err));
    char *argv[32] = {exe};
    int n = 1;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 31, "too many arguments for %s", tool);
        argv[n] = (char *)args[n - 1];
    }
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_TRUNC, 0);
    posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_TRUNC, 0);
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, exe, &fa, NULL, argv, environ), 0, "cannot run %s", exe);
    int status;
    waitpid(pid, &status, 0);
    posix_spawn_file_actions_destroy(&fa);
    cr_assert(WIFEXITED(status), "%s crashed (signal %d)", tool, WTERMSIG(status));
    r->code = WEXITSTATUS(status);
    tool_slurp(out, r->out, sizeof r->out);
    tool_slurp(err, r->err, sizeof r->err);
    unlink(out);
    unlink(err);
}
