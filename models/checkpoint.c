/* Trainer checkpoints.  Layout (host byte order): a fixed header (magic
 * "GCNCKPT", version, configuration hash, epoch, best-so-far, seed and
 * stream offsets, optimiser steps, tensor count, a graph-level trainer's
 * split hash or 0, the precision it trained in), then each tensor as rows,
 * cols and its floats: the model's state (parameters, buffers), the
 * optimisers' state, then the best-validation model's state (the shapes of
 * the first group again), then a CRC-32 of everything before it. */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../core/comm_host.h"
#include "../core/internal.h"
#include "trainer_impl.h"

#define CKPT_VERSION 3u

/* Version 2 files end their header before the precision: fp32 or tf32,
 * which resume the same. */
#define CKPT_V2_HEADER offsetof(ckpt_header, precision)

typedef struct ckpt_header {
    char magic[8];
    uint32_t version, config_hash;
    int32_t epoch, best_epoch;
    double best_train, best_valid, best_test;
    uint64_t seed;
    uint64_t rng_offset[GCN_RNG_N_STREAMS];
    int64_t optim_steps;
    uint32_t n_tensors;
    uint32_t split_hash; /* gcn_trainer_split_hash; 0: node-level, or saved before it was kept */
    char precision[8];   /* "fp32", "tf32" or "bf16": the state is fp32 in every one, so a
                          * run resumes in any precision */
} ckpt_header;

static const char *precision_name(const gcn_model_config *cfg)
{
    return cfg->bf16 ? "bf16" : cfg->tf32 ? "tf32" : "fp32";
}

static uint32_t crc_ints(uint32_t crc, const int32_t *v, int32_t n)
{
    return n > 0 ? (uint32_t)crc32_z(crc, (const Bytef *)v, (size_t)n * sizeof *v) : crc;
}

uint32_t gcn_trainer_split_hash(const gcn_dataset *ds)
{
    const int32_t sizes[4] = {ds->n_graphs, ds->n_train, ds->n_valid, ds->n_test};
    uint32_t crc = crc_ints((uint32_t)crc32(0L, Z_NULL, 0), sizes, 4);
    crc = crc_ints(crc, ds->train, ds->n_train);
    crc = crc_ints(crc, ds->valid, ds->n_valid);
    crc = crc_ints(crc, ds->test, ds->n_test);
    return crc ? crc : 1;
}

/* Every live tensor a resumed run needs, in a fixed order, the model's
 * state first; returns the count.  out may be NULL to count. */
static int state_tensors(const gcn_trainer *tr, gcn_tensor **out)
{
    int n = gcn_trainer_model_state(tr, out);
    for (int o = 0; o < tr->n_opt; o++)
        for (int i = 0; i < gcn_optim_n_params(tr->opt[o]); i++)
            for (int slot = 0; slot < 2; slot++) {
                gcn_tensor *t = gcn_optim_state(tr->opt[o], i, slot);
                if (t && out)
                    out[n] = t;
                n += t != NULL;
            }
    return n;
}

/* The live tensors (*n of them), then the model state's *n_best again:
 * the shapes of the best-validation state the file stores after them. */
static gcn_status collect(gcn_ctx *ctx, const gcn_trainer *tr, gcn_tensor ***list, int *n,
                          int *n_best)
{
    *n = state_tensors(tr, NULL);
    *n_best = gcn_trainer_model_state(tr, NULL);
    *list = malloc((size_t)(*n + *n_best > 0 ? *n + *n_best : 1) * sizeof **list);
    if (!*list)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "checkpoint: out of host memory");
    state_tensors(tr, *list);
    gcn_trainer_model_state(tr, *list + *n);
    return GCN_OK;
}

gcn_status gcn_write_file_atomic(gcn_ctx *ctx, const char *path, const void *buf, size_t len)
{
    size_t size = strlen(path) + 32;
    char *tmp = malloc(size);
    if (!tmp)
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: out of host memory", path);
    snprintf(tmp, size, "%s.tmp.%ld", path, (long)getpid());
    gcn_ctx_temp(ctx, true);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    gcn_status st = GCN_OK;
    if (fd < 0) {
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot create a temporary file: %s", path, strerror(errno));
        gcn_ctx_temp(ctx, false);
        free(tmp);
        return st;
    }
    const char *p = buf;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w <= 0) {
            st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (st == GCN_OK && fsync(fd) != 0)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: fsync failed: %s", tmp, strerror(errno));
    if (close(fd) != 0 && st == GCN_OK)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: close failed: %s", tmp, strerror(errno));
    if (st == GCN_OK && rename(tmp, path) != 0)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot rename into place: %s", path, strerror(errno));
    if (st != GCN_OK)
        unlink(tmp);
    gcn_ctx_temp(ctx, false);
    free(tmp);
    return st;
}

