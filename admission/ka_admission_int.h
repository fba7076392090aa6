/*
 * ka_admission_int.h: admission/'s private face, shared by the path
 * (ka_admission.c), the per-API descriptors (ka_admission_apis.c) and the
 * answers and merges (ka_admission_merge.c).
 *
 * The path is written once and knows no API. Each API is a descriptor: how
 * to turn its decoded request into the engine's items, which engine call
 * judges them, how to cut the request down to the admitted items, how to
 * answer locally, and how to merge local rejections into the broker's
 * response. Adding an API (IncrementalAlterConfigs, DeleteTopics) is adding
 * a descriptor to the table.
 */
#ifndef KA_ADMISSION_INT_H
#define KA_ADMISSION_INT_H

#include "ka_admission.h"
#include "ka_engine.h"
#include "ka_protocol.h"

/* The decode arena's cap: one request's decoded struct and scratch. */
#define KA_ADM_ARENA_CAP ((size_t)64 * 1024 * 1024)

/* Kafka's INVALID_REQUEST, for the undecodable request that has a
 * top-level error. The one place to switch to a generated table. */
#define KA_ADM_INVALID_REQUEST KA_KAFKA_ERR_INVALID_REQUEST

/* The first Metadata version with allow_auto_topic_creation. */
#define KA_ADM_METADATA_FLAG_VERSION 4

struct ka_adm_api_desc;

struct ka_adm_req {
    const struct ka_adm_api_desc *desc;
    const struct ka_codec *codec; /* the request's codec */
    uint8_t *frame;               /* our copy: every slice below points into it */
    size_t len;
    size_t body_off; /* size prefix and header */
    struct ka_request_header hdr;
    ka_arena_t arena; /* the decoded request, engine inputs, subset scratch */
    void *msg;        /* the decoded request (codec->struct_size bytes) */
    size_t trailing_bytes;
    /* Items, in request order: the descriptor's engine inputs, and what the
     * pending state needs to answer for each. */
    size_t count;
    void *inputs;
    ka_slice_t *names;
    int32_t *partitions; /* -1 where the API has none */
    ka_verdict_t *verdicts;
    /* DeleteTopics v6+: the id each item was named by (all zero: by name); else NULL. */
    uint8_t (*topic_ids)[16];
    bool judged;
    bool wants_view;
    /* No item to judge, yet the request goes on rewritten by the descriptor's subset:
     * Metadata naming only topics the view lists clears allow_auto_topic_creation, since a
     * listed topic may have been deleted a moment ago and would be created again unjudged. */
    bool rewrite_unjudged;
};

/* The top-level fields of a response that has them (AlterPartitionReassignments). */
typedef struct ka_adm_top {
    int16_t error_code;
    ka_slice_t error_message;
} ka_adm_top_t;

/*
 * A response whose results are one entry per topic (CreateTopics,
 * CreatePartitions): the generic answer and merge read and build entries
 * through these accessors, so the two APIs share one implementation.
 */
typedef struct ka_adm_results {
    size_t elem_size;
    void (*init_response)(void *resp);
    /* Initialises an entry for a topic kadmit answers for itself. */
    void (*fill)(void *elem, ka_slice_t name, int16_t error_code, ka_slice_t error_message);
    ka_slice_t (*name)(const void *elem);
    int16_t (*error_code)(const void *elem);
    void *(*items)(void *resp, size_t *count);
    void (*set_items)(void *resp, void *items, size_t count);
} ka_adm_results_t;

typedef struct ka_adm_api_desc {
    enum ka_adm_api api;
    int16_t api_key;
    /* Requests below this version have nothing to judge (Metadata < 4). */
    int16_t min_judged_version;
    /* Bytes after the message are ignored, as the broker does (Metadata). */
    bool tolerates_trailing;
    /* A request that does not decode gets an INVALID_REQUEST answer, not a close. */
    bool answers_decode_errors;
    /* Any rejection changes the whole request; there are no per-item
     * answers. With a subset, the request goes on cut down (Metadata clears
     * its auto-creation flag); without one, it is answered locally
     * (StreamsGroupHeartbeat). */
    bool whole_request;
    /* Sets req->count and fills req->inputs, names, partitions (in the
     * arena); 0 items: nothing to judge. Returns 0 or KA_ENOMEM. */
    int (*items)(struct ka_adm_req *req, const ka_adm_ctx_t *ctx);
    /* The engine call: req->inputs into req->verdicts. */
    int (*judge)(const ka_decision_context_t *dctx, struct ka_adm_req *req);
    /* Optional: called once the verdicts stand (not for a judgement undone to
     * wait for a fresher view), e.g. to write each item's audit event. */
    void (*judged)(const struct ka_adm_req *req, const ka_adm_ctx_t *ctx);
    /* Cuts req->msg down to the admitted items and writes placed
     * assignments (scratch in the arena); the path then encodes it. */
    int (*subset)(struct ka_adm_req *req);
    /* Fills a zeroed response struct answering every item of p locally. */
    int (*answer)(const struct ka_adm_api_desc *d, const ka_adm_pending_t *p,
                  const ka_adm_top_t *top, void *resp, ka_arena_t *arena);
    /* Marks p's items with the broker's errors and, when p has local items,
     * merges them into resp in request order and sets *rewrite. */
    int (*merge)(const struct ka_adm_api_desc *d, ka_adm_pending_t *p, void *resp,
                 ka_arena_t *arena, bool *rewrite);
    const ka_adm_results_t *results; /* for the generic answer and merge */
} ka_adm_api_desc_t;

