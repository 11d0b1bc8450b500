/* Running the built tools from a test (tool_run.h). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int tool_count(const char *path, const char *needle)
{
    enum { SIZE = 1 << 20 };
    char *buf = malloc(SIZE);
    cr_assert_not_null(buf);
    tool_slurp(path, buf, SIZE);
    int n = 0;
    for (char *p = buf; (p = strstr(p, needle)); p++)
        n++;
    free(buf);
    return n;
}

void tool_remove_dir(const char *dir)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
}

void tool_start(tool_proc *p, const char *tool, const char *const *args)
{
    const char *dir = getenv("GCN_TOOLS") ? getenv("GCN_TOOLS") : "build";
    char exe[512];
    snprintf(exe, sizeof exe, "%s/%s", dir, tool);
    snprintf(p->out, sizeof p->out, "/tmp/gcn-cli-out-XXXXXX");
    snprintf(p->err, sizeof p->err, "/tmp/gcn-cli-err-XXXXXX");
    close(mkstemp(p->out));
    close(mkstemp(p->err));
    char *argv[32] = {exe};
    int n = 1;
    for (; args[n - 1]; n++) {
        cr_assert_lt(n, 31, "too many arguments for %s", tool);
        argv[n] = (char *)args[n - 1];
    }
    argv[n] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, p->out, O_WRONLY | O_TRUNC, 0);
    posix_spawn_file_actions_addopen(&fa, 2, p->err, O_WRONLY | O_TRUNC, 0);
    pid_t pid;
    cr_assert_eq(posix_spawn(&pid, exe, &fa, NULL, argv, environ), 0, "cannot run %s", exe);
    posix_spawn_file_actions_destroy(&fa);
    p->pid = pid;
}

int tool_wait(tool_proc *p, tool_result *r)
{
    int status;
    cr_assert_eq(waitpid(p->pid, &status, 0), p->pid);
    r->code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    tool_slurp(p->out, r->out, sizeof r->out);
    tool_slurp(p->err, r->err, sizeof r->err);
    unlink(p->out);
    unlink(p->err);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

void tool_run(tool_result *r, const char *tool, const char *const *args)
{
    tool_proc p;
    tool_start(&p, tool, args);
    int sig = tool_wait(&p, r);
    cr_assert_eq(sig, 0, "%s crashed (signal %d)", tool, sig);
}

void tool_expect_one_line(const char *text)
{
    const char *error = text;
    while (strncmp(error, "gcntrain: warning: ", 19) == 0 && strchr(error, '\n'))
        error = strchr(error, '\n') + 1;
    cr_assert(error[0], "no message: %s", text);
    cr_assert_eq(strchr(error, '\n'), error + strlen(error) - 1, "not one line: %s", text);
}

/* One row of a prediction file: its node, class and probabilities (at
 * most 64 classes); returns how many probabilities. */
static int prediction_row(const char *line, long *node, long *cls, double *probs)
{
    char *at;
    *node = strtol(line, &at, 10);
    cr_assert_eq(*at, ',', "%s", line);
    *cls = strtol(at + 1, &at, 10);
    int n = 0;
    while (*at == ',' && n < 64)
        probs[n++] = strtod(at + 1, &at);
    return n;
}

int tool_expect_same_predictions(const char *a, const char *b, double tol, int differ)
{
    FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
    cr_assert(fa && fb, "%s, %s", a, b);
    char la[4096], lb[4096];
    cr_assert(fgets(la, sizeof la, fa) && fgets(lb, sizeof lb, fb), "%s or %s is empty", a, b);
    cr_assert_str_eq(la, lb, "the headers of %s and %s", a, b);
    int rows = 0, differs = 0;
    while (fgets(la, sizeof la, fa)) {
        cr_assert(fgets(lb, sizeof lb, fb), "%s ends before %s", b, a);
        long na, nb, ca, cb;
        double pa[64], pb[64];
        int k = prediction_row(la, &na, &ca, pa);
        cr_assert_eq(prediction_row(lb, &nb, &cb, pb), k, "%s", lb);
        cr_assert(na == rows && nb == rows && ca >= 0 && ca < k && cb >= 0 && cb < k,
                  "row %d: %s and %s", rows, la, lb);
        for (int c = 0; c < k; c++)
            cr_assert(fabs(pa[c] - pb[c]) <= tol, "node %d class %d: %.9g and %.9g", rows, c,
                      pa[c], pb[c]);
        cr_assert(ca == cb || fabs(pa[ca] - pa[cb]) <= tol, "node %d", rows);
        differs += ca != cb;
        rows++;
    }
    cr_assert(!fgets(lb, sizeof lb, fb), "%s has more rows than %s", b, a);
    cr_assert_leq(differs, differ, "%d nodes' classes differ", differs);
    fclose(fa);
    fclose(fb);
    return rows;
}
