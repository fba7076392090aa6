/*
 * ka_endpoints.c: the endpoint rewrite (see ka_endpoints.h).
 *
 * A walk reads the response through a bounded reader, field by field, as the
 * generated tables describe it (ka_endpoint_table.h). Nothing is written
 * until the first endpoint that changes: then the bytes before its host are
 * copied, the new host and port written, and the walk goes on with a mark
 * after the old port. At the end the rest is copied in one piece. So a
 * response is copied at most once, and not at all when nothing changes.
 *
 * At the top level the walk stops after the last field that may hold an
 * endpoint in this version (after Metadata's Brokers, say): the rest is the
 * final copy, never parsed. Inside arrays every element is walked, since
 * Kafka's structs carry no length. Records and bytes are skipped by length.
 *
 * A tagged field that holds endpoints (Produce's and Fetch's NodeEndpoints)
 * is walked by a nested walk over its bytes, writing to a scratch writer,
 * because its size prefix comes first and changes with the hosts; those few
 * bytes are the only ones copied twice. Unknown tagged fields are copied
 * verbatim, bounded only by the response (they are never decoded).
 */
#include "ka_endpoints.h"

#include <string.h>

#include "ka_endpoint_table.h"

/* One walk over a response body, or over one tagged field's bytes. */
struct walk {
    const uint8_t *base;    /* the bytes walked */
    size_t len;             /* their count */
    ka_reader_t r;          /* reads base */
    size_t mark;            /* base[0, mark) is in out (when started) */
    int started;            /* 1 once anything of this walk is in out */
    ka_writer_t *out;       /* where the rewritten bytes go */
    uint64_t vbit;          /* 1 << version */
    int flex;               /* 1: compact lengths and tagged fields */
    ka_endpoint_map_fn map; /* the caller's mapping */
    void *ctx;              /* its context */
};

/* What an endpoint struct's fields were, read as the walk passed them. */
struct seen {
    int32_t node_id;
    ka_slice_t host;
    size_t host_start, host_end; /* the host's bytes in base, length prefix included */
    int32_t port;
    size_t port_start; /* the port's offset in base */
    uint8_t port_size; /* 4 (int32) or 2 (uint16) */
};

/* Copies base[mark, off) to out and moves the mark there. */
static int copy_to(struct walk *w, size_t off)
{
    if (!w->started) {
        /* The first write: room for the whole body, so out grows once. */
        size_t room = w->out->max - w->out->len;
        ka_writer_reserve(w->out, w->len + 64 < room ? w->len + 64 : room);
        w->started = 1;
    }
    int rc = ka_write_raw(w->out, w->base + w->mark, off - w->mark);
    w->mark = off;
    return rc;
}

static int read_string(struct walk *w, int nullable, ka_slice_t *s)
{
    if (w->flex)
        return nullable ? ka_read_compact_nullable_string(&w->r, s)
                        : ka_read_compact_string(&w->r, s);
    return nullable ? ka_read_nullable_string(&w->r, s) : ka_read_string(&w->r, s);
}

static int read_bytes(struct walk *w, int nullable)
{
    ka_slice_t s;
    if (w->flex)
        return nullable ? ka_read_compact_nullable_bytes(&w->r, &s)
                        : ka_read_compact_bytes(&w->r, &s);
    return nullable ? ka_read_nullable_bytes(&w->r, &s) : ka_read_bytes(&w->r, &s);
}

static int read_count(struct walk *w, int nullable, size_t min_size, int32_t *n)
{
    if (w->flex)
        return nullable
                   ? ka_read_compact_nullable_array_count(&w->r, min_size, KA_MAX_ARRAY_COUNT, n)
                   : ka_read_compact_array_count(&w->r, min_size, KA_MAX_ARRAY_COUNT, n);
    return nullable ? ka_read_nullable_array_count(&w->r, min_size, KA_MAX_ARRAY_COUNT, n)
                    : ka_read_array_count(&w->r, min_size, KA_MAX_ARRAY_COUNT, n);
}

static int walk_struct(struct walk *w, const struct ka_ep_struct *st, int top);

/* Reads (and, for an endpoint's fields, notes) one value of a non-array field. */
static int walk_value(struct walk *w, const struct ka_ep_field *f, int nullable, struct seen *seen)
{
    ka_slice_t s;
    size_t start = w->r.off;
    int rc;

    switch (f->kind) {
    case KA_EPF_FIXED:
        if (f->role == KA_EPR_NODE_ID)
            return ka_read_i32(&w->r, &seen->node_id);
        if (f->role == KA_EPR_PORT) {
            seen->port_start = start;
            seen->port_size = f->size;
            if (f->size == 2) {
                uint16_t p;
                rc = ka_read_u16(&w->r, &p);
                seen->port = p;
                return rc;
            }
            return ka_read_i32(&w->r, &seen->port);
        }
        return ka_read_raw(&w->r, f->size, &s);
    case KA_EPF_STRING:
        if ((rc = read_string(w, nullable, &s)) < 0)
            return rc;
        if (f->role == KA_EPR_HOST) {
            seen->host = s;
            seen->host_start = start;
            seen->host_end = w->r.off;
        }
        return 0;
    case KA_EPF_BYTES:
        return read_bytes(w, nullable);
    default:
        return walk_struct(w, &ka_ep_structs[f->sub], 0);
    }
}

