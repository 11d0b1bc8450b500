/* A reader of the Python pickles Planetoid ships (protocol 2: NumPy
 * arrays, SciPy CSR matrices, a defaultdict of lists) into a tree of
 * values; only the opcodes those files use, no code run.  Not installed. */
#ifndef GCN_DATASETS_PICKLE_H
#define GCN_DATASETS_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "../core/internal.h"

typedef enum pk_kind {
    PK_NONE, PK_INT, PK_FLOAT, PK_BYTES, PK_GLOBAL, PK_TUPLE, PK_LIST, PK_DICT, PK_OBJ, PK_MARK
} pk_kind;

typedef struct pk_value pk_value;
struct pk_value {
    pk_kind kind;
    int64_t i;                   /* PK_INT (bools too) */
    double f;                    /* PK_FLOAT */
    const unsigned char *bytes;  /* PK_BYTES: into the file; PK_GLOBAL: "module.name" */
    size_t len;
    pk_value **items;            /* PK_TUPLE, PK_LIST; PK_DICT: key, value, key, value ... */
    size_t n, cap;
    pk_value *cls, *args, *state; /* PK_OBJ: what REDUCE or NEWOBJ built, BUILD's state */
    pk_value *next;              /* every value of a pickle, for freeing */
};

/* A file's contents and the values read from it. */
typedef struct pk_file {
    unsigned char *data;
    size_t size;
    pk_value *values; /* the chain of every value */
    pk_value *root;   /* what STOP returned */
} pk_file;

/* Reads and unpickles path; errors name the file and the byte offset. */
gcn_status pk_load(gcn_ctx *ctx, const char *path, pk_file *f);
void pk_free(pk_file *f);

/* A dict's value for a string key, or NULL. */
const pk_value *pk_dict_get(const pk_value *d, const char *key);

/* Whether v is a PK_GLOBAL, or a PK_OBJ made by one, named name. */
int pk_is(const pk_value *v, const char *name);

/* A NumPy array: shape, element type and the raw little-endian data. */
typedef struct pk_array {
    int64_t rows, cols;   /* a vector has cols 1 */
    char type;            /* 'i' signed, 'u' unsigned, 'f' float, 'b' bool */
    int width;            /* bytes an element */
    const unsigned char *data;
} pk_array;

/* v as an array (numpy.core.multiarray._reconstruct with its state); what
 * names it in errors. */
gcn_status pk_array_of(gcn_ctx *ctx, const char *what, const pk_value *v, pk_array *a);

/* Element k (row-major) as a double. */
double pk_array_at(const pk_array *a, int64_t k);

#endif
