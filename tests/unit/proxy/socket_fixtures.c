/* socket_fixtures.c: see socket_fixtures.h. */
#include "socket_fixtures.h"

#include <unistd.h>

int fx_read_exact(int fd, uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int fx_read_frame(int fd, uint8_t *buf, size_t cap, uint32_t *len)
{
    uint8_t sz[4];
    if (fx_read_exact(fd, sz, 4) < 0)
        return -1;
    *len = fx_get32(sz);
    if (*len > cap)
        return -1;
    return fx_read_exact(fd, buf, *len);
}

void fx_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

uint32_t fx_get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
