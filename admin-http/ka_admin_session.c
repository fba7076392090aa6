/*
 * ka_admin_session.c: llhttp callbacks and the per-connection request state.
 *
 * llhttp hands us the request in spans that may be split anywhere across
 * reads, so every piece is appended to a buffer and counted against the
 * caps as it arrives: a client can never make us hold more than
 * max_header_bytes of head or max_body_bytes of body. Pipelined requests
 * are answered as each completes, so responses leave in request order; a
 * callback pauses the parser when the output grows large (bounded work
 * and memory per read) or when the connection is to close.
 */
#include "ka_admin_session.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Header names longer than this are never ones the router reads. */
#define FIELD_MAX 32
/* Each header costs its ": " and CRLF besides the name and value. */
#define HEADER_OVERHEAD 4

static const char CONTINUE_100[] = "HTTP/1.1 100 Continue\r\n\r\n";

static ka_admin_session_t *session_of(llhttp_t *p)
{
    return p->data;
}

/* Counts head bytes; stops the parser with 431 once over the cap. */
static int count_head(ka_admin_session_t *s, size_t len)
{
    s->header_bytes += len;
    if (s->header_bytes > s->ctx->cfg.max_header_bytes) {
        s->reject_status = 431;
        return HPE_USER;
    }
    return 0;
}

static void reset_request(ka_admin_session_t *s)
{
    ka_admin_buf_reset(&s->url);
    ka_admin_buf_reset(&s->field);
    ka_admin_buf_reset(&s->value);
    ka_admin_buf_reset(&s->authorization);
    ka_admin_buf_reset(&s->host);
    ka_admin_buf_reset(&s->body);
    s->has_authorization = false;
    s->duplicate_authorization = false;
    s->has_host = false;
    s->duplicate_host = false;
    s->keep_value = false;
    s->field_too_long = false;
    s->expect_continue = false;
    s->header_bytes = 0;
}

static int on_message_begin_cb(llhttp_t *p)
{
    ka_admin_session_t *s = session_of(p);

    reset_request(s);
    s->in_request = true;
    return 0;
}

static int on_url_cb(llhttp_t *p, const char *at, size_t len)
{
    ka_admin_session_t *s = session_of(p);

    if (count_head(s, len) != 0)
        return HPE_USER;
    return ka_admin_buf_append(&s->url, at, len) < 0 ? HPE_USER : 0;
}

static int on_header_field_cb(llhttp_t *p, const char *at, size_t len)
{
    ka_admin_session_t *s = session_of(p);

    if (count_head(s, len) != 0)
        return HPE_USER;
    if (s->field_too_long || s->field.len + len > FIELD_MAX) {
        s->field_too_long = true; /* never one we read; counted, not kept */
        return 0;
    }
    return ka_admin_buf_append(&s->field, at, len) < 0 ? HPE_USER : 0;
}

static bool field_is(const ka_admin_session_t *s, const char *name)
{
    return !s->field_too_long && s->field.len == strlen(name) &&
           strncasecmp(s->field.data, name, s->field.len) == 0;
}

static int on_header_field_complete_cb(llhttp_t *p)
{
    ka_admin_session_t *s = session_of(p);

    s->keep_value = field_is(s, "authorization") || field_is(s, "expect") || field_is(s, "host");
    ka_admin_buf_reset(&s->value);
    return 0;
}

static int on_header_value_cb(llhttp_t *p, const char *at, size_t len)
{
    ka_admin_session_t *s = session_of(p);

    if (count_head(s, len) != 0)
        return HPE_USER;
    if (s->keep_value && ka_admin_buf_append(&s->value, at, len) < 0)
        return HPE_USER;
    return 0;
}

static int on_header_value_complete_cb(llhttp_t *p)
{
    ka_admin_session_t *s = session_of(p);
    const char *value = s->value.len ? s->value.data : "";

    if (field_is(s, "authorization")) {
        if (s->has_authorization)
            s->duplicate_authorization = true;
        s->has_authorization = true;
        ka_admin_buf_reset(&s->authorization);
        if (ka_admin_buf_puts(&s->authorization, value) < 0)
            return HPE_USER;
    } else if (field_is(s, "host")) {
        if (s->has_host)
            s->duplicate_host = true;
        s->has_host = true;
        ka_admin_buf_reset(&s->host);
        if (ka_admin_buf_puts(&s->host, value) < 0)
            return HPE_USER;
    } else if (field_is(s, "expect") && strcasecmp(value, "100-continue") == 0) {
        s->expect_continue = true;
    }
    ka_admin_buf_reset(&s->field);
    ka_admin_buf_reset(&s->value);
    s->field_too_long = false;
    return count_head(s, HEADER_OVERHEAD);
}

