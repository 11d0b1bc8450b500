/* The download of one archive with libcurl: redirects followed, a stall
 * timeout, progress reports, the size announced over 1 GB and refused over
 * 5 GB unless asked for, and a dropped connection resumed with a Range
 * request. */
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fetch_impl.h"

#define ANNOUNCE_BYTES 1000000000ll /* 1 GB */
#define LARGE_BYTES 5000000000ll    /* 5 GB */

/* Attempts of one download: the first, then resumptions after a dropped
 * connection that had brought some bytes. */
enum { MAX_ATTEMPTS = 5 };

typedef struct xfer {
    gcn_ctx *ctx;
    const gcn_fetch_opts *o;
    const char *url;
    CURL *curl;
    FILE *f;
    int64_t start;  /* bytes in the file when this attempt began */
    int64_t done;   /* bytes in the file */
    int64_t total;  /* the archive's size, 0 while unknown */
    bool announced, too_large, cancelled;
    int write_errno; /* non-zero: writing the file failed */
} xfer;

static size_t on_data(char *data, size_t size, size_t n, void *user)
{
    xfer *x = user;
    size_t bytes = size * n;
    if (fwrite(data, 1, bytes, x->f) != bytes) {
        x->write_errno = errno ? errno : EIO;
        return 0;
    }
    x->done += (int64_t)bytes;
    return bytes;
}

/* The archive's size once the response that carries it has come: the
 * Content-Length of a 200, or of a 206 plus where it resumed. */
static void learn_total(xfer *x)
{
    long code = 0;
    curl_off_t length = -1;
    curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(x->curl, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if ((code != 200 && code != 206) || length < 0)
        return;
    x->total = (code == 206 ? x->start : 0) + (int64_t)length;
    if (x->total > ANNOUNCE_BYTES && !x->announced) {
        x->announced = true;
        gcn_log(x->ctx, GCN_LOG_WARN, "%s: %.1f GB to download", x->url, x->total / 1e9);
    }
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    xfer *x = user;
    if (x->total == 0)
        learn_total(x);
    if (x->total > LARGE_BYTES && !x->o->allow_large) {
        x->too_large = true;
        return 1;
    }
    if (x->o->progress && x->o->progress(x->done, x->total, x->o->user)) {
        x->cancelled = true;
        return 1;
    }
    return 0;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* A failure that a new request from where the file ends may get past. */
static bool dropped(CURLcode rc)
{
    return rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING ||
           rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_SEND_ERROR;
}

static void set_options(xfer *x, char *errbuf)
{
    CURL *c = x->curl;
    long timeout = x->o->timeout_s > 0 ? x->o->timeout_s : 60;
    curl_easy_setopt(c, CURLOPT_URL, x->url);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, timeout);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, timeout);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gcn libcurl/" LIBCURL_VERSION);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
}

/* Runs the attempts; the last attempt's code. */
static CURLcode attempts(xfer *x, char *errbuf)
{
    CURLcode rc = CURLE_OK;
    for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
        x->start = x->done;
        errbuf[0] = '\0';
        curl_easy_setopt(x->curl, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->done);
        rc = curl_easy_perform(x->curl);
        if (rc == CURLE_OK && x->total == 0)
            learn_total(x);
        if (rc == CURLE_OK || x->too_large || x->cancelled || x->write_errno)
            return rc;
        if (rc == CURLE_RANGE_ERROR) { /* the server ignored the Range: start over */
            if (fflush(x->f) || ftruncate(fileno(x->f), 0) || fseek(x->f, 0, SEEK_SET))
                return rc;
            x->done = x->total = 0;
            gcn_log(x->ctx, GCN_LOG_INFO, "%s: the server cannot resume; starting again",
                    x->url);
            continue;
        }
        if (!dropped(rc) || x->done == x->start)
            return rc;
        gcn_log(x->ctx, GCN_LOG_INFO, "%s: connection lost after %lld bytes (%s); resuming",
                x->url, (long long)x->done, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    }
    return rc;
}

gcn_status gcn_transfer(gcn_ctx *ctx, const char *url, const char *path,
                        const gcn_fetch_opts *o, int64_t *bytes)
{
    pthread_once(&curl_once, curl_init);
    if (curl_init_rc != CURLE_OK)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: libcurl: %s", url,
                         curl_easy_strerror(curl_init_rc));
    xfer x = {.ctx = ctx, .o = o, .url = url};
    char errbuf[CURL_ERROR_SIZE];
    gcn_status st = GCN_OK;
    if (!(x.f = fopen(path, "wb")))
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
    if (!(x.curl = curl_easy_init())) {
        fclose(x.f);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: curl_easy_init failed", url);
    }
    set_options(&x, errbuf);
    CURLcode rc = attempts(&x, errbuf);
    if (x.too_large)
        st = GCN_ERROR(ctx, GCN_ERR_INVALID_ARG,
                       "%s: %.1f GB: a download over 5 GB must be asked for (allow_large; "
                       "gcntrain --download)", url, x.total / 1e9);
    else if (x.cancelled)
        st = GCN_ERROR(ctx, GCN_ERR_STATE, "%s: download cancelled", url);
    else if (x.write_errno)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(x.write_errno));
    else if (rc != CURLE_OK)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(rc));
    else if (x.total > 0 && x.done != x.total)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: received %lld of %lld bytes", url,
                       (long long)x.done, (long long)x.total);
    curl_easy_cleanup(x.curl);
    if ((fflush(x.f) || fsync(fileno(x.f))) && st == GCN_OK)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
    if (fclose(x.f) && st == GCN_OK)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
    if (bytes)
        *bytes = x.done;
    return st;
}
