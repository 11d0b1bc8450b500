/* Safe unpacking of a downloaded zip archive with libzip: every entry is
 * checked before anything is written (no absolute path, no ".." component,
 * no link or device, a plausible declared size), then written below the
 * destination with its CRC-32 checked. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "fetch_impl.h"

/* Deflate cannot shrink data more than about 1032 to 1, so an entry that
 * declares more than this many times its compressed size is lying. */
#define MAX_RATIO 1100

/* Why an entry name may not be written below the destination, or NULL. */
static const char *bad_name(const char *name)
{
    if (!name[0])
        return "an empty name";
    if (name[0] == '/' || name[0] == '\\' ||
        (((name[0] | 0x20) >= 'a' && (name[0] | 0x20) <= 'z') && name[1] == ':'))
        return "an absolute path";
    if (strchr(name, '\\'))
        return "a backslash in the name";
    for (const char *p = name; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return "a '..' component, which would leave the destination";
        p += n;
        while (*p == '/')
            p++;
    }
    return NULL;
}

/* Why an entry's type may not be unpacked (links, devices), or NULL. */
static const char *bad_type(zip_t *za, zip_uint64_t i)
{
    zip_uint8_t opsys;
    zip_uint32_t attr;
    if (zip_file_get_external_attributes(za, i, 0, &opsys, &attr) != 0 || opsys != ZIP_OPSYS_UNIX)
        return NULL;
    mode_t type = (attr >> 16) & S_IFMT;
    if (type == S_IFLNK)
        return "a symbolic link (datasets hold none)";
    if (type != 0 && type != S_IFREG && type != S_IFDIR)
        return "a special file";
    return NULL;
}

/* Checks every entry of the archive, and checks that their declared sizes
 * add up to no more than max_bytes. */
static gcn_status check_entries(gcn_ctx *ctx, zip_t *za, const char *label, int64_t max_bytes)
{
    zip_int64_t n = zip_get_num_entries(za, 0);
    uint64_t total = 0;
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t sb;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &sb) != 0)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry %lld: %s", label, (long long)i,
                             zip_strerror(za));
        const char *why = bad_name(sb.name);
        if (!why)
            why = bad_type(za, (zip_uint64_t)i);
        if (why)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry '%s': %s", label, sb.name, why);
        if (sb.size / MAX_RATIO > sb.comp_size)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                             "%s: entry '%s': declares %llu bytes from %llu compressed, more "
                             "than deflate can give",
                             label, sb.name, (unsigned long long)sb.size,
                             (unsigned long long)sb.comp_size);
        total += sb.size;
        if (total > (uint64_t)max_bytes)
            return GCN_ERROR(ctx, GCN_ERR_FORMAT,
                             "%s: entry '%s': the entries declare over %.1f GB unpacked, more "
                             "than this dataset holds",
                             label, sb.name, max_bytes / 1e9);
    }
    return GCN_OK;
}

/* Creates the folders of the path rel under dest, as mkdir -p does; its
 * last component is created too when dir is true. */
static gcn_status make_parents(gcn_ctx *ctx, const char *dest, const char *rel, bool dir)
{
    char path[4096];
    int n = snprintf(path, sizeof path, "%s/%s", dest, rel);
    if (n < 0 || (size_t)n >= sizeof path)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s/%s: path too long", dest, rel);
    size_t base = strlen(dest) + 1, len = (size_t)n;
    for (size_t k = base; k <= len; k++) {
        if (k < len ? path[k] != '/' : !dir)
            continue;
        char c = path[k];
        path[k] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
        path[k] = c;
    }
    return GCN_OK;
}

static gcn_status write_entry(gcn_ctx *ctx, zip_t *za, zip_uint64_t i, const zip_stat_t *sb,
                              const char *label, const char *dest)
{
    char path[4096], buf[1 << 16];
    snprintf(path, sizeof path, "%s/%s", dest, sb->name);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry '%s': %s", label, sb->name,
                         errno == EEXIST ? "listed twice" : strerror(errno));
    gcn_status st = GCN_OK;
    zip_file_t *zf = zip_fopen_index(za, i, 0);
    uint64_t got = 0;
    if (!zf)
        st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry '%s': %s", label, sb->name,
                       zip_strerror(za));
    for (zip_int64_t n = 1; st == GCN_OK && n > 0;) {
        n = zip_fread(zf, buf, sizeof buf);
        if (n < 0)
            st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry '%s': %s", label, sb->name,
                           zip_file_strerror(zf));
        else if (n > 0 && write(fd, buf, (size_t)n) != n)
            st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno ? errno : EIO));
        got += n > 0 ? (uint64_t)n : 0;
    }
    if (st == GCN_OK && got != sb->size)
        st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry '%s': %llu bytes, but it declares %llu",
                       label, sb->name, (unsigned long long)got, (unsigned long long)sb->size);
    if (zf)
        zip_fclose(zf);
    if (close(fd) != 0 && st == GCN_OK)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
    return st;
}

gcn_status gcn_archive_unpack(gcn_ctx *ctx, const char *path, const char *label,
                              const char *dest, int64_t max_bytes)
{
    int err = 0;
    zip_t *za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
    if (!za) {
        zip_error_t ze;
        zip_error_init_with_code(&ze, err);
        gcn_status st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: not a readable zip archive (%s)",
                                  label, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        return st;
    }
    gcn_status st = check_entries(ctx, za, label, max_bytes);
    zip_int64_t n = zip_get_num_entries(za, 0);
    for (zip_int64_t i = 0; st == GCN_OK && i < n; i++) {
        zip_stat_t sb;
        if (zip_stat_index(za, (zip_uint64_t)i, 0, &sb) != 0) {
            st = GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: entry %lld: %s", label, (long long)i,
                           zip_strerror(za));
            break;
        }
        bool dir = sb.name[strlen(sb.name) - 1] == '/';
        st = make_parents(ctx, dest, sb.name, dir);
        if (st == GCN_OK && !dir)
            st = write_entry(ctx, za, (zip_uint64_t)i, &sb, label, dest);
    }
    zip_discard(za);
    return st;
}