gcn_status gcn_trainer_save(gcn_ctx *ctx, const gcn_trainer *tr, const char *path)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr && path);
    if (gcn_ctx_rank(ctx) > 0) /* every rank holds the same state: rank 0 writes it */
        return GCN_OK;
    gcn_tensor **list;
    int n, n_best;
    GCN_TRY(collect(ctx, tr, &list, &n, &n_best));
    size_t len = sizeof(ckpt_header) + sizeof(uint32_t);
    for (int i = 0; i < n + n_best; i++)
        len += 2 * sizeof(int64_t) + (size_t)gcn_tensor_numel(list[i]) * sizeof(float);
    char *buf = calloc(1, len);
    gcn_status st = GCN_OK;
    if (!buf) {
        free(list);
        return GCN_ERROR(ctx, GCN_ERR_NOMEM, "checkpoint: out of host memory (%zu bytes)", len);
    }
    ckpt_header h = {.magic = "GCNCKPT", .version = CKPT_VERSION,
                     .config_hash = gcn_model_config_hash(&tr->cfg), .epoch = tr->epoch,
                     .best_epoch = tr->best.epoch, .best_train = tr->best.train_acc,
                     .best_valid = tr->best.valid_acc, .best_test = tr->best.test_acc,
                     .seed = ctx->seed, .optim_steps = gcn_optim_steps(tr->opt[0]),
                     .n_tensors = (uint32_t)(n + n_best), .split_hash = tr->split_hash};
    snprintf(h.precision, sizeof h.precision, "%s", precision_name(&tr->cfg));
    gcn_rng_get_state(ctx, h.rng_offset);
    memcpy(buf, &h, sizeof h);
    size_t off = sizeof h;
    const float *best = tr->best_state;
    for (int i = 0; i < n + n_best && st == GCN_OK; i++) {
        int64_t shape[2] = {gcn_tensor_rows(list[i]), gcn_tensor_cols(list[i])};
        memcpy(buf + off, shape, sizeof shape);
        off += sizeof shape;
        size_t numel = (size_t)(shape[0] * shape[1]);
        if (i < n) {
            st = gcn_tensor_to_host(ctx, list[i], (float *)(void *)(buf + off));
        } else {
            memcpy(buf + off, best, numel * sizeof *best);
            best += numel;
        }
        off += numel * sizeof(float);
    }
    if (st == GCN_OK) {
        uint32_t crc = (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), (const Bytef *)buf, off);
        memcpy(buf + off, &crc, sizeof crc);
        st = gcn_write_file_atomic(ctx, path, buf, len);
    }
    free(buf);
    free(list);
    return st;
}

/* Reads exactly len bytes at the file's current position. */
static bool read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = read(fd, p, len > ((size_t)1 << 30) ? ((size_t)1 << 30) : len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
    }
    return true;
}

/* The file's size as a checkpoint of tr's n tensors (the list) has it,
 * with a header of header bytes. */
static uint64_t expected_size(gcn_tensor *const *list, int n, size_t header)
{
    uint64_t len = header + sizeof(uint32_t);
    for (int i = 0; i < n; i++)
        len += 2 * sizeof(int64_t) + (uint64_t)gcn_tensor_numel(list[i]) * sizeof(float);
    return len;
}

/* Checks the header, read from the file's first bytes, against the
 * trainer and the file's size before anything else is read: a file that
 * is not a checkpoint of this model is refused without reading it. */
