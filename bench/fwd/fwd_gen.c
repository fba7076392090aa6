/*
 * fwd_gen: the load generator of the forwarding benchmark. It keeps CONNS
 * connections, each with DEPTH requests in flight, every request a Produce v8
 * frame (acks=-1, so a proxy expects an answer) of SIZE bytes in all. When an
 * answer arrives (matched in order, by correlation id), the next request goes.
 * After WARMUP seconds it measures for SECONDS and prints one JSON line:
 * request bytes per second, requests per second, latency percentiles, and
 * all_bytes: request and answer bytes of the whole run (for CPU per GB).
 *
 *   fwd_gen --connect HOST:PORT [--conns N] [--depth D] [--size S]
 *           [--seconds T] [--warmup W] [--requests R]
 *
 * With --requests R the run ends after R answers (a fixed workload, for
 * profiling), or after T seconds, whichever comes first; no warmup then.
 *
 * Single-threaded, epoll. Exit code 1 when a connection fails.
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

#define PROG       "fwd_gen"
#define READ_CHUNK (64 * 1024)
#define MAX_LAT    (50 * 1000 * 1000)

typedef struct {
    int fd;
    uint32_t events;
    int32_t next_corr;
    int32_t expect_corr;
    double *sent_at; /* ring of DEPTH send times, oldest at head */
    int head, inflight;
    ka_fwd_buf_t in, out;
} conn_t;

static struct {
    int conns, depth;
    uint32_t size;
    double seconds, warmup;
    uint64_t max_requests; /* 0: no limit */
    uint64_t answered;
    uint8_t *templ; /* one request frame; the correlation id is patched per request */
    double t_start, t_stop;
    uint64_t reqs, bytes;
    uint64_t all_bytes; /* request and answer bytes of the whole run, warmup included */
    double *lat;
    size_t nlat;
} g = {.conns = 4, .depth = 8, .size = 1024, .seconds = 5, .warmup = 1};

/* A Produce v8 request of g.size bytes: header v1, null transactional id,
 * acks -1, one topic with one partition whose record set fills the rest. */
static void build_template(void)
{
    static const uint8_t head[] = {
        0,    0,    0,    0,                               /* size, patched */
        0,    0,    0,    8,                               /* api key 0 (Produce), version 8 */
        0,    0,    0,    0,                               /* correlation id, patched per request */
        0,    3,    'g',  'e',  'n',                       /* client id */
        0xff, 0xff,                                        /* transactional id: null */
        0xff, 0xff,                                        /* acks -1 */
        0,    0,    0x75, 0x30,                            /* timeout 30000 ms */
        0,    0,    0,    1,                               /* one topic */
        0,    5,    'b',  'e',  'n', 'c', 'h', 0, 0, 0, 1, /* one partition */
        0,    0,    0,    0,                               /* index 0 */
        0,    0,    0,    0,                               /* record set size, patched */
    };
    if (g.size < sizeof(head)) {
        fprintf(stderr, "%s: --size must be at least %zu\n", PROG, sizeof(head));
        exit(2);
    }
    g.templ = calloc(1, g.size);
    memcpy(g.templ, head, sizeof(head));
    ka_fwd_put_u32(g.templ, g.size - 4);
    ka_fwd_put_u32(g.templ + sizeof(head) - 4, (uint32_t)(g.size - sizeof(head)));
}

static void send_one(conn_t *c, double now)
{
    uint8_t *f = ka_fwd_buf_append(&c->out, g.templ, g.size);
    ka_fwd_put_u32(f + 8, (uint32_t)c->next_corr++);
    c->sent_at[(c->head + c->inflight) % g.depth] = now;
    c->inflight++;
}

/* One answer came: record it, send the next request. */
static int on_answer(conn_t *c, int32_t corr, uint64_t answer_bytes, double now)
{
    if (c->inflight == 0 || corr != c->expect_corr) {
        fprintf(stderr, "%s: answer with correlation id %d, expected %d\n", PROG, corr,
                c->expect_corr);
        return -1;
    }
    c->expect_corr++;
    double sent = c->sent_at[c->head];
    c->head = (c->head + 1) % g.depth;
    c->inflight--;
    g.all_bytes += g.size + answer_bytes;
    g.answered++;
    if (now >= g.t_start && now < g.t_stop) {
        g.reqs++;
        g.bytes += g.size;
        if (g.nlat < MAX_LAT)
            g.lat[g.nlat++] = now - sent;
    }
    send_one(c, now);
    return 0;
}

