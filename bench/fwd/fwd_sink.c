/*
 * fwd_sink: a Kafka-shaped echo server for the forwarding benchmark. It
 * accepts connections and answers every request frame with a response frame
 * carrying the request's correlation id and RESP_BYTES of zeroes after it.
 * It never decodes more than the frame size and the correlation id.
 *
 *   fwd_sink --listen HOST:PORT [--response-bytes N]
 *
 * Runs until killed. Single-threaded, epoll.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "fwd_common.h"

#define PROG       "fwd_sink"
#define READ_CHUNK (256 * 1024)

typedef struct {
    int fd;
    uint32_t events; /* what epoll waits for now */
    ka_fwd_buf_t in, out;
} conn_t;

static void conn_close(int ep, conn_t *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in.data);
    free(c->out.data);
    free(c);
}

/* Answers every whole frame in c->in. */
static void answer(conn_t *c, uint32_t resp_bytes)
{
    ka_fwd_buf_t *b = &c->in;
    while (b->len - b->off >= 12) {
        const uint8_t *f = b->data + b->off;
        uint64_t total = 4 + (uint64_t)ka_fwd_get_u32(f);
        if (b->len - b->off < total)
            break;
        uint8_t *r = ka_fwd_buf_append(&c->out, NULL, 8 + (size_t)resp_bytes);
        ka_fwd_put_u32(r, 4 + resp_bytes);
        memcpy(r + 4, f + 8, 4); /* correlation id */
        b->off += (size_t)total;
    }
    if (b->off == b->len)
        b->off = b->len = 0;
}

/* Reads what is there; returns -1 when the connection is done. */
static int on_readable(conn_t *c, uint32_t resp_bytes)
{
    for (;;) {
        long n = ka_fwd_read(c->fd, &c->in, READ_CHUNK);
        if (n <= 0)
            return (int)n;
        answer(c, resp_bytes);
        if (n < READ_CHUNK)
            return 0;
    }
}

int main(int argc, char **argv)
{
    const char *listen_at = NULL;
    uint32_t resp_bytes = 64;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc)
            listen_at = argv[++i];
        else if (strcmp(argv[i], "--response-bytes") == 0 && i + 1 < argc)
            resp_bytes = (uint32_t)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: %s --listen HOST:PORT [--response-bytes N]\n", PROG);
            return 2;
        }
    }
    if (listen_at == NULL) {
        fprintf(stderr, "%s: --listen is required\n", PROG);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    struct sockaddr_storage ss;
    socklen_t sl;
    ka_fwd_parse_addr(PROG, listen_at, &ss, &sl);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&ss, sl) < 0 || listen(lfd, 128) < 0)
        ka_fwd_die(PROG, listen_at);
    ka_fwd_nonblock(lfd);

    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
    struct epoll_event evs[64];
    for (;;) {
        int n = ka_fwd_wait(PROG, ep, evs, 64, -1);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept(lfd, NULL, NULL)) >= 0) {
                    ka_fwd_nonblock(fd);
                    c = calloc(1, sizeof(*c));
                    c->fd = fd;
                    c->events = EPOLLIN;
                    struct epoll_event ce = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ce);
                }
                continue;
            }
            int dead = (evs[i].events & EPOLLIN) && on_readable(c, resp_bytes) < 0;
            if (!dead && ka_fwd_flush(c->fd, &c->out) < 0)
                dead = 1;
            if (dead) {
                conn_close(ep, c);
                continue;
            }
            /* Stop reading while answers are stuck: back-pressure, as a broker does. */
            uint32_t want = c->out.len ? EPOLLOUT : EPOLLIN;
            if (want != c->events) {
                struct epoll_event ce = {.events = want, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ce);
                c->events = want;
            }
        }
    }
}