static gcn_status check_header(gcn_ctx *ctx, const gcn_trainer *tr, const char *path,
                               uint64_t size, uint64_t want, int n, const ckpt_header *h)
{
    if (h->config_hash != gcn_model_config_hash(&tr->cfg) || h->n_tensors != (uint32_t)n)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                         "%s: saved from a different model architecture than this configuration", path);
    if (size != want)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                         "%s: %llu bytes, but a checkpoint of this model has %llu: the file is "
                         "damaged", path, (unsigned long long)size, (unsigned long long)want);
    if (h->epoch < 0 || h->best_epoch < 0 || h->best_epoch > h->epoch || h->optim_steps < 0)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                         "%s: epoch %d, best epoch %d, %lld optimiser steps: the header is "
                         "damaged", path, h->epoch, h->best_epoch, (long long)h->optim_steps);
    if (h->split_hash && tr->split_hash && h->split_hash != tr->split_hash)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                         "%s: saved for another split of the graphs (another fold, protocol, "
                         "fold file or data seed)", path);
    return GCN_OK;
}

/* The header's first bytes: magic and version, then the rest of a
 * version 3 header (a version 2 file trained in fp32 or tf32, which resume
 * the same).  *header is the header's size in the file. */
static gcn_status read_header(gcn_ctx *ctx, const char *path, int fd, uint64_t size, ckpt_header *h,
                              size_t *header)
{
    memset(h, 0, sizeof *h);
    if (size < CKPT_V2_HEADER + sizeof(uint32_t))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: too short for a checkpoint", path);
    if (!read_all(fd, h, CKPT_V2_HEADER))
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot read the checkpoint", path);
    if (memcmp(h->magic, "GCNCKPT", 8) != 0 || (h->version != CKPT_VERSION && h->version != 2u))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: not a gcn checkpoint (version 2 or %u expected)",
                         path, CKPT_VERSION);
    *header = h->version == 2u ? CKPT_V2_HEADER : sizeof *h;
    if (size < *header + sizeof(uint32_t))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: too short for a checkpoint", path);
    if (h->version == 2u)
        memcpy(h->precision, "fp32", 5);
    else if (!read_all(fd, (char *)h + CKPT_V2_HEADER, sizeof *h - CKPT_V2_HEADER))
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot read the checkpoint", path);
    h->precision[sizeof h->precision - 1] = '\0';
    return GCN_OK;
}

/* The header, checked, and the rest of the file (its size checked first)
 * into *body, CRC-32 verified. */
static gcn_status read_checkpoint(gcn_ctx *ctx, const gcn_trainer *tr, const char *path,
                                  gcn_tensor *const *list, int n, ckpt_header *h, char **body,
                                  size_t *body_len)
{
    *body = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot open: %s", path, strerror(err));
    }
    gcn_status st = GCN_OK;
    uint64_t size = S_ISREG(sb.st_mode) && sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
    size_t header = sizeof *h;
    if (!S_ISREG(sb.st_mode))
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: not a regular file", path);
    else
        st = read_header(ctx, path, fd, size, h, &header);
    uint64_t want = expected_size(list, n, header);
    if (st == GCN_OK)
        st = check_header(ctx, tr, path, size, want, n, h);
    *body_len = (size_t)(want - header);
    if (st == GCN_OK && !(*body = malloc(*body_len)))
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: out of host memory (%zu bytes)", path, *body_len);
    if (st == GCN_OK && !read_all(fd, *body, *body_len))
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot read the checkpoint", path);
    close(fd);
    if (st == GCN_OK) {
        uint32_t crc, have = (uint32_t)crc32_z(crc32(0L, Z_NULL, 0), (const Bytef *)h, header);
        have = (uint32_t)crc32_z(have, (const Bytef *)*body, *body_len - sizeof crc);
        memcpy(&crc, *body + *body_len - sizeof crc, sizeof crc);
        if (crc != have)
            st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: CRC-32 mismatch: the file is damaged", path);
    }
    if (st != GCN_OK) {
        free(*body);
        *body = NULL;
    }
    return st;
}

/* The state the header and body hold (read_checkpoint's, checked) into tr
 * on ctx: the tensors, the best-validation state, the counters. */
