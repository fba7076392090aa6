/*
 * ka_whatif_cli.c: `kadmit what-if`, POST /v1/what-if from an operator's
 * shell against a running sidecar.
 *
 * The body comes from a file (--file FILE, "-" for stdin), from stdin when
 * no flag builds one, or from flags: --create NAME:PARTITIONS:RF (repeat
 * for more topics) or --grow NAME:COUNT, with --principal. The answer is
 * printed as a table per item; the exit status says admit (0), reject (1)
 * or error (2), so scripts can gate a change on it.
 */
#include "ka_whatif_cli.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ka_status_cli.h"

#define BODY_MAX (256u * 1024)

enum { EXIT_ADMIT = 0, EXIT_REJECT = 1, EXIT_ERROR = 2 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kadmit what-if [--admin HOST:PORT] [--principal User:NAME]\n"
            "                      (--create NAME:PARTITIONS:RF ... | --grow NAME:COUNT ... |\n"
            "                       --file FILE | --file - )\n"
            "  asks a running kadmit (default $KADMIT_ADMIN, else 127.0.0.1:9644) what it would\n"
            "  decide for a CreateTopics or CreatePartitions, and changes nothing. Without\n"
            "  --create, --grow or --file the body is read from stdin. Exit status: 0 every\n"
            "  item admitted, 1 an item rejected, 2 an error.\n");
}

