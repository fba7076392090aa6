/*
 * ka_proxy_internal.h: the data path's own structs and the calls between
 * its files. Only the .c files of proxy/ include it; other folders see ka_proxy.h.
 *
 * One ka_server per process owns the loop's handles, the memory pool, the
 * metrics and the list of sessions. One ka_session per client connection
 * owns its two legs (client and upstream), its in-flight queue and its
 * timer; it is freed only after the close callbacks of all three handles
 * have fired.
 *
 * Calls go one way, from the top down:
 *
 *   ka_listener.c     the server: accept, signals, drain
 *   ka_reclaim.c      while memory is short, closes clients that read nothing
 *   ka_session.c      one connection's life: connect, read, half-close, close
 *   ka_session_tls.c  the session's transport when TLS is on
 *   ka_session_auth.c who the client is: its SASL name or certificate subject
 *   ka_relay.c        frames: route, hold, handlers, in-flight matching
 *   ka_output.c       writes
 *   ka_splice.c       large pass-through bodies socket to socket (splice(2))
 *   ka_leg.c          when a socket reads, and resumes after a pause
 *
 * A lower file that must tell an upper one something does it through a
 * callback the upper one installed: a session's ka_session_events_t
 * (close, advance), a leg's read_cb, resume_cb and flush_cb, the server's
 * on_starved (a leg waits for memory), a session's
 * closed_cb to the listener.
 */
#ifndef KA_PROXY_INTERNAL_H
#define KA_PROXY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <uv.h>

#include "ka_frame.h"
#include "ka_inflight.h"
#include "ka_log.h"
#include "ka_proxy.h"
#include "ka_sasl_principal.h"
#include "ka_transport.h"

/* At most this many connections are accepted per loop turn, so a burst of
 * connects cannot starve the sessions already running. */
#define KA_ACCEPTS_PER_TURN 32
/* A leg stops reading while its peer has more than HIGH bytes queued for
 * writing, and resumes below LOW. Each session then pins at most about
 * HIGH + one read buffer per direction, however slow its client. */
#define KA_WRITE_HIGH_WATERMARK (512 * 1024)
#define KA_WRITE_LOW_WATERMARK  (128 * 1024)
/* The reserved share of --buffer-memory for frames buffered whole. */
#define KA_POOL_RESERVED_PERCENT 10
/* An upstream that neither accepts nor refuses in this time is given up. */
#define KA_CONNECT_TIMEOUT_MS 10000
/* The body remainder of a pass-through frame at least this large is spliced
 * (ka_splice.c); below it two copies cost less than the extra calls. */
#define KA_SPLICE_MIN (16 * 1024)
/* After a large pass-through frame the next read is this small, so that it
 * takes the next header and not most of the next body. */
#define KA_SPLICE_HEADER_READ 1024
/* Write requests kept for reuse, so steady traffic does not malloc them. */
#define KA_WREQ_CACHE 1024
#define KA_WREQ_BUFS  8

typedef struct ka_leg ka_leg_t;

/* One uv_write of up to KA_WREQ_BUFS slices of pool buffers. */
typedef struct ka_wreq {
    uv_write_t req;
    struct ka_wreq *next_free; /* link in the server's cache */
    ka_leg_t *leg;             /* the leg written to */
    uint32_t nbufs;
    size_t bytes;
    uv_buf_t bufs[KA_WREQ_BUFS];
    ka_pbuf_t *pbufs[KA_WREQ_BUFS]; /* one reference each, dropped in the write callback */
} ka_wreq_t;

/* What happens to the bytes of the frame a leg is currently reading. */
enum ka_frame_route {
    KA_ROUTE_PASS = 0, /* written to the peer from the read buffer */
    KA_ROUTE_HOLD,     /* copied into a whole-frame buffer for a handler */
    KA_ROUTE_DISCARD,  /* an oversize held request: read and dropped, answered locally */
};

