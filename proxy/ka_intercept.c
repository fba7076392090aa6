/*
 * ka_intercept.c: the default interception table and its one handler.
 *
 * ApiVersions responses are the first intercepted frames: the broker's
 * advertised max versions are lowered in place to what kadmit decodes
 * (ARCHITECTURE invariant 4), so clients never send an admission request
 * kadmit cannot read.
 */
#include "ka_intercept.h"

#include <string.h>

#include "ka_apiversions.h"
#include "ka_log.h"

int ka_intercept_apiversions_response(void *user, const ka_inflight_entry_t *request,
                                      uint8_t *frame, size_t *len, ka_hook_verdict_t *v)
{
    int changed = 0;
    (void)user;
    memset(v, 0, sizeof(*v));
    v->kind = KA_HOOK_FORWARD;
    if (*len < 4)
        return 0;
    int rc = ka_apiversions_response_clamp(frame + 4, *len - 4, request->api_version, &changed);
    if (rc < 0) {
        /* The client would fail on it as well; pass it on and say so. */
        ka_log(KA_LOG_WARN, "ApiVersions response does not parse, forwarded unchanged",
               KA_KI("api_version", request->api_version), KA_KS("error", ka_strerror(rc)));
        v->reason = "unparsable";
        return 0;
    }
    static int warned_undecodable;
    if (changed < 0 && !warned_undecodable) {
        /* Once per process: every client connection would repeat it. */
        warned_undecodable = 1;
        ka_log(KA_LOG_WARN, "broker offers only versions kadmit cannot decode for some API",
               KA_KI("api_version", request->api_version));
    } else if (changed > 0)
        ka_log(KA_LOG_DEBUG, "ApiVersions response clamped", KA_KI("entries_lowered", changed));
    return 0;
}

void ka_intercept_table_default(ka_intercept_table_t *t)
{
    memset(t, 0, sizeof(*t));
    t->api[KA_API_API_VERSIONS].buffer_response = 1;
    t->api[KA_API_API_VERSIONS].on_response = ka_intercept_apiversions_response;
}
