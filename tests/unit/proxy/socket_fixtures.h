/*
 * socket_fixtures.h: blocking socket and byte helpers for the relay tests,
 * whose fake brokers and clients run on plain threads beside the loop.
 */
#ifndef SOCKET_FIXTURES_H
#define SOCKET_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

/* Reads exactly n bytes; -1 on EOF or error. */
int fx_read_exact(int fd, uint8_t *p, size_t n);
/* Reads one size-prefixed frame (without its prefix) of at most cap bytes. */
int fx_read_frame(int fd, uint8_t *buf, size_t cap, uint32_t *len);
void fx_put32(uint8_t *p, uint32_t v);
/* A listening socket on 127.0.0.1 with a port of the kernel's choice; -1 on error. */
int fx_listen_loopback(uint16_t *port);
/* Accepts on listen_fd until it fails, each connection on a detached thread
 * that runs conn with the descriptor (as an intptr_t). */
void fx_serve_each(int listen_fd, void *(*conn)(void *));
/* A connected socket to 127.0.0.1:port; -1 on error. */
int fx_dial_loopback(int port);
uint32_t fx_get32(const uint8_t *p);

struct ka_config;
/* The defaults, quiet logs, listening on 127.0.0.1 (kernel's port) in front of
 * 127.0.0.1:broker_port. */
void fx_proxy_config(struct ka_config *cfg, uint16_t broker_port);
struct ka_server;
struct uv_loop_s;
/* Runs the proxy's loop beside a fake broker thread and a client thread until
 * the client's SIGTERM has drained it; then closes the server and joins both. */
void fx_run_proxy(struct uv_loop_s *loop, struct ka_server *srv, int broker_listen_fd,
                  void *(*broker_main)(void *), void *(*client_main)(void *));
/* After fx_run_proxy: 0 when the pool is empty and the loop closes; frees the server. */
int fx_proxy_free(struct uv_loop_s *loop, struct ka_server *srv);

#endif
