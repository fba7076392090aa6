/*
 * ka_policy_file.c: see ka_policy_file.h.
 */
#include "ka_policy_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ka_error.h"

int ka_policy_file_read(const char *path, char **out, size_t *out_len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    size_t cap, len;
    char *buf;

    *out = NULL;
    *out_len = 0;
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return KA_EINVALID;
    }
    /* Room for the file as it is now, and one byte more to see it grew past the cap. */
    cap = fstat(fileno(f), &st) == 0 && st.st_size >= 0 ? (size_t)st.st_size : 0;
    cap = (cap < KA_POLICY_FILE_MAX ? cap : KA_POLICY_FILE_MAX) + 1;
    buf = malloc(cap + 1);
    if (buf == NULL) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return KA_ENOMEM;
    }
    len = fread(buf, 1, cap, f);
    int read_error = ferror(f);
    fclose(f);
    if (read_error) {
        free(buf);
        snprintf(err, errlen, "%s: read error", path);
        return KA_EINVALID;
    }
    if (len > KA_POLICY_FILE_MAX) {
        free(buf);
        snprintf(err, errlen, "%s: larger than %u bytes", path, KA_POLICY_FILE_MAX);
        return KA_ELIMIT;
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    return 0;
}

int ka_policy_file_parse(const char *path, const char *buf, size_t len, uint64_t version,
                         ka_policy_t **out, char *err, size_t errlen)
{
    char why[512] = "";
    int rc = ka_policy_parse(buf, len, version, out, why, sizeof(why));
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", path, why[0] ? why : ka_strerror(rc));
    return rc;
}

int ka_policy_file_load(const char *path, uint64_t version, ka_policy_t **out, char *err,
                        size_t errlen)
{
    char *buf;
    size_t n;
    int rc = ka_policy_file_read(path, &buf, &n, err, errlen);
    if (rc < 0)
        return rc;
    rc = ka_policy_file_parse(path, buf, n, version, out, err, errlen);
    free(buf);
    return rc;
}
