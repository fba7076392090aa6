/*
 * ka_admission_merge.c: local answers, merged responses and the frames
 * that carry them.
 *
 * A merged response lists every requested item in request order: the
 * broker's result for each forwarded item, kadmit's error for each item it
 * rejected. The broker's decoded response is edited in place and encoded
 * again through its codec, so its throttle time, top-level fields and
 * tagged fields travel on unchanged. Every scratch array lives in the
 * caller's arena.
 */
#include "ka_admission_int.h"

#include <stdlib.h>
#include <string.h>

ka_slice_t ka_adm_item_topic(const ka_adm_item_t *it)
{
    return (ka_slice_t){(const uint8_t *)it->topic, it->topic_len};
}

ka_slice_t ka_adm_item_message(const ka_adm_item_t *it)
{
    if (it->message == NULL)
        return KA_SLICE_NULL;
    return (ka_slice_t){(const uint8_t *)it->message, (int32_t)strlen(it->message)};
}

bool ka_adm_slice_eq(ka_slice_t a, ka_slice_t b)
{
    return a.len == b.len && (a.len <= 0 || memcmp(a.ptr, b.ptr, (size_t)a.len) == 0);
}

char *ka_adm_dup_slice(ka_slice_t s)
{
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    char *c = malloc(n + 1);

    if (c == NULL)
        return NULL;
    if (n)
        memcpy(c, s.ptr, n);
    c[n] = '\0';
    return c;
}

/* Arena scratch for n elements (n == 0 still gives a pointer); NULL on failure. */
static void *scratch(ka_arena_t *arena, size_t n, size_t size)
{
    void *p = NULL;

    if (ka_arena_alloc_array(arena, n ? n : 1, size, &p) < 0)
        return NULL;
    return p;
}

/* --- frames -------------------------------------------------------------- */

/* Patches the size prefix and hands the buffer over, or frees it. */
static int writer_finish(ka_writer_t *w, uint8_t **out, size_t *out_len)
{
    int rc;

    if (w->err == 0)
        ka_writer_patch_i32(w, 0, (int32_t)(w->len - 4));
    if (w->err != 0) {
        rc = w->err;
        ka_writer_free(w);
        return rc;
    }
    *out = w->buf;
    *out_len = w->len;
    return 0;
}

/* size prefix + the request's header bytes verbatim + the (edited) body. */
int ka_adm_encode_request(const ka_adm_req_t *req, size_t max, uint8_t **out, size_t *out_len)
{
    ka_writer_t w;
    int rc;

    ka_writer_init(&w, max);
    ka_write_i32(&w, 0);
    ka_write_raw(&w, req->frame + 4, req->body_off - 4);
    req->codec->encode(&w, req->hdr.request_api_version, req->msg);
    rc = writer_finish(&w, out, out_len);
    if (rc == 0) {
        /* The header is the client's, verbatim, but for a request sent on
         * at another version (Metadata v0-3 as v4): api_version is byte 6. */
        (*out)[6] = (uint8_t)((uint16_t)req->hdr.request_api_version >> 8);
        (*out)[7] = (uint8_t)req->hdr.request_api_version;
    }
    return rc;
}

int ka_adm_encode_response(int16_t api_key, int16_t version, int32_t correlation_id,
                           ka_slice_t header_tags, const void *resp, size_t max, uint8_t **out,
                           size_t *out_len)
{
    const struct ka_codec *codec = ka_codec_find(api_key, KA_RESPONSE);
    struct ka_response_header h = {.correlation_id = correlation_id, .tagged_fields = header_tags};
    ka_writer_t w;

    if (codec == NULL)
        return KA_EUNSUPPORTED;
    ka_writer_init(&w, max);
    ka_write_i32(&w, 0);
    ka_response_header_encode(&w, ka_response_header_version(api_key, version), &h);
    codec->encode(&w, version, resp);
    return writer_finish(&w, out, out_len);
}

/* --- one result per topic (CreateTopics, CreatePartitions) ---------------- */

int ka_adm_answer_topics(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p,
                         const ka_adm_top_t *top, void *resp, ka_arena_t *arena)
{
    const ka_adm_results_t *rs = d->results;
    char *res = scratch(arena, p->count, rs->elem_size);

    (void)top; /* these responses have no top-level error */
    if (res == NULL)
        return KA_ENOMEM;
    rs->init_response(resp);
    for (size_t i = 0; i < p->count; i++)
        rs->fill(res + i * rs->elem_size, ka_adm_item_topic(&p->items[i]), p->items[i].error_code,
                 ka_adm_item_message(&p->items[i]));
    rs->set_items(resp, res, p->count);
    return 0;
}

/* The broker's unused result for a forwarded item, or -1. */
static long find_result(const ka_adm_results_t *rs, const char *br, size_t nb, const bool *used,
                        ka_slice_t name)
{
    for (size_t j = 0; j < nb; j++)
        if (!used[j] && ka_adm_slice_eq(rs->name(br + j * rs->elem_size), name))
            return (long)j;
    return -1;
}