static int on_readable(conn_t *c)
{
    for (;;) {
        long n = ka_fwd_read(c->fd, &c->in, READ_CHUNK);
        if (n <= 0)
            return (int)n;
        double now = ka_fwd_now();
        while (c->in.len - c->in.off >= 8) {
            const uint8_t *f = c->in.data + c->in.off;
            uint64_t total = 4 + (uint64_t)ka_fwd_get_u32(f);
            if (c->in.len - c->in.off < total)
                break;
            if (on_answer(c, (int32_t)ka_fwd_get_u32(f + 4), total, now) < 0)
                return -1;
            c->in.off += (size_t)total;
        }
        if (n < READ_CHUNK)
            return 0;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(double p)
{
    if (g.nlat == 0)
        return 0;
    size_t i = (size_t)(p * (double)(g.nlat - 1) + 0.5);
    return g.lat[i] * 1e6;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s --connect HOST:PORT [--conns N] [--depth D] [--size S] [--seconds T] "
            "[--warmup W] [--requests R]\n",
            PROG);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *target = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "--connect") == 0)
            target = argv[++i];
        else if (strcmp(argv[i], "--conns") == 0)
            g.conns = atoi(argv[++i]);
        else if (strcmp(argv[i], "--depth") == 0)
            g.depth = atoi(argv[++i]);
        else if (strcmp(argv[i], "--size") == 0)
            g.size = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--seconds") == 0)
            g.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--warmup") == 0)
            g.warmup = atof(argv[++i]);
        else if (strcmp(argv[i], "--requests") == 0)
            g.max_requests = strtoull(argv[++i], NULL, 10);
        else
            usage();
    }
    if (target == NULL || g.conns < 1 || g.depth < 1 || g.seconds <= 0 || g.warmup < 0)
        usage();
    signal(SIGPIPE, SIG_IGN);
    build_template();
    g.lat = malloc(sizeof(double) * MAX_LAT);

    struct sockaddr_storage ss;
    socklen_t sl;
    ka_fwd_parse_addr(PROG, target, &ss, &sl);
    int ep = epoll_create1(0);
    conn_t *cs = calloc((size_t)g.conns, sizeof(conn_t));
    double now = ka_fwd_now();
    if (g.max_requests > 0)
        g.warmup = 0;
    g.t_start = now + g.warmup;
    g.t_stop = g.t_start + g.seconds;
    for (int i = 0; i < g.conns; i++) {
        conn_t *c = &cs[i];
        c->fd = socket(AF_INET, SOCK_STREAM, 0);
        if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&ss, sl) < 0)
            ka_fwd_die(PROG, target);
        ka_fwd_nonblock(c->fd);
        c->sent_at = calloc((size_t)g.depth, sizeof(double));
        c->events = EPOLLIN | EPOLLOUT;
        struct epoll_event ev = {.events = c->events, .data.ptr = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
        for (int d = 0; d < g.depth; d++)
            send_one(c, now);
    }

    struct epoll_event evs[64];
    while ((now = ka_fwd_now()) < g.t_stop &&
           (g.max_requests == 0 || g.answered < g.max_requests)) {
        int n = ka_fwd_wait(PROG, ep, evs, 64, 100);
        for (int i = 0; i < n; i++) {
            conn_t *c = evs[i].data.ptr;
            if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && on_readable(c) < 0) {
                fprintf(stderr, "%s: connection %d failed\n", PROG, (int)(c - cs));
                return 1;
            }
            if (ka_fwd_flush(c->fd, &c->out) < 0)
                ka_fwd_die(PROG, "write");
            uint32_t want = EPOLLIN | (c->out.len ? EPOLLOUT : 0u);
            if (want != c->events) {
                struct epoll_event ev = {.events = want, .data.ptr = c};
                epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                c->events = want;
            }
        }
    }

    if (now < g.t_stop)
        g.seconds = now - g.t_start;
    qsort(g.lat, g.nlat, sizeof(double), cmp_double);
    printf("{\"conns\": %d, \"depth\": %d, \"size\": %u, \"seconds\": %.3f, \"requests\": %llu, "
           "\"bytes_per_s\": %.0f, \"requests_per_s\": %.0f, \"p50_us\": %.1f, \"p99_us\": %.1f, "
           "\"p999_us\": %.1f, \"all_bytes\": %llu}\n",
           g.conns, g.depth, g.size, g.seconds, (unsigned long long)g.reqs,
           (double)g.bytes / g.seconds, (double)g.reqs / g.seconds, pct(0.50), pct(0.99),
           pct(0.999), (unsigned long long)g.all_bytes);
    return 0;
}
