/* ka_error.c: human text for kadmit's local error codes. */
#include "ka_error.h"

const char *ka_strerror(int err)
{
    switch (err) {
    case KA_OK:
        return "success";
    case KA_EUNDERFLOW:
        return "frame ended before the field did";
    case KA_ELIMIT:
        return "length or count exceeds kadmit's limit";
    case KA_EINVALID:
        return "invalid value";
    case KA_ENOMEM:
        return "out of memory";
    case KA_ETRAILING:
        return "unexpected bytes after the message";
    case KA_EUNSUPPORTED:
        return "unsupported API version";
    case KA_EOVERFLOW:
        return "output buffer too small";
    case KA_ECONFLICT:
        return "another change came first";
    default:
        return "unknown error";
    }
}
