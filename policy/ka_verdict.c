/*
 * ka_verdict.c: a verdict's cause and its release (ka_verdict.h).
 */
#include "ka_verdict.h"

#include <stdlib.h>
#include <string.h>

void ka_verdict_release(ka_verdict_t *v)
{
    free(v->message);
    free(v->assignment);
    free(v->claim.deltas);
    free(v->rule);
    v->rule = NULL;
    v->message = NULL;
    v->assignment = NULL;
    v->claim.deltas = NULL;
    v->claimed = false;
}

int ka_verdict_set_cause(ka_verdict_t *v, char *message, enum ka_reason reason, const char *rule,
                         bool audit)
{
    free(v->message);
    free(v->rule);
    v->message = message;
    v->reason = reason;
    v->audit = audit;
    v->rule = strdup(rule);
    return v->rule != NULL ? 0 : KA_ENOMEM;
}
