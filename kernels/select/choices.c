/* Choices files: the selector's locked choices written as text, and read back
 * so that a later run on the same graph skips profiling.
 *   gcn-spmm-choices 2
 *   matrix TAG N_ROWS N_COLS NNZ FINGERPRINT
 *   site TAG DIR FEAT DTYPE MODE STRATEGY
 * DIR is A, AT (the stored transpose), or A+sI, AT+sI: the A + s I that
 * gcn_spmm_self keeps with A, and its transpose; DTYPE is fp32 or bf16.
 * Files of version 1 (and of the older name) have no DTYPE: their sites
 * are fp32. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/spmm/internal.h"

#define MAGIC "gcn-spmm-choices 2"
/* The headers of files written before sites named their dtype. */
#define V1_MAGIC "gcn-spmm-choices 1"
#define OLD_MAGIC "gcn-spmm-plan 1"

/* FNV-1a over row_ptr and col_idx: the structure the choices were made for. */
static gcn_status fingerprint(gcn_ctx *ctx, const gcn_csr *a, uint64_t *fp)
{
    int32_t *rp = malloc(((size_t)a->n_rows + 1) * sizeof *rp);
    int32_t *ci = malloc(((size_t)a->nnz + 1) * sizeof *ci);
    gcn_status st = GCN_OK;
    if (!rp || !ci)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory for a fingerprint");
    if (st == GCN_OK)
        st = gcn_csr_to_host(ctx, a, rp, ci, NULL);
    uint64_t h = 0xcbf29ce484222325ull;
    const int32_t *arr[2] = {rp, ci};
    const int64_t len[2] = {(int64_t)a->n_rows + 1, a->nnz};
    for (int k = 0; st == GCN_OK && k < 2; k++)
        for (int64_t i = 0; i < len[k]; i++)
            for (int b = 0; b < 4; b++)
                h = (h ^ (((uint32_t)arr[k][i] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    free(rp);
    free(ci);
    *fp = h;
    return st;
}

static gcn_status check_tag(gcn_ctx *ctx, const char *tag)
{
    if (!tag || !*tag || strpbrk(tag, " \t\n"))
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "choices file: tag '%s' must be one word",
                         tag ? tag : "(null)");
    return GCN_OK;
}

static gcn_status write_matrix(gcn_ctx *ctx, FILE *f, const gcn_csr *a, const char *tag)
{
    uint64_t fp;
    GCN_TRY(fingerprint(ctx, a, &fp));
    fprintf(f, "matrix %s %d %d %d %016" PRIx64 "\n", tag, a->n_rows, a->n_cols, a->nnz, fp);
    int n = gcn_spmm_sites(a, NULL, 0);
    gcn_spmm_site_info *info = calloc((size_t)n + 1, sizeof *info);
    if (!info)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    gcn_spmm_sites(a, info, n);
    for (int i = 0; i < n; i++) {
        char dir[48];
        snprintf(dir, sizeof dir, "%s", info[i].transposed ? "AT" : "A");
        if (info[i].self_alpha != 0.0f)
            snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "+%.9gI",
                     (double)info[i].self_alpha);
        if (info[i].locked && strcmp(info[i].mode, "forced") != 0)
            fprintf(f, "site %s %s %d %s %s %s\n", tag, dir, info[i].feat,
                    gcn_dtype_name(info[i].dtype), info[i].mode, info[i].chosen);
    }
    free(info);
    return GCN_OK;
}

gcn_status gcn_spmm_choices_save(gcn_ctx *ctx, FILE *f, const gcn_csr *const *mats,
                                 const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, f && mats && tags && n >= 0);
    fprintf(f, "%s\n", MAGIC);
    for (int i = 0; i < n; i++) {
        GCN_TRY(check_tag(ctx, tags[i]));
        if (mats[i])
            GCN_TRY(write_matrix(ctx, f, mats[i], tags[i]));
    }
    return GCN_OK;
}

gcn_status gcn_spmm_choices_write(gcn_ctx *ctx, const char *path, const gcn_csr *const *mats,
                                  const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path);
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "choices file: path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    gcn_status st = gcn_spmm_choices_save(ctx, f, mats, tags, n);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (st == GCN_OK && (!ok || rename(tmp, path) != 0))
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    if (st != GCN_OK)
        unlink(tmp);
    return st;
}

/* One "matrix" line checked against the tagged matrix. */
static gcn_status check_matrix(gcn_ctx *ctx, const char *path, int line, const gcn_csr *a,
                               const char *tag, int rows, int cols, int nnz, uint64_t fp)
{
    uint64_t have;
    GCN_TRY(fingerprint(ctx, a, &have));
    if (rows == a->n_rows && cols == a->n_cols && nnz == a->nnz && fp == have)
        return GCN_OK;
    return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                     "%s:%d: the choices for matrix '%s' were made for another graph (%d x %d, %d "
                     "non-zeros, fingerprint %016" PRIx64 "; this one: %d x %d, %d, %016" PRIx64
                     ")",
                     path, line, tag, rows, cols, nnz, fp, a->n_rows, a->n_cols, a->nnz, have);
}

static int tag_index(const char *const *tags, int n, const char *tag)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(tags[i], tag))
            return i;
    return -1;
}

/* The matrix a site line's DIR names: a, its transpose, or either of
 * a + s I (built here when the file is read before the first product). */
