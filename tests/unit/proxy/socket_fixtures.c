/* socket_fixtures.c: see socket_fixtures.h. */
#include "socket_fixtures.h"

#include <pthread.h>
#include <stdio.h>
#include <uv.h>

#include "ka_config.h"
#include "ka_log.h"
#include "ka_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
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

int fx_listen_loopback(uint16_t *port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t salen = sizeof(sa);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 8) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &salen) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

void fx_serve_each(int listen_fd, void *(*conn)(void *))
{
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            return;
        pthread_t t;
        pthread_create(&t, NULL, conn, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
}

int fx_dial_loopback(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

void fx_proxy_config(struct ka_config *cfg, uint16_t broker_port)
{
    ka_config_defaults(cfg);
    cfg->log_level = KA_LOG_ERROR;
    snprintf(cfg->upstream.host, sizeof(cfg->upstream.host), "127.0.0.1");
    cfg->upstream.port = broker_port;
    snprintf(cfg->listen.host, sizeof(cfg->listen.host), "127.0.0.1");
    cfg->listen.port = 0;
    ka_log_setup(cfg->log_level, cfg->log_format);
}

void fx_run_proxy(struct uv_loop_s *loop, struct ka_server *srv, int broker_listen_fd,
                  void *(*broker_main)(void *), void *(*client_main)(void *))
{
    pthread_t broker, client;
    pthread_create(&broker, NULL, broker_main, NULL);
    pthread_create(&client, NULL, client_main, NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    ka_server_close(srv);
    pthread_join(client, NULL);
    shutdown(broker_listen_fd, SHUT_RDWR);
    close(broker_listen_fd);
    pthread_join(broker, NULL);
}

int fx_proxy_free(struct uv_loop_s *loop, struct ka_server *srv)
{
    int leaked = ka_pool_used_bytes(ka_server_pool(srv)) != 0;
    int open = uv_loop_close(loop) != 0;
    ka_server_free(srv);
    return leaked || open ? -1 : 0;
}
