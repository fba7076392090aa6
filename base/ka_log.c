/*
 * ka_log.c: formats log lines (see ka_log.h).
 *
 * A line is formatted into a stack buffer and written with one fputs, so
 * that lines never interleave and a line-buffered stdout flushes each one.
 * Lines longer than the buffer are cut, never split.
 */
#include "ka_log.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ka_error.h"

static enum ka_log_level g_level = KA_LOG_INFO;
static enum ka_log_format g_format = KA_LOG_TEXT;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void ka_log_setup(enum ka_log_level level, enum ka_log_format format)
{
    g_level = level;
    g_format = format;
    setvbuf(stdout, NULL, _IOLBF, 0);
}

int ka_log_enabled(enum ka_log_level level)
{
    return level <= g_level;
}

int ka_log_level_parse(const char *s, enum ka_log_level *out)
{
    for (int i = 0; i <= KA_LOG_DEBUG; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum ka_log_level)i;
            return 0;
        }
    }
    return KA_EINVALID;
}

int ka_log_format_parse(const char *s, enum ka_log_format *out)
{
    if (strcmp(s, "text") == 0)
        *out = KA_LOG_TEXT;
    else if (strcmp(s, "json") == 0)
        *out = KA_LOG_JSON;
    else
        return KA_EINVALID;
    return 0;
}

/* A bounded appender: once full, further output is dropped. */
typedef struct line {
    char buf[2048];
    size_t len;
} line_t;

static void put(line_t *l, const char *s, size_t n)
{
    size_t room = sizeof(l->buf) - 2 - l->len; /* keep space for "\n\0" */
    if (n > room)
        n = room;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void puts_(line_t *l, const char *s)
{
    put(l, s, strlen(s));
}

static void put_json_string(line_t *l, const char *s)
{
    put(l, "\"", 1);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            put(l, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof(esc), "\\u%04x", c);
            put(l, esc, 6);
        } else {
            put(l, (const char *)&c, 1);
        }
    }
    put(l, "\"", 1);
}

/* Text values are quoted when they hold spaces, quotes or '='. */
static void put_text_value(line_t *l, const char *s)
{
    if (s == NULL)
        s = "";
    if (*s != '\0' && strpbrk(s, " \"=\t\n") == NULL) {
        puts_(l, s);
        return;
    }
    put_json_string(l, s);
}

void ka_log_emit(enum ka_log_level level, const char *msg, const ka_kv_t *kvs, size_t n)
{
    line_t l;
    char ts[40], num[32];
    struct timespec now;
    struct tm tm;

    l.len = 0;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t tl = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + tl, sizeof(ts) - tl, ".%03ldZ", now.tv_nsec / 1000000);

    if (g_format == KA_LOG_JSON) {
        puts_(&l, "{\"ts\":\"");
        puts_(&l, ts);
        puts_(&l, "\",\"level\":\"");
        puts_(&l, level_names[level]);
        puts_(&l, "\",\"msg\":");
        put_json_string(&l, msg);
        for (size_t i = 0; i < n; i++) {
            puts_(&l, ",");
            put_json_string(&l, kvs[i].key);
            puts_(&l, ":");
            if (kvs[i].type == KA_KV_INT) {
                snprintf(num, sizeof(num), "%lld", kvs[i].v.i);
                puts_(&l, num);
            } else {
                put_json_string(&l, kvs[i].v.s ? kvs[i].v.s : "");
            }
        }
        puts_(&l, "}");
    } else {
        puts_(&l, ts);
        puts_(&l, " ");
        puts_(&l, level == KA_LOG_ERROR  ? "ERROR"
                  : level == KA_LOG_WARN ? "WARN "
                  : level == KA_LOG_INFO ? "INFO "
                                         : "DEBUG");
        puts_(&l, " ");
        puts_(&l, msg);
        for (size_t i = 0; i < n; i++) {
            puts_(&l, " ");
            puts_(&l, kvs[i].key);
            puts_(&l, "=");
            if (kvs[i].type == KA_KV_INT) {
                snprintf(num, sizeof(num), "%lld", kvs[i].v.i);
                puts_(&l, num);
            } else {
                put_text_value(&l, kvs[i].v.s);
            }
        }
    }
    l.buf[l.len++] = '\n';
    l.buf[l.len] = '\0';
    fputs(l.buf, stdout);
}
