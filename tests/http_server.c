/* The download tests' HTTP server (http_server.h). */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_server.h"

void http_add(http_server *s, const char *path, const void *data, size_t len)
{
    cr_assert_lt(s->n_files, 8);
    http_file *f = &s->files[s->n_files++];
    snprintf(f->path, sizeof f->path, "%s", path);
    f->data = malloc(len ? len : 1);
    cr_assert_not_null(f->data);
    memcpy(f->data, data, len);
    f->len = len;
}

static void send_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

/* Waits until the client closes the connection or the server stops. */
static void stall(http_server *s, int fd)
{
    char buf[256];
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->stop[0], .events = POLLIN}};
    while (poll(p, 2, -1) > 0 && !p[1].revents)
        if (recv(fd, buf, sizeof buf, 0) <= 0)
            return;
}

/* The request's head, up to the blank line; false when none came. */
static bool read_head(http_server *s, int fd, char *buf, size_t size)
{
    size_t len = 0;
    struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = s->stop[0], .events = POLLIN}};
    while (len + 1 < size && poll(p, 2, 5000) > 0 && !p[1].revents) {
        ssize_t n = recv(fd, buf + len, size - 1 - len, 0);
        if (n <= 0)
            return false;
        len += (size_t)n;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n"))
            return true;
    }
    return false;
}

static void respond(http_server *s, int fd, const char *head)
{
    char path[256] = "", out[512];
    if (sscanf(head, "GET %255s HTTP/1.1", path) != 1)
        return;
    atomic_fetch_add(&s->requests, 1);
    const char *range = strstr(head, "\r\nRange: bytes=");
    size_t from = range ? strtoull(range + 15, NULL, 10) : 0;
    if (range)
        atomic_fetch_add(&s->range_requests, 1);
    const http_file *f = NULL;
    for (int i = 0; i < s->n_files; i++)
        if (strcmp(s->files[i].path, path) == 0)
            f = &s->files[i];
    if (!f) {
        send_all(fd, out, (size_t)snprintf(out, sizeof out, "HTTP/1.1 404 Not Found\r\n"
                                           "Content-Length: 0\r\nConnection: close\r\n\r\n"));
        return;
    }
    if (s->mode == HTTP_HUGE || s->mode == HTTP_STALL) {
        send_all(fd, out, (size_t)snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Length: "
                                           "%llu\r\nConnection: close\r\n\r\n",
                                           s->mode == HTTP_HUGE ? 6000000000ull
                                                                : (unsigned long long)f->len));
        stall(s, fd);
        return;
    }
    if (from >= f->len && range) {
        send_all(fd, out, (size_t)snprintf(out, sizeof out, "HTTP/1.1 416 Range Not "
                                           "Satisfiable\r\nContent-Length: 0\r\nConnection: "
                                           "close\r\n\r\n"));
        return;
    }
    int n = range ? snprintf(out, sizeof out, "HTTP/1.1 206 Partial Content\r\nContent-Range: "
                             "bytes %zu-%zu/%zu\r\nContent-Length: %zu\r\nConnection: "
                             "close\r\n\r\n", from, f->len - 1, f->len, f->len - from)
                  : snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                             "Connection: close\r\n\r\n", f->len);
    send_all(fd, out, (size_t)n);
    size_t len = f->len - from;
    if (s->mode == HTTP_CUT_ONCE && !s->cut_done && !range) {
        s->cut_done = true;
        len = s->cut_at;
    }
    send_all(fd, f->data + from, len);
}

static void *serve(void *arg)
{
    http_server *s = arg;
    struct pollfd p[2] = {{.fd = s->fd, .events = POLLIN}, {.fd = s->stop[0], .events = POLLIN}};
    char head[4096];
    while (poll(p, 2, -1) > 0 && !p[1].revents) {
        int fd = accept(s->fd, NULL, NULL);
        if (fd < 0)
            continue;
        if (read_head(s, fd, head, sizeof head))
            respond(s, fd, head);
        shutdown(fd, SHUT_WR);
        close(fd);
    }
    return NULL;
}

void http_start(http_server *s, http_mode mode)
{
    s->mode = mode;
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(s->fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(s->fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(s->fd, 8), 0);
    socklen_t len = sizeof a;
    cr_assert_eq(getsockname(s->fd, (struct sockaddr *)&a, &len), 0);
    s->port = ntohs(a.sin_port);
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
    cr_assert_eq(pipe(s->stop), 0);
    cr_assert_eq(pthread_create(&s->thread, NULL, serve, s), 0);
}

void http_stop(http_server *s)
{
    cr_assert_eq(write(s->stop[1], "x", 1), 1);
    pthread_join(s->thread, NULL);
    close(s->fd);
    close(s->stop[0]);
    close(s->stop[1]);
    for (int i = 0; i < s->n_files; i++)
        free(s->files[i].data);
    s->n_files = 0;
}
