/* The record reader every parser reads through (lines streamed through one
 * gzread buffer, split into fields as the format says, "file:line" errors)
 * with strict number parsing, plus small memory and path helpers. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

#define READER_START_BYTES ((size_t)1 << 18)
#define READER_MAX_LINE ((size_t)64 << 20)
#define READER_START_FIELDS 8

gcn_status gcn_ds_malloc(gcn_ctx *ctx, void **p, size_t count, size_t size)
{
    *p = NULL;
    if (size != 0 && count > SIZE_MAX / size)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", count,
                         size);
    size_t bytes = count * size;
    *p = malloc(bytes ? bytes : 1);
    if (!*p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory (%zu bytes)", bytes);
    return GCN_OK;
}

/* calloc rather than malloc + memset: the pages of a large, sparsely
 * written array (a dense feature matrix filled from sparse entries) are
 * only touched where the data is. */
gcn_status gcn_ds_calloc(gcn_ctx *ctx, void **p, size_t count, size_t size)
{
    *p = NULL;
    if (size != 0 && count > SIZE_MAX / size)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", count,
                         size);
    *p = calloc(count ? count : 1, size ? size : 1);
    if (!*p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory (%zu bytes)", count * size);
    return GCN_OK;
}

gcn_status gcn_vec_grow(gcn_ctx *ctx, void **data, int64_t *cap, size_t elem)
{
    int64_t next = *cap < 1024 ? 1024 : *cap * 2;
    if ((uint64_t)next > SIZE_MAX / elem)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "array of %lld elements too large",
                         (long long)next);
    void *p = realloc(*data, (size_t)next * elem);
    if (!p)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory (%zu bytes)",
                         (size_t)next * elem);
    *data = p;
    *cap = next;
    return GCN_OK;
}

gcn_status gcn_reader_fail(gcn_reader *r, gcn_status st, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->line_no == 0) /* nothing read: an empty file */
        return GCN_ERROR(r->ctx, st, "%s: %s", r->path, msg);
    return GCN_ERROR(r->ctx, st, "%s:%ld: %s", r->path, r->line_no, msg);
}

gcn_status gcn_reader_open(gcn_ctx *ctx, gcn_reader *r, const char *path,
                           const gcn_record_fmt *fmt)
{
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    if (fmt)
        r->fmt = *fmt;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: is a directory, expected a file", path);
    r->path = strdup(path);
    r->buf = malloc(READER_START_BYTES);
    r->fields = malloc(READER_START_FIELDS * sizeof *r->fields);
    if (!r->path || !r->buf || !r->fields) {
        gcn_reader_close(r);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for reading %s", path);
    }
    r->cap = READER_START_BYTES;
    r->fields_cap = READER_START_FIELDS;
    r->gz = gzopen(path, "rb");
    if (!r->gz) {
        int err = errno;
        gcn_reader_close(r);
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path,
                         err ? strerror(err) : "out of memory");
    }
    gzbuffer(r->gz, 1u << 17);
    return GCN_OK;
}

void gcn_reader_close(gcn_reader *r)
{
    if (r->gz)
        gzclose(r->gz);
    free(r->buf);
    free(r->path);
    free(r->fields);
    memset(r, 0, sizeof *r);
}

/* Reads more bytes behind the unread ones, growing the buffer when a single
 * line fills it.  Sets r->eof at the end of the data. */
static gcn_status refill(gcn_reader *r)
{
    if (r->start > 0) {
        memmove(r->buf, r->buf + r->start, r->end - r->start);
        r->end -= r->start;
        r->start = 0;
    }
    if (r->end + 1 >= r->cap) {
        if (r->cap >= READER_MAX_LINE) {
            r->line_no++;
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "line longer than %zu MiB",
                                   READER_MAX_LINE >> 20);
        }
        char *p = realloc(r->buf, r->cap * 2);
        if (!p)
            return GCN_ERROR(r->ctx, GCN_ERR_NOMEM, "out of host memory reading %s", r->path);
        r->buf = p;
        r->cap *= 2;
    }
    size_t want = r->cap - 1 - r->end;
    int n = gzread(r->gz, r->buf + r->end, (unsigned)(want > (1u << 30) ? (1u << 30) : want));
    int zerr = Z_OK;
    const char *zmsg = gzerror(r->gz, &zerr);
    if (n < 0 || (zerr != Z_OK && zerr != Z_BUF_ERROR) || (n == 0 && zerr == Z_BUF_ERROR)) {
        size_t plen = strlen(r->path); /* zlib prefixes its message with the path */
        if (strncmp(zmsg, r->path, plen) == 0 && strncmp(zmsg + plen, ": ", 2) == 0)
            zmsg += plen + 2;
        r->line_no++;
        return gcn_reader_fail(r, zerr == Z_ERRNO ? GCN_ERR_IO : GCN_ERR_FORMAT,
                               "corrupt or truncated gzip data (%s)",
                               zerr == Z_ERRNO ? strerror(errno) : zmsg);
    }
    if (n == 0)
        r->eof = true;
    r->end += (size_t)n;
    return GCN_OK;
}