/* Reasons a leg is not reading; reading resumes when all are clear. */
enum ka_leg_pause {
    KA_PAUSE_BACKPRESSURE = 1 << 0, /* the peer's writes are backed up */
    KA_PAUSE_POOL = 1 << 1,         /* waiting for pool memory */
    KA_PAUSE_SASL = 1 << 2,         /* waiting for the SaslHandshake v0 answer */
    KA_PAUSE_DRAIN = 1 << 3,        /* shutting down: no new requests */
    KA_PAUSE_DEFER = 1 << 4,        /* a held request waits for its handler (DEFER) */
    KA_PAUSE_TLS = 1 << 5,          /* client leg: the upstream TLS handshake is not done */
    KA_PAUSE_INFLIGHT = 1 << 6,     /* --max-inflight requests await their responses */
    KA_PAUSE_ROUTE = 1 << 7,        /* client leg, gateway SNI mode: the upstream is not chosen */
};

struct ka_leg {
    uv_tcp_t tcp;
    ka_session_t *session;
    ka_leg_t *peer;
    int is_client;           /* the client leg reads requests, the upstream leg responses */
    ka_splitter_t splitter;  /* frames in the bytes this leg reads */
    ka_pool_waiter_t waiter; /* queued on the pool while KA_PAUSE_POOL */
    unsigned pause;          /* ka_leg_pause bits */
    int reading;             /* uv_read_start is in effect */
    int eof;                 /* the peer of this socket sent FIN */
    int shut;                /* we asked for a FIN (uv_shutdown) */
    int shut_done;           /* ... and it was sent */
    int open;                /* the handle is initialised and not yet closing */

    /* Installed by the session: what a read delivers to, and what runs when
     * a pause has cleared (from the server's resume idle handle). */
    uv_read_cb read_cb;
    void (*resume_cb)(ka_leg_t *leg);
    /* Installed by a transport that writes the leg's assembled output itself
     * (TLS encrypts it); NULL on a plaintext leg, which writes the slices. */
    void (*flush_cb)(ka_leg_t *leg);

    /* Bytes of a read not yet processed, kept while the leg is paused for
     * memory or a SASL answer; processed before the next read. */
    ka_pbuf_t *parked;
    uint32_t parked_off, parked_len;

    /* The frame being buffered whole (route HOLD). */
    enum ka_frame_route route;
    ka_pbuf_t *hold; /* grows as the frame's bytes arrive; NULL until the first memory */
    size_t hold_len, hold_total;
    uint64_t hold_started_ms; /* client leg: loop time of the held request's header */
    ka_pbuf_t *hold_prefix;   /* header bytes waiting for `hold` to be allocated */
    uint32_t hold_prefix_off, hold_prefix_len;
    ka_frame_header_t hold_hdr; /* the request's header, slices cleared */
    int hold_raw_token;         /* the held frame is a raw SASL token, read for its name */
    /* A whole frame whose handler said DEFER (a client's request, or on the
     * upstream leg a response); runs again once woken. */
    ka_pbuf_t *deferred;
    size_t deferred_len;
    int16_t deferred_api_key; /* whose intercept entry deferred it */
    int deferred_woken;
    int deferred_rounds; /* times the held frame was decided again after a DEFER */

    /* Links in the server's resume list: resumes triggered from inside
     * another callback (pool release, SASL answer) run from an idle handle,
     * never re-entrantly. */
    ka_leg_t *resume_next, *resume_prev;
    int resume_queued;
    int handshake_failed;   /* the SaslHandshake v0 answer carried an error */
    int frame_is_handshake; /* the request being read is SaslHandshake v0 */
    /* Client leg: 1 + (api key << 16 | version) of the last request whose key
     * was known and whose version kadmit decodes or does not judge; 0 none. */
    uint32_t checked_key_version;

    /* TLS (ka_session_tls.c); a plaintext leg has tls == NULL and nothing else changes. */
    ka_transport_t *tls;
    int tls_more;        /* decrypted bytes wait in the engine: drain them before reading */
    int tls_checked;     /* the first bytes were checked for a plaintext client */
    int tls_established; /* the handshake completed (logged and counted once) */

    /* splice(2) of pass-through bodies (ka_splice.c); bits, so that they
     * fit in the padding before `out` and an idle connection costs nothing more. */
    unsigned char splice_due : 1;  /* alloc_cb chose to splice: the UV_ENOBUFS after is its cue */
    unsigned char splice_skip : 1; /* the last splice moved nothing: the next read is a plain one */
    unsigned char splice_off : 1;  /* the kernel refused splice on this leg's sockets */
    unsigned char splice_hint : 1; /* the last frame was a large pass-through: read the next
                                      header small */
    /* The read being processed filled its buffer, so libuv asks for another
     * at once: the peer's output may wait for the splice that follows. */
    unsigned char splice_cork_ok : 1;
    /* The peer's output (the head of the frame being spliced) waits for
     * ka_splice_run, which sends it with MSG_MORE so that head and body
     * leave together instead of in a segment of their own. */
    unsigned char splice_corked : 1;