/* One field: a value, or an array of them. */
static int walk_field(struct walk *w, const struct ka_ep_field *f, struct seen *seen)
{
    int nullable = (f->nullable & w->vbit) != 0;
    if (!f->array)
        return walk_value(w, f, nullable, seen);
    size_t min_size = 1;
    if (f->kind == KA_EPF_FIXED)
        min_size = f->size;
    else if (f->kind == KA_EPF_STRUCT && ka_ep_structs[f->sub].min_size > 0)
        min_size = ka_ep_structs[f->sub].min_size;
    int32_t n;
    int rc = read_count(w, nullable, min_size, &n);
    if (rc < 0 || n <= 0)
        return rc;
    if (f->kind == KA_EPF_FIXED) {
        ka_slice_t s; /* the count was checked against what remains */
        return ka_read_raw(&w->r, (size_t)n * f->size, &s);
    }
    struct seen ignored;
    for (int32_t i = 0; i < n; i++)
        if ((rc = walk_value(w, f, 0, &ignored)) < 0)
            return rc;
    return 0;
}

/* Writes a host string in the encoding its field was read in. */
static int write_host(struct walk *w, const ka_endpoint_t *ep)
{
    if (ep->host_len > KA_MAX_STRING_LEN)
        return KA_ELIMIT;
    if (w->flex)
        KA_WTRY(ka_write_uvarint(w->out, (uint32_t)ep->host_len + 1));
    else
        KA_WTRY(ka_write_i16(w->out, (int16_t)ep->host_len));
    KA_WTRY(ka_write_raw(w->out, ep->host, ep->host_len));
    return 0;
err_write:
    return w->out->err < 0 ? w->out->err : KA_EOVERFLOW;
}

/* Replaces an endpoint struct's host and port, when the map says so. */
static int rewrite_endpoint(struct walk *w, const struct seen *seen)
{
    ka_endpoint_t ep = {NULL, 0, 0};
    if (w->map(w->ctx, seen->node_id, seen->host, seen->port, &ep) < 0)
        return 0;
    if (ep.host == NULL && ep.host_len > 0)
        return KA_EINVALID;
    if (seen->port_size == 2 && (ep.port < 0 || ep.port > UINT16_MAX))
        return KA_ELIMIT;
    int same_host = seen->host.len >= 0 && (size_t)seen->host.len == ep.host_len &&
                    (ep.host_len == 0 || memcmp(seen->host.ptr, ep.host, ep.host_len) == 0);
    if (same_host && seen->port == ep.port)
        return 0;
    int rc;
    if (!same_host) {
        if ((rc = copy_to(w, seen->host_start)) < 0 || (rc = write_host(w, &ep)) < 0)
            return rc;
        w->mark = seen->host_end;
    }
    if (seen->port != ep.port) {
        if ((rc = copy_to(w, seen->port_start)) < 0)
            return rc;
        rc = seen->port_size == 2 ? ka_write_u16(w->out, (uint16_t)ep.port)
                                  : ka_write_i32(w->out, ep.port);
        if (rc < 0)
            return rc;
        w->mark = seen->port_start + seen->port_size;
    }
    return 0;
}

/* The known tagged field of st with this tag that may hold endpoints, or NULL. */
static const struct ka_ep_field *holding_tag(const struct walk *w, const struct ka_ep_struct *st,
                                             uint32_t tag)
{
    for (unsigned i = 0; i < st->count; i++) {
        const struct ka_ep_field *f = &ka_ep_fields[st->first + i];
        if (f->tag >= 0 && (uint32_t)f->tag == tag && (f->holds & w->vbit))
            return f;
    }
    return NULL;
}

