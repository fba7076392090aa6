/*
 * fwd_common.h: helpers shared by the frame-level forwarding benchmark tools
 * (fwd_gen, fwd_sink). Kafka frames: a 4-byte big-endian size, then the body.
 */
#ifndef KA_FWD_COMMON_H
#define KA_FWD_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/socket.h>

/* Grows as needed; bytes [off, len) are pending. */
typedef struct {
    uint8_t *data;
    size_t off, len, cap;
} ka_fwd_buf_t;

double ka_fwd_now(void);
uint32_t ka_fwd_get_u32(const uint8_t *p);
void ka_fwd_put_u32(uint8_t *p, uint32_t v);
/* Appends n bytes (src may be NULL: zeroes); returns where they went. */
uint8_t *ka_fwd_buf_append(ka_fwd_buf_t *b, const void *src, size_t n);
/* Makes room for n more bytes after len; returns where they would go. */
uint8_t *ka_fwd_buf_reserve(ka_fwd_buf_t *b, size_t n);
/* Drops consumed bytes from the front so the buffer does not grow forever. */
void ka_fwd_buf_compact(ka_fwd_buf_t *b);
/* Writes pending bytes; returns 0, or -1 when the connection failed. */
int ka_fwd_flush(int fd, ka_fwd_buf_t *b);
/* Reads up to chunk bytes into b; returns the count, 0 when nothing is there
 * now, or -1 when the connection is closed or failed. */
long ka_fwd_read(int fd, ka_fwd_buf_t *b, size_t chunk);
/* epoll_wait that retries on EINTR and exits on other errors. */
int ka_fwd_wait(const char *prog, int ep, struct epoll_event *evs, int max, int timeout_ms);
/* Parses HOST:PORT into an IPv4 address; exits on error. */
void ka_fwd_parse_addr(const char *prog, const char *s, struct sockaddr_storage *ss,
                       socklen_t *len);
void ka_fwd_nonblock(int fd);
void ka_fwd_die(const char *prog, const char *what);

#endif