    ka_wreq_t *out;        /* write being assembled toward this leg */
    size_t write_pending;  /* bytes handed to uv_write on this leg, not yet written */
    uint64_t write_queued; /* bytes ever handed to uv_write: less libuv's queue, bytes written */
    /* While the pool is starved (ka_reclaim.c): bytes written at the last look,
     * when that count last moved, and the starved spell those belong to. */
    uint64_t stall_written, stall_since_ms;
    uint32_t stall_spell;
    uv_shutdown_t shutdown_req;
};

/*
 * Who the client is, as far as kadmit can know (ka_session_auth.c): the
 * SASL name the broker accepted, or the verified client certificate's
 * subject. The request side (what the client sent) reads the candidate;
 * only the response side (what the broker answered) changes the principal:
 * a SASL exchange runs from the broker's acceptance of a SaslHandshake to
 * its answer to the exchange's last token, and only a success commits.
 */
enum ka_sasl_exchange {
    KA_SASL_IDLE = 0, /* no exchange running: answers to SaslAuthenticate change nothing */
    KA_SASL_RUNNING,  /* the broker accepted a SaslHandshake; the tokens are under way */
    KA_SASL_FAILED,   /* the broker refused a token: it closes the connection */
    KA_SASL_OPAQUE,   /* GSSAPI, OAUTHBEARER: the broker accepted a token; the end is not visible */
};

typedef struct ka_session_auth {
    int mech;      /* enum ka_sasl_mech of the last SaslHandshake request */
    int steps;     /* client tokens sent since that handshake */
    int exchange;  /* enum ka_sasl_exchange, from the broker's answers */
    int sasl_done; /* the broker accepted a SASL exchange: sasl is the principal */
    int sasl_seen; /* the broker accepted a SaslHandshake: the TLS subject is not the principal */
    /* The names, allocated when first set (NULL reads as ""): inline buffers of their longest
     * were most of an idle connection's memory, and most connections never set one. The two
     * a held request's origin points at (sasl, client_id) get their bound's size once and are
     * then written in place, so an origin handed out never dangles. */
    char *candidate; /* from the client's first token; its length */
    char *sasl;      /* accepted by the broker; KA_PRINCIPAL_MAX bytes */
    char *tls;       /* "User:" + the verified certificate's subject; its length, set once */
    char *client_id; /* the held request's client id, cut at 255 bytes; 256 bytes */
    ka_frame_origin_t origin; /* what held requests' headers point at */
} ka_session_auth_t;

enum ka_session_state { KA_SESSION_CONNECTING = 0, KA_SESSION_RELAYING, KA_SESSION_CLOSING };

/*
 * What the layers under the session (transport, relay, output) report to
 * it. close ends the session at once; advance says that something changed
 * (a write completed, a read ended, a deferred frame was decided), and the
 * session then decides in one place (ka_session.c) whether a half-close is
 * due or the session is done.
 */
typedef struct ka_session_events {
    void (*close)(ka_session_t *s, enum ka_log_level level, const char *why, const char *detail);
    void (*advance)(ka_session_t *s);
} ka_session_events_t;

/* The listener's callback once a session's handles have all closed, before it is freed. */
typedef void (*ka_session_closed_cb)(ka_session_t *s);

