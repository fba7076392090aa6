/*
 * ka_mdc_refresh.c: the worker-thread steps of a metadata refresh (see
 * ka_mdc_refresh.h). Both only read the refresh's frames and answers and
 * write its own fields; the arena is the refresh's alone.
 */
#include "ka_mdc_refresh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_log.h"
#include "ka_view_build.h"

void ka_mdc_refresh_decode_work(uv_work_t *w)
{
    struct ka_mdc_refresh *f = w->data;
    uint64_t start = uv_hrtime();
    ka_reader_t *r = &f->metadata_reader;

    f->rc = ka_codec_find(KA_METADATA_REQUEST_API_KEY, KA_RESPONSE)
                ->decode(r, f->metadata_version, &f->arena, &f->metadata);
    if (f->rc < 0 && r->err)
        ka_decode_error_format_dir(f->err, sizeof(f->err), KA_METADATA_REQUEST_API_KEY,
                                   f->metadata_version, KA_RESPONSE, r);
    f->work_ns += uv_hrtime() - start;
}

void ka_mdc_refresh_build_work(uv_work_t *w)
{
    struct ka_mdc_refresh *f = w->data;
    const struct ka_describeconfigs_response *configs = &f->configs;
    ka_view_answers_t answers = {
        .taken_at_ms = f->taken_at_ms,
        .answered_at_ms = f->answered_at_ms,
        .metadata = &f->metadata,
        .cluster = f->have_cluster ? &f->cluster : NULL,
        .cluster_lists_fenced = f->cluster_version >= 2,
        .configs = &configs,
        .config_count = f->have_configs ? 1 : 0,
        .fallback_defaults = f->have_fallback ? &f->fallback : NULL,
    };
    uint64_t start = uv_hrtime();

    f->rc = ka_view_build(&answers, &f->view, f->err, sizeof(f->err));
    /* Linear in the broker's replicas, so here too rather than on the loop. */
    if (f->rc == 0 && f->have_logdirs)
        ka_logdirs_compare(f->view, f->logdirs_reader, f->logdirs_version, &f->logdirs);
    /* The view holds copies of all it needs: the decoded answers (tens of
     * MiB at a few hundred thousand partitions) are freed here, off the loop. */
    ka_arena_destroy(&f->arena);
    f->work_ns += uv_hrtime() - start;
}

/* ConfigResource's type of a broker. */
#define RESOURCE_TYPE_BROKER 4

int ka_mdc_configs_request(const struct ka_metadata_response *md,
                           struct ka_describeconfigs_request *req, void **storage)
{
    static ka_slice_t keys[] = {KA_SLICE_LIT("num.partitions"),
                                KA_SLICE_LIT("default.replication.factor"),
                                KA_SLICE_LIT("auto.create.topics.enable"),
                                KA_SLICE_LIT("min.insync.replicas"),
                                KA_SLICE_LIT("log.retention.ms"),
                                KA_SLICE_LIT("log.retention.minutes"),
                                KA_SLICE_LIT("log.retention.hours"),
                                KA_SLICE_LIT("log.retention.bytes"),
                                KA_SLICE_LIT("log.cleanup.policy"),
                                KA_SLICE_LIT("message.max.bytes"),
                                KA_SLICE_LIT("log.segment.bytes")};
    size_t n = md->brokers.count > 0 ? (size_t)md->brokers.count : 0;
    struct ka_describeconfigs_request_describe_configs_resource *res;
    char(*names)[16];

    ka_describeconfigs_request_init(req);
    /* One block: the resources, then each broker id as text. */
    res = calloc(n ? n : 1, sizeof(*res) + sizeof(*names));
    if (res == NULL)
        return KA_ENOMEM;
    names = (char(*)[16])(void *)(res + n);
    for (size_t i = 0; i < n; i++) {
        ka_describeconfigs_request_describe_configs_resource_init(&res[i]);
        int len = snprintf(names[i], sizeof(names[i]), "%d", md->brokers.items[i].node_id);
        res[i].resource_type = RESOURCE_TYPE_BROKER;
        res[i].resource_name = (ka_slice_t){(const uint8_t *)names[i], len};
        res[i].configuration_keys.count = (int32_t)(sizeof(keys) / sizeof(keys[0]));
        res[i].configuration_keys.items = keys;
    }
    req->resources.count = (int32_t)n;
    req->resources.items = res;
    *storage = res;
    return 0;
}

void ka_mdc_refresh_note_defaults(const struct ka_mdc_refresh *f, ka_broker_defaults_t *known,
                                  int *have_known)
{
    const struct ka_describeconfigs_response *configs = &f->configs;
    ka_broker_defaults_t d;

    if (!f->have_configs || !ka_view_broker_defaults(&configs, 1, &d))
        return;
    if (!*have_known || memcmp(&d, known, sizeof(d)) != 0)
        ka_log(KA_LOG_INFO, "broker defaults", KA_KI("num.partitions", d.num_partitions),
               KA_KI("default.replication.factor", d.default_replication_factor),
               KA_KS("auto.create.topics.enable", d.auto_create_topics_enable ? "true" : "false"),
               KA_KI("min.insync.replicas", d.min_insync_replicas),
               KA_KI("retention.ms", d.retention_ms), KA_KS("cleanup.policy", d.cleanup_policy),
               KA_KI("topic_defaults_known", d.topic_known));
    *known = d;
    *have_known = 1;
}
