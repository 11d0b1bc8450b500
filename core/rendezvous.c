/* The rendezvous of a job's rank processes through a file on a shared
 * folder (rank 0 publishes NCCL's id there), and the thread that keeps a
 * rank's heartbeat file beating and watches its peers'. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "heartbeat.h"
#include "internal.h"
#include "job.h"

enum { PATH_MAX_LEN = 4096, FILE_MAX = 2048 };

struct gcn_rendezvous {
    char path[PATH_MAX_LEN];
    int rank, ranks;
    double timeout, beat_s;
    gcn_peer_failed_fn on_failure;
    void *user;
    pthread_t thread;
    bool started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool quit;
    hb_file own;     /* this rank's heartbeat, as written */
    hb_peer *peers;  /* [ranks] */
    gcn_ctx *ctx;    /* the rank's context, stopped when a peer fails (NULL: none) */
    bool nccl_error; /* its communicator reported an asynchronous error */
    int failed;      /* the peer given up on, or -1 */
    char why[384];
};

gcn_rendezvous_opts gcn_rendezvous_default_opts(void)
{
    return (gcn_rendezvous_opts){.size = sizeof(gcn_rendezvous_opts), .timeout_s = 60.0};
}

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s)
{
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&t, NULL);
}

/* ---- files ---------------------------------------------------------------------- */

/* text written to path through path.tmp renamed into place. */
static bool write_atomic(const char *path, const char *text)
{
    char tmp[PATH_MAX_LEN + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) != 0)
        ok = false;
    if (!ok)
        remove(tmp);
    return ok;
}

/* The file's text into buf; false when it cannot be read. */
static bool read_text(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    return true;
}

static void beat_path(const gcn_rendezvous *r, int rank, char *buf, size_t size)
{
    snprintf(buf, size, "%s.rank%d", r->path, rank);
}

/* Rank `rank`'s heartbeat of r's session, or false. */
static bool read_beat(const gcn_rendezvous *r, int rank, hb_file *h)
{
    char path[PATH_MAX_LEN + 16], text[FILE_MAX];
    beat_path(r, rank, path, sizeof path);
    return read_text(path, text, sizeof text) && hb_parse(text, h) &&
           !strcmp(h->session, r->own.session);
}

static bool write_beat(gcn_rendezvous *r)
{
    char path[PATH_MAX_LEN + 16], text[FILE_MAX];
    beat_path(r, r->rank, path, sizeof path);
    hb_format(&r->own, text, sizeof text);
    return write_atomic(path, text);
}

/* What rank 0 writes: the job, its size, the session and the id. */
typedef struct rdv_file {
    char token[256];
    int ranks;
    char session[40];
    gcn_comm_id id;
} rdv_file;

static void hex(const unsigned char *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

static bool unhex(const char *s, unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return false;
        b[i] = (unsigned char)v;
    }
    return s[2 * n] == '\0' || s[2 * n] == '\n';
}

static bool parse_rdv(const char *text, rdv_file *f)
{
    char id[2 * GCN_COMM_ID_BYTES + 1];
    int used = 0;
    memset(f, 0, sizeof *f);
    if (strncmp(text, "gcn-rendezvous 1\njob ", 21))
        return false;
    const char *token = text + 21;
    size_t len = strcspn(token, "\n");
    if (len >= sizeof f->token || token[len] != '\n')
        return false;
    memcpy(f->token, token, len);
    if (sscanf(token + len + 1, "ranks %d\nsession %39s\nid %256s\n%n", &f->ranks, f->session,
               id, &used) != 3 || used == 0)
        return false;
    return f->ranks >= 1 && unhex(id, f->id.bytes, GCN_COMM_ID_BYTES);
}

static bool write_rdv(const char *path, const rdv_file *f)
{
    char id[2 * GCN_COMM_ID_BYTES + 1], text[FILE_MAX];
    hex(f->id.bytes, GCN_COMM_ID_BYTES, id);
    snprintf(text, sizeof text, "gcn-rendezvous 1\njob %s\nranks %d\nsession %s\nid %s\n",
             f->token, f->ranks, f->session, id);
    return write_atomic(path, text);
}