struct ka_session {
    ka_server_t *server;
    const ka_session_events_t *events;
    ka_session_closed_cb closed_cb;
    ka_session_t *prev, *next; /* the server's list, for drain and shutdown */
    uint64_t id;               /* in every log line of this connection */
    enum ka_session_state state;
    ka_leg_t client;
    ka_leg_t upstream;
    uv_connect_t connect_req;
    uv_timer_t timer;          /* connect timeout, then idle timeout */
    uint64_t last_activity_ms; /* loop time of the last read on either leg */
    ka_inflight_t inflight;
    int pending_closes; /* uv_close callbacks still to come */
    int draining;
    int processing;          /* inside relay processing: defer resumes */
    int sasl_tokens_left;    /* raw SASL frames still expected from the client */
    int sasl_pending_tokens; /* mechanism's token count, until the handshake answer */
    int warned_unexpected;   /* logged one unexpected response already */
    int warned_unknown_api;  /* logged one unknown API key already */
    char peer[64];           /* client address, for log lines */
    ka_session_auth_t auth;  /* the connection's principal */
    /* Where the upstream leg goes: the server's --upstream for a sidecar; in
     * gateway mode the broker of the listener that accepted the client
     * (KA_GW_ANY_BROKER: the bootstrap), resolved by ka_gateway_route. */
    int32_t target_node;
    struct sockaddr_storage target_addr;
    char upstream_name[300]; /* HOST:PORT of target_addr, for log lines */
    char tls_name[256];      /* upstream TLS: SNI and the name verified ("" = the source's) */
    /* Gateway SNI mode: the upstream is chosen once the client's TLS
     * handshake names its broker; until then the client leg reads the
     * handshake only (CONNECTING) and parks what follows (KA_PAUSE_ROUTE). */
    int sni_wait;
};

/* A session of the bootstrap listener: any live broker. */
#define KA_GW_ANY_BROKER (-1)

struct ka_server {
    uv_loop_t *loop;
    const ka_config_t *cfg;
    ka_pool_t pool;
    ka_metrics_t metrics;
    ka_intercept_table_t intercept;
    struct ka_admission *admission; /* the control plane's, when --policy is set, else NULL */

    uv_tcp_t listener;
    int listening;
    int listen_port;         /* as bound, for ka_server_listen_port */
    uv_idle_t accept_idle;   /* accepts a connection deferred by the per-turn cap */
    uv_check_t accept_check; /* resets the per-turn accept count */
    unsigned accepts_this_turn;
    int accept_deferred;

    struct sockaddr_storage upstream_addr;
    char upstream_name[300];               /* HOST:PORT as configured, for log lines */
    struct sockaddr_storage metadata_addr; /* --metadata-upstream, else upstream_addr */
    char metadata_name[300];

    ka_session_t *sessions;
    uint64_t next_session_id;

    int draining;
    /* Called once when a drain starts (SIGTERM/SIGINT), e.g. to close the admin server. */
    void (*on_drain)(void *arg);
    void *on_drain_arg;
    uv_timer_t drain_timer;
    uint64_t drain_started_ms; /* loop time of the signal, for the exit line */
    uv_signal_t sigterm, sigint;

    uv_idle_t resume_idle;
    ka_leg_t *resume_head, *resume_tail;

    /* ka_reclaim.c: while the pool is starved, clients that read none of
     * their answers are closed after --stalled-reader-timeout-ms. */
    uv_timer_t reclaim_timer;
    uint32_t starved_spell; /* counts spells, so a leg's samples from an earlier one are stale */
    void (*on_starved)(ka_server_t *srv); /* installed by ka_reclaim_init, called by a leg */

    ka_wreq_t *wreq_cache;
    size_t wreq_cached;

    /* ka_splice.c: one pipe for every session. It is empty whenever the loop
     * is outside a splice: what the destination did not take is read back
     * at once and queued as a normal write, so sessions never share bytes. */
    int splice_pipe[2];
    int splice_state; /* 0 not made yet, 1 made, -1 unavailable (--splice off, or refused) */

    ka_tls_source_t *tls_clients;        /* --tls-cert: TLS toward clients, else NULL */
    ka_tls_source_t *tls_upstream;       /* --upstream-tls: TLS toward the broker, else NULL */
    uv_timer_t tls_reload_timer;         /* polls the certificate files for changes */
    ka_upstream_security_t mdc_security; /* TLS and SASL of kadmit's own metadata connection */
    int tls_timer_open;

    struct ka_gateway *gateway; /* gateway mode (ka_gateway.c), else NULL */
};

/* ka_listener.c: accepts a connection from a gateway broker listener, whose
 * session goes to broker node_id (ka_gateway.c). */
void ka_server_accept_on(ka_server_t *srv, uv_stream_t *listener, int32_t node_id);

/* ka_session.c (called by the listener; the relay's version refusal still calls
 * ka_session_close by name, until that call site is replaced) */
