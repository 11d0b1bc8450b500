/* gcntrain against hostile input: damaged and oversized files of every
 * format, headers and counts that claim more than a file holds, bad split
 * ids and labels, deep or broken JSON, every output option pointed at a bad
 * place, damaged, foreign and oversized checkpoints.  Each case runs the
 * tool once in a fresh folder and checks the exit code, that stderr is one
 * line naming the file, line or key, and that nothing new is left there
 * (a dataset that loaded may leave its cache).  A few cases check that
 * input a user would expect to work does (a byte-order mark, CRLF,
 * concatenated gzip members). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "tool_run.h"

/* One file of a case: text (len bytes, strlen when 0) as it is, or as a
 * gzip member when gz, then a second member `more`, then raw bytes `tail`.
 * text NULL removes the toy dataset's file of that name. */
typedef struct file_spec {
    const char *path, *text;
    size_t len;
    bool gz;
    const char *more, *tail;
} file_spec;

/* A case: the files written over the toy dataset (ds/ in the case's
 * folder), prepare() for what files cannot say (a
 * checkpoint), the arguments after CONFIG ("@" stands for the folder,
 * "%RO%" for a folder no file can be created in), and what must happen. */
typedef struct bad_case {
    const char *name;
    file_spec files[4];
    void (*prepare)(const char *dir);
    const char *config; /* NULL: models/gcn.json */
    const char *args[12];
    int code;
    const char *says[3];
    bool cache_ok; /* the dataset loads: its cache may be written */
} bad_case;

#define F(p, t) {.path = (p), .text = (t)}

static const file_spec toy[] = {
    F("ds/meta.txt", "num_nodes 10\nnum_features 4\nnum_classes 2\n"),
    F("ds/edges.txt", "0 1\n1 2\n2 3\n3 4\n4 5\n5 6\n6 7\n7 8\n8 9\n9 0\n0 5\n2 7\n"),
    F("ds/features.txt", "0 0 1\n1 1 1\n2 2 1\n3 3 1\n4 0 1\n5 1 1\n6 2 1\n7 3 1\n8 0 1\n9 1 1\n"),
    F("ds/labels.txt", "0\n1\n0\n1\n0\n1\n0\n1\n0\n1\n"),
    F("ds/train.txt", "0\n1\n2\n3\n"),
    F("ds/val.txt", "4\n5\n6\n"),
    F("ds/test.txt", "7\n8\n9\n"),
};

static void make_parents(const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(buf, 0777);
        *p = '/';
    }
}

/* One gzip member of text into f. */
static void gzip_member(FILE *f, const char *text, size_t len)
{
    z_stream zs = {0};
    cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    uLong cap = deflateBound(&zs, (uLong)len);
    unsigned char *out = malloc(cap);
    cr_assert_not_null(out);
    zs.next_in = (unsigned char *)text;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    cr_assert_eq(fwrite(out, 1, zs.total_out, f), zs.total_out);
    deflateEnd(&zs);
    free(out);
}

static void write_spec(const char *dir, const file_spec *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, s->path);
    if (!s->text) {
        unlink(path);
        return;
    }
    make_parents(path);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    size_t len = s->len ? s->len : strlen(s->text);
    if (s->gz)
        gzip_member(f, s->text, len);
    else
        cr_assert_eq(fwrite(s->text, 1, len, f), len);
    if (s->more)
        gzip_member(f, s->more, strlen(s->more));
    if (s->tail)
        cr_assert_eq(fwrite(s->tail, 1, strlen(s->tail), f), strlen(s->tail));
    fclose(f);
}

/* Every path under dir (relative, sorted, one a line) into out. */
static void walk(const char *dir, const char *rel, char *out, size_t size)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel) >= (int)sizeof path)
        return;
    DIR *d = opendir(path);
    if (!d)
        return;
    char names[64][256];
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && n < 64)
            snprintf(names[n++], sizeof names[0], "%s", e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; i++) {
        char sub[4096];
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", names[i]) >= (int)sizeof sub)
            continue;
        strncat(out, sub, size - strlen(out) - 2);
        strcat(out, "\n");
        walk(dir, sub, out, size);
    }
}

