/* The Planetoid pickles' reader (pickle.h): a stack machine over the
 * protocol-2 opcodes those files use; GLOBAL only names a class, REDUCE and
 * NEWOBJ only record what would have been called, so nothing runs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"

#define MAX_FILE (1ll << 30)
#define MAX_STACK (1 << 20)
#define MAX_MEMO (1u << 24)

typedef struct vm {
    gcn_ctx *ctx;
    const char *path;
    pk_file *f;
    size_t pos;
    pk_value **stack;
    size_t depth, stack_cap;
    pk_value **memo;
    size_t memo_cap;
} vm;

static gcn_status bad(vm *m, const char *why)
{
    return GCN_ERROR(m->ctx, GCN_ERR_FORMAT, "%s: byte %zu: %s", m->path, m->pos, why);
}

static pk_value *new_value(vm *m, pk_kind kind)
{
    pk_value *v = calloc(1, sizeof *v);
    if (!v)
        return NULL;
    v->kind = kind;
    v->next = m->f->values;
    m->f->values = v;
    return v;
}

static gcn_status push(vm *m, pk_value *v)
{
    if (!v)
        return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
    if (m->depth == m->stack_cap) {
        if (m->stack_cap >= MAX_STACK)
            return bad(m, "stack too deep");
        size_t cap = m->stack_cap ? m->stack_cap * 2 : 64;
        pk_value **s = realloc(m->stack, cap * sizeof *s);
        if (!s)
            return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
        m->stack = s;
        m->stack_cap = cap;
    }
    m->stack[m->depth++] = v;
    return GCN_OK;
}

static gcn_status pop(vm *m, pk_value **v)
{
    if (m->depth == 0 || m->stack[m->depth - 1]->kind == PK_MARK)
        return bad(m, "stack underflow");
    *v = m->stack[--m->depth];
    return GCN_OK;
}

static gcn_status add_item(vm *m, pk_value *to, pk_value *v)
{
    if (to->n == to->cap) {
        size_t cap = to->cap ? to->cap * 2 : 4;
        pk_value **items = realloc(to->items, cap * sizeof *items);
        if (!items)
            return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
        to->items = items;
        to->cap = cap;
    }
    to->items[to->n++] = v;
    return GCN_OK;
}

/* Removes the topmost mark from the stack; *first receives the index of
 * the first value that was above it. */
static gcn_status since_mark(vm *m, size_t *first)
{
    size_t k = m->depth;
    while (k > 0 && m->stack[k - 1]->kind != PK_MARK)
        k--;
    if (k == 0)
        return bad(m, "no mark");
    *first = k;
    return GCN_OK;
}

static gcn_status take(vm *m, size_t n, const unsigned char **p)
{
    if (m->f->size - m->pos < n)
        return bad(m, "truncated");
    *p = m->f->data + m->pos;
    m->pos += n;
    return GCN_OK;
}

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int k = n - 1; k >= 0; k--)
        v = v << 8 | p[k];
    return v;
}

static gcn_status memo_put(vm *m, uint64_t idx)
{
    if (m->depth == 0)
        return bad(m, "PUT on an empty stack");
    if (idx >= MAX_MEMO)
        return bad(m, "memo index too large");
    if (idx >= m->memo_cap) {
        size_t cap = m->memo_cap ? m->memo_cap : 64;
        while (cap <= idx)
            cap *= 2;
        pk_value **memo = realloc(m->memo, cap * sizeof *memo);
        if (!memo)
            return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
        memset(memo + m->memo_cap, 0, (cap - m->memo_cap) * sizeof *memo);
        m->memo = memo;
        m->memo_cap = cap;
    }
    m->memo[idx] = m->stack[m->depth - 1];
    return GCN_OK;
}

static gcn_status memo_get(vm *m, uint64_t idx)
{
    if (idx >= m->memo_cap || !m->memo[idx])
        return bad(m, "GET of an unset memo entry");
    return push(m, m->memo[idx]);
}

