/* Status codes returned by every fallible gcn function, and the error
 * message a context keeps for the last failure. */
#ifndef GCN_STATUS_H
#define GCN_STATUS_H

/* Marks the library's public functions: the shared library is built with
 * hidden visibility, so only declarations carrying GCN_API are exported
 * (`make check-abi` holds it to that). */
#if defined(__GNUC__)
#define GCN_API __attribute__((visibility("default")))
#else
#define GCN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum gcn_status {
    GCN_OK = 0,
    GCN_ERR_INVALID_ARG,  /* NULL pointer, negative size, bad option value */
    GCN_ERR_SHAPE,        /* tensor shapes do not fit the operation */
    GCN_ERR_DEVICE,       /* operands live on different devices, or the device is unusable */
    GCN_ERR_NOMEM,        /* host or device allocation failed */
    GCN_ERR_IO,           /* a file could not be opened, read or written */
    GCN_ERR_FORMAT,       /* input data is malformed (names file and line) */
    GCN_ERR_CUDA,         /* a CUDA, cuBLAS or cuSPARSE call failed */
    GCN_ERR_UNSUPPORTED,  /* valid request that this build or backend cannot do */
    GCN_ERR_NOT_FOUND,    /* a named thing (kernel, dataset, key) does not exist */
    GCN_ERR_NUMERIC,      /* NaN or Inf where a finite value is required */
    GCN_ERR_STATE,        /* call out of order, e.g. backward with no tape */
    GCN_ERR_DTYPE         /* a tensor's dtype is not one the operation takes */
} gcn_status;

/* A static, human-readable name for a status ("shape mismatch", ...). */
GCN_API const char *gcn_status_str(gcn_status st);

#ifdef __cplusplus
}
#endif
#endif