/* A session name no earlier job shares: random bytes from the kernel. */
static bool new_session(char *out)
{
    unsigned char b[12];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && read(fd, b, sizeof b) == (ssize_t)sizeof b;
    if (fd >= 0)
        close(fd);
    if (ok)
        hex(b, sizeof b, out);
    return ok;
}

/* ---- the heartbeat thread --------------------------------------------------------- */

/* Reads every peer's heartbeat and judges it; the first failure is kept
 * and reported. */
static void watch_peers(gcn_rendezvous *r)
{
    char msg[256];
    pthread_mutex_lock(&r->mu);
    gcn_ctx *ctx = r->failed < 0 && !r->nccl_error ? r->ctx : NULL;
    pthread_mutex_unlock(&r->mu);
    if (ctx && gcn_comm_async_error(ctx, msg, sizeof msg) != GCN_OK) {
        pthread_mutex_lock(&r->mu);
        r->nccl_error = true;
        pthread_mutex_unlock(&r->mu);
        gcn_comm_stop(ctx, -1, msg);
    }
    for (int p = 0; p < r->ranks; p++) {
        if (p == r->rank)
            continue;
        hb_file h;
        bool have = read_beat(r, p, &h);
        char why[sizeof r->why];
        pthread_mutex_lock(&r->mu);
        int bad = r->failed >= 0 ? -1
                                 : hb_judge(&r->peers[p], p, have ? &h : NULL, mono_s(),
                                            r->timeout, why, sizeof why);
        if (bad == r->rank) /* a peer stopped blaming this rank: it knows why itself */
            bad = -1;
        if (bad >= 0) {
            r->failed = bad;
            snprintf(r->why, sizeof r->why, "%s", why);
            pthread_cond_broadcast(&r->cv);
        }
        gcn_ctx *stop_ctx = r->ctx;
        pthread_mutex_unlock(&r->mu);
        if (bad >= 0 && stop_ctx)
            gcn_comm_stop(stop_ctx, bad, why);
        if (bad >= 0 && r->on_failure)
            r->on_failure(bad, why, r->user);
    }
}