int ka_adm_merge_topics(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp,
                        ka_arena_t *arena, bool *rewrite)
{
    const ka_adm_results_t *rs = d->results;
    size_t nb, m = 0, size = rs->elem_size;
    const char *br = rs->items(resp, &nb);
    bool *used = scratch(arena, nb, sizeof(*used));
    char *res = scratch(arena, p->count + nb, size);

    if (used == NULL || res == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];
        char *t = res + m++ * size;

        if (!it->local) {
            long j = find_result(rs, br, nb, used, ka_adm_item_topic(it));

            if (j >= 0) {
                used[j] = true;
                memcpy(t, br + (size_t)j * size, size);
                it->broker_error = rs->error_code(t);
                continue;
            }
            it->broker_error = -1; /* the broker did not answer for it */
            rs->fill(t, ka_adm_item_topic(it), -1,
                     KA_SLICE_LIT("kadmit: the broker's response lacked this topic"));
            continue;
        }
        rs->fill(t, ka_adm_item_topic(it), it->error_code, ka_adm_item_message(it));
    }
    for (size_t j = 0; j < nb; j++)
        if (!used[j])
            memcpy(res + m++ * size, br + j * size, size);
    if (p->local_count > 0) {
        rs->set_items(resp, res, m);
        *rewrite = true;
    }
    return 0;
}

/* --- one result per partition (AlterPartitionReassignments) -------------- */

/* The response's topics and partitions from p's items, in request order. */
static int fill_partitions(const ka_adm_pending_t *p,
                           struct ka_alterpartitionreassignments_response *resp, ka_arena_t *arena)
{
    struct ka_alterpartitionreassignments_response_reassignable_topic_response *topics =
        scratch(arena, p->count, sizeof(*topics));
    struct ka_alterpartitionreassignments_response_reassignable_partition_response *parts =
        scratch(arena, p->count, sizeof(*parts));
    int32_t nt = 0;

    if (topics == NULL || parts == NULL)
        return KA_ENOMEM;
    for (size_t i = 0; i < p->count; i++) {
        const ka_adm_item_t *it = &p->items[i];

        if (i == 0 ||
            !ka_adm_slice_eq(ka_adm_item_topic(it), ka_adm_item_topic(&p->items[i - 1]))) {
            ka_alterpartitionreassignments_response_reassignable_topic_response_init(&topics[nt]);
            topics[nt].name = ka_adm_item_topic(it);
            topics[nt].partitions.items = &parts[i];
            nt++;
        }
        ka_alterpartitionreassignments_response_reassignable_partition_response_init(&parts[i]);
        parts[i].partition_index = it->partition;
        parts[i].error_code = it->error_code;
        parts[i].error_message = ka_adm_item_message(it);
        topics[nt - 1].partitions.count++;
    }
    resp->responses.count = nt;
    resp->responses.items = topics;
    return 0;
}

int ka_adm_answer_partitions(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p,
                             const ka_adm_top_t *top, void *resp, ka_arena_t *arena)
{
    struct ka_alterpartitionreassignments_response *r = resp;

    (void)d;
    ka_alterpartitionreassignments_response_init(r);
    r->error_code = top->error_code;
    r->error_message = top->error_message;
    return fill_partitions(p, r, arena);
}

/* The broker's result for one forwarded partition, copied into the item. */
static int take_partition_result(ka_adm_item_t *it,
                                 const struct ka_alterpartitionreassignments_response *br)
{
    for (int32_t t = 0; t < br->responses.count; t++) {
        const struct ka_alterpartitionreassignments_response_reassignable_topic_response *tr =
            &br->responses.items[t];

        if (!ka_adm_slice_eq(tr->name, ka_adm_item_topic(it)))
            continue;
        for (int32_t q = 0; q < tr->partitions.count; q++) {
            const struct ka_alterpartitionreassignments_response_reassignable_partition_response
                *pr = &tr->partitions.items[q];

            if (pr->partition_index != it->partition)
                continue;
            it->broker_error = pr->error_code;
            it->error_code = pr->error_code;
            free(it->message);
            it->message = pr->error_message.len >= 0 ? ka_adm_dup_slice(pr->error_message) : NULL;
            if (pr->error_message.len >= 0 && it->message == NULL)
                return KA_ENOMEM;
            return 0;
        }
    }
    return 0;
}

int ka_adm_merge_partitions(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp,
                            ka_arena_t *arena, bool *rewrite)
{
    struct ka_alterpartitionreassignments_response *br = resp;
    int rc;

    (void)d;
    /* Mark failures first: a top-level error fails every forwarded partition. */
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];

        if (it->local)
            continue;
        it->broker_error = br->error_code != 0 ? br->error_code : -1;
        if (br->error_code == 0 && (rc = take_partition_result(it, br)) < 0)
            return rc;
    }
    if (p->local_count == 0)
        return 0;
    /* Merged: every partition in request order, the broker's results copied in. */
    for (size_t i = 0; i < p->count; i++) {
        ka_adm_item_t *it = &p->items[i];

        if (!it->local && it->broker_error == -1 && br->error_code == 0) {
            it->error_code = -1;
            free(it->message);
            it->message = strdup("kadmit: the broker's response lacked this partition");
        } else if (!it->local && br->error_code != 0) {
            it->error_code = br->error_code;
        }
    }
    *rewrite = true;
    return fill_partitions(p, br, arena);
}
