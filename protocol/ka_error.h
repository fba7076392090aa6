/*
 * ka_error.h: the error codes every kadmit function returns.
 *
 * Functions return 0 on success or one of these negative codes, so that a
 * caller can propagate a failure with a plain `if (rc < 0) return rc;`.
 * Kafka's own error codes, the ones sent on the wire in error_code fields
 * (KA_KAFKA_ERR_POLICY_VIOLATION, ...), are generated from the pinned Kafka
 * release into ka_error_codes.h, included here; these are kadmit's local
 * conditions and are never sent on the wire.
 */
#ifndef KA_ERROR_H
#define KA_ERROR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "ka_error_codes.h"

enum ka_err {
    KA_OK = 0,
    KA_EUNDERFLOW = -1,   /* the frame ended before the field did */
    KA_ELIMIT = -2,       /* a length or count exceeded kadmit's cap */
    KA_EINVALID = -3,     /* a value is not legal for its type (e.g. a negative length) */
    KA_ENOMEM = -4,       /* an allocation failed, or the arena is exhausted */
    KA_ETRAILING = -5,    /* bytes remained after a complete message */
    KA_EUNSUPPORTED = -6, /* an API version kadmit does not decode */
    KA_EOVERFLOW = -7,    /* a writer ran out of space */
    KA_ECONFLICT = -8,    /* a change was based on a state that another change replaced */
};

/* A short, static description of a ka_err code ("frame truncated", ...). */
const char *ka_strerror(int err);

/*
 * Fills a caller's error buffer (err may be NULL or errlen 0) with a sentence.
 * Inline so that modules which take only protocol/'s headers can use it.
 */
static inline void ka_error_printf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void ka_error_printf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

#endif