static int on_headers_complete_cb(llhttp_t *p)
{
    ka_admin_session_t *s = session_of(p);

    /* Refuse a declared oversized body before reading any of it. */
    if (p->content_length > s->ctx->cfg.max_body_bytes) {
        s->reject_status = 413;
        return -1;
    }
    /* curl and others wait for this before sending a body (RFC 9110 10.1.1). */
    if (s->expect_continue && ka_admin_buf_append(&s->out, CONTINUE_100, strlen(CONTINUE_100)) < 0)
        return -1;
    return 0;
}

static int on_body_cb(llhttp_t *p, const char *at, size_t len)
{
    ka_admin_session_t *s = session_of(p);

    /* Chunked bodies declare no length: cap them as they arrive. */
    if (len > s->ctx->cfg.max_body_bytes - s->body.len) {
        s->reject_status = 413;
        return HPE_USER;
    }
    return ka_admin_buf_append(&s->body, at, len) < 0 ? HPE_USER : 0;
}

static int on_message_complete_cb(llhttp_t *p)
{
    ka_admin_session_t *s = session_of(p);
    /* A reserve connection answers one request: the next probe may need it. */
    bool close = !llhttp_should_keep_alive(p) || p->upgrade || s->probe_only;
    ka_admin_response_t res;
    ka_admin_request_t req;

    /* The router matches paths only; a query string changes nothing. */
    if (s->url.len > 0)
        s->url.data[strcspn(s->url.data, "?#")] = '\0';
    req.method = p->method;
    req.path = s->url.len > 0 ? s->url.data : "";
    req.authorization =
        s->has_authorization ? (s->authorization.len ? s->authorization.data : "") : NULL;
    req.host = s->has_host ? (s->host.len ? s->host.data : "") : NULL;
    req.body = s->body.data;
    req.body_len = s->body.len;

    ka_admin_response_init(&res);
    if (s->duplicate_authorization)
        ka_admin_response_error(&res, 400, "the request has more than one Authorization header");
    else if (s->duplicate_host)
        ka_admin_response_error(&res, 400, "the request has more than one Host header");
    else if (s->probe_only && !ka_admin_is_probe_path(req.path)) {
        s->ctx->stats.reserve_refused++;
        ka_admin_response_error(&res, 503,
                                "every admin connection slot is in use (the limit is %u); this "
                                "connection may only ask /healthz, /readyz or /metrics; retry "
                                "later",
                                s->ctx->cfg.max_connections);
    } else
        ka_admin_route(s->ctx, &req, &res);
    if (res.deferred != NULL) {
        /* Pipelined requests wait in pending, so answers keep their order. */
        ka_admin_response_free(&res);
        reset_request(s);
        s->in_request = false;
        s->waiting = res.deferred;
        s->waiting_close = close;
        ka_admin_reply_bind(res.deferred, s);
        s->paused = true;
        return HPE_PAUSED;
    }
    ka_admin_response_write(s->ctx, &res, close, &s->out);
    ka_admin_response_free(&res);

    reset_request(s);
    s->in_request = false;
    s->completed++;
    if (close) {
        s->closing = true;
        return HPE_PAUSED;
    }
    if (s->out.len >= KA_ADMIN_SESSION_OUTPUT_HIGH) {
        s->paused = true;
        return HPE_PAUSED;
    }
    return 0;
}

static const llhttp_settings_t SETTINGS = {
    .on_message_begin = on_message_begin_cb,
    .on_url = on_url_cb,
    .on_header_field = on_header_field_cb,
    .on_header_value = on_header_value_cb,
    .on_header_field_complete = on_header_field_complete_cb,
    .on_header_value_complete = on_header_value_complete_cb,
    .on_headers_complete = on_headers_complete_cb,
    .on_body = on_body_cb,
    .on_message_complete = on_message_complete_cb,
};

void ka_admin_session_init(ka_admin_session_t *s, ka_admin_context_t *ctx)
{
    memset(s, 0, sizeof(*s));
    s->ctx = ctx;
    llhttp_init(&s->parser, HTTP_REQUEST, &SETTINGS);
    s->parser.data = s;
}

