/*
 * ka_log.c: formats log lines (see ka_log.h).
 *
 * A line is formatted into a stack buffer and written with one fputs, so
 * that lines never interleave and a line-buffered stdout flushes each one.
 * Values are escaped in both formats (no raw CR, LF or escape bytes); a
 * line longer than the buffer is cut between whole units and still closed,
 * never split.
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

/*
 * A bounded line. Output goes in whole units (a character, an escape, a
 * UTF-8 sequence, a number): once a unit does not fit, the line is cut and
 * takes nothing more, except the closing bytes reserved for it, so a JSON
 * line stays one valid object ("truncated":true says it was cut) and no
 * escape is ever split.
 */
#define LINE_MAX_BYTES 2048
#define CUT_MARK_JSON  ",\"truncated\":true}"
#define CUT_MARK_TEXT  " (truncated)"

typedef struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
    size_t limit; /* room for units; the rest is the reserve */
    int cut;
} line_t;

static int put(line_t *l, const char *s, size_t n)
{
    if (l->cut || l->len + n > l->limit) {
        l->cut = 1;
        return -1;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
    return 0;
}

/* Writes into the reserve (closing quotes and braces, the cut mark). */
static void put_reserved(line_t *l, const char *s)
{
    size_t n = strlen(s);
    if (l->len + n > sizeof(l->buf) - 2)
        n = sizeof(l->buf) - 2 - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static int puts_(line_t *l, const char *s)
{
    return put(l, s, strlen(s));
}

/* The length of a valid UTF-8 sequence at s (shortest form, no surrogates), or 0. */
static size_t utf8_len(const unsigned char *s)
{
    size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4)
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0) ||
        (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90))
        return 0;
    return n;
}

/*
 * A quoted string: '"' and '\\' escaped, control bytes (CR, LF, ESC, DEL,
 * ...) and bytes that are not UTF-8 as \u00XX, so a value can neither break
 * a line nor steer a terminal, and JSON parsers accept every line. Cut
 * between units, and closed with the reserved quote.
 */
static int put_quoted(line_t *l, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    if (put(l, "\"", 1) < 0)
        return -1;
    while (*s) {
        char esc[8];
        size_t n = 1;
        const char *unit = esc;
        if (*s == '"' || *s == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*s;
            n = 2;
        } else if (*s < 0x20 || *s == 0x7f || (*s >= 0x80 && utf8_len(s) == 0)) {
            snprintf(esc, sizeof(esc), "\\u%04x", *s);
            n = 6;
        } else {
            unit = (const char *)s;
            n = *s >= 0x80 ? utf8_len(s) : 1;
        }
        if (put(l, unit, n) < 0)
            break;
        s += (unit == esc) ? 1 : n;
    }
    put_reserved(l, "\"");
    return 0;
}

/* Text values stay bare when they are plain printable ASCII without
 * spaces, quotes or '='; anything else is quoted and escaped. */
static int put_text_value(line_t *l, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    int bare = *p != '\0';
    for (; *p && bare; p++)
        bare = *p > 0x20 && *p < 0x7f && *p != '"' && *p != '=';
    if (bare)
        return puts_(l, s);
    return put_quoted(l, s);
}

/* One key/value. A pair whose key or number does not fit is left out
 * whole; a string value is cut between units. */
static void put_kv(line_t *l, const ka_kv_t *kv, int json)
{
    size_t mark = l->len;
    char num[32];
    int ok;

    if (json)
        ok = puts_(l, ",") == 0 && put_quoted(l, kv->key) == 0 && !l->cut && puts_(l, ":") == 0;
    else
        ok = puts_(l, " ") == 0 && puts_(l, kv->key) == 0 && puts_(l, "=") == 0;
    if (ok && kv->type == KA_KV_INT) {
        snprintf(num, sizeof(num), "%lld", kv->v.i);
        ok = puts_(l, num) == 0;
    } else if (ok) {
        ok = (json ? put_quoted(l, kv->v.s) : put_text_value(l, kv->v.s)) == 0;
    }
    if (!ok) {
        l->len = mark;
        l->cut = 1;
    }
}

void ka_log_format_line(char *out, size_t cap, enum ka_log_format format, enum ka_log_level level,
                        const char *ts, const char *msg, const ka_kv_t *kvs, size_t n)
{
    line_t l;
    int json = format == KA_LOG_JSON;

    l.len = 0;
    l.cut = 0;
    l.limit = sizeof(l.buf) - 2 - (json ? strlen(CUT_MARK_JSON) + 1 : strlen(CUT_MARK_TEXT));
    if (json) {
        puts_(&l, "{\"ts\":\"");
        puts_(&l, ts);
        puts_(&l, "\",\"level\":\"");
        puts_(&l, level_names[level]);
        puts_(&l, "\",\"msg\":");
        put_quoted(&l, msg);
    } else {
        puts_(&l, ts);
        puts_(&l, level == KA_LOG_ERROR  ? " ERROR "
                  : level == KA_LOG_WARN ? " WARN  "
                  : level == KA_LOG_INFO ? " INFO  "
                                         : " DEBUG ");
        puts_(&l, msg); /* a constant sentence, never quoted */
    }
    for (size_t i = 0; i < n && !l.cut; i++)
        put_kv(&l, &kvs[i], json);
    if (l.cut)
        put_reserved(&l, json ? CUT_MARK_JSON : CUT_MARK_TEXT);
    else if (json)
        put_reserved(&l, "}");
    l.buf[l.len++] = '\n';
    l.buf[l.len] = '\0';
    snprintf(out, cap, "%s", l.buf);
}

void ka_log_emit(enum ka_log_level level, const char *msg, const ka_kv_t *kvs, size_t n)
{
    char ts[40], line[LINE_MAX_BYTES];
    struct timespec now;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    size_t tl = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + tl, sizeof(ts) - tl, ".%03ldZ", now.tv_nsec / 1000000);
    ka_log_format_line(line, sizeof(line), g_format, level, ts, msg, kvs, n);
    fputs(line, stdout);
}