/* The listing without the dataset caches (lines holding "processed"). */
static void without_cache(char *listing)
{
    char *w = listing;
    for (char *line = listing; *line;) {
        char *end = strchr(line, '\n');
        size_t len = (size_t)(end - line) + 1;
        *end = '\0';
        bool cache = strstr(line, "processed") != NULL;
        *end = '\n';
        if (!cache) {
            memmove(w, line, len);
            w += len;
        }
        line = end + 1;
    }
    *w = '\0';
}

/* A folder no file can be created in, even by root (sysfs refuses). */
static const char *read_only_dir(const char *dir, char *buf, size_t size)
{
    if (geteuid() == 0)
        return "/sys/kernel";
    snprintf(buf, size, "%s/ro", dir);
    mkdir(buf, 0555);
    chmod(buf, 0555);
    return buf;
}

static void run_case(const bad_case *c)
{
    char dir[] = "/tmp/gcn-bad-XXXXXX", ro[64], before[8192] = "", after[8192] = "";
    cr_assert_not_null(mkdtemp(dir));
    for (size_t i = 0; i < sizeof toy / sizeof *toy; i++)
        write_spec(dir, &toy[i]);
    for (int i = 0; i < 4 && c->files[i].path; i++)
        write_spec(dir, &c->files[i]);
    if (c->prepare)
        c->prepare(dir);
    const char *ro_dir = read_only_dir(dir, ro, sizeof ro);
    walk(dir, "", before, sizeof before);
    static char expanded[16][4200];
    const char *argv[24];
    int n = 0, k = 0;
    bool has_dataset = false, has_epochs = false;
    argv[n++] = c->config ? c->config : "models/gcn.json";
    for (int i = 0; c->args[i]; i++) {
        const char *a = c->args[i];
        has_dataset |= !strcmp(a, "--dataset");
        has_epochs |= !strcmp(a, "--epochs");
        if (a[0] == '@' || !strncmp(a, "%RO%", 4)) {
            snprintf(expanded[k], sizeof expanded[k], "%s%s", a[0] == '@' ? dir : ro_dir,
                     a + (a[0] == '@' ? 1 : 4));
            a = expanded[k++];
        }
        argv[n++] = a;
    }
    if (argv[0][0] == '@') {
        snprintf(expanded[k], sizeof expanded[k], "%s%s", dir, argv[0] + 1);
        argv[0] = expanded[k++];
    }
    snprintf(expanded[k], sizeof expanded[k], "%s/ds", dir);
    if (!has_dataset) {
        argv[n++] = "--dataset";
        argv[n++] = expanded[k];
    }
    if (!has_epochs) {
        argv[n++] = "--epochs";
        argv[n++] = "2";
    }
    argv[n++] = "--device";
    argv[n++] = "cpu";
    argv[n++] = "--quiet";
    argv[n] = NULL;
    static tool_result r;
    tool_run(&r, "gcntrain", argv);
    cr_assert_eq(r.code, c->code, "%s: exit %d, stderr: %s", c->name, r.code, r.err);
    if (c->code != 0) {
        size_t len = strlen(r.err);
        cr_assert(len > 0 && strchr(r.err, '\n') == r.err + len - 1 &&
                      !strncmp(r.err, "gcntrain: ", 10),
                  "%s: stderr is not one line: %s", c->name, r.err);
    }
    for (int i = 0; i < 3 && c->says[i]; i++)
        cr_assert(strstr(r.err, c->says[i]), "%s: '%s' not in: %s", c->name, c->says[i], r.err);
    walk(dir, "", after, sizeof after);
    if (c->cache_ok) {
        without_cache(before);
        without_cache(after);
    }
    cr_assert_str_eq(after, before, "%s: the folder changed:\n%s\nwas:\n%s", c->name, after, before);
    if (ro_dir == ro)
        chmod(ro, 0755);
    tool_remove_dir(dir);
}

static void run_table(const bad_case *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        run_case(&cases[i]);
}

/* ---- checkpoints --------------------------------------------------- */

/* A checkpoint of models/gcn.json on the toy dataset after 3 epochs, at
 * dir/ck. */
static void make_checkpoint(const char *dir, const char *config)
{
    char ds[128], ck[128];
    snprintf(ds, sizeof ds, "%s/ds", dir);
    snprintf(ck, sizeof ck, "%s/ck", dir);
    static tool_result r;
    tool_run(&r, "gcntrain", (const char *[]){config, "--dataset", ds, "--epochs", "3",
                                              "--device", "cpu", "--quiet", "--save", ck, NULL});
    cr_assert_eq(r.code, 0, "%s", r.err);
}

