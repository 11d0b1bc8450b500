/* Choices files: the selector's locked choices written as text, and read back
 * so that a later run on the same graph skips profiling.
 *   gcn-spmm-choices 1
 *   matrix TAG N_ROWS N_COLS NNZ FINGERPRINT
 *   site TAG DIR FEAT MODE STRATEGY
 * DIR is A, AT (the stored transpose), or A+sI, AT+sI: the A + s I that
 * gcn_spmm_self keeps with A, and its transpose.  A rank's block is listed
 * as its parts, TAG:own and TAG:halo1 (TAG:halo2, ... for an exchange in
 * chunks).  A file of a run on N ranks has the line "ranks N" after the
 * first and each rank's lines after a line "rank R". */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/comm_host.h"
#include "kernels/halo/halo.h"
#include "kernels/spmm/internal.h"

#define MAGIC "gcn-spmm-choices 1"
/* The matrices of a file, a rank's blocks counted as their parts. */
#define MAX_TAGGED (16 * (GCN_HALO_MAX_CHUNKS + 1))
/* The header of files written before the format took its name. */
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
            fprintf(f, "site %s %s %d %s %s\n", tag, dir, info[i].feat, info[i].mode,
                    info[i].chosen);
    }
    free(info);
    return GCN_OK;
}

/* The matrices as a file lists them: a rank's block (gcn_csr_set_halo)
 * as its parts, tagged TAG:own, TAG:halo1, ...; others as given. */
typedef struct tagged {
    int n;
    const gcn_csr *mat[MAX_TAGGED];
    char tag[MAX_TAGGED][80];
} tagged;

static gcn_status expand(gcn_ctx *ctx, const gcn_csr *const *mats, const char *const *tags,
                         int n, tagged *t)
{
    t->n = 0;
    for (int i = 0; i < n; i++) {
        GCN_TRY(check_tag(ctx, tags[i]));
        if ((size_t)snprintf(t->tag[0], sizeof t->tag[0], "%s:halo%d", tags[i],
                             GCN_HALO_MAX_CHUNKS) >= sizeof t->tag[0])
            return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "choices file: tag '%s' is too long",
                             tags[i]);
        const gcn_csr *parts[GCN_HALO_MAX_CHUNKS + 1] = {mats[i]};
        bool block = mats[i] && gcn_halo_of(mats[i]);
        int n_parts = block ? gcn_halo_parts(mats[i], parts, GCN_HALO_MAX_CHUNKS + 1) : 1;
        for (int k = 0; k < n_parts && t->n < MAX_TAGGED; k++, t->n++) {
            t->mat[t->n] = parts[k];
            if (!block)
                snprintf(t->tag[t->n], sizeof t->tag[t->n], "%s", tags[i]);
            else if (k == 0)
                snprintf(t->tag[t->n], sizeof t->tag[t->n], "%s:own", tags[i]);
            else
                snprintf(t->tag[t->n], sizeof t->tag[t->n], "%s:halo%d", tags[i], k);
        }
    }
    return GCN_OK;
}

/* The matrix and site lines of the tagged matrices. */
static gcn_status save_lines(gcn_ctx *ctx, FILE *f, const tagged *t)
{
    for (int i = 0; i < t->n; i++)
        if (t->mat[i])
            GCN_TRY(write_matrix(ctx, f, t->mat[i], t->tag[i]));
    return GCN_OK;
}

gcn_status gcn_spmm_choices_save(gcn_ctx *ctx, FILE *f, const gcn_csr *const *mats,
                                 const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, f && mats && tags && n >= 0 && n <= 16);
    tagged *t = malloc(sizeof *t);
    if (!t)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    gcn_status st = expand(ctx, mats, tags, n, t);
    if (st == GCN_OK) {
        fprintf(f, "%s\n", MAGIC);
        st = save_lines(ctx, f, t);
    }
    free(t);
    return st;
}

/* text[len] written to path through path.tmp, fsynced and renamed. */
static gcn_status write_text(gcn_ctx *ctx, const char *path, const char *text, size_t len)
{
    char tmp[4096];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return GCN_ERROR(ctx, GCN_ERR_INVALID_ARG, "choices file: path too long: %s", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    bool ok = fwrite(text, 1, len, f) == len && fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, path) == 0)
        return GCN_OK;
    gcn_status st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    unlink(tmp);
    return st;
}