static char *read_all(FILE *in, char *err, size_t errlen)
{
    char *buf = malloc(BODY_MAX + 1);
    size_t n;

    if (buf == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    n = fread(buf, 1, BODY_MAX + 1, in);
    if (n > BODY_MAX) {
        snprintf(err, errlen, "the body is larger than %u bytes", BODY_MAX);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static char *read_body(const char *file, char *err, size_t errlen)
{
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "rb");
    char *body;

    if (in == NULL) {
        snprintf(err, errlen, "cannot read %s", file);
        return NULL;
    }
    body = read_all(in, err, errlen);
    if (in != stdin)
        fclose(in);
    return body;
}

/* "NAME:A[:B]" into the topic object; NAME may itself hold no ':' (Kafka forbids it). */
static json_t *topic_of(const char *spec, bool create, char *err, size_t errlen)
{
    const char *c1 = strchr(spec, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char *end;
    long a, b = -1;

    if (c1 == NULL || c1 == spec || (create && c2 == NULL) || (!create && c2 != NULL))
        goto bad;
    a = strtol(c1 + 1, &end, 10);
    if (end != (create ? c2 : c1 + strlen(c1)) || end == c1 + 1)
        goto bad;
    if (create) {
        b = strtol(c2 + 1, &end, 10);
        if (*end != '\0' || end == c2 + 1)
            goto bad;
        return json_pack("{s:s%,s:I,s:I}", "name", spec, (size_t)(c1 - spec), "numPartitions",
                         (json_int_t)a, "replicationFactor", (json_int_t)b);
    }
    return json_pack("{s:s%,s:I}", "name", spec, (size_t)(c1 - spec), "count", (json_int_t)a);
bad:
    snprintf(err, errlen,
             create ? "--create wants NAME:PARTITIONS:RF (e.g. team-a.x:3:2), got \"%s\""
                    : "--grow wants NAME:COUNT (the new total), got \"%s\"",
             spec);
    return NULL;
}

static const char *str(const json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));

    return s != NULL ? s : "-";
}

static void print_item(FILE *out, const json_t *item)
{
    const json_t *placement = json_object_get(item, "placement"), *brokers, *row, *b;
    size_t i, j;

    fprintf(out, "%s: %s (rule: %s", str(item, "name"), str(item, "verdict"), str(item, "rule"));
    if (json_object_get(item, "reason") != NULL && !json_is_null(json_object_get(item, "reason")))
        fprintf(out, ", reason: %s", str(item, "reason"));
    fprintf(out, ")\n");
    if (json_is_array(placement)) {
        fprintf(out, "  placement:");
        json_array_foreach(placement, i, row)
        {
            json_t *id;

            fprintf(out, " p%zu=[", i);
            json_array_foreach(row, j, id)
                fprintf(out, "%s%lld", j ? "," : "", (long long)json_integer_value(id));
            fprintf(out, "]");
        }
        fprintf(out, "\n");
    }
    fprintf(out, "  %-7s %9s %10s %10s\n", "BROKER", "CURRENT", "PROJECTED", "LIMIT");
    brokers = json_object_get(item, "brokers");
    json_array_foreach(brokers, i, b)
    {
        long long limit = (long long)json_integer_value(json_object_get(b, "limit"));
        char lim[24];

        if (limit >= 2147483647)
            snprintf(lim, sizeof(lim), "unlimited");
        else
            snprintf(lim, sizeof(lim), "%lld", limit);
        fprintf(out, "  %-7lld %9lld %10lld %10s\n",
                (long long)json_integer_value(json_object_get(b, "id")),
                (long long)json_integer_value(json_object_get(b, "current")),
                (long long)json_integer_value(json_object_get(b, "projected")), lim);
    }
    if (json_is_string(json_object_get(item, "message")))
        fprintf(out, "  message: %s\n", str(item, "message"));
}

/* Builds the body from the flags, or reads it; NULL with err on failure. */
static char *body_from_args(int argc, char **argv, const char **admin, char *err, size_t errlen)
{
    json_t *creates = json_array(), *grows = json_array(), *doc = NULL;
    const char *file = NULL, *principal = NULL;
    char *out = NULL;

    for (int i = 1; i < argc; i += 2) { /* every argument takes a value */
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        json_t *t;

        if (v != NULL && (strcmp(a, "--create") == 0 || strcmp(a, "--grow") == 0)) {
            if ((t = topic_of(v, a[2] == 'c', err, errlen)) == NULL)
                goto done;
            json_array_append_new(a[2] == 'c' ? creates : grows, t);
        } else if (v != NULL && strcmp(a, "--admin") == 0) {
            *admin = v;
        } else if (v != NULL && strcmp(a, "--file") == 0) {
            file = v;
        } else if (v != NULL && strcmp(a, "--principal") == 0) {
            principal = v;
        } else {
            snprintf(err, errlen, "unknown or incomplete argument \"%s\"", a);
            goto done;
        }
    }
    if (json_array_size(creates) > 0 && json_array_size(grows) > 0) {
        snprintf(err, errlen, "one what-if is either --create or --grow, not both");
        goto done;
    }
    if (json_array_size(creates) + json_array_size(grows) == 0) {
        out = read_body(file ? file : "-", err, errlen);
        goto done;
    }
    doc = json_pack("{s:{s:O}}", json_array_size(creates) ? "createTopics" : "createPartitions",
                    "topics", json_array_size(creates) ? creates : grows);
    if (doc != NULL && principal != NULL)
        json_object_set_new(doc, "principal", json_string(principal));
    out = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (out == NULL)
        snprintf(err, errlen, "out of memory");
done:
    json_decref(doc);
    json_decref(creates);
    json_decref(grows);
    return out;
}

int ka_whatif_cli_main(int argc, char **argv)
{
    const char *admin = getenv("KADMIT_ADMIN");
    char err[512] = "", *body, *answer = NULL;
    json_t *doc, *item;
    int status = 0, rc;
    size_t i;

    for (int k = 1; k < argc; k++)
        if (strcmp(argv[k], "--help") == 0 || strcmp(argv[k], "-h") == 0) {
            usage(stdout);
            return 0;
        }
    if (admin == NULL || admin[0] == '\0')
        admin = "127.0.0.1:9644";
    if ((body = body_from_args(argc, argv, &admin, err, sizeof(err))) == NULL) {
        fprintf(stderr, "kadmit what-if: %s\n", err);
        usage(stderr);
        return EXIT_ERROR;
    }
    rc = ka_status_cli_http(admin, "POST", "/v1/what-if", body, &status, &answer, err, sizeof(err));
    free(body);
    if (rc < 0) {
        fprintf(stderr, "kadmit what-if: %s\n", err);
        return EXIT_ERROR;
    }
    doc = json_loads(answer, 0, NULL);
    free(answer);
    if (doc == NULL || status != 200) {
        const char *why = json_string_value(json_object_get(doc, "error"));

        fprintf(stderr, "kadmit what-if: %s answered HTTP %d: %s\n", admin, status,
                why ? why : "no JSON");
        json_decref(doc);
        return EXIT_ERROR;
    }
    printf("%s as %s, policy version %lld\n", str(doc, "api"), str(doc, "principal"),
           (long long)json_integer_value(json_object_get(doc, "policy_version")));
    json_array_foreach(json_object_get(doc, "items"), i, item) print_item(stdout, item);
    rc = json_is_true(json_object_get(doc, "admitted")) ? EXIT_ADMIT : EXIT_REJECT;
    printf("%s\n", rc == EXIT_ADMIT ? "admitted: kadmit would let this request through"
                                    : "rejected: kadmit would refuse an item of this request");
    json_decref(doc);
    return rc;
}