static gcn_status site_matrix(gcn_ctx *ctx, const gcn_csr *a, const char *dir,
                              const gcn_csr **m)
{
    *m = NULL;
    const char *plus = strchr(dir, '+');
    size_t base = plus ? (size_t)(plus - dir) : strlen(dir);
    bool at = base == 2 && !strncmp(dir, "AT", 2);
    if (!at && !(base == 1 && dir[0] == 'A'))
        return GCN_OK;
    if (plus) {
        char *end;
        float s = strtof(plus + 1, &end);
        if (end == plus + 1 || strcmp(end, "I") != 0 || s == 0.0f || a->n_rows != a->n_cols)
            return GCN_OK;
        GCN_TRY(gcn_spmm_self_matrix(ctx, a, s, &a));
        if (!a)
            return GCN_OK;
    }
    *m = at ? a->priv->transpose : a;
    return GCN_OK;
}

/* One "site" line: locks that site of the tagged matrix (or its transpose). */
static gcn_status read_site(gcn_ctx *ctx, const char *path, int line, const gcn_csr *a,
                            const char *dir, int feat, gcn_dtype dtype, const char *mode,
                            const char *strategy)
{
    const gcn_csr *m;
    GCN_TRY(site_matrix(ctx, a, dir, &m));
    if (!m || feat < 1)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: bad site (direction %s, width %d)", path,
                         line, dir, feat);
    gcn_status st = gcn_spmm_site_restore(ctx, m, feat, dtype, mode, strategy);
    if (st != GCN_OK)
        return GCN_ERROR(ctx, st, "%s:%d: %s", path, line, gcn_last_error(ctx));
    return GCN_OK;
}

/* The dtype a site line names, false for another word. */
static bool parse_dtype(const char *word, gcn_dtype *dtype)
{
    *dtype = !strcmp(word, "bf16") ? GCN_DTYPE_BF16 : GCN_DTYPE_FP32;
    return !strcmp(word, "bf16") || !strcmp(word, "fp32");
}

/* A site line's fields after TAG: DIR FEAT [DTYPE] MODE STRATEGY (DTYPE
 * from version 2 on). */
static bool parse_site(const char *text, bool has_dtype, char *tag, char *dir, int *feat,
                       gcn_dtype *dtype, char *mode, char *strategy)
{
    char word[16];
    *dtype = GCN_DTYPE_FP32;
    if (!has_dtype)
        return sscanf(text, "site %63s %47s %d %63s %63s", tag, dir, feat, mode, strategy) == 5;
    return sscanf(text, "site %63s %47s %d %15s %63s %63s", tag, dir, feat, word, mode,
                  strategy) == 6 && parse_dtype(word, dtype);
}

/* Parses one line; *seen marks the tagged matrices whose "matrix" line
 * matched; has_dtype: a version 2 file. */
static gcn_status read_line(gcn_ctx *ctx, const char *path, int line, char *text,
                            const gcn_csr *const *mats, const char *const *tags, int n,
                            bool *seen, bool has_dtype)
{
    char kind[16], tag[64], a1[64], a5[64], a6[64];
    int i1, i2, i3;
    int got = sscanf(text, "%15s %63s %63s %d %d %63s %63s", kind, tag, a1, &i1, &i2, a5, a6);
    bool matrix = got >= 1 && !strcmp(kind, "matrix");
    if (matrix && sscanf(text, "matrix %63s %d %d %d %63s", tag, &i1, &i2, &i3, a5) == 5) {
        int k = tag_index(tags, n, tag);
        if (k < 0 || !mats[k])
            return GCN_OK;
        seen[k] = true;
        return check_matrix(ctx, path, line, mats[k], tag, i1, i2, i3, strtoull(a5, NULL, 16));
    }
    char dir[48];
    gcn_dtype dtype;
    if (!matrix && parse_site(text, has_dtype, tag, dir, &i1, &dtype, a1, a6)) {
        int k = tag_index(tags, n, tag);
        if (k < 0 || !mats[k])
            return GCN_OK;
        if (!seen[k])
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: site of matrix '%s' before its "
                             "matrix line", path, line, tag);
        return read_site(ctx, path, line, mats[k], dir, i1, dtype, a1, a6);
    }
    return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: expected a matrix or site line%s", path, line,
                     has_dtype ? " (site TAG DIR FEAT fp32|bf16 MODE STRATEGY)" : "");
}

gcn_status gcn_spmm_choices_load(gcn_ctx *ctx, FILE *f, const char *name,
                                 const gcn_csr *const *mats, const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, f && name && mats && tags && n >= 0 && n <= 16);
    char text[512];
    bool seen[16] = {false};
    gcn_status st = GCN_OK;
    bool got = fgets(text, sizeof text, f) != NULL;
    const char *first = got && !strncmp(text, "\xEF\xBB\xBF", 3) ? text + 3 : text; /* a BOM */
    bool has_dtype = got && !strncmp(first, MAGIC, strlen(MAGIC));
    if (!got || (!has_dtype && strncmp(first, V1_MAGIC, strlen(V1_MAGIC)) != 0 &&
                 strncmp(first, OLD_MAGIC, strlen(OLD_MAGIC)) != 0))
        st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:1: not a gcn SpMM choices file (expected '%s')",
                       name, MAGIC);
    for (int line = 2; st == GCN_OK && fgets(text, sizeof text, f); line++)
        st = read_line(ctx, name, line, text, mats, tags, n, seen, has_dtype);
    for (int k = 0; st == GCN_OK && k < n; k++)
        if (mats[k] && !seen[k])
            st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: no choices for matrix '%s'", name, tags[k]);
    return st;
}

gcn_status gcn_spmm_choices_read(gcn_ctx *ctx, const char *path, const gcn_csr *const *mats,
                                 const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path);
    FILE *f = fopen(path, "r");
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    gcn_status st = gcn_spmm_choices_load(ctx, f, path, mats, tags, n);
    fclose(f);
    return st;
}