/* The calling rank's lines, after "rank R" on a rank of several, into a
 * new buffer. */
static gcn_status rank_lines(gcn_ctx *ctx, const tagged *t, char **text, size_t *len)
{
    *text = NULL;
    FILE *f = open_memstream(text, len);
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    if (gcn_ctx_ranks(ctx) > 1)
        fprintf(f, "rank %d\n", gcn_ctx_rank(ctx));
    else
        fprintf(f, "%s\n", MAGIC);
    gcn_status st = save_lines(ctx, f, t);
    if (fclose(f) != 0 && st == GCN_OK)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    if (st != GCN_OK) {
        free(*text);
        *text = NULL;
    }
    return st;
}

/* Rank 0's file of every rank's lines, gathered through the communicator. */
static gcn_status write_ranked(gcn_ctx *ctx, const char *path, const char *mine, size_t len)
{
    int n = gcn_ctx_ranks(ctx);
    int64_t *lens = calloc((size_t)n, sizeof *lens);
    char *all = NULL, head[64];
    if (!lens)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    gcn_status st = gcn_comm_gather_host(ctx, mine, (int64_t)len, 0, (void **)&all, lens);
    if (st == GCN_OK && all) {
        int64_t total = 0;
        for (int p = 0; p < n; p++)
            total += lens[p];
        int h = snprintf(head, sizeof head, "%s\nranks %d\n", MAGIC, n);
        char *file = malloc((size_t)h + (size_t)total + 1);
        if (!file) {
            st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
        } else {
            memcpy(file, head, (size_t)h);
            memcpy(file + h, all, (size_t)total);
            st = write_text(ctx, path, file, (size_t)h + (size_t)total);
            free(file);
        }
    }
    free(all);
    free(lens);
    return st;
}

gcn_status gcn_spmm_choices_write(gcn_ctx *ctx, const char *path, const gcn_csr *const *mats,
                                  const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path && mats && tags && n >= 0 && n <= 16);
    tagged *t = malloc(sizeof *t);
    char *text = NULL;
    size_t len = 0;
    gcn_status st = t ? expand(ctx, mats, tags, n, t)
                      : GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    if (st == GCN_OK)
        st = rank_lines(ctx, t, &text, &len);
    if (st == GCN_OK)
        st = gcn_ctx_ranks(ctx) > 1 ? write_ranked(ctx, path, text, len)
                                    : write_text(ctx, path, text, len);
    free(text);
    free(t);
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

static int tag_index(const tagged *t, const char *tag)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->tag[i], tag))
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
                            const char *dir, int feat, const char *mode, const char *strategy)
{
    const gcn_csr *m;
    GCN_TRY(site_matrix(ctx, a, dir, &m));
    if (!m || feat < 1)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: bad site (direction %s, width %d)", path,
                         line, dir, feat);
    gcn_status st = gcn_spmm_site_restore(ctx, m, feat, mode, strategy);
    if (st != GCN_OK)
        return GCN_ERROR(ctx, st, "%s:%d: %s", path, line, gcn_last_error(ctx));
    return GCN_OK;
}

/* Parses one line; *seen marks the tagged matrices whose "matrix" line
 * matched. */
static gcn_status read_line(gcn_ctx *ctx, const char *path, int line, char *text,
                            const tagged *t, bool *seen)
{
    char kind[16], tag[80], a1[64], a5[64], a6[64];
    int i1, i2, i3;
    int got = sscanf(text, "%15s %79s %63s %d %d %63s %63s", kind, tag, a1, &i1, &i2, a5, a6);
    bool matrix = got >= 1 && !strcmp(kind, "matrix");
    if (matrix && sscanf(text, "matrix %79s %d %d %d %63s", tag, &i1, &i2, &i3, a5) == 5) {
        int k = tag_index(t, tag);
        if (k < 0 || !t->mat[k])
            return GCN_OK;
        seen[k] = true;
        return check_matrix(ctx, path, line, t->mat[k], tag, i1, i2, i3,
                            strtoull(a5, NULL, 16));
    }
    char dir[48];
    if (!matrix && sscanf(text, "site %79s %47s %d %63s %63s", tag, dir, &i1, a1, a6) == 5) {
        int k = tag_index(t, tag);
        if (k < 0 || !t->mat[k])
            return GCN_OK;
        if (!seen[k])
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: site of matrix '%s' before its "
                             "matrix line", path, line, tag);
        return read_site(ctx, path, line, t->mat[k], dir, i1, a1, a6);
    }
    return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: expected a matrix or site line", path, line);
}

