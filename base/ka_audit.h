/*
 * ka_audit.h: one audit event per admission decision.
 *
 * Every item kadmit judges (a topic created or grown, a partition moved, a
 * topic config altered, a protected topic's delete) becomes one JSON event
 * naming who asked, from where, what, the rule that decided and the
 * verdict, and one count of kadmit_rule_decisions_total{rule,verdict}.
 * docs/logging.md has the event's fields.
 */
#ifndef KA_AUDIT_H
#define KA_AUDIT_H

#include <stddef.h>

typedef struct ka_audit_event {
    const char
        *principal; /* "User:alice"; NULL: unknown (logged as the policy's principal.unknown) */
    const char *client_addr; /* "127.0.0.1:53422", or NULL */
    const char *client_id;   /* the request header's client id, or NULL */
    size_t client_id_len;
    const char *api;      /* "CreateTopics", "DeleteTopics", ... */
    const char *resource; /* a topic, "topic-3" for a partition, a broker id */
    size_t resource_len;
    const char *rule;    /* the rule's name or the policy key that decided, or NULL: none applied */
    const char *verdict; /* "admit", "reject", "audit" (admitted, flagged), "defer" */
    const char *reason;  /* the reason's name, or NULL */
    const char *message; /* the rejection or audit sentence, or NULL */
} ka_audit_event_t;

/* Writes the event and counts it. Never fails the decision it describes. */
void ka_audit_emit(const ka_audit_event_t *event);

struct ka_metrics;
/*
 * Where events are counted (NULL: nowhere) and the name an unknown
 * principal is written as (the policy's principal.unknown; NULL keeps
 * "User:ANONYMOUS"). The admission runtime calls it at start and on every
 * policy reload; the process has one loop, so this is plain state.
 */
void ka_audit_setup(struct ka_metrics *metrics, const char *unknown_principal);

#endif
