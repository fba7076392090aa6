/*
 * ka_admission_own.c: kadmit's own topics, whatever their configured names
 * (ARCHITECTURE.md, invariant 11).
 *
 * The ledger (--ledger-topic) holds the order of every admission in the
 * cluster in the offsets of its one partition; the limits topic
 * (--limits-topic) holds the cluster's limits, compacted. A client that
 * deletes, trims, widens or reconfigures either through kadmit would
 * change every later decision of every sidecar, so each of those requests
 * is refused per item, whatever the policy says and whoever asks: no
 * "protected.topics" setting, audit mode or principal exemption applies.
 * Both default names stay protected too, so a sidecar configured with
 * other names still guards the topics a neighbour may use.
 *
 * The names are set once at startup, before the first decision, and only
 * read afterwards: decisions need no lock, and the pure path gets them
 * without a new field in every caller's context. kadmit's own ledger and
 * limits clients talk to the broker directly and never meet this check.
 *
 * CreatePartitions goes through the engine, which reserves what it admits:
 * kadmit's own topics are refused before the engine sees the request, and
 * the engine judges the other items, in request order, on a copy without
 * them (ka_adm_own_judge).
 */
#include "ka_admission_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_metrics.h"
#include "ka_own_topics.h"

/* Kafka's longest topic name is 249 bytes. */
#define OWN_NAME_MAX 250

/* The configured names; empty: the default alone. */
static char configured_ledger[OWN_NAME_MAX];
static char configured_limits[OWN_NAME_MAX];

static int copy_name(char *field, const char *name)
{
    size_t len = name != NULL ? strlen(name) : 0;

    if (len >= OWN_NAME_MAX)
        return KA_EINVALID;
    memcpy(field, name != NULL ? name : "", len + 1);
    return 0;
}

int ka_adm_own_topics_setup(const char *ledger_topic, const char *limits_topic)
{
    char ledger[OWN_NAME_MAX], limits[OWN_NAME_MAX];

    if (copy_name(ledger, ledger_topic) < 0 || copy_name(limits, limits_topic) < 0)
        return KA_EINVALID;
    memcpy(configured_ledger, ledger, sizeof(ledger));
    memcpy(configured_limits, limits, sizeof(limits));
    return 0;
}

static bool name_is(ka_slice_t s, const char *text)
{
    return text[0] != '\0' && s.len >= 0 && (size_t)s.len == strlen(text) &&
           memcmp(s.ptr, text, (size_t)s.len) == 0;
}

enum ka_adm_own ka_adm_own_topic(ka_slice_t name)
{
    if (name_is(name, configured_ledger) || name_is(name, KA_OWN_TOPIC_LEDGER))
        return KA_ADM_OWN_LEDGER;
    if (name_is(name, configured_limits) || name_is(name, KA_OWN_TOPIC_LIMITS))
        return KA_ADM_OWN_LIMITS;
    return KA_ADM_OWN_NONE;
}

void ka_adm_own_message(enum ka_adm_own which, ka_slice_t name, const char *api, char *msg,
                        size_t cap)
{
    int n = name.len > 0 ? (int)name.len : 0;
    bool ledger = which == KA_ADM_OWN_LEDGER;

    snprintf(msg, cap,
             "topic '%.*s' is kadmit's own %s topic; changing it through kadmit is refused (%s), "
             "whatever the policy or the principal: %s, and only kadmit's sidecars write it",
             n, n > 0 ? (const char *)name.ptr : "", ledger ? "ledger" : "limits", api,
             ledger ? "the offsets of its one partition are the order of every admission in the "
                      "cluster"
                    : "it holds the cluster's limits, one compacted record per key");
}

int ka_adm_own_verdict(enum ka_adm_own which, ka_slice_t name, const char *api, ka_verdict_t *v)
{
    char msg[KA_MESSAGE_MAX];

    ka_adm_own_message(which, name, api, msg, sizeof(msg));
    *v = (ka_verdict_t){.kind = KA_VERDICT_REJECT,
                        .reason = KA_REASON_PROTECTED_TOPIC,
                        .error_code = KA_KAFKA_ERR_POLICY_VIOLATION};
    if ((v->rule = strdup("protected.topics")) == NULL || (v->message = strdup(msg)) == NULL)
        return KA_ENOMEM;
    return 0;
}

int ka_adm_own_judge(const ka_decision_context_t *dctx, ka_adm_req_t *req, size_t input_size,
                     ka_adm_engine_fn engine)
{
    const char *api = ka_adm_api_name(req->desc->api);
    size_t own = 0, rest, k = 0;
    ka_verdict_t *verdicts;
    char *inputs;
    int rc = 0;

    for (size_t i = 0; i < req->count; i++)
        own += ka_adm_own_topic(req->names[i]) != KA_ADM_OWN_NONE;
    if (own == 0) /* the usual case: the engine judges the request as sent */
        return engine(dctx, req->inputs, req->count, req->verdicts);
    rest = req->count - own;
    inputs = ka_adm_scratch(req, rest, input_size);
    verdicts = calloc(rest ? rest : 1, sizeof(*verdicts));
    if (inputs == NULL || verdicts == NULL) {
        free(verdicts);
        return KA_ENOMEM;
    }
    for (size_t i = 0; i < req->count; i++)
        if (ka_adm_own_topic(req->names[i]) == KA_ADM_OWN_NONE)
            memcpy(inputs + k++ * input_size, (const char *)req->inputs + i * input_size,
                   input_size);
    if (rest > 0 && (rc = engine(dctx, inputs, rest, verdicts)) < 0) {
        /* The engine undid its reservations; its verdicts are released like the path's. */
        for (k = 0; k < rest; k++)
            ka_verdict_release(&verdicts[k]);
        goto done;
    }
    k = 0;
    for (size_t i = 0; i < req->count; i++) {
        enum ka_adm_own which = ka_adm_own_topic(req->names[i]);

        if (which == KA_ADM_OWN_NONE)
            req->verdicts[i] = verdicts[k++];
        else if (rc == 0)
            rc = ka_adm_own_verdict(which, req->names[i], api, &req->verdicts[i]);
    }
    if (rc < 0) /* out of memory for a sentence: undo what the engine reserved */
        for (size_t i = 0; i < req->count; i++) {
            if (req->verdicts[i].reservation_id != 0)
                ka_reservations_release(dctx->ledger, req->verdicts[i].reservation_id);
            ka_verdict_release(&req->verdicts[i]);
            memset(&req->verdicts[i], 0, sizeof(req->verdicts[i]));
        }
done:
    free(verdicts);
    return rc;
}