/* The matrix and site lines of f, the first of them line `line` of the
 * file `name`, applied to the tagged matrices; each must be listed. */
static gcn_status load_lines(gcn_ctx *ctx, FILE *f, const char *name, int line,
                             const tagged *t)
{
    char text[512];
    bool seen[MAX_TAGGED] = {false};
    gcn_status st = GCN_OK;
    for (; st == GCN_OK && fgets(text, sizeof text, f); line++)
        st = read_line(ctx, name, line, text, t, seen);
    for (int k = 0; st == GCN_OK && k < t->n; k++)
        if (t->mat[k] && !seen[k])
            st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: no choices for matrix '%s'", name,
                           t->tag[k]);
    return st;
}

/* Whether a file's first line is a choices file's. */
static bool is_header(const char *text)
{
    const char *first = !strncmp(text, "\xEF\xBB\xBF", 3) ? text + 3 : text; /* a BOM */
    return !strncmp(first, MAGIC, strlen(MAGIC)) || !strncmp(first, OLD_MAGIC, strlen(OLD_MAGIC));
}

/* The rank count of a "ranks N" line, else 0. */
static int ranks_line(const char *text)
{
    int n = 0;
    char end;
    return sscanf(text, "ranks %d%c", &n, &end) == 2 && end == '\n' && n > 0 ? n : 0;
}

/* A file of another rank count than the run's is not used: the sites are
 * profiled and the file is left as it is. */
static void note_other_ranks(gcn_ctx *ctx, const char *name, int file_ranks)
{
    char theirs[48];
    if (file_ranks > 1)
        snprintf(theirs, sizeof theirs, "a run on %d ranks", file_ranks);
    else
        snprintf(theirs, sizeof theirs, "a run on one context");
    gcn_log(ctx, GCN_LOG_INFO, "%s holds the SpMM choices of %s; this run is on %d: its call "
            "sites are profiled and the file is left as it is", name, theirs,
            gcn_ctx_ranks(ctx));
}

gcn_status gcn_spmm_choices_load(gcn_ctx *ctx, FILE *f, const char *name,
                                 const gcn_csr *const *mats, const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, f && name && mats && tags && n >= 0 && n <= 16);
    char text[512];
    if (!fgets(text, sizeof text, f) || !is_header(text))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:1: not a gcn SpMM choices file (expected "
                         "'%s')", name, MAGIC);
    long at = ftell(f);
    if (fgets(text, sizeof text, f) && ranks_line(text)) {
        note_other_ranks(ctx, name, ranks_line(text));
        return GCN_OK;
    }
    if (at < 0 || fseek(f, at, SEEK_SET) != 0)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot read it again from line 2", name);
    tagged *t = malloc(sizeof *t);
    gcn_status st = t ? expand(ctx, mats, tags, n, t)
                      : GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    if (st == GCN_OK)
        st = load_lines(ctx, f, name, 2, t);
    free(t);
    return st;
}

/* The whole file into a new buffer. */
static gcn_status slurp(gcn_ctx *ctx, const char *path, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    FILE *m = open_memstream(text, len);
    char buf[4096];
    size_t got;
    bool ok = m != NULL;
    while (ok && (got = fread(buf, 1, sizeof buf, f)) > 0)
        ok = fwrite(buf, 1, got, m) == got;
    ok = !ferror(f) && ok;
    fclose(f);
    ok = (!m || fclose(m) == 0) && ok;
    if (ok)
        return GCN_OK;
    free(*text);
    *text = NULL;
    return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot read it", path);
}

/* Rank 0's split of a file of n ranks: each rank's lines, after the number
 * of its first line, one after another in out (lens[rank] bytes each);
 * all empty when the file is of another rank count. */
