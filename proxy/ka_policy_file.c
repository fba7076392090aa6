/*
 * ka_policy_file.c: see ka_policy_file.h.
 */
#include "ka_policy_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"

int ka_policy_file_load(const char *path, uint64_t version, ka_policy_t **out, char *err,
                        size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return KA_EINVALID;
    }
    char *buf = malloc(KA_POLICY_FILE_MAX + 1);
    if (buf == NULL) {
        fclose(f);
        snprintf(err, errlen, "%s: out of memory", path);
        return KA_ENOMEM;
    }
    size_t n = fread(buf, 1, KA_POLICY_FILE_MAX + 1, f);
    int read_error = ferror(f);
    fclose(f);
    if (read_error) {
        free(buf);
        snprintf(err, errlen, "%s: read error", path);
        return KA_EINVALID;
    }
    if (n > KA_POLICY_FILE_MAX) {
        free(buf);
        snprintf(err, errlen, "%s: larger than %u bytes", path, KA_POLICY_FILE_MAX);
        return KA_ELIMIT;
    }
    char why[512] = "";
    int rc = ka_policy_parse(buf, n, version, out, why, sizeof(why));
    free(buf);
    if (rc < 0)
        snprintf(err, errlen, "%s: %s", path, why[0] ? why : ka_strerror(rc));
    return rc;
}
