/*
 * ka_admission_configs_int.h: what the alter half (ka_admission_configs.c)
 * and the describe half (ka_admission_configs_describe.c) share.
 */
#ifndef KA_ADMISSION_CONFIGS_INT_H
#define KA_ADMISSION_CONFIGS_INT_H

#include "ka_admission_configs.h"
#include "ka_admission_int.h"

/* What protection decided for a TOPIC resource of an alter request. */
enum ka_cfg_protect {
    KA_CFG_PROTECT_NONE = 0, /* not protected, harmless, or an exempt principal */
    KA_CFG_PROTECT_REJECT,   /* refused: the resource is local, its message says why */
    KA_CFG_PROTECT_AUDIT     /* audit mode: forwarded, flagged */
};

/* One resource of the request, kept to the response. */
typedef struct ka_cfg_resource {
    int8_t type;
    char *name; /* NUL-terminated copy */
    int32_t name_len;
    int32_t broker_id; /* BROKER resources with kadmit's keys */
    /* Alter: refused by kadmit, answered with error_code and message. */
    bool local;
    int16_t error_code;
    char *message;
    /* Alter: forwarded, and kadmit's changes follow the broker's verdict. */
    bool ours;
    ka_cfg_change_t changes[KA_CFG_KEY_COUNT];
    size_t nchanges;
    /* Describe: which of kadmit's keys the answer shows. */
    bool want[KA_CFG_KEY_COUNT];
    /* Alter, TOPIC resources: the topic rule whose config bounds judged it (a copy), or NULL;
     * audited: an audit rule found a bound broken, and the resource went on. */
    char *rule;
    bool audited;
    /* Alter, TOPIC resources: what protection decided (ka_admission_config_protect.c), for
     * kadmit's own topics (any change) and protected topics (changes that can destroy data);
     * protect_message is its sentence (a copy), NULL when protection did not apply. */
    enum ka_cfg_protect protect;
    char *protect_message;
} ka_cfg_resource_t;

/* IncrementalAlterConfigs' config_operation values (AlterConfigs' are all SET). */
enum ka_cfg_op {
    KA_CFG_OP_SET = 0,
    KA_CFG_OP_DELETE = 1,
    KA_CFG_OP_APPEND = 2,
    KA_CFG_OP_SUBTRACT = 3
};

/* One config of a resource, as either alter API carries it. */
typedef struct cfg_entry {
    ka_slice_t name;
    int8_t op;
    ka_slice_t value;
    ka_slice_t tags;
} cfg_entry_t;

/* One resource of either alter API: its configs are slices into the frame. */
typedef struct cfg_res_view {
    int8_t type;
    ka_slice_t name;
    ka_slice_t tags;
    size_t count;
    cfg_entry_t *configs;
} cfg_res_view_t;

struct ka_cfg_pending {
    int16_t api_key;
    int16_t api_version;
    bool validate_only;
    bool include_synonyms;
    bool include_documentation;
    size_t count; /* alter: every resource in request order; describe: the BROKER ones */
    ka_cfg_resource_t *res;
    size_t local_count;
};

/* Arena scratch for n elements (n == 0 still gives a pointer); NULL on failure. */
static inline void *ka_cfg_scratch(ka_arena_t *arena, size_t n, size_t size)
{
    void *p = NULL;

    if (ka_arena_alloc_array(arena, n ? n : 1, size, &p) < 0)
        return NULL;
    return p;
}

/*
 * A TOPIC resource of an alter request (ka_admission_topic_configs.c):
 * judged against its topic rule's config bounds. A broken bound refuses
 * it (local, POLICY_VIOLATION), or under an audit rule flags it and lets
 * it go on. replaces_all: AlterConfigs, where a key it leaves out falls
 * back to the broker's default. Returns 0 or KA_ENOMEM.
 */
int ka_cfg_plan_topic(const ka_cfg_ctx_t *ctx, bool replaces_all, const cfg_res_view_t *rv,
                      ka_cfg_resource_t *res);
/*
 * A TOPIC resource of an alter request judged for protection
 * (ka_admission_config_protect.c), before its topic rule: any change to
 * kadmit's own topics is refused; a change that can destroy data of a
 * protected topic is refused, or flagged in audit mode. A refused resource
 * is local and its topic rule is not judged. Returns 0 or KA_ENOMEM.
 */
int ka_cfg_protect_topic(const ka_cfg_ctx_t *ctx, int16_t api_key, bool replaces_all,
                         const cfg_res_view_t *rv, ka_cfg_resource_t *res);
/* Adds a planned TOPIC resource to the outcome's topic tallies. */
void ka_cfg_count_topic(const ka_cfg_resource_t *res, ka_cfg_outcome_t *out);

/* The key a config name is, or -1. */
int ka_cfg_key_of(ka_slice_t name);
/* "" is the default entity; digits are a broker id; anything else -2. */
int32_t ka_cfg_broker_of(ka_slice_t name);
/* A new pending state for n resources; NULL without memory. */
ka_cfg_pending_t *ka_cfg_pending_new(int16_t api_key, int16_t api_version, size_t n);
/* Decodes a request frame into the arena: *hdr (slices into frame), its
 * body at *body_off, the message in *msg. Returns 0, KA_ENOMEM, or a
 * decode error with a sentence in why. */
int ka_cfg_decode_request(const uint8_t *frame, size_t len, ka_arena_t *arena,
                          struct ka_request_header *hdr, size_t *body_off, void **msg, char *why,
                          size_t whylen);
/* Decodes the response to p's request into the arena. Returns 0 or an error. */
int ka_cfg_decode_response(const ka_cfg_pending_t *p, const uint8_t *frame, size_t len,
                           ka_arena_t *arena, struct ka_response_header *rh, void **msg);

#endif