/* "module\nname\n" -> a PK_GLOBAL "module.name" (kept in a value's bytes). */
static gcn_status global(vm *m)
{
    const unsigned char *start = m->f->data + m->pos, *end = m->f->data + m->f->size;
    const unsigned char *nl1 = memchr(start, '\n', (size_t)(end - start));
    const unsigned char *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1)) : NULL;
    if (!nl2)
        return bad(m, "truncated GLOBAL");
    size_t a = (size_t)(nl1 - start), b = (size_t)(nl2 - nl1 - 1);
    pk_value *v = new_value(m, PK_GLOBAL);
    unsigned char *name = v ? malloc(a + b + 2) : NULL;
    if (!name)
        return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
    memcpy(name, start, a);
    name[a] = '.';
    memcpy(name + a + 1, nl1 + 1, b);
    name[a + b + 1] = '\0';
    v->bytes = name;
    v->len = a + b + 1;
    m->pos = (size_t)(nl2 + 1 - m->f->data);
    return push(m, v);
}

static gcn_status bytes_op(vm *m, int len_bytes)
{
    const unsigned char *p = NULL;
    GCN_TRY(take(m, (size_t)len_bytes, &p));
    uint64_t n = le(p, len_bytes);
    pk_value *v = new_value(m, PK_BYTES);
    if (!v)
        return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
    GCN_TRY(take(m, n, &v->bytes));
    v->len = n;
    return push(m, v);
}

static gcn_status int_op(vm *m, int n, bool is_signed)
{
    const unsigned char *p = NULL;
    GCN_TRY(take(m, (size_t)n, &p));
    pk_value *v = new_value(m, PK_INT);
    if (v) {
        uint64_t u = le(p, n);
        v->i = is_signed && n < 8 && (u >> (8 * n - 1)) ? (int64_t)(u | (~0ull << (8 * n)))
                                                        : (int64_t)u;
    }
    return push(m, v);
}

static gcn_status long1(vm *m)
{
    const unsigned char *p = NULL;
    GCN_TRY(take(m, 1, &p));
    int n = p[0];
    if (n > 8)
        return bad(m, "integer wider than 64 bits");
    if (n == 0)
        return push(m, new_value(m, PK_INT));
    return int_op(m, n, true);
}

static gcn_status float_op(vm *m)
{
    const unsigned char *p = NULL;
    GCN_TRY(take(m, 8, &p));
    uint64_t u = 0;
    for (int k = 0; k < 8; k++)
        u = u << 8 | p[k];
    pk_value *v = new_value(m, PK_FLOAT);
    if (v)
        memcpy(&v->f, &u, sizeof v->f);
    return push(m, v);
}

/* A tuple of the top n values (n < 0: those above the mark). */
static gcn_status tuple(vm *m, int n)
{
    size_t first = 0;
    if (n < 0)
        GCN_TRY(since_mark(m, &first));
    else if (m->depth < (size_t)n)
        return bad(m, "stack underflow");
    else
        first = m->depth - (size_t)n;
    pk_value *t = new_value(m, PK_TUPLE);
    if (!t)
        return GCN_ERROR(m->ctx, GCN_ERR_NOMEM, "out of host memory");
    for (size_t k = first; k < m->depth; k++) {
        if (m->stack[k]->kind == PK_MARK)
            return bad(m, "a mark inside a tuple");
        GCN_TRY(add_item(m, t, m->stack[k]));
    }
    m->depth = n < 0 ? first - 1 : first;
    return push(m, t);
}

/* APPEND(S), SETITEM(S): moves the values above the mark (or the top one
 * or two values) into the list or dict below them. */
static gcn_status fill(vm *m, bool dict, bool marked)
{
    size_t first = 0;
    if (marked)
        GCN_TRY(since_mark(m, &first));
    else if (m->depth < (dict ? 3u : 2u))
        return bad(m, "stack underflow");
    else
        first = m->depth - (dict ? 2 : 1);
    size_t below = marked ? first - 1 : first;
    if (below == 0 || m->stack[below - 1]->kind != (dict ? PK_DICT : PK_LIST) ||
        (dict && (m->depth - first) % 2))
        return bad(m, dict ? "SETITEMS without a dict" : "APPENDS without a list");
    pk_value *to = m->stack[below - 1];
    for (size_t k = first; k < m->depth; k++)
        GCN_TRY(add_item(m, to, m->stack[k]));
    m->depth = below;
    return GCN_OK;
}

/* REDUCE (callable, args) and NEWOBJ (class, args) record the call; a
 * defaultdict becomes a dict. */
static gcn_status make_obj(vm *m)
{
    pk_value *args, *cls;
    GCN_TRY(pop(m, &args));
    GCN_TRY(pop(m, &cls));
    if (cls->kind != PK_GLOBAL || args->kind != PK_TUPLE)
        return bad(m, "a call of something other than a class");
    if (pk_is(cls, "collections.defaultdict"))
        return push(m, new_value(m, PK_DICT));
    pk_value *o = new_value(m, PK_OBJ);
    if (o) {
        o->cls = cls;
        o->args = args;
    }
    return push(m, o);
}

