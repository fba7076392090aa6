/*
 * ka_audit.c: see ka_audit.h.
 *
 * An event is one structured log line (message "audit", event "audit") at
 * info, so it follows --log-format: JSON for shippers, text for people.
 * ka_log escapes every value; the slices (client id, resource) are copied
 * into bounded buffers first, and a longer value is cut, never read past.
 */
#include "ka_audit.h"

#include <stdio.h>
#include <string.h>

#include "ka_log.h"
#include "ka_metrics.h"

#define AUDIT_SLICE_MAX 256

static ka_metrics_t *g_metrics;
static char g_unknown[256] = "User:ANONYMOUS";

void ka_audit_setup(struct ka_metrics *metrics, const char *unknown_principal)
{
    g_metrics = metrics;
    snprintf(g_unknown, sizeof(g_unknown), "%s",
             unknown_principal && unknown_principal[0] ? unknown_principal : "User:ANONYMOUS");
}

static const char *slice_copy(char *out, size_t cap, const char *p, size_t len)
{
    if (p == NULL)
        return NULL;
    if (len > cap - 1)
        len = cap - 1;
    memcpy(out, p, len);
    out[len] = '\0';
    return out;
}

static enum ka_rule_verdict verdict_of(const char *v)
{
    static const char *names[KA_RULE_VERDICT_COUNT] = {"admit", "reject", "audit", "defer"};
    for (int i = 0; v != NULL && i < KA_RULE_VERDICT_COUNT; i++)
        if (strcmp(v, names[i]) == 0)
            return (enum ka_rule_verdict)i;
    return KA_RULE_VERDICT_COUNT;
}

void ka_audit_emit(const ka_audit_event_t *e)
{
    char client_id[AUDIT_SLICE_MAX], resource[AUDIT_SLICE_MAX];
    const char *principal = e->principal && e->principal[0] ? e->principal : NULL;

    if (g_metrics != NULL)
        ka_metrics_count_rule(g_metrics, e->rule, verdict_of(e->verdict));
    ka_log(KA_LOG_INFO, "audit", KA_KS("event", "audit"),
           KA_KS("principal", principal ? principal : g_unknown),
           KA_KI("principal_known", principal != NULL), KA_KS("client_address", e->client_addr),
           KA_KS("client_id",
                 slice_copy(client_id, sizeof(client_id), e->client_id, e->client_id_len)),
           KA_KS("api", e->api),
           KA_KS("resource", slice_copy(resource, sizeof(resource), e->resource, e->resource_len)),
           KA_KS("rule", e->rule ? e->rule : ""), KA_KS("verdict", e->verdict),
           KA_KS("reason", e->reason), KA_KS("message", e->message));
}
