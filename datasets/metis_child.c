/* One METIS call in a child process, so that a reordering computed on a
 * host thread (reorder_job.c) stops at once when asked, however long the
 * call would take: the child is killed.  It only runs METIS on its copy of
 * the graph and writes the parts to a pipe. */
#include <errno.h>
#include <metis.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* How often the parent looks at the stop flag while the child runs. */
#define POLL_MS 20

gcn_status gcn_reorder_stopped(gcn_ctx *ctx)
{
    return GCN_ERROR(ctx, GCN_ERR_STATE, "reorder: stopped before METIS finished");
}

static bool write_all(int fd, const void *buf, size_t len)
{
    for (const char *p = buf; len > 0;) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

/* The child: METIS, then its return code and (when OK) the parts. */
static void child(int fd, int32_t n, int32_t *xadj, int32_t *adjncy, int32_t nparts,
                  uint32_t seed, int32_t *part)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the parent */
    signal(SIGINT, SIG_IGN);          /* the parent decides, and kills it */
    signal(SIGTERM, SIG_IGN);
    int rc = gcn_metis_run(n, xadj, adjncy, NULL, nparts, seed, part);
    bool ok = write_all(fd, &rc, sizeof rc) &&
              (rc != METIS_OK || write_all(fd, part, (size_t)n * sizeof *part));
    _exit(ok ? 0 : 1);
}

/* Reads len bytes from fd, polling stop; *stopped when it was set. */
static bool read_all(int fd, void *buf, size_t len, const atomic_bool *stop, bool *stopped)
{
    for (char *p = buf; len > 0;) {
        if ((*stopped = atomic_load(stop)))
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ready = poll(&pfd, 1, POLL_MS);
        if (ready < 0 && errno != EINTR)
            return false;
        if (ready <= 0)
            continue;
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        p += r;
        len -= (size_t)r;
    }
    return true;
}

gcn_status gcn_metis_kway_child(gcn_ctx *ctx, int32_t n, int32_t *xadj, int32_t *adjncy,
                                int32_t nparts, uint32_t seed, const atomic_bool *stop,
                                int32_t *part)
{
    int fd[2];
    if (pipe(fd) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "reorder: cannot make a pipe for METIS: %s",
                         strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        child(fd[1], n, xadj, adjncy, nparts, seed, part);
    }
    close(fd[1]);
    if (pid < 0) {
        close(fd[0]);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "reorder: cannot start a process for METIS: %s",
                         strerror(errno));
    }
    int rc = METIS_ERROR;
    bool stopped = false;
    bool ok = read_all(fd[0], &rc, sizeof rc, stop, &stopped) &&
              (rc != METIS_OK || read_all(fd[0], part, (size_t)n * sizeof *part, stop, &stopped));
    close(fd[0]);
    if (!ok)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (stopped)
        return gcn_reorder_stopped(ctx);
    if (!ok)
        return GCN_ERROR(ctx, GCN_ERR_IO, "reorder: the METIS process ended without its "
                         "result (status %d)", status);
    return rc == METIS_OK ? GCN_OK : gcn_metis_error(ctx, rc, n, xadj[n], nparts);
}
