/*
 * ka_mdc_refresh.c: the worker-thread steps of a metadata refresh (see
 * ka_mdc_refresh.h). Both only read the refresh's frames and answers and
 * write its own fields; the arena is the refresh's alone.
 */
#include "ka_mdc_refresh.h"

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
        .metadata = &f->metadata,
        .cluster = f->have_cluster ? &f->cluster : NULL,
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
