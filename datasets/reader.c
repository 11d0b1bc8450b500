/* The record reader every parser reads through (lines streamed through one
 * buffer from a plain or gzip file, split into fields as the format says, "file:line" errors)
 * with strict number parsing, plus small memory and path helpers. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Raw bytes read at a time, and deflate's largest expansion ratio. */
#define READER_RAW_BYTES ((size_t)1 << 17)
#define DEFLATE_MAX_RATIO 1032u

/* Moves the raw bytes not yet consumed to the front of the buffer and
 * reads more of the file after them; sets raw_eof at the end of the
 * file. */
static gcn_status read_raw(gcn_reader *r)
{
    z_stream *zs = &r->zs;
    if (zs->avail_in > 0 && zs->next_in != r->raw)
        memmove(r->raw, zs->next_in, zs->avail_in);
    zs->next_in = r->raw;
    ssize_t n;
    do
        n = read(r->fd, r->raw + zs->avail_in, READER_RAW_BYTES - zs->avail_in);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        r->line_no++;
        return gcn_reader_fail(r, GCN_ERR_IO, "read error: %s", strerror(errno));
    }
    r->raw_eof = n == 0;
    zs->avail_in += (uInt)n;
    return GCN_OK;
}

gcn_status gcn_reader_open(gcn_ctx *ctx, gcn_reader *r, const char *path,
                           const gcn_record_fmt *fmt)
{
    memset(r, 0, sizeof *r);
    r->ctx = ctx;
    r->fd = -1;
    if (fmt)
        r->fmt = *fmt;
    struct stat sb;
    if (stat(path, &sb) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: is a directory, expected a file", path);
    r->path = strdup(path);
    r->buf = malloc(READER_START_BYTES);
    r->raw = malloc(READER_RAW_BYTES);
    r->fields = malloc(READER_START_FIELDS * sizeof *r->fields);
    if (!r->path || !r->buf || !r->raw || !r->fields) {
        gcn_reader_close(r);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for reading %s", path);
    }
    r->cap = READER_START_BYTES;
    r->fields_cap = READER_START_FIELDS;
    r->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (r->fd < 0 || fstat(r->fd, &sb) != 0) {
        int err = errno;
        gcn_reader_close(r);
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }
    r->file_bytes = sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    gcn_status st = read_raw(r);
    if (st == GCN_OK && r->zs.avail_in == 1 && !r->raw_eof)
        st = read_raw(r);
    if (st == GCN_OK && r->zs.avail_in >= 2 && r->raw[0] == 0x1f && r->raw[1] == 0x8b) {
        if (inflateInit2(&r->zs, 15 + 16) == Z_OK)
            r->gzip = true;
        else
            st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "out of host memory for reading %s", path);
    }
    r->line_no = 0;
    if (st != GCN_OK)
        gcn_reader_close(r);
    return st;
}

void gcn_reader_close(gcn_reader *r)
{
    if (r->gzip)
        inflateEnd(&r->zs);
    if (r->fd >= 0)
        close(r->fd);
    free(r->buf);
    free(r->raw);
    free(r->path);
    free(r->fields);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

uint64_t gcn_reader_max_bytes(const gcn_reader *r)
{
    if (!r->gzip)
        return r->file_bytes;
    return r->file_bytes > UINT64_MAX / DEFLATE_MAX_RATIO ? UINT64_MAX
                                                          : r->file_bytes * DEFLATE_MAX_RATIO;
}

/* Damaged gzip data, reported at the line being read. */
static gcn_status gzip_fail(gcn_reader *r, const char *why)
{
    r->line_no++;
    return gcn_reader_fail(r, GCN_ERR_FORMAT, "corrupt or truncated gzip data (%s)", why);
}

/* Reads up to `want` bytes of text into dst and sets *got to how many (0
 * at the end).  The text is the file's bytes, or what its gzip members
 * inflate to.  After a gzip member either the file ends or another member
 * starts; anything else is an error, as in `gzip -t`. */
static gcn_status read_text(gcn_reader *r, char *dst, size_t want, size_t *got)
{
    z_stream *zs = &r->zs;
    *got = 0;
    if (!r->gzip) {
        if (zs->avail_in == 0 && !r->raw_eof)
            GCN_TRY(read_raw(r));
        size_t n = zs->avail_in < want ? zs->avail_in : want;
        memcpy(dst, zs->next_in, n);
        zs->next_in += n;
        zs->avail_in -= (uInt)n;
        *got = n;
        return GCN_OK;
    }
    zs->next_out = (unsigned char *)dst;
    zs->avail_out = (uInt)want;
    while (zs->avail_out == want) {
        if (!r->in_member) {
            if (zs->avail_in < 2 && !r->raw_eof)
                GCN_TRY(read_raw(r));
            if (zs->avail_in == 0 && r->raw_eof)
                break;
            if (zs->avail_in < 2 || zs->next_in[0] != 0x1f || zs->next_in[1] != 0x8b) {
                r->line_no++;
                return gcn_reader_fail(r, GCN_ERR_FORMAT,
                                       "bytes after the end of the gzip data that are not "
                                       "another gzip member");
            }
            inflateReset(zs);
            r->in_member = true;
        }
        if (zs->avail_in == 0 && !r->raw_eof)
            GCN_TRY(read_raw(r));
        if (zs->avail_in == 0 && r->raw_eof)
            return gzip_fail(r, "unexpected end of file");
        int ret = inflate(zs, Z_NO_FLUSH);
        if (ret == Z_STREAM_END)
            r->in_member = false;
        else if (ret == Z_MEM_ERROR)
            return GCN_ERROR(r->ctx, GCN_ERR_NOMEM, "out of host memory reading %s", r->path);
        else if (ret != Z_OK && ret != Z_BUF_ERROR)
            return gzip_fail(r, zs->msg ? zs->msg : "inflate failed");
    }
    *got = want - zs->avail_out;
    return GCN_OK;
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
    size_t want = r->cap - 1 - r->end, n;
    GCN_TRY(read_text(r, r->buf + r->end, want > (1u << 30) ? (1u << 30) : want, &n));
    if (n == 0)
        r->eof = true;
    r->end += n;
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
            if (r->line_no == 1 && strncmp(s, "\xEF\xBB\xBF", 3) == 0)
                s += 3; /* a UTF-8 byte-order mark */
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

/* Stores the last field of a format with rest set: it starts at p and
 * runs to the end of the line, with trailing blanks trimmed. */
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