static gcn_status apply_checkpoint(gcn_ctx *ctx, gcn_trainer *tr, const char *path,
                                   gcn_tensor *const *list, int n, int n_best,
                                   const ckpt_header *h, const char *body)
{
    size_t off = 0;
    float *best = tr->best_state;
    for (int i = 0; i < n + n_best; i++) {
        int64_t shape[2];
        memcpy(shape, body + off, sizeof shape);
        off += sizeof shape;
        if (shape[0] != gcn_tensor_rows(list[i]) || shape[1] != gcn_tensor_cols(list[i]))
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: tensor %d has shape [%lld, %lld], "
                             "expected [%lld, %lld]", path, i, (long long)shape[0],
                             (long long)shape[1], (long long)gcn_tensor_rows(list[i]),
                             (long long)gcn_tensor_cols(list[i]));
        off += (size_t)gcn_tensor_numel(list[i]) * sizeof(float);
    }
    off = 0;
    for (int i = 0; i < n + n_best; i++) {
        off += 2 * sizeof(int64_t);
        size_t bytes = (size_t)gcn_tensor_numel(list[i]) * sizeof(float);
        if (i >= n) {
            memcpy(best, body + off, bytes);
            best += bytes / sizeof *best;
        } else if (bytes > 0) {
            GCN_TRY(gcn_tensor_copy_from_host(ctx, list[i], (const float *)(body + off)));
        }
        off += bytes;
    }
    tr->epoch = h->epoch;
    tr->best = (gcn_train_best){h->best_epoch, h->best_train, h->best_valid, h->best_test};
    gcn_rng_seed(ctx, h->seed);
    gcn_rng_set_state(ctx, h->rng_offset);
    for (int o = 0; o < tr->n_opt; o++)
        GCN_TRY(gcn_optim_set_steps(tr->opt[o], h->optim_steps));
    return GCN_OK;
}

/* On a rank of several: rank 0 reads and checks the file, and its header
 * and body go to every rank through the communicator.  A failure of rank
 * 0's returns there before the broadcast: its caller stops the
 * communicator (gcn_comm_abort, as gcn_ranks_run does), and the others
 * return "rank 0 stopped: ...". */
static gcn_status share_checkpoint(gcn_ctx *ctx, const gcn_trainer *tr, const char *path,
                                   gcn_tensor *const *list, int n, ckpt_header *h, char **body,
                                   size_t *body_len)
{
    *body_len = (size_t)expected_size(list, n, 0);
    size_t len = sizeof *h + *body_len;
    char *buf = malloc(len);
    gcn_status st = buf ? GCN_OK : GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: out of host memory "
                                             "(%zu bytes)", path, len);
    if (st == GCN_OK && gcn_ctx_rank(ctx) == 0) {
        char *mine = NULL;
        size_t mine_len = 0;
        st = read_checkpoint(ctx, tr, path, list, n, h, &mine, &mine_len);
        if (st == GCN_OK) {
            memcpy(buf, h, sizeof *h);
            memcpy(buf + sizeof *h, mine, mine_len);
        }
        free(mine);
    }
    if (st != GCN_OK) { /* the caller stops the communicator, as after any failed step */
        free(buf);
        return st;
    }
    st = gcn_comm_broadcast_host(ctx, buf, (int64_t)len, 0);
    if (st == GCN_OK) {
        memcpy(h, buf, sizeof *h);
        memmove(buf, buf + sizeof *h, *body_len);
        *body = buf;
    } else {
        free(buf);
    }
    return st;
}

gcn_status gcn_trainer_load(gcn_ctx *ctx, gcn_trainer *tr, const char *path)
{
    if (!ctx)
        return GCN_ERR_INVALID_ARG;
    GCN_ARG(ctx, tr && path);
    gcn_tensor **list = NULL;
    char *body = NULL;
    size_t len = 0;
    int n, n_best;
    ckpt_header h;
    gcn_status st;
    GCN_CHECK(collect(ctx, tr, &list, &n, &n_best));
    if (gcn_ctx_ranks(ctx) > 1)
        GCN_CHECK(share_checkpoint(ctx, tr, path, list, n + n_best, &h, &body, &len));
    else
        GCN_CHECK(read_checkpoint(ctx, tr, path, list, n + n_best, &h, &body, &len));
    if (strcmp(h.precision, precision_name(&tr->cfg)) && gcn_ctx_rank(ctx) == 0)
        gcn_log(ctx, GCN_LOG_INFO, "%s: saved in %s, resuming in %s (the state is fp32 in both)",
                path, h.precision, precision_name(&tr->cfg));
    st = apply_checkpoint(ctx, tr, path, list, n, n_best, &h, body);
cleanup:
    free(body);
    free(list);
    return st;
}
