/*
 * ka_log.h: structured log lines on stdout.
 *
 * Every line is one event: a timestamp, a level, a fixed message and a list
 * of key/value pairs. The text format is for people (`ts LEVEL msg k=v`),
 * the JSON format is one object per line for log shippers. Messages are
 * constant strings so that lines can be grepped and counted; everything
 * variable goes into the key/values.
 */
#ifndef KA_LOG_H
#define KA_LOG_H

#include <stddef.h>

enum ka_log_level { KA_LOG_ERROR = 0, KA_LOG_WARN, KA_LOG_INFO, KA_LOG_DEBUG };
enum ka_log_format { KA_LOG_TEXT = 0, KA_LOG_JSON };

enum ka_kv_type { KA_KV_STR, KA_KV_INT };

/* One key/value pair of a log line; built with KA_KS() and KA_KI(). */
typedef struct ka_kv {
    const char *key;
    enum ka_kv_type type;
    union {
        const char *s; /* NULL prints as an empty string */
        long long i;
    } v;
} ka_kv_t;

#define KA_KS(k, str) ((ka_kv_t){.key = (k), .type = KA_KV_STR, .v.s = (str)})
#define KA_KI(k, num) ((ka_kv_t){.key = (k), .type = KA_KV_INT, .v.i = (long long)(num)})

void ka_log_setup(enum ka_log_level level, enum ka_log_format format);
int ka_log_enabled(enum ka_log_level level);
void ka_log_emit(enum ka_log_level level, const char *msg, const ka_kv_t *kvs, size_t n);

/* ka_log(level, "message", KA_KS("peer", addr), KA_KI("size", n)) */
#define ka_log(level, msg, ...)                                                                    \
    do {                                                                                           \
        if (ka_log_enabled(level)) {                                                               \
            const ka_kv_t ka_log_kvs_[] = {KA_KS(NULL, NULL), __VA_ARGS__};                        \
            ka_log_emit((level), (msg), ka_log_kvs_ + 1,                                           \
                        sizeof(ka_log_kvs_) / sizeof(ka_log_kvs_[0]) - 1);                         \
        }                                                                                          \
    } while (0)

/*
 * The line ka_log_emit writes, into out (NUL-terminated, newline included):
 * at most 2,048 bytes; a longer one is cut between whole values and, in
 * JSON, still one valid object ending in "truncated":true. For tests.
 */
void ka_log_format_line(char *out, size_t cap, enum ka_log_format format, enum ka_log_level level,
                        const char *ts, const char *msg, const ka_kv_t *kvs, size_t n);

/* Parses "error|warn|info|debug" and "text|json"; 0 or KA_EINVALID. */
int ka_log_level_parse(const char *s, enum ka_log_level *out);
int ka_log_format_parse(const char *s, enum ka_log_format *out);

#endif