static gcn_status split_ranks(gcn_ctx *ctx, const char *path, char *text, int n, char **out,
                              size_t *out_len, int64_t *lens)
{
    char **part = calloc((size_t)n, sizeof *part);
    size_t *part_len = calloc((size_t)n, sizeof *part_len);
    FILE **m = calloc((size_t)n, sizeof *m);
    gcn_status st = part && part_len && m ? GCN_OK
                  : GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    char *line = text, *next;
    int no = 1, rank = -1, file_ranks = 0;
    for (; st == GCN_OK && *line; line = next, no++) {
        next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        char save = *next;
        *next = '\0';
        int r;
        char end;
        if (no == 1 && !is_header(line))
            st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:1: not a gcn SpMM choices file (expected "
                           "'%s')", path, MAGIC);
        else if (no == 2)
            file_ranks = ranks_line(line);
        else if (no > 2 && file_ranks == n && sscanf(line, "rank %d%c", &r, &end) == 2 &&
                 end == '\n') {
            if (r < 0 || r >= n || m[r])
                st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: rank %d: expected each of ranks 0 "
                               "to %d once", path, no, r, n - 1);
            else if (!(m[r] = open_memstream(&part[r], &part_len[r])))
                st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
            else
                fprintf(m[r], "%d\n", no + 1);
            rank = r;
        } else if (no > 2 && file_ranks == n) {
            if (rank < 0)
                st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s:%d: expected a line 'rank R' first",
                               path, no);
            else
                fputs(line, m[rank]);
        }
        *next = save;
        if (no == 2 && file_ranks != n)
            break;
    }
    if (st == GCN_OK && file_ranks != n)
        note_other_ranks(ctx, path, file_ranks);
    for (int p = 0; m && p < n; p++)
        if (m[p] && fclose(m[p]) != 0 && st == GCN_OK)
            st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    FILE *o = st == GCN_OK ? open_memstream(out, out_len) : NULL;
    if (st == GCN_OK && !o)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    for (int p = 0; o && p < n; p++) {
        lens[p] = (int64_t)(part[p] ? part_len[p] : 0);
        if (lens[p] > 0)
            fwrite(part[p], 1, part_len[p], o);
    }
    if (o && fclose(o) != 0)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    for (int p = 0; part && p < n; p++)
        free(part[p]);
    free(part);
    free(part_len);
    free(m);
    return st;
}

/* A file of a run on several ranks: rank 0 reads it and each rank's lines
 * go to that rank through the communicator.  A failure of rank 0's
 * returns there before the scatter (its caller stops the communicator). */
static gcn_status read_ranked(gcn_ctx *ctx, const char *path, const tagged *t)
{
    int n = gcn_ctx_ranks(ctx);
    char *all = NULL, *mine = NULL;
    size_t all_len = 0;
    int64_t mine_len = 0, *lens = calloc((size_t)n, sizeof *lens);
    gcn_status st = lens ? GCN_OK
                         : GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    if (st == GCN_OK && gcn_ctx_rank(ctx) == 0) {
        char *text = NULL;
        size_t len;
        st = slurp(ctx, path, &text, &len);
        if (st == GCN_OK)
            st = split_ranks(ctx, path, text, n, &all, &all_len, lens);
        free(text);
    }
    if (st == GCN_OK)
        st = gcn_comm_scatter_host(ctx, all, lens, 0, (void **)&mine, &mine_len);
    FILE *f = st == GCN_OK && mine_len > 0 ? fmemopen(mine, (size_t)mine_len, "r") : NULL;
    if (st == GCN_OK && mine_len > 0 && !f)
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
    int first = 0;
    if (f && fscanf(f, "%d\n", &first) == 1)
        st = load_lines(ctx, f, path, first, t);
    if (f)
        fclose(f);
    free(mine);
    free(all);
    free(lens);
    return st;
}

gcn_status gcn_spmm_choices_read(gcn_ctx *ctx, const char *path, const gcn_csr *const *mats,
                                 const char *const *tags, int n)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, path && mats && tags && n >= 0 && n <= 16);
    if (gcn_ctx_ranks(ctx) > 1) {
        tagged *t = malloc(sizeof *t);
        gcn_status st = t ? expand(ctx, mats, tags, n, t)
                          : GCN_ERROR(ctx, GCN_ERR_NOMEM, "choices file: out of host memory");
        if (st == GCN_OK)
            st = read_ranked(ctx, path, t);
        free(t);
        return st;
    }
    FILE *f = fopen(path, "r");
    if (!f)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    gcn_status st = gcn_spmm_choices_load(ctx, f, path, mats, tags, n);
    fclose(f);
    return st;
}