static void *beat_main(void *arg)
{
    gcn_rendezvous *r = arg;
    pthread_mutex_lock(&r->mu);
    while (!r->quit) {
        r->own.beat++;
        pthread_mutex_unlock(&r->mu);
        write_beat(r);
        watch_peers(r);
        pthread_mutex_lock(&r->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        double s = (double)until.tv_nsec * 1e-9 + r->beat_s;
        until.tv_sec += (time_t)s;
        until.tv_nsec = (long)((s - (double)(time_t)s) * 1e9);
        while (!r->quit && pthread_cond_timedwait(&r->cv, &r->mu, &until) != ETIMEDOUT)
            ;
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* ---- joining ------------------------------------------------------------------- */

/* "1, 3" of the ranks whose heartbeat of the session is not there;
 * returns how many. */
static int missing_ranks(const gcn_rendezvous *r, char *list, size_t size)
{
    int n = 0;
    size_t used = 0;
    list[0] = '\0';
    for (int p = 0; p < r->ranks; p++) {
        hb_file h;
        if (p == r->rank || read_beat(r, p, &h))
            continue;
        if (n++ < 16 && used < size)
            used += (size_t)snprintf(list + used, size - used, "%s%d", used ? ", " : "", p);
    }
    if (n > 16 && used < size)
        snprintf(list + used, size - used, " and %d more", n - 16);
    return n;
}

/* Rank r > 0: reads rank 0's file until it is this job's (adopting a new
 * session whenever rank 0 writes one) and every rank beats in it. */
static gcn_status follow(gcn_ctx *ctx, gcn_rendezvous *r, const gcn_job *job, double deadline,
                         gcn_comm_id *id)
{
    char text[FILE_MAX], list[256], other[256] = "";
    bool stale = false, seen = false;
    for (;;) {
        rdv_file f;
        if (read_text(r->path, text, sizeof text)) {
            if (!parse_rdv(text, &f))
                return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                                 "rendezvous %s: not a rendezvous file (it should start "
                                 "\"gcn-rendezvous 1\"): remove it", r->path);
            stale = strcmp(f.token, job->token) != 0;
            snprintf(other, sizeof other, "%s", f.token);
            if (!stale && f.ranks != job->ranks)
                return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                                 "rendezvous %s: rank 0 started a job of %d ranks, this process "
                                 "one of %d (%s)", r->path, f.ranks, job->ranks,
                                 gcn_launcher_name(job->launcher));
            if (!stale && strcmp(f.session, r->own.session)) {
                pthread_mutex_lock(&r->mu);
                snprintf(r->own.session, sizeof r->own.session, "%s", f.session);
                pthread_mutex_unlock(&r->mu);
                if (!write_beat(r))
                    return GCN_ERROR(ctx, GCN_ERR_IO, "rendezvous %s: cannot write this rank's "
                                     "heartbeat beside it: %s", r->path, strerror(errno));
                *id = f.id;
            }
            seen = seen || !stale;
        }
        if (seen && !stale && missing_ranks(r, list, sizeof list) == 0)
            return GCN_OK;
        if (mono_s() > deadline)
            break;
        sleep_s(0.05);
    }
    if (stale)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                         "rendezvous %s is from another job (its job is \"%s\", this one's "
                         "\"%s\") and rank 0 did not replace it within %.0f s: remove it, or "
                         "check that rank 0 runs", r->path, other, job->token, r->timeout);
    if (!seen)
        return GCN_ERROR(ctx, GCN_ERR_STATE, "rendezvous %s: rank 0 did not come within %.0f s",
                         r->path, r->timeout);
    missing_ranks(r, list, sizeof list);
    return GCN_ERROR(ctx, GCN_ERR_STATE, "rendezvous %s: rank%s %s of %d did not come within "
                     "%.0f s", r->path, strchr(list, ',') || strstr(list, "more") ? "s" : "", list,
                     r->ranks, r->timeout);
}

/* Rank 0: publishes the id under a new session and waits for every rank. */
static gcn_status lead(gcn_ctx *ctx, gcn_rendezvous *r, const gcn_job *job, double deadline,
                       const gcn_comm_id *id)
{
    rdv_file f = {.ranks = job->ranks, .id = *id};
    snprintf(f.token, sizeof f.token, "%s", job->token);
    snprintf(f.session, sizeof f.session, "%s", r->own.session);
    if (!write_beat(r) || !write_rdv(r->path, &f))
        return GCN_ERROR(ctx, GCN_ERR_IO, "rendezvous %s: cannot write it or its heartbeat "
                         "beside it: %s", r->path, strerror(errno));
    char list[256];
    while (missing_ranks(r, list, sizeof list) > 0) {
        if (mono_s() > deadline)
            return GCN_ERROR(ctx, GCN_ERR_STATE, "rendezvous %s: rank%s %s of %d did not come "
                             "within %.0f s", r->path,
                             strchr(list, ',') || strstr(list, "more") ? "s" : "", list,
                             r->ranks, r->timeout);
        sleep_s(0.05);
    }
    return GCN_OK;
}

static gcn_status start(gcn_ctx *ctx, gcn_rendezvous *r)
{
    if (pthread_create(&r->thread, NULL, beat_main, r) != 0)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "rendezvous: cannot start the heartbeat thread");
    r->started = true;
    return GCN_OK;
}