void ka_admin_session_free(ka_admin_session_t *s)
{
    if (s->waiting != NULL)
        ka_admin_reply_bind(s->waiting, NULL); /* its answer has nowhere to go */
    ka_admin_buf_free(&s->url);
    ka_admin_buf_free(&s->field);
    ka_admin_buf_free(&s->value);
    ka_admin_buf_free(&s->authorization);
    ka_admin_buf_free(&s->host);
    ka_admin_buf_free(&s->body);
    ka_admin_buf_free(&s->out);
    ka_admin_buf_free(&s->pending);
}

/* The parser stopped on an error: answer it, then close (RFC 9112 says the
 * connection cannot be trusted to be at a message boundary any more). */
static void answer_parse_error(ka_admin_session_t *s, llhttp_errno_t err)
{
    ka_admin_context_t *ctx = s->ctx;

    if (s->reject_status == 413)
        ka_admin_write_error(ctx, 413, true, &s->out,
                             "the request body is larger than the limit of %zu bytes",
                             ctx->cfg.max_body_bytes);
    else if (s->reject_status == 431)
        ka_admin_write_error(ctx, 431, true, &s->out,
                             "the request line and headers are larger than the limit of %zu bytes",
                             ctx->cfg.max_header_bytes);
    else if (err == HPE_USER || err == HPE_CB_HEADERS_COMPLETE)
        ka_admin_write_error(ctx, 500, true, &s->out, "out of memory while reading the request");
    else {
        ctx->stats.parse_errors++;
        ka_admin_write_error(ctx, 400, true, &s->out, "the request is not valid HTTP/1.1: %s (%s)",
                             llhttp_get_error_reason(&s->parser), llhttp_errno_name(err));
    }
    s->in_request = false;
    s->closing = true;
}

int ka_admin_session_feed(ka_admin_session_t *s, const char *data, size_t len)
{
    llhttp_errno_t err;
    const char *pos;

    if (s->closing || len == 0)
        return ka_admin_buf_failed(&s->out);
    if (s->paused)
        return ka_admin_buf_append(&s->pending, data, len);
    err = llhttp_execute(&s->parser, data, len);
    switch (err) {
    case HPE_OK:
        break;
    case HPE_PAUSED:
        pos = llhttp_get_error_pos(&s->parser);
        llhttp_resume(&s->parser);
        if (!s->closing && pos != NULL && pos < data + len &&
            ka_admin_buf_append(&s->pending, pos, (size_t)(data + len - pos)) < 0)
            return KA_ENOMEM;
        break;
    case HPE_PAUSED_UPGRADE:
        /* The upgrade request was answered (there are no upgrades here). */
        s->closing = true;
        break;
    default:
        answer_parse_error(s, err);
        break;
    }
    return ka_admin_buf_failed(&s->out);
}

void ka_admin_session_answer(ka_admin_session_t *s, const ka_admin_response_t *res)
{
    ka_admin_response_write(s->ctx, res, s->waiting_close, &s->out);
    s->waiting = NULL;
    s->completed++;
    if (s->waiting_close)
        s->closing = true;
    if (s->wake != NULL)
        s->wake(s->wake_arg);
}

int ka_admin_session_resume(ka_admin_session_t *s)
{
    ka_admin_buf_t rest = s->pending;
    int rc;

    if (s->waiting != NULL)
        return 0; /* still paused: the answer comes first */
    s->paused = false;
    ka_admin_buf_init(&s->pending);
    rc = ka_admin_session_feed(s, rest.data, rest.len);
    ka_admin_buf_free(&rest);
    if (s->input_ended && !s->paused)
        s->closing = true;
    return rc;
}

void ka_admin_session_end_input(ka_admin_session_t *s)
{
    s->input_ended = true;
    /* Paused, requests are still waiting in pending: resume answers them. */
    if (!s->paused)
        s->closing = true;
}

void ka_admin_session_timeout(ka_admin_session_t *s)
{
    if (s->in_request && !s->closing) {
        s->ctx->stats.request_timeouts++;
        ka_admin_write_error(s->ctx, 408, true, &s->out,
                             "the request did not arrive completely within %llu ms",
                             (unsigned long long)s->ctx->cfg.request_timeout_ms);
    }
    s->closing = true;
}