static gcn_status build(vm *m)
{
    pk_value *state, *obj;
    GCN_TRY(pop(m, &state));
    GCN_TRY(pop(m, &obj));
    if (obj->kind != PK_OBJ)
        return bad(m, "BUILD of something other than an object");
    obj->state = state;
    return push(m, obj);
}

static gcn_status step(vm *m, int op, bool *stop)
{
    const unsigned char *p = NULL;
    switch (op) {
    case 0x80: return take(m, 1, &p); /* PROTO */
    case 'c': return global(m);
    case 'q': GCN_TRY(take(m, 1, &p)); return memo_put(m, p[0]);
    case 'r': GCN_TRY(take(m, 4, &p)); return memo_put(m, le(p, 4));
    case 'h': GCN_TRY(take(m, 1, &p)); return memo_get(m, p[0]);
    case 'j': GCN_TRY(take(m, 4, &p)); return memo_get(m, le(p, 4));
    case '(': return push(m, new_value(m, PK_MARK));
    case ')': return tuple(m, 0);
    case 0x85: return tuple(m, 1);
    case 0x86: return tuple(m, 2);
    case 0x87: return tuple(m, 3);
    case 't': return tuple(m, -1);
    case '}': return push(m, new_value(m, PK_DICT));
    case ']': return push(m, new_value(m, PK_LIST));
    case 's': return fill(m, true, false);
    case 'u': return fill(m, true, true);
    case 'a': return fill(m, false, false);
    case 'e': return fill(m, false, true);
    case 'U': case 'C': return bytes_op(m, 1);
    case 'T': case 'X': case 'B': return bytes_op(m, 4);
    case 'K': return int_op(m, 1, false);
    case 'M': return int_op(m, 2, false);
    case 'J': return int_op(m, 4, true);
    case 0x8a: return long1(m);
    case 'G': return float_op(m);
    case 'N': return push(m, new_value(m, PK_NONE));
    case 0x88: case 0x89: {
        pk_value *v = new_value(m, PK_INT);
        if (v)
            v->i = op == 0x88;
        return push(m, v);
    }
    case 'R': case 0x81: return make_obj(m);
    case 'b': return build(m);
    case '.': *stop = true; return GCN_OK;
    default: {
        char why[48];
        snprintf(why, sizeof why, "opcode 0x%02x is not read", op);
        return bad(m, why);
    }
    }
}

static gcn_status read_file(gcn_ctx *ctx, const char *path, pk_file *f)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return GCN_ERROR(ctx, GCN_ERR_IO, "%s: %s", path, strerror(errno));
    gcn_status st = GCN_OK;
    long size = fseek(in, 0, SEEK_END) == 0 ? ftell(in) : -1;
    if (size < 0 || size > MAX_FILE || fseek(in, 0, SEEK_SET) != 0)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: cannot size the file", path);
    else if (!(f->data = malloc(size ? (size_t)size : 1)))
        st = GCN_ERROR(ctx, GCN_ERR_NOMEM, "%s: out of host memory", path);
    else if (fread(f->data, 1, (size_t)size, in) != (size_t)size)
        st = GCN_ERROR(ctx, GCN_ERR_IO, "%s: read failed", path);
    f->size = (size_t)(size > 0 ? size : 0);
    fclose(in);
    return st;
}

gcn_status pk_load(gcn_ctx *ctx, const char *path, pk_file *f)
{
    memset(f, 0, sizeof *f);
    gcn_status st = read_file(ctx, path, f);
    vm m = {.ctx = ctx, .path = path, .f = f};
    bool stop = false;
    while (st == GCN_OK && !stop) {
        if (m.pos >= f->size) {
            st = bad(&m, "truncated (no STOP)");
            break;
        }
        int op = f->data[m.pos++];
        st = step(&m, op, &stop);
    }
    if (st == GCN_OK && (m.depth != 1 || m.stack[0]->kind == PK_MARK))
        st = bad(&m, "STOP without one value on the stack");
    if (st == GCN_OK)
        f->root = m.stack[0];
    free(m.stack);
    free(m.memo);
    if (st != GCN_OK)
        pk_free(f);
    return st;
}