gcn_status gcn_rendezvous_open(gcn_ctx *ctx, const char *path, const gcn_job *job,
                               const gcn_rendezvous_opts *opts, gcn_comm_id *id,
                               gcn_rendezvous **out)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path && *path && job && id && out);
    *out = NULL;
    gcn_rendezvous_opts o = gcn_rendezvous_default_opts();
    if (opts)
        GCN_TRY(gcn_struct_import(ctx, "gcn_rendezvous_opts", &o, &o, sizeof o, opts));
    if (!(o.timeout_s > 0.0) || strlen(path) + 16 >= PATH_MAX_LEN || job->ranks < 1 ||
        job->rank < 0 || job->rank >= job->ranks)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "rendezvous %s: timeout %g s, rank %d of %d",
                         path, o.timeout_s, job->rank, job->ranks);
    gcn_rendezvous *r = calloc(1, sizeof *r);
    if (!r || !(r->peers = calloc((size_t)job->ranks, sizeof *r->peers))) {
        free(r);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "rendezvous: out of host memory");
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    r->rank = job->rank;
    r->ranks = job->ranks;
    r->timeout = o.timeout_s;
    r->beat_s = o.beat_s > 0.0 ? o.beat_s : fmin(1.0, fmax(0.05, o.timeout_s / 10.0));
    r->on_failure = o.on_failure;
    r->user = o.user;
    r->failed = -1;
    r->own.blame = -1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    double deadline = mono_s() + o.timeout_s;
    gcn_status st = GCN_OK;
    if (job->rank == 0 && !new_session(r->own.session))
        st = GCN_ERROR(ctx, GCN_ERR_IO, "rendezvous: cannot read /dev/urandom");
    if (st == GCN_OK)
        st = job->rank == 0 ? lead(ctx, r, job, deadline, id) : follow(ctx, r, job, deadline, id);
    if (st == GCN_OK) {
        double now = mono_s();
        for (int p = 0; p < r->ranks; p++)
            hb_peer_start(&r->peers[p], now);
        st = start(ctx, r);
    }
    if (st != GCN_OK) {
        gcn_rendezvous_close(&r, false, gcn_last_error(ctx));
        return st;
    }
    *out = r;
    return GCN_OK;
}

/* ---- after ------------------------------------------------------------------------ */

void gcn_rendezvous_attach(gcn_rendezvous *r, gcn_ctx *ctx)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->ctx = ctx;
    pthread_mutex_unlock(&r->mu);
}

int gcn_rendezvous_failed(gcn_rendezvous *r, char *why, size_t size)
{
    if (!r)
        return -1;
    pthread_mutex_lock(&r->mu);
    int failed = r->failed;
    if (failed >= 0 && why && size)
        snprintf(why, size, "%s", r->why);
    pthread_mutex_unlock(&r->mu);
    return failed;
}

int gcn_rendezvous_wait_failed(gcn_rendezvous *r, char *why, size_t size)
{
    if (!r)
        return -1;
    double until = mono_s() + r->timeout + 2.0 * r->beat_s;
    while (gcn_rendezvous_failed(r, NULL, 0) < 0 && mono_s() < until)
        sleep_s(r->beat_s);
    return gcn_rendezvous_failed(r, why, size);
}

void gcn_rendezvous_close(gcn_rendezvous **pr, bool ok, const char *msg)
{
    if (!pr || !*pr)
        return;
    gcn_rendezvous *r = *pr;
    *pr = NULL;
    pthread_mutex_lock(&r->mu);
    r->quit = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->started)
        pthread_join(r->thread, NULL);
    if (r->own.session[0]) {
        r->own.state = ok ? HB_DONE : HB_FAILED;
        r->own.blame = ok ? -1 : r->failed;
        if (!ok && r->failed >= 0)
            snprintf(r->own.why, sizeof r->own.why, "%s", r->why);
        else
            snprintf(r->own.why, sizeof r->own.why, "%s", ok || !msg ? "" : msg);
        r->own.why[strcspn(r->own.why, "\n")] = '\0';
        r->own.beat++;
        write_beat(r);
    }
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->peers);
    free(r);
}