/* A tagged field that holds endpoints: walked on its own, then written with its new size. */
static int walk_tagged(struct walk *w, const struct ka_ep_field *f, size_t size_start,
                       size_t data_start, uint32_t size)
{
    ka_writer_t scratch;
    struct walk sub = *w;
    sub.base = w->base + data_start;
    sub.len = size;
    ka_reader_init(&sub.r, sub.base, size);
    sub.mark = 0;
    sub.started = 0;
    ka_writer_init(&scratch, w->out->max);
    sub.out = &scratch;
    struct seen seen;
    int rc = walk_field(&sub, f, &seen);
    if (rc == 0 && sub.r.off != size)
        rc = KA_ETRAILING;
    if (rc == 0 && sub.started) {
        if ((rc = copy_to(&sub, size)) == 0 && (rc = copy_to(w, size_start)) == 0 &&
            (rc = ka_write_uvarint(w->out, (uint32_t)scratch.len)) == 0 &&
            (rc = ka_write_raw(w->out, scratch.buf, scratch.len)) == 0)
            w->mark = data_start + size;
    }
    if (rc < 0 && sub.r.err < 0)
        ka_reader_fail(&w->r, sub.r.err);
    ka_writer_free(&scratch);
    return rc;
}

/* A flexible struct's tagged-field section: known endpoint holders walked, the rest kept. */
static int walk_tags(struct walk *w, const struct ka_ep_struct *st)
{
    uint32_t count, tag, size;
    int64_t prev = -1;
    ka_slice_t s;
    int rc;

    if ((rc = ka_read_uvarint(&w->r, &count)) < 0)
        return rc;
    if (count > KA_MAX_TAGGED_FIELDS)
        return ka_reader_fail(&w->r, KA_ELIMIT);
    for (uint32_t i = 0; i < count; i++) {
        if ((rc = ka_read_uvarint(&w->r, &tag)) < 0)
            return rc;
        if ((int64_t)tag <= prev) /* strictly increasing, as Kafka requires */
            return ka_reader_fail(&w->r, KA_EINVALID);
        prev = tag;
        size_t size_start = w->r.off;
        if ((rc = ka_read_uvarint(&w->r, &size)) < 0)
            return rc;
        size_t data_start = w->r.off;
        if ((rc = ka_read_raw(&w->r, size, &s)) < 0)
            return rc;
        const struct ka_ep_field *f = holding_tag(w, st, tag);
        if (f != NULL && (rc = walk_tagged(w, f, size_start, data_start, size)) < 0)
            return rc;
    }
    return 0;
}

/* 1 when a field from index i on (or a tagged field) may still hold an endpoint. */
static int more_endpoints(const struct walk *w, const struct ka_ep_struct *st, unsigned i)
{
    for (unsigned j = 0; j < st->count; j++) {
        const struct ka_ep_field *f = &ka_ep_fields[st->first + j];
        if ((f->holds & w->vbit) && (j >= i || f->tag >= 0))
            return 1;
    }
    return 0;
}

/*
 * Walks one struct. At the top level (top = 1) it returns 1 when it stopped
 * early, no endpoint being left, so that the caller copies the rest unread.
 */
static int walk_struct(struct walk *w, const struct ka_ep_struct *st, int top)
{
    struct seen seen;
    int endpoint = (st->endpoint & w->vbit) != 0;
    int rc;

    memset(&seen, 0, sizeof(seen));
    for (unsigned i = 0; i < st->count; i++) {
        const struct ka_ep_field *f = &ka_ep_fields[st->first + i];
        if (f->tag >= 0 || !(f->versions & w->vbit))
            continue;
        if (top && !endpoint && !more_endpoints(w, st, i))
            return 1;
        if ((rc = walk_field(w, f, &seen)) < 0)
            return rc;
    }
    if (endpoint && (rc = rewrite_endpoint(w, &seen)) < 0)
        return rc;
    if (top && !more_endpoints(w, st, st->count))
        return 1;
    if (w->flex && (rc = walk_tags(w, st)) < 0)
        return rc;
    return 0;
}

int ka_endpoints_carried(int16_t api_key, int16_t version)
{
    const struct ka_ep_message *m = ka_ep_message_find(api_key);
    return m != NULL && version >= m->min_version && version <= m->max_version &&
           (m->carried >> version & 1);
}

int ka_endpoints_rewrite(int16_t api_key, int16_t version, const uint8_t *body, size_t len,
                         ka_endpoint_map_fn map, void *ctx, ka_writer_t *out, int *changed)
{
    *changed = 0;
    if (!ka_endpoints_carried(api_key, version))
        return 0;
    const struct ka_ep_message *m = ka_ep_message_find(api_key);
    struct walk w;
    memset(&w, 0, sizeof(w));
    w.base = body;
    w.len = len;
    ka_reader_init(&w.r, body, len);
    w.out = out;
    w.vbit = 1ull << version;
    w.flex = m->first_flexible >= 0 && version >= m->first_flexible;
    w.map = map;
    w.ctx = ctx;
    int rc = walk_struct(&w, &ka_ep_structs[m->top], 1);
    if (rc < 0)
        return rc;
    if (rc == 0 && w.r.off != len)
        return KA_ETRAILING;
    if (w.started) {
        if ((rc = copy_to(&w, len)) < 0)
            return rc;
        *changed = 1;
    }
    return 0;
}
