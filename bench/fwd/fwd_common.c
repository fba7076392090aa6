/* fwd_common.c: see fwd_common.h. */
#include "fwd_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int would_block(void)
{
    return errno == EAGAIN || errno == EWOULDBLOCK;
}

double ka_fwd_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint32_t ka_fwd_get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void ka_fwd_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

void ka_fwd_die(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
    exit(1);
}

void ka_fwd_buf_compact(ka_fwd_buf_t *b)
{
    if (b->off == 0)
        return;
    if (b->off < b->len)
        memmove(b->data, b->data + b->off, b->len - b->off);
    b->len -= b->off;
    b->off = 0;
}

uint8_t *ka_fwd_buf_reserve(ka_fwd_buf_t *b, size_t n)
{
    if (b->len + n > b->cap) {
        ka_fwd_buf_compact(b);
        if (b->len + n > b->cap) {
            size_t cap = b->cap ? b->cap : 65536;
            while (cap < b->len + n)
                cap *= 2;
            uint8_t *d = realloc(b->data, cap);
            if (d == NULL) {
                fprintf(stderr, "out of memory\n");
                exit(1);
            }
            b->data = d;
            b->cap = cap;
        }
    }
    return b->data + b->len;
}

uint8_t *ka_fwd_buf_append(ka_fwd_buf_t *b, const void *src, size_t n)
{
    uint8_t *at = ka_fwd_buf_reserve(b, n);
    if (src != NULL)
        memcpy(at, src, n);
    else
        memset(at, 0, n);
    b->len += n;
    return at;
}

int ka_fwd_flush(int fd, ka_fwd_buf_t *b)
{
    while (b->off < b->len) {
        ssize_t n = write(fd, b->data + b->off, b->len - b->off);
        if (n > 0)
            b->off += (size_t)n;
        else if (n < 0 && errno == EINTR)
            continue;
        else
            return n < 0 && would_block() ? 0 : -1;
    }
    b->off = b->len = 0;
    return 0;
}

long ka_fwd_read(int fd, ka_fwd_buf_t *b, size_t chunk)
{
    ka_fwd_buf_compact(b);
    for (;;) {
        ssize_t n = read(fd, ka_fwd_buf_reserve(b, chunk), chunk);
        if (n > 0) {
            b->len += (size_t)n;
            return (long)n;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && would_block() ? 0 : -1;
    }
}

int ka_fwd_wait(const char *prog, int ep, struct epoll_event *evs, int max, int timeout_ms)
{
    for (;;) {
        int n = epoll_wait(ep, evs, max, timeout_ms);
        if (n >= 0)
            return n;
        if (errno != EINTR)
            ka_fwd_die(prog, "epoll_wait");
    }
}

void ka_fwd_parse_addr(const char *prog, const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[64];
    const char *colon = strrchr(s, ':');
    if (colon == NULL || (size_t)(colon - s) >= sizeof(host)) {
        fprintf(stderr, "%s: bad address %s (want HOST:PORT)\n", prog, s);
        exit(2);
    }
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    memset(ss, 0, sizeof(*ss));
    in->sin_family = AF_INET;
    in->sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &in->sin_addr) != 1) {
        fprintf(stderr, "%s: bad IPv4 address %s\n", prog, host);
        exit(2);
    }
    *len = sizeof(*in);
}

void ka_fwd_nonblock(int fd)
{
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}