gcn_status gcn_reader_line(gcn_reader *r, char **line)
{
    *line = NULL;
    for (;;) {
        char *s = r->buf + r->start;
        size_t avail = r->end - r->start;
        char *nl = memchr(s, '\n', avail);
        if (!nl && r->eof) {
            if (avail == 0)
                return GCN_OK;
            nl = s + avail; /* last line without a line end; cap > end */
        }
        if (nl) {
            size_t len = (size_t)(nl - s);
            r->start += len + (nl < r->buf + r->end);
            r->line_no++;
            if (memchr(s, '\0', len))
                return gcn_reader_fail(r, GCN_ERR_FORMAT, "NUL byte in a text line");
            if (len > 0 && s[len - 1] == '\r')
                len--;
            s[len] = '\0';
            *line = s;
            return GCN_OK;
        }
        GCN_TRY(refill(r));
    }
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

/* Stores field p when it is within max_fields (growing the array) and
 * counts it either way. */
static gcn_status add_field(gcn_reader *r, char *p)
{
    int n = r->n_fields;
    if (n < r->fmt.max_fields) {
        if (n == r->fields_cap) {
            char **f = realloc(r->fields, 2 * (size_t)r->fields_cap * sizeof *f);
            if (!f)
                return GCN_ERROR(r->ctx, GCN_ERR_NOMEM, "out of host memory reading %s",
                                 r->path);
            r->fields = f;
            r->fields_cap *= 2;
        }
        r->fields[n] = p;
    }
    r->n_fields++;
    return GCN_OK;
}

/* The field starting at p, blanks trimmed off its end, runs to the end of
 * the line: the last field of a format with rest set. */
static gcn_status add_rest(gcn_reader *r, char *p)
{
    size_t len = strlen(p);
    while (len > 0 && is_blank(p[len - 1]))
        p[--len] = '\0';
    return add_field(r, p);
}

gcn_status gcn_reader_split(gcn_reader *r, char *line)
{
    const gcn_record_fmt *fmt = &r->fmt;
    char *p = line;
    r->n_fields = 0;
    for (;;) {
        while (is_blank(*p))
            p++;
        if (fmt->rest && r->n_fields == fmt->max_fields - 1 && (*p || fmt->sep)) {
            GCN_TRY(add_rest(r, p));
            break;
        }
        if (fmt->sep == 0) {
            if (!*p)
                break;
            GCN_TRY(add_field(r, p));
            while (*p && !is_blank(*p))
                p++;
            if (*p)
                *p++ = '\0';
            continue;
        }
        char *end = strchr(p, fmt->sep);
        if (end)
            *end = '\0';
        GCN_TRY(add_rest(r, p));
        if (!end)
            break;
        p = end + 1;
    }
    int n = r->n_fields;
    if (n < fmt->min_fields || n > fmt->max_fields) {
        if (fmt->min_fields == fmt->max_fields)
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "expected %d columns, found %d",
                                   fmt->min_fields, n);
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "expected %d to %d columns, found %d",
                               fmt->min_fields, fmt->max_fields, n);
    }
    return GCN_OK;
}

/* Whether the format skips this line: blank, or a comment. */
static bool skipped(const gcn_record_fmt *fmt, const char *line)
{
    while (is_blank(*line))
        line++;
    if (!*line)
        return !fmt->blank_records;
    return fmt->comments && strchr(fmt->comments, *line);
}

/* The next record into r->fields; *more is false at the end of the file. */
static gcn_status next_record(gcn_reader *r, bool *more)
{
    char *line;
    do {
        GCN_TRY(gcn_reader_line(r, &line));
        *more = line != NULL;
        if (!line)
            return GCN_OK;
    } while (skipped(&r->fmt, line));
    return gcn_reader_split(r, line);
}

gcn_status gcn_reader_each(gcn_reader *r, gcn_record_fn fn, void *user)
{
    for (bool more = true; more;) {
        GCN_TRY(next_record(r, &more));
        GCN_TRY(fn(r, more ? r->fields : NULL, user));
    }
    return GCN_OK;
}

gcn_status gcn_read_records(gcn_ctx *ctx, const char *path, const gcn_record_fmt *fmt,
                            gcn_record_fn fn, void *user)
{
    gcn_reader r;
    GCN_TRY(gcn_reader_open(ctx, &r, path, fmt));
    gcn_status st = gcn_reader_each(&r, fn, user);
    gcn_reader_close(&r);
    return st;
}

/* Strict decimal integer: optional sign, digits, nothing else. */
static bool parse_int(const char *s, int64_t *out)
{
    bool neg = *s == '-';
    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return false;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u))
        return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

gcn_status gcn_reader_int(gcn_reader *r, const char *field, int col, int64_t lo, int64_t hi,
                          const char *what, int64_t *out)
{
    int64_t v;
    if (!parse_int(field, &v))
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "column %d ('%.40s'): %s is not an integer",
                               col, field, what);
    if (v < lo || v > hi) {
        if (v < 0 && lo >= 0)
            return gcn_reader_fail(r, GCN_ERR_FORMAT, "column %d: %s %lld is negative", col,
                                   what, (long long)v);
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "column %d: %s %lld out of range [%lld, %lld]",
                               col, what, (long long)v, (long long)lo, (long long)hi);
    }
    *out = v;
    return GCN_OK;
}

gcn_status gcn_reader_float(gcn_reader *r, const char *field, int col, float *out)
{
    char *end = NULL;
    errno = 0;
    float v = strtof(field, &end);
    if (end == field || *end != '\0' || is_blank(*field))
        return gcn_reader_fail(r, GCN_ERR_FORMAT, "column %d ('%.40s') is not a number", col,
                               field);
    if (!isfinite(v))
        return gcn_reader_fail(r, GCN_ERR_NUMERIC, "column %d ('%.40s') is %s", col, field,
                               isnan(v) ? "NaN" : "infinite or out of float range");
    *out = v;
    return GCN_OK;
}

gcn_status gcn_path_join(gcn_ctx *ctx, char **out, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    GCN_TRY(gcn_ds_malloc(ctx, (void **)out, la + lb + 2, 1));
    memcpy(*out, a, la);
    (*out)[la] = '/';
    memcpy(*out + la + 1, b, lb + 1);
    return GCN_OK;
}

bool gcn_path_is_dir(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

bool gcn_path_is_file(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}
