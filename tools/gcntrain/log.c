/* gcntrain's JSON-lines log: checked before anything runs, created by its
 * first line and flushed line by line, so `tail -f` follows a run and an
 * interrupted or failed run keeps every line it wrote; and the checks that
 * output files can be written where they are asked for. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gcntrain.h"

/* Whether a file can be created in dir: a probe file made and removed
 * (access() would say yes to root in a read-only place).  errno on false. */
static bool can_create_in(const char *dir)
{
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.gcntrain-probe-XXXXXX", dir);
    int fd = mkstemp(probe);
    if (fd < 0)
        return false;
    close(fd);
    unlink(probe);
    return true;
}

int check_output_path(const char *option, const char *path, output_kind kind)
{
    if (!*path) {
        fprintf(stderr, "gcntrain: %s '': an empty path\n", option);
        return EXIT_INPUT;
    }
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') /* "out/": the folder out */
        end--;
    const char *slash = NULL;
    for (size_t i = 0; i < end; i++)
        slash = path[i] == '/' ? path + i : slash;
    int len = !slash ? 0 : slash == path ? 1 : (int)(slash - path);
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", len ? len : 1, len ? path : ".");
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gcntrain: %s %s: no directory %s\n", option, path, dir);
        return EXIT_INPUT;
    }
    bool exists = stat(path, &st) == 0;
    if (exists && kind != OUTPUT_DIR && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gcntrain: %s %s: is a directory\n", option, path);
        return EXIT_INPUT;
    }
    if (exists && kind == OUTPUT_DIR && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gcntrain: %s %s: exists and is not a directory\n", option, path);
        return EXIT_INPUT;
    }
    if (exists && kind == OUTPUT_FILE && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "gcntrain: %s %s: not a regular file\n", option, path);
        return EXIT_INPUT;
    }
    const char *where = exists && kind == OUTPUT_DIR ? path : dir;
    if (!(exists && kind == OUTPUT_IN_PLACE) && !can_create_in(where)) {
        fprintf(stderr, "gcntrain: %s %s: cannot write in %s: %s\n", option, path, where,
                strerror(errno));
        return EXIT_INPUT;
    }
    if (exists && kind == OUTPUT_IN_PLACE) {
        int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "gcntrain: %s %s: cannot write: %s\n", option, path,
                    strerror(errno));
            return EXIT_INPUT;
        }
        close(fd);
    }
    return 0;
}

int log_check(run_log *l, const args *a)
{
    l->path = a->log;
    l->append = a->append;
    l->force = a->force;
    if (!a->log && (a->force || a->append)) {
        fprintf(stderr, "gcntrain: --force and --append apply to --log FILE\n");
        return EXIT_INPUT;
    }
    if (!a->log)
        return 0;
    if (a->force && a->append) {
        fprintf(stderr, "gcntrain: --force replaces the log and --append adds to it: "
                        "give one of them\n");
        return EXIT_INPUT;
    }
    int rc = check_output_path("--log", a->log, OUTPUT_IN_PLACE);
    if (rc)
        return rc;
    if (!a->force && !a->append && access(a->log, F_OK) == 0) {
        fprintf(stderr, "gcntrain: --log %s: the file exists; --force replaces it, --append "
                        "adds to it\n", a->log);
        return EXIT_INPUT;
    }
    return 0;
}

/* A new file (O_EXCL: it still must not exist), or the old one truncated
 * (--force) or appended to. */
static bool open_log(run_log *l)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC |
                (l->append ? O_APPEND : l->force ? O_TRUNC : O_EXCL);
    int fd = open(l->path, flags, 0666);
    l->f = fd >= 0 ? fdopen(fd, l->append ? "a" : "w") : NULL;
    if (!l->f) {
        fprintf(stderr, "gcntrain: --log %s: cannot write: %s\n", l->path, strerror(errno));
        if (fd >= 0)
            close(fd);
        l->failed = true;
        return false;
    }
    signals_log_fd(fd);
    return true;
}

void log_line(run_log *l, const char *fmt, ...)
{
    if (!l->path || l->failed || (!l->f && !open_log(l)))
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(l->f, fmt, ap);
    va_end(ap);
    fputc('\n', l->f);
    if (fflush(l->f) != 0 || ferror(l->f)) {
        fprintf(stderr, "gcntrain: --log %s: cannot write the log: %s\n", l->path,
                strerror(errno));
        l->failed = true;
    }
}

bool log_ok(const run_log *l)
{
    return !l->failed;
}

bool log_close(run_log *l)
{
    if (!l->f)
        return true;
    signals_log_fd(-1);
    bool ok = fclose(l->f) == 0;
    l->f = NULL;
    return ok;
}

const char *json_number(char *buf, size_t size, const char *fmt, double v)
{
    if (isfinite(v))
        snprintf(buf, size, fmt, v);
    else
        snprintf(buf, size, "null");
    return buf;
}

const char *json_string(char *buf, size_t size, const char *s)
{
    size_t n = 0;
    buf[n++] = '"';
    for (; *s && n + 8 < size; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            n += (size_t)snprintf(buf + n, size - n, "\\%c", c);
        else if (c < 0x20)
            n += (size_t)snprintf(buf + n, size - n, "\\u%04x", c);
        else
            buf[n++] = (char)c;
    }
    buf[n++] = '"';
    buf[n] = '\0';
    return buf;
}