static void checkpoint(const char *dir)
{
    make_checkpoint(dir, "models/gcn.json");
}

static void gin_checkpoint(const char *dir)
{
    make_checkpoint(dir, "models/gin.json");
}

static void ck_path(const char *dir, char *path, size_t size)
{
    snprintf(path, size, "%s/ck", dir);
}

static void truncated_checkpoint(const char *dir)
{
    char path[128];
    checkpoint(dir);
    ck_path(dir, path, sizeof path);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(truncate(path, st.st_size - 100), 0);
}

static void oversized_checkpoint(const char *dir)
{
    char path[128];
    checkpoint(dir);
    ck_path(dir, path, sizeof path);
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    fputs("and some more bytes", f);
    fclose(f);
}

static void flipped_checkpoint(const char *dir)
{
    char path[128];
    checkpoint(dir);
    ck_path(dir, path, sizeof path);
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, 400, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 400, SEEK_SET);
    fputc(c ^ 0x10, f);
    fclose(f);
}

/* dir/ck as a sparse file of gib GiB that starts with magic (NULL: all
 * zeros): it must be refused from its header, without being read. */
static void sparse_checkpoint(const char *dir, const char *magic, int gib)
{
    char path[128];
    ck_path(dir, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    if (magic)
        cr_assert_eq(write(fd, magic, strlen(magic) + 1), (ssize_t)strlen(magic) + 1);
    cr_assert_eq(ftruncate(fd, (off_t)gib << 30), 0);
    close(fd);
}

static void huge_checkpoint(const char *dir)
{
    sparse_checkpoint(dir, "GCNCKPT", 8);
}

static void zero_checkpoint(const char *dir)
{
    sparse_checkpoint(dir, NULL, 12);
}

static void ck_directory(const char *dir)
{
    char path[128];
    ck_path(dir, path, sizeof path);
    cr_assert_eq(mkdir(path, 0755), 0);
}

/* ---- the cases ------------------------------------------------------- */

/* The plain-text folder: its files damaged one at a time. */
static const bad_case textdir_cases[] = {
    {"feature column past every width", {F("ds/meta.txt", "num_nodes 10\nnum_classes 2\n"),
                                         F("ds/features.txt", "0 0 1\n1 2000000000 1\n")},
     .code = 2, .says = {"features.txt:2:", "feature column 2000000000"}},
    {"feature column past num_features", {F("ds/features.txt", "0 0 1\n1 4 1\n")},
     .code = 2, .says = {"features.txt:2:", "feature column 4 out of range"}},
    {"num_features huge", {F("ds/meta.txt", "num_nodes 10\nnum_features 2000000000\n")},
     .code = 2, .says = {"meta.txt:2:", "num_features"}},
    {"num_nodes past int32", {F("ds/meta.txt", "num_nodes 99999999999\n")},
     .code = 2, .says = {"meta.txt:1:", "num_nodes"}},
    {"num_nodes negative", {F("ds/meta.txt", "num_nodes -1\n")},
     .code = 2, .says = {"meta.txt:1:", "negative"}},
    {"num_nodes overflowing", {F("ds/meta.txt", "num_nodes 99999999999999999999999\n")},
     .code = 2, .says = {"meta.txt:1:", "not an integer"}},
    {"label past num_classes", {F("ds/labels.txt", "0\n1\n2\n1\n0\n1\n0\n1\n0\n1\n")},
     .code = 2, .says = {"labels.txt:3:", "label 2 out of range"}},
    {"label huge", {F("ds/meta.txt", "num_nodes 10\nnum_features 4\n"),
                    F("ds/labels.txt", "0\n1\n0\n70000\n0\n1\n0\n1\n0\n1\n")},
     .code = 2, .says = {"labels.txt:4:", "label 70000"}},
    {"label below -1", {F("ds/labels.txt", "0\n1\n0\n1\n-5\n1\n0\n1\n0\n1\n")},
     .code = 2, .says = {"labels.txt:5:", "label -5"}},
    {"label not a number", {F("ds/labels.txt", "0\n1\n0\n1\n0\nx\n0\n1\n0\n1\n")},
     .code = 2, .says = {"labels.txt:6:", "not an integer"}},
    {"fewer labels than nodes", {F("ds/labels.txt", "0\n1\n0\n")},
     .code = 2, .says = {"labels.txt", "3 labels", "num_nodes is 10"}},
    {"empty edge file", {F("ds/edges.txt", "")}, .code = 2, .says = {"edges.txt", "empty file"}},
    {"comment-only edge file", {F("ds/edges.txt", "\n\n\n")},
     .code = 2, .says = {"edges.txt:3", "empty file"}},
    {"edge id past the nodes", {F("ds/edges.txt", "0 1\n1 10\n")},
     .code = 2, .says = {"edges.txt:2:", "target node id 10 out of range"}},
    {"edge with three columns", {F("ds/edges.txt", "0 1\n1 2 3\n")},
     .code = 2, .says = {"edges.txt:2:", "expected 2 columns"}},
    {"NUL byte in a line", {{.path = "ds/edges.txt", .text = "0 1\n1\0 2\n", .len = 9}},
     .code = 2, .says = {"edges.txt:2:", "NUL byte"}},
    {"feature NaN", {F("ds/features.txt", "0 0 1\n1 1 nan\n")},
     .code = 2, .says = {"features.txt:2:", "NaN"}},
    {"feature overflowing float", {F("ds/features.txt", "0 0 1\n1 1 1e999\n")},
     .code = 2, .says = {"features.txt:2:", "infinite"}},
    {"train id listed twice", {F("ds/train.txt", "0\n1\n1\n")},
     .code = 2, .says = {"train.txt:3:", "listed twice"}},
    {"id in train and test", {F("ds/test.txt", "7\n8\n0\n")},
     .code = 2, .says = {"test.txt:3:", "also in train"}},
    {"split id past the nodes", {F("ds/val.txt", "4\n10\n")},
     .code = 2, .says = {"val.txt:2:", "node id 10 out of range"}},
    {"split id negative", {F("ds/val.txt", "4\n-1\n")},
     .code = 2, .says = {"val.txt:2:", "negative"}},
    {"gzip data with junk after it", {{"ds/edges.txt", "0 1\n1 2\n", .gz = true, .tail = "junk"}},
     .code = 2, .says = {"edges.txt", "not another gzip member"}},
    {"gzip data with a zero byte after it", {{"ds/edges.txt", "0 1\n1 2\n", .gz = true,
                                              .tail = "\n"}},
     .code = 2, .says = {"edges.txt", "not another gzip member"}},
};

/* What a user expects to work: CRLF, a leading byte-order mark in each
 * text file, gzip members one after the other. */
static const bad_case textdir_ok[] = {
    {"CRLF everywhere", {F("ds/edges.txt", "0 1\r\n1 2\r\n2 3\r\n"),
                         F("ds/labels.txt", "0\r\n1\r\n0\r\n1\r\n0\r\n1\r\n0\r\n1\r\n0\r\n1\r\n"),
                         F("ds/train.txt", "0\r\n1\r\n")},
     .code = 0, .cache_ok = true},
    {"BOM in edges.txt", {F("ds/edges.txt", "\xEF\xBB\xBF" "0 1\n1 2\n")}, .code = 0,
     .cache_ok = true},
    {"BOM in labels.txt", {F("ds/labels.txt", "\xEF\xBB\xBF" "0\n1\n0\n1\n0\n1\n0\n1\n0\n1\n")},
     .code = 0, .cache_ok = true},
    {"BOM in features.txt", {F("ds/features.txt", "\xEF\xBB\xBF" "0 0 1\n1 1 1\n")}, .code = 0,
     .cache_ok = true},
    {"BOM in train.txt", {F("ds/train.txt", "\xEF\xBB\xBF" "0\n1\n")}, .code = 0,
     .cache_ok = true},
    {"BOM in meta.txt", {F("ds/meta.txt", "\xEF\xBB\xBF" "num_nodes 10\nnum_features 4\n")},
     .code = 0, .cache_ok = true},
    {"concatenated gzip members", {{"ds/edges.txt", "0 1\n1 2\n", .gz = true,
                                    .more = "2 3\n3 4\n"}},
     .code = 0, .cache_ok = true},
    {"gzip member then BOM text", {{"ds/labels.txt", "\xEF\xBB\xBF" "0\n1\n0\n1\n0\n1\n",
                                    .gz = true, .more = "0\n1\n0\n1\n"}},
     .code = 0, .cache_ok = true},
};

/* Edge lists and Matrix Market files (structure only: a graph that loads
 * then fails setup for its missing labels, which says the parse passed). */
static const bad_case graph_file_cases[] = {
    {"Matrix Market of size 0 0 0", {F("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n0 0 0\n")},
     .args = {"--dataset", "@/g.mtx"}, .code = 2, .says = {"g.mtx:2:", "no edges"}},
    {"Matrix Market with 0 entries", {F("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 0\n")},
     .args = {"--dataset", "@/g.mtx"}, .code = 2, .says = {"g.mtx:2:", "no edges"}},
    {"empty edge list", {F("g.txt", "")}, .args = {"--dataset", "@/g.txt"}, .code = 2,
     .says = {"g.txt", "no edges"}},
    {"comment-only edge list", {F("g.txt", "# nodes 5\n% x\n\n")},
     .args = {"--dataset", "@/g.txt"}, .code = 2, .says = {"g.txt:3", "no edges"}},
    {"entries past what the file holds", {F("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 1000000000000000\n1 2\n")},
     .args = {"--dataset", "@/g.mtx"}, .code = 2, .says = {"g.mtx:2:", "more than this file"}},
    {"row count past int32", {F("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n99999999999 99999999999 1\n1 2\n")},
     .args = {"--dataset", "@/g.mtx"}, .code = 2, .says = {"g.mtx:2:", "row count"}},
    {"non-square matrix", {F("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 6 1\n1 2\n")},
     .args = {"--dataset", "@/g.mtx"}, .code = 2, .says = {"g.mtx:2:", "square"}},
    {"entry index 0", {F("g.mtx", "%%MatrixMarket matrix coordinate pattern general\n5 5 1\n0 2\n")},
     .args = {"--dataset", "@/g.mtx"}, .code = 2, .says = {"g.mtx:3:", "row index 0"}},
    {"edge list with gzip junk", {{"g.txt.gz", "0 1\n1 2\n", .gz = true, .tail = "\x1f"}},
     .args = {"--dataset", "@/g.txt.gz"}, .code = 2,
     .says = {"g.txt.gz", "not another gzip member"}},
    {"Matrix Market with a BOM", {F("g.mtx", "\xEF\xBB\xBF%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n")},
     .args = {"--dataset", "@/g.mtx", "--features", "degree"}, .code = 2,
     .says = {"no class labels"}, .cache_ok = true},
    {"edge list with a BOM", {F("g.txt", "\xEF\xBB\xBF" "0 1\n1 2\n")},
     .args = {"--dataset", "@/g.txt", "--features", "degree"}, .code = 2,
     .says = {"no class labels"}, .cache_ok = true},
};

/* OGB folders: counts that claim more than the files hold. */
#define OGB_EDGES {"ogbn_x/raw/edge.csv.gz", "0,1\n", .gz = true}
#define OGB_M {"ogbn_x/raw/num-edge-list.csv.gz", "1\n", .gz = true}
static const bad_case ogb_cases[] = {
    {"node count far past the label file",
     {{"ogbn_x/raw/num-node-list.csv.gz", "2000000000\n", .gz = true}, OGB_M, OGB_EDGES,
      {"ogbn_x/raw/node-label.csv.gz", "0\n1\n", .gz = true}},
     .args = {"--dataset", "@/ogbn_x"}, .code = 2,
     .says = {"node-label.csv.gz", "2 labels, but num-node-list.csv.gz says 2000000000"}},
    {"count file with two lines",
     {{"ogbn_x/raw/num-node-list.csv.gz", "2\n3\n", .gz = true}, OGB_M, OGB_EDGES},
     .args = {"--dataset", "@/ogbn_x"}, .code = 2,
     .says = {"num-node-list.csv.gz:2:", "second line"}},
    {"count not a number",
     {{"ogbn_x/raw/num-node-list.csv.gz", "two\n", .gz = true}, OGB_M, OGB_EDGES},
     .args = {"--dataset", "@/ogbn_x"}, .code = 2,
     .says = {"num-node-list.csv.gz:1:", "not an integer"}},
    {"edge file with gzip junk",
     {{"ogbn_x/raw/num-node-list.csv.gz", "2\n", .gz = true}, OGB_M,
      {"ogbn_x/raw/edge.csv.gz", "0,1\n", .gz = true, .tail = "PK\x03\x04"},
      {"ogbn_x/raw/node-label.csv.gz", "0\n1\n", .gz = true}},
     .args = {"--dataset", "@/ogbn_x"}, .code = 2,
     .says = {"edge.csv.gz", "not another gzip member"}},
};

/* OGB node features: 100,000 rows of 1,000 values declared by the count
 * file and the first row; the file is a few bytes. */
static void ogb_wide_features(const char *dir)
{
    static char labels[100001];
    memset(labels, '\n', 100000);
    labels[100000] = '\0';
    char row[4001];
    for (int i = 0; i < 1000; i++)
        memcpy(row + 2 * i, "1,", 2);
    row[1999] = '\n';
    row[2000] = '\0';
    const file_spec files[] = {
        {"ogbn_y/raw/num-node-list.csv.gz", "100000\n", .gz = true},
        {"ogbn_y/raw/num-edge-list.csv.gz", "1\n", .gz = true},
        {"ogbn_y/raw/edge.csv.gz", "0,1\n", .gz = true},
        {"ogbn_y/raw/node-label.csv.gz", labels, .gz = true},
        {"ogbn_y/raw/node-feat.csv.gz", row, .gz = true},
    };
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        write_spec(dir, &files[i]);
}

static const bad_case ogb_size_cases[] = {
    {"feature rows past what the file holds", .prepare = ogb_wide_features,
     .args = {"--dataset", "@/ogbn_y"}, .code = 2,
     .says = {"node-feat.csv.gz:1:", "more than this file"}},
};

/* Configurations. */
static void huge_config(const char *dir)
{
    char path[128];
    snprintf(path, sizeof path, "%s/cfg.json", dir);
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    fputs("{\"layers\": [", f);
    fclose(f);
    cr_assert_eq(truncate(path, 20 << 20), 0);
}

static char deep_json[20010];

static const bad_case config_cases[] = {
    {"unknown key", {F("cfg.json", "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], \"epochz\": 3}")},
     .config = "@/cfg.json", .code = 2, .says = {"epochz"}},
    {"wrong type", {F("cfg.json", "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], \"epochs\": \"3\"}")},
     .config = "@/cfg.json", .code = 2, .says = {"epochs"}},
    {"empty configuration", {F("cfg.json", "")}, .config = "@/cfg.json", .code = 2,
     .says = {"cfg.json"}},
    {"configuration cut short", {F("cfg.json", "{\"layers\": [{\"type\": \"gcn\"")},
     .config = "@/cfg.json", .code = 2, .says = {"cfg.json"}},
    {"deeply nested configuration", {F("cfg.json", deep_json)}, .config = "@/cfg.json",
     .code = 2, .says = {"cfg.json"}},
    {"configuration a directory", .config = "@/ds", .code = 2, .says = {"/ds: read error"}},
    {"configuration past 16 MiB", .prepare = huge_config, .config = "@/cfg.json", .code = 2,
     .says = {"cfg.json", "larger than 16 MiB"}},
    {"NUL byte in a configuration", {{.path = "cfg.json", .text = "{\"layers\"\0: 1}", .len = 14}},
     .config = "@/cfg.json", .code = 2, .says = {"cfg.json: contains a NUL byte"}},
    {"configuration with labels of one class",
     {F("cfg.json", "{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}], "
                    "\"dataset\": {\"labels\": \"random:1\"}}")},
     .config = "@/cfg.json", .code = 2, .says = {"cfg.json", "dataset.labels"}},
    {"configuration with a BOM", {F("cfg.json", "\xEF\xBB\xBF{\"layers\": [{\"type\": \"gcn\", \"out\": \"classes\"}]}")},
     .config = "@/cfg.json", .code = 0, .cache_ok = true},
};

/* Options and output paths, all refused before any work. */
static const bad_case option_cases[] = {
    {"empty --log", .args = {"--log", ""}, .code = 2, .says = {"--log ''"}},
    {"empty --save", .args = {"--save", ""}, .code = 2, .says = {"--save ''"}},
    {"empty --predict", .args = {"--predict", ""}, .code = 2, .says = {"--predict ''"}},
    {"empty --spmm-choices", .args = {"--spmm-choices", ""}, .code = 2, .says = {"--spmm-choices ''"}},
    {"empty --export-data", .args = {"--export-data", ""}, .code = 2,
     .says = {"--export-data ''"}},
    {"--log a directory", .args = {"--log", "@/ds"}, .code = 2, .says = {"--log", "is a directory"}},
    {"--save a directory", .args = {"--save", "@/ds"}, .code = 2,
     .says = {"--save", "is a directory"}},
    {"--predict a directory", .args = {"--predict", "@/ds/"}, .code = 2,
     .says = {"--predict", "is a directory"}},
    {"--log without its folder", .args = {"--log", "@/no/log.jsonl"}, .code = 2,
     .says = {"--log", "no directory"}},
    {"--save without its folder", .args = {"--save", "@/no/ck"}, .code = 2,
     .says = {"--save", "no directory"}},
    {"--spmm-choices without its folder", .args = {"--spmm-choices", "@/no/choices"}, .code = 2,
     .says = {"--spmm-choices", "no directory"}},
    {"--export-data without its folder", .args = {"--export-data", "@/no/out"}, .code = 2,
     .says = {"--export-data", "no directory"}},
    {"--export-data a file", .args = {"--export-data", "@/ds/edges.txt"}, .code = 2,
     .says = {"--export-data", "not a directory"}},
    {"--save under a file", .args = {"--save", "@/ds/edges.txt/ck"}, .code = 2,
     .says = {"--save", "no directory"}},
    {"--log in a read-only folder", .args = {"--log", "%RO%/log.jsonl"}, .code = 2,
     .says = {"--log", "cannot write in"}},
    {"--save in a read-only folder", .args = {"--save", "%RO%/ck"}, .code = 2,
     .says = {"--save", "cannot write in"}},
    {"--predict in a read-only folder", .args = {"--predict", "%RO%/p.csv"}, .code = 2,
     .says = {"--predict", "cannot write in"}},
    {"--spmm-choices in a read-only folder", .args = {"--spmm-choices", "%RO%/choices"}, .code = 2,
     .says = {"--spmm-choices", "cannot write in"}},
    {"--export-data in a read-only folder", .args = {"--export-data", "%RO%/out"}, .code = 2,
     .says = {"--export-data", "cannot write in"}},
    {"empty --cache-dir", .args = {"--cache-dir", ""}, .code = 2, .says = {"cache_dir ''"}},
    {"--cache-dir a file", .args = {"--cache-dir", "@/ds/meta.txt"}, .code = 2,
     .says = {"--cache-dir", "not a directory"}},
    {"--cache-dir in a read-only folder", .args = {"--cache-dir", "%RO%/cache"}, .code = 2,
     .says = {"--cache-dir", "cannot write in"}},
    {"--save and --predict the same file", .args = {"--save", "@/x", "--predict", "@/x"},
     .code = 2, .says = {"--save and --predict both name"}},
    {"--epochs negative", .args = {"--epochs", "-3"}, .code = 2, .says = {"--epochs -3"}},
    {"--epochs past the limit", .args = {"--epochs", "99999999999"}, .code = 2,
     .says = {"--epochs 99999999999"}},
    {"--seed not a number", .args = {"--seed", "0x10"}, .code = 2, .says = {"--seed 0x10"}},
    {"--threads not a number", .args = {"--threads", "many"}, .code = 2, .says = {"--threads"}},
    {"--dataset missing", .args = {"--dataset", "@/nothing"}, .code = 2, .says = {"nothing"}},
    {"--labels of one class", .args = {"--labels", "random:1"}, .code = 2,
     .says = {"--labels 'random:1': expected file or random:K"}},
    {"--labels without K", .args = {"--labels", "random:"}, .code = 2,
     .says = {"--labels 'random:'"}},
    {"--labels past 65536 classes", .args = {"--labels", "random:65537"}, .code = 2,
     .says = {"--labels 'random:65537'"}},
    {"edge list with substitute labels", {F("g.txt", "0 1\n1 2\n2 3\n")},
     .args = {"--dataset", "@/g.txt", "--features", "degree", "--labels", "random:2"},
     .code = 0, .cache_ok = true},
    {"--export-data of a dataset without labels",
     {F("g.txt", "0 1\n1 2\n")}, .args = {"--dataset", "@/g.txt", "--export-data", "@/out",
                                         "--features", "degree"},
     .code = 2, .says = {"no class labels"}, .cache_ok = true},
};

/* Checkpoints given to --resume. */
static const bad_case resume_cases[] = {
    {"--resume missing", .args = {"--resume", "@/ck"}, .code = 2, .says = {"ck: cannot open"},
     .cache_ok = true},
    {"--resume a directory", .prepare = ck_directory, .args = {"--resume", "@/ck"}, .code = 2,
     .says = {"ck: not a regular file"}, .cache_ok = true},
    {"--resume 12 GiB of zeros", .prepare = zero_checkpoint, .args = {"--resume", "@/ck"},
     .code = 2, .says = {"ck: not a gcn checkpoint"}, .cache_ok = true},
    {"--resume 8 GiB behind a magic", .prepare = huge_checkpoint, .args = {"--resume", "@/ck"},
     .code = 2, .says = {"ck: not a gcn checkpoint"}, .cache_ok = true},
    {"--resume cut short", .prepare = truncated_checkpoint, .args = {"--resume", "@/ck"},
     .code = 2, .says = {"ck:", "bytes, but a checkpoint of this model has"}, .cache_ok = true},
    {"--resume with bytes appended", .prepare = oversized_checkpoint,
     .args = {"--resume", "@/ck"}, .code = 2,
     .says = {"ck:", "bytes, but a checkpoint of this model has"}, .cache_ok = true},
    {"--resume with a flipped bit", .prepare = flipped_checkpoint, .args = {"--resume", "@/ck"},
     .code = 2, .says = {"ck: CRC-32 mismatch"}, .cache_ok = true},
    {"--resume of another model", .prepare = gin_checkpoint, .args = {"--resume", "@/ck"},
     .code = 2, .says = {"ck: saved from a different model"}, .cache_ok = true},
    {"--resume past --epochs", .prepare = checkpoint, .args = {"--resume", "@/ck"}, .code = 2,
     .says = {"has trained 3 epochs, more than the 2 asked for"}, .cache_ok = true},
    {"--eval-only of a damaged checkpoint", .prepare = truncated_checkpoint,
     .args = {"--resume", "@/ck", "--eval-only", "--predict", "@/p.csv"}, .code = 2,
     .says = {"ck:"}, .cache_ok = true},
};

Test(cli_bad_input, textdir_files)
{
    run_table(textdir_cases, sizeof textdir_cases / sizeof *textdir_cases);
}

Test(cli_bad_input, text_a_user_expects_to_load)
{
    run_table(textdir_ok, sizeof textdir_ok / sizeof *textdir_ok);
}

Test(cli_bad_input, graph_files)
{
    run_table(graph_file_cases, sizeof graph_file_cases / sizeof *graph_file_cases);
}

Test(cli_bad_input, ogb_counts)
{
    run_table(ogb_cases, sizeof ogb_cases / sizeof *ogb_cases);
    run_table(ogb_size_cases, sizeof ogb_size_cases / sizeof *ogb_size_cases);
}

Test(cli_bad_input, configurations)
{
    for (int i = 0; i < 10000; i++)
        deep_json[i] = '[';
    run_table(config_cases, sizeof config_cases / sizeof *config_cases);
}

Test(cli_bad_input, options_and_output_paths)
{
    run_table(option_cases, sizeof option_cases / sizeof *option_cases);
}

Test(cli_bad_input, checkpoints, .timeout = 60)
{
    run_table(resume_cases, sizeof resume_cases / sizeof *resume_cases);
}

/* A run that fails setup after --export-data was asked for leaves no
 * folder; one that passes writes it whole, and a second export replaces
 * the first in place. */
Test(cli_bad_input, export_is_whole_or_absent)
{
    char dir[] = "/tmp/gcn-bad-XXXXXX", ds[64], out[64], path[96];
    cr_assert_not_null(mkdtemp(dir));
    for (size_t i = 0; i < sizeof toy / sizeof *toy; i++)
        write_spec(dir, &toy[i]);
    snprintf(ds, sizeof ds, "%s/ds", dir);
    snprintf(out, sizeof out, "%s/out", dir);
    static tool_result r;
    for (int k = 0; k < 2; k++) {
        tool_run(&r, "gcntrain", (const char *[]){"models/gcn.json", "--dataset", ds, "--epochs",
                                                  "1", "--device", "cpu", "--quiet",
                                                  "--export-data", out, NULL});
        cr_assert_eq(r.code, 0, "%s", r.err);
        snprintf(path, sizeof path, "%s/y.npy", out);
        cr_assert(tool_exists(path));
    }
    char listing[2048] = "";
    walk(dir, "", listing, sizeof listing);
    cr_assert_not(strstr(listing, ".tmp"), "%s", listing);
    tool_remove_dir(dir);
}
