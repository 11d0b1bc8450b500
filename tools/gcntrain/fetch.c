/* gcntrain's downloads: a named dataset missing under the root fetched
 * through gcn_dataset_fetch before it is loaded, with its progress on
 * stderr (one line updated in place on a terminal, else a line every
 * 10 %), cancelled by SIGINT or SIGTERM. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gcntrain.h"

typedef struct progress {
    const char *file; /* the archive's name */
    bool quiet;       /* --quiet: no reports, only the check for a signal */
    bool tty, drawn;  /* a terminal; the line in place is on the screen */
    double t0, last;  /* when the download began; the last report */
    int64_t next;     /* not a terminal: report when this many bytes have come */
    int64_t seen;     /* the last report's bytes: fewer now means the next file */
} progress;

static void human(char *buf, size_t size, double bytes)
{
    if (bytes >= 1e9)
        snprintf(buf, size, "%.2f GB", bytes / 1e9);
    else
        snprintf(buf, size, "%.1f MB", bytes / 1e6);
}

/* The step between two reports when not on a terminal: 10 % of the size,
 * or 100 MB while the size is unknown. */
static int64_t step(int64_t total)
{
    return total > 0 ? (total + 9) / 10 : 100000000;
}

static int on_progress(int64_t done, int64_t total, void *user)
{
    progress *p = user;
    if (p->quiet)
        return signals_pending() != 0;
    if (done < p->seen)
        p->next = 0;
    p->seen = done;
    double t = now_s(), rate = done / (t - p->t0 > 1e-3 ? t - p->t0 : 1e-3);
    char got[32], all[32], speed[32];
    human(got, sizeof got, (double)done);
    human(all, sizeof all, (double)total);
    human(speed, sizeof speed, rate);
    if (p->tty && (t - p->last >= 0.25 || (total > 0 && done == total))) {
        p->last = t;
        p->drawn = true;
        if (total > 0)
            fprintf(stderr, "\rgcntrain: %s %s of %s, %s/s, %.0f s left\033[K", p->file, got,
                    all, speed, rate > 0 ? (total - done) / rate : 0.0);
        else
            fprintf(stderr, "\rgcntrain: %s %s, %s/s\033[K", p->file, got, speed);
    } else if (!p->tty && done > 0 && done >= p->next) {
        if (total > 0)
            fprintf(stderr, "gcntrain: %s: %3.0f%% (%s of %s, %s/s)\n", p->file,
                    100.0 * (double)done / (double)total, got, all, speed);
        else
            fprintf(stderr, "gcntrain: %s: %s (%s/s)\n", p->file, got, speed);
        p->next = (done / step(total) + 1) * step(total);
    }
    fflush(stderr);
    return signals_pending() != 0;
}

static bool downloads_on(const session *s)
{
    return s->cfg.download && !s->a.no_download;
}

int fetch_dataset(session *s, const char *spec)
{
    if (!gcn_dataset_fetchable(spec) || !downloads_on(s))
        return 0;
    gcn_fetch_opts o = gcn_fetch_default_opts();
    o.mirror = s->a.mirror;
    o.allow_large = s->a.download;
    if (s->a.download_timeout > 0)
        o.timeout_s = (int)s->a.download_timeout;
    char url[1200];
    gcn_dataset_fetch_url(spec, &o, url, sizeof url);
    progress p = {.file = strrchr(url, '/') ? strrchr(url, '/') + 1 : url, .quiet = s->a.quiet,
                  .tty = isatty(STDERR_FILENO) == 1, .t0 = now_s()};
    o.progress = on_progress;
    o.user = &p;
    /* A signal during the download cancels it through the progress
     * callback, and the process exits once the temporary folder is gone:
     * the hold makes the signal wait for that. */
    signals_hold(true);
    bool fetched = false;
    gcn_status st = gcn_dataset_fetch(s->ctx, spec, s->cfg.root, &o, &fetched);
    if (p.drawn)
        fputc('\n', stderr);
    if (st != GCN_OK && signals_pending())
        fprintf(stderr, "gcntrain: %s: download interrupted; nothing kept\n", spec);
    signals_hold(false);
    return st == GCN_OK ? 0 : fail(s, st, PHASE_INPUT, "dataset");
}

int fetch_load_failed(session *s, const char *spec, gcn_status st)
{
    if (st != GCN_ERR_NOT_FOUND || !gcn_dataset_fetchable(spec) || downloads_on(s))
        return fail(s, st, PHASE_INPUT, "dataset");
    gcn_fetch_opts o = gcn_fetch_default_opts();
    o.mirror = s->a.mirror;
    char url[1200];
    gcn_dataset_fetch_url(spec, &o, url, sizeof url);
    char msg[4096];
    snprintf(msg, sizeof msg, "dataset: %s; downloads are off (--no-download or \"download\": "
             "false): without them, gcntrain CONFIG --dataset %s --root %s fetches it from %s",
             gcn_last_error(s->ctx), spec, s->cfg.root, url);
    size_t n = strlen(msg) < sizeof s->error - 1 ? strlen(msg) : sizeof s->error - 1;
    memcpy(s->error, msg, n);
    s->error[n] = '\0';
    fprintf(stderr, "gcntrain: %s\n", msg);
    return EXIT_INPUT;
}
