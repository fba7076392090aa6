/*
 * ka_mdc_sasl.h: the SASL exchange of kadmit's own connection.
 *
 * After ApiVersions the metadata client authenticates with SaslHandshake v1
 * and SaslAuthenticate v1 (Kafka framing for the tokens, so every token is
 * a request with a header): PLAIN in one round trip, SCRAM-SHA-256 and
 * SCRAM-SHA-512 in two (ka_scram.h). This module decides the content of
 * each request from the previous answer, as generated codec structs; the
 * owner encodes, sends and decodes them. No I/O, so the exchange is
 * testable with byte arrays.
 */
#ifndef KA_MDC_SASL_H
#define KA_MDC_SASL_H

#include <stddef.h>

#include "ka_saslauthenticate_request.h"
#include "ka_saslauthenticate_response.h"
#include "ka_saslhandshake_request.h"
#include "ka_saslhandshake_response.h"
#include "ka_scram.h"
#include "ka_transport.h"

#define KA_MDC_SASL_HANDSHAKE_VERSION    1
#define KA_MDC_SASL_AUTHENTICATE_VERSION 1

/* A PLAIN token (NUL, user name, NUL, password) or a SCRAM message. */
#define KA_MDC_SASL_TOKEN_MAX                                                                      \
    (KA_SCRAM_MAX_MESSAGE > 2 + 256 + 512 ? KA_SCRAM_MAX_MESSAGE : 2 + 256 + 512)

typedef struct ka_mdc_sasl {
    const ka_upstream_security_t *sec; /* the identity (the owner's copy, outlives the exchange) */
    ka_scram_t scram;                  /* the SCRAM exchange in progress */
    int round_trips;                   /* SaslAuthenticate answers seen */
    uint8_t token[KA_MDC_SASL_TOKEN_MAX]; /* what the next SaslAuthenticate carries */
} ka_mdc_sasl_t;

/* Starts an exchange for sec's mechanism: fills the SaslHandshake request. */
void ka_mdc_sasl_begin(ka_mdc_sasl_t *s, const ka_upstream_security_t *sec,
                       struct ka_saslhandshake_request *req);
/*
 * The SaslHandshake answer: fills the first SaslAuthenticate request
 * (valid until the next call) and returns 0, or a negative ka_err with a
 * sentence in why.
 */
int ka_mdc_sasl_on_handshake(ka_mdc_sasl_t *s, const struct ka_saslhandshake_response *resp,
                             struct ka_saslauthenticate_request *next, char *why, size_t whylen);
/*
 * A SaslAuthenticate answer: 1 with the next request filled, 0 once
 * authenticated (the server's proof checked for SCRAM), or a negative
 * ka_err with a sentence in why.
 */
int ka_mdc_sasl_on_authenticate(ka_mdc_sasl_t *s, const struct ka_saslauthenticate_response *resp,
                                struct ka_saslauthenticate_request *next, char *why, size_t whylen);
/* Wipes the exchange's secrets; safe to call twice. */
void ka_mdc_sasl_clear(ka_mdc_sasl_t *s);

#endif