/* A session for the next pending connection; the listener links it into its list. */
ka_session_t *ka_session_new(ka_server_t *srv, ka_session_closed_cb closed_cb);
/* Accepts the connection and connects upstream, or closes the session saying why. */
int ka_session_accept(ka_session_t *s, uv_stream_t *listener);
void ka_session_close(ka_session_t *s, enum ka_log_level level, const char *why,
                      const char *detail);
void ka_session_drain(ka_session_t *s);
/* Gateway SNI mode: the client's TLS handshake is done; route by its SNI and connect. */
void ka_session_sni_routed(ka_session_t *s);
/* A held request started on the client leg: close the session if it is not
 * whole within --held-request-timeout-ms. */
void ka_session_watch_held(ka_session_t *s);

/* ka_session_tls.c: the server's TLS sources (called by the listener) ... */
int ka_server_tls_init(ka_server_t *srv, char *err, size_t errlen);
void ka_server_tls_close(ka_server_t *srv);
void ka_server_tls_free(ka_server_t *srv);
/* ... and a leg's TLS (called by the session). */
int ka_leg_tls_open(ka_leg_t *leg);
void ka_leg_tls_input(ka_leg_t *leg, ka_pbuf_t *pb, size_t n);
void ka_leg_tls_pump(ka_leg_t *leg);

/* ka_relay.c (called by the session and the transport) */
void ka_relay_process(ka_leg_t *src, ka_pbuf_t *pb, size_t off, size_t len);
/* Continues after a pause; nonzero when the leg must still wait (or the session closed). */
int ka_relay_resume(ka_leg_t *leg);
void ka_relay_release(ka_leg_t *leg);
/* Keeps bytes read while the leg may not process them (ka_session_tls.c, SNI routing). */
void ka_relay_park(ka_leg_t *leg, ka_pbuf_t *pb, size_t off, size_t len);
/* ka_relay_checks.c: a frame's header before it is routed (see there). The
 * refusals close the session and return nonzero. */
void ka_relay_frame_error(ka_leg_t *src);
int ka_relay_refuse_undecodable_version(ka_session_t *s, const ka_frame_header_t *h);
int ka_relay_sasl_refused(ka_session_t *s, const ka_frame_header_t *h);
int ka_relay_check_key_version(ka_leg_t *src, const ka_frame_header_t *h);
/* A request's (api key, version) as the leg remembers it (checked_key_version, + 1). */
static inline uint32_t ka_relay_key_version(const ka_frame_header_t *h)
{
    return (uint32_t)(uint16_t)h->api_key << 16 | (uint16_t)h->api_version;
}
/* ka_relay_hold.c: a held frame's memory, taken as its bytes arrive. Grows the
 * buffer for at least one more read (0, or KA_ENOMEM: then wait for it). */
int ka_relay_hold_grow(ka_leg_t *leg);
void ka_relay_hold_wait(ka_leg_t *leg);
/* A held request above --max-held-request: logged, counted, closed (1); 0 otherwise. */
/* 0: the request fits; 1: closed; KA_HOLD_DISCARD: drop its bytes, then
 * ka_relay_answer_oversize once it has ended. */
#define KA_HOLD_DISCARD 2
int ka_relay_refuse_oversize_hold(ka_session_t *s, const ka_frame_header_t *h);
/* Queues the local answer of a discarded oversize request (its header in
 * leg->hold_hdr); 0, or a negative error after which the session closes. */
int ka_relay_answer_oversize(ka_leg_t *leg);
uint8_t *ka_relay_carry_alloc(void *ctx, size_t n);
void ka_relay_carry_release(void *ctx, uint8_t *p);
/* Frees a handler's per-request state held by an in-flight entry, if any. */
void ka_relay_free_state(ka_server_t *srv, const ka_inflight_entry_t *e);

/* ka_session_auth.c (called by the relay and the TLS transport) */
/* Frees the names the connection's principal holds (the session's end). */
void ka_session_auth_free(ka_session_t *s);
/* A SaslHandshake request (any version): a new exchange starts. */
void ka_session_auth_handshake(ka_session_t *s, const ka_frame_header_t *h);
/* True when this SaslAuthenticate request (raw: the raw token) carries the
 * name, so the relay holds it whole for ka_session_auth_token. */
