/* A minimal HTTP/1.1 file server on 127.0.0.1 for the download tests: GET
 * with "Range: bytes=N-", one request a connection, a request counter, and
 * misbehaviours on demand (a connection cut off once, a stall, an absurd
 * Content-Length).  Test code only; it runs on a thread of the test. */
#ifndef GCN_TEST_HTTP_SERVER_H
#define GCN_TEST_HTTP_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum http_mode {
    HTTP_NORMAL,
    HTTP_CUT_ONCE, /* the first full response stops after cut_at bytes of body */
    HTTP_STALL,    /* headers, then nothing until the client leaves */
    HTTP_HUGE      /* Content-Length 6,000,000,000, then a stall */
} http_mode;

typedef struct http_file {
    char path[128];
    unsigned char *data;
    size_t len;
} http_file;

typedef struct http_server {
    int fd, port, stop[2];
    pthread_t thread;
    http_mode mode;
    size_t cut_at;
    bool cut_done;
    http_file files[8];
    int n_files;
    atomic_int requests, range_requests;
    char url[64]; /* "http://127.0.0.1:PORT" */
} http_server;

/* Serves path (e.g. "/ogb/arxiv.zip"); the bytes are copied. */
void http_add(http_server *s, const char *path, const void *data, size_t len);

/* Listens on a free port and serves on a thread; the test fails if it cannot. */
void http_start(http_server *s, http_mode mode);

/* Stops the thread and frees the files. */
void http_stop(http_server *s);

#endif