void pk_free(pk_file *f)
{
    for (pk_value *v = f->values, *next; v; v = next) {
        next = v->next;
        if (v->kind == PK_GLOBAL)
            free((void *)v->bytes);
        free(v->items);
        free(v);
    }
    free(f->data);
    memset(f, 0, sizeof *f);
}

int pk_is(const pk_value *v, const char *name)
{
    if (v && v->kind == PK_OBJ)
        v = v->cls;
    return v && v->kind == PK_GLOBAL && strcmp((const char *)v->bytes, name) == 0;
}

const pk_value *pk_dict_get(const pk_value *d, const char *key)
{
    size_t n = strlen(key);
    for (size_t k = 0; d && d->kind == PK_DICT && k + 1 < d->n; k += 2) {
        const pk_value *kv = d->items[k];
        if (kv->kind == PK_BYTES && kv->len == n && memcmp(kv->bytes, key, n) == 0)
            return d->items[k + 1];
    }
    return NULL;
}

static bool small_int(const pk_value *v, int64_t lo, int64_t hi)
{
    return v && v->kind == PK_INT && v->i >= lo && v->i <= hi;
}

gcn_status pk_array_of(gcn_ctx *ctx, const char *what, const pk_value *v, pk_array *a)
{
    const pk_value *s = v && v->kind == PK_OBJ ? v->state : NULL;
    if (!pk_is(v, "numpy.core.multiarray._reconstruct") || !s || s->kind != PK_TUPLE ||
        s->n != 5 || s->items[1]->kind != PK_TUPLE || s->items[4]->kind != PK_BYTES)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: not a NumPy array", what);
    const pk_value *shape = s->items[1], *dtype = s->items[2], *raw = s->items[4];
    const pk_value *dargs = dtype->kind == PK_OBJ ? dtype->args : NULL;
    const pk_value *dstate = dtype->kind == PK_OBJ ? dtype->state : NULL;
    if (!pk_is(dtype, "numpy.dtype") || !dargs || dargs->n < 1 ||
        dargs->items[0]->kind != PK_BYTES || dargs->items[0]->len < 2 ||
        !dstate || dstate->kind != PK_TUPLE || dstate->n < 2 ||
        dstate->items[1]->kind != PK_BYTES || dstate->items[1]->len != 1)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: an array without a NumPy dtype", what);
    const unsigned char *code = dargs->items[0]->bytes;
    char order = (char)dstate->items[1]->bytes[0];
    a->type = (char)code[0];
    a->width = code[1] - '0';
    if (!strchr("iufb", a->type) || dargs->items[0]->len != 2 ||
        (a->width != 1 && a->width != 2 && a->width != 4 && a->width != 8) ||
        (a->type == 'f' && a->width < 4) || order == '>')
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: dtype %.*s%s is not read", what,
                         (int)dargs->items[0]->len, (const char *)code,
                         order == '>' ? " (big-endian)" : "");
    if (shape->n < 1 || shape->n > 2 || !small_int(shape->items[0], 0, INT32_MAX) ||
        (shape->n == 2 && !small_int(shape->items[1], 0, INT32_MAX)))
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: an array of 1 or 2 dimensions expected",
                         what);
    if (small_int(s->items[3], 1, 1))
        return GCN_ERROR(ctx, GCN_ERR_UNSUPPORTED, "%s: Fortran-ordered array", what);
    a->rows = shape->items[0]->i;
    a->cols = shape->n == 2 ? shape->items[1]->i : 1;
    if ((uint64_t)a->rows * (uint64_t)a->cols * (uint64_t)a->width != raw->len)
        return GCN_ERROR(ctx, GCN_ERR_FORMAT, "%s: %zu bytes of data for a %lld x %lld array",
                         what, raw->len, (long long)a->rows, (long long)a->cols);
    a->data = raw->bytes;
    return GCN_OK;
}

double pk_array_at(const pk_array *a, int64_t k)
{
    const unsigned char *p = a->data + (size_t)k * (size_t)a->width;
    uint64_t u = le(p, a->width);
    if (a->type == 'f' && a->width == 4) {
        float x;
        uint32_t w = (uint32_t)u;
        memcpy(&x, &w, sizeof x);
        return x;
    }
    if (a->type == 'f') {
        double x;
        memcpy(&x, &u, sizeof x);
        return x;
    }
    if (a->type == 'i' && a->width < 8 && (u >> (8 * a->width - 1)))
        u |= ~0ull << (8 * a->width);
    return a->type == 'i' ? (double)(int64_t)u : (double)u;
}