/* The descriptor for an api_key, or NULL (ka_admission_apis.c). */
const ka_adm_api_desc_t *ka_adm_desc_find(int16_t api_key);

/* Helpers of the descriptors (ka_admission_apis.c). Arena scratch for n
 * elements (n == 0 still gives a pointer); NULL on failure. */
void *ka_adm_scratch(ka_adm_req_t *req, size_t n, size_t size);
/* Sets the item count and allocates the per-item arrays. */
int ka_adm_items_begin(ka_adm_req_t *req, size_t count, size_t input_size);
/*
 * Cuts an array of req->count elements of `size` bytes (one per item) down
 * to the admitted items, in order, into scratch; place() rewrites each
 * placed one. Returns the new array (*kept elements) or NULL without memory.
 */
void *ka_adm_keep_admitted(ka_adm_req_t *req, const void *items, size_t size, size_t *kept,
                           int (*place)(ka_adm_req_t *req, void *elem, const ka_verdict_t *v));

/* DeleteTopics and DeleteRecords of protected topics (ka_admission_delete.c). */
int ka_adm_dt_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx);
int ka_adm_dt_subset(ka_adm_req_t *req);
int ka_adm_dt_answer(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p, const ka_adm_top_t *top,
                     void *resp, ka_arena_t *arena);
int ka_adm_dt_merge(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp, ka_arena_t *arena,
                    bool *rewrite);
int ka_adm_dr_items(ka_adm_req_t *req, const ka_adm_ctx_t *ctx);
int ka_adm_dr_subset(ka_adm_req_t *req);
int ka_adm_dr_answer(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p, const ka_adm_top_t *top,
                     void *resp, ka_arena_t *arena);
int ka_adm_dr_merge(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp, ka_arena_t *arena,
                    bool *rewrite);
int ka_adm_protect_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req);
void ka_adm_protect_audit(const ka_adm_req_t *req, const ka_adm_ctx_t *ctx);

/* kadmit's own topics (ka_admission_own.c): which one a name is. */
enum ka_adm_own { KA_ADM_OWN_NONE = 0, KA_ADM_OWN_LEDGER, KA_ADM_OWN_LIMITS };
enum ka_adm_own ka_adm_own_topic(ka_slice_t name);
/* Why `api` (its Kafka name) may not change own topic `name`, for the client. */
void ka_adm_own_message(enum ka_adm_own which, ka_slice_t name, const char *api, char *msg,
                        size_t cap);
/* The refusal of an item naming own topic `name`: POLICY_VIOLATION with that sentence. */
int ka_adm_own_verdict(enum ka_adm_own which, ka_slice_t name, const char *api, ka_verdict_t *v);
/* An engine call over `count` inputs of one API (typed by its wrapper). */
typedef int (*ka_adm_engine_fn)(const ka_decision_context_t *dctx, const void *inputs, size_t count,
                                ka_verdict_t *verdicts);
/* Refuses the items naming kadmit's own topics and lets `engine` judge the rest, in request
 * order, on a copy of their inputs (input_size bytes each). Returns 0 or KA_ENOMEM. */
int ka_adm_own_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req, size_t input_size,
                     ka_adm_engine_fn engine);

/* The generic per-topic answer and merge (ka_admission_merge.c). */
int ka_adm_answer_topics(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p,
                         const ka_adm_top_t *top, void *resp, ka_arena_t *arena);
int ka_adm_merge_topics(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp,
                        ka_arena_t *arena, bool *rewrite);
/* AlterPartitionReassignments' nested answer and merge (ka_admission_merge.c). */
int ka_adm_answer_partitions(const ka_adm_api_desc_t *d, const ka_adm_pending_t *p,
                             const ka_adm_top_t *top, void *resp, ka_arena_t *arena);
int ka_adm_merge_partitions(const ka_adm_api_desc_t *d, ka_adm_pending_t *p, void *resp,
                            ka_arena_t *arena, bool *rewrite);

/* Frames: size prefix + header + body through the type-correct codec. */
int ka_adm_encode_request(const struct ka_adm_req *req, size_t max, uint8_t **out, size_t *out_len);
int ka_adm_encode_response(int16_t api_key, int16_t version, int32_t correlation_id,
                           ka_slice_t header_tags, const void *resp, size_t max, uint8_t **out,
                           size_t *out_len);

/* Item text helpers. */
ka_slice_t ka_adm_item_topic(const ka_adm_item_t *it);
ka_slice_t ka_adm_item_message(const ka_adm_item_t *it);
bool ka_adm_slice_eq(ka_slice_t a, ka_slice_t b);
/* A NUL-terminated malloc'd copy; NULL without memory. */
char *ka_adm_dup_slice(ka_slice_t s);

#endif