int ka_session_auth_wants_token(const ka_session_t *s, const ka_frame_header_t *h, int raw);
/* The held first token's frame (size prefix included): its name becomes the candidate. */
void ka_session_auth_token(ka_session_t *s, const uint8_t *frame, size_t len, int raw);
/* The in-flight flags of a SaslAuthenticate request or raw token (0 for
 * other requests); counts the exchange's steps. */
uint32_t ka_session_auth_flags(ka_session_t *s, int16_t api_key, int raw);
/* The broker answered a SaslHandshake (error_code -1: unreadable). */
void ka_session_auth_handshake_answered(ka_session_t *s, int error_code);
/* The broker's SaslAuthenticate response (whole, size prefix included). */
void ka_session_auth_response(ka_session_t *s, const ka_inflight_entry_t *e, const uint8_t *frame,
                              size_t len);
/* The broker answered a raw token: the last one answered means success. */
void ka_session_auth_raw_answered(ka_session_t *s, const ka_inflight_entry_t *e);
/* The client leg's TLS handshake completed. */
void ka_session_auth_tls(ka_session_t *s, const ka_transport_t *t);
/* The connection's principal, or NULL when unknown. */
const char *ka_session_principal(const ka_session_t *s);
/*
 * 1 unless the broker surely refuses this connection's requests: 0 while a
 * SASL exchange the broker accepted is running or after it failed, and,
 * behind a SASL listener (kadmit's own metadata connection logs in with
 * SASL to the same --upstream), before the first SASL success.
 */
int ka_session_authenticated(const ka_session_t *s);
/* The origin of a request about to be held (copies its client id). */
const ka_frame_origin_t *ka_session_origin(ka_session_t *s, const ka_frame_header_t *h);

/* ka_reclaim.c (called by the listener). Installs srv->on_starved, which a
 * leg calls when it starts waiting for memory. */
void ka_reclaim_init(ka_server_t *srv);
void ka_reclaim_close(ka_server_t *srv);

/* ka_output.c */
void ka_output_add(ka_leg_t *dst, ka_pbuf_t *pb, size_t a, size_t b);
void ka_output_flush(ka_leg_t *dst);
/* Flushes telling TCP that more follows at once (MSG_MORE: a spliced body,
 * ka_splice.c). 1 when every byte went; 0 when some wait in libuv's queue
 * (or the session closed). */
int ka_output_flush_more(ka_leg_t *dst);
void ka_output_release(ka_server_t *srv, ka_wreq_t *w);
/* Writes [0, len) of pb as it is (TLS records); takes its own reference. */
void ka_output_send_raw(ka_leg_t *dst, ka_pbuf_t *pb, size_t len);
/* After the loop has stopped: frees the write requests kept for reuse. */
void ka_output_cache_free(ka_server_t *srv);

/* ka_relay.c: n body bytes of src's current frame went to the peer by
 * splice; [0, residue) of pb (may be NULL when 0) are the ones the peer did
 * not take, to be queued as a normal write. */
void ka_relay_spliced(ka_leg_t *src, ka_pbuf_t *pb, size_t residue, uint64_t n);

/* ka_splice.c (called by the leg) */
/* True when the leg's large pass-through bodies may be spliced at all. */
int ka_splice_possible(const ka_leg_t *leg);
/* True when the leg's next bytes should be spliced instead of read. */
int ka_splice_wanted(ka_leg_t *leg);
/* Splices them (after alloc_cb said so and libuv reported UV_ENOBUFS). */
void ka_splice_run(ka_leg_t *leg);
/* At server close: the pipe. */
void ka_splice_close(ka_server_t *srv);

/* ka_leg.c */
void ka_leg_init(ka_leg_t *leg, ka_session_t *s, ka_leg_t *peer, int is_client, uv_read_cb read_cb,
                 void (*resume_cb)(ka_leg_t *leg));
/* Starts or stops reading from the leg's state: the one place that decides. */
void ka_leg_update_reading(ka_leg_t *leg);
void ka_leg_schedule_resume(ka_leg_t *leg);
void ka_leg_cancel_resume(ka_leg_t *leg);
void ka_leg_wait_memory(ka_leg_t *leg, size_t need, int priority);

#endif
