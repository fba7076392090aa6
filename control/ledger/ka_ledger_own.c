/*
 * ka_ledger_own.c: the MAC check of the ledger's records and the test of
 * kadmit's own topic names (see ka_ledger_own.h). Moved out of ka_ledger.c
 * unchanged, so that file keeps to its phases.
 */
#include "ka_ledger_own.h"

#include <string.h>

#include "ka_log.h"

bool ka_ledger_own_authentic(const ka_own_key_t *key, ka_own_warn_t *warn, ka_metrics_t *m,
                             const char *topic, const rd_kafka_message_t *msg, int64_t now_ms)
{
    rd_kafka_headers_t *hdrs = NULL;
    const void *mac = NULL;
    size_t mac_len = 0;
    uint64_t suppressed = 0;

    if (rd_kafka_message_headers(msg, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_header_get_last(hdrs, KA_OWN_MAC_HEADER, &mac, &mac_len) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
        mac = NULL;
    enum ka_own_verdict v = ka_own_mac_verify(key, KA_OWN_LEDGER, msg->key, msg->key_len,
                                              msg->payload, msg->len, mac, mac_len);
    if (v != KA_OWN_UNSIGNED && v != KA_OWN_BAD_MAC)
        return true;
    if (v == KA_OWN_UNSIGNED)
        m->own_refused_ledger_unsigned++;
    else
        m->own_refused_ledger_bad_mac++;
    if (ka_own_warn_due(warn, now_ms, &suppressed))
        ka_log(KA_LOG_WARN, "ledger record refused; it changes nothing", KA_KS("topic", topic),
               KA_KI("partition", msg->partition), KA_KI("offset", msg->offset),
               KA_KS("reason", ka_own_verdict_name(v)), KA_KI("refusals_not_logged", suppressed));
    return false;
}

int ka_ledger_own_topic(const char *ledger_topic, const char *limits_topic, ka_slice_t name)
{
    static const char prefix[] = "__kadmit";
    size_t len = name.len > 0 ? (size_t)name.len : 0;
    if ((len == strlen(ledger_topic) && memcmp(name.ptr, ledger_topic, len) == 0) ||
        (limits_topic[0] != '\0' && len == strlen(limits_topic) &&
         memcmp(name.ptr, limits_topic, len) == 0))
        return 1;
    return len >= sizeof(prefix) - 1 && memcmp(name.ptr, prefix, sizeof(prefix) - 1) == 0;
}
