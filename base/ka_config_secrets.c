/*
 * ka_config_secrets.c: the secrets named on the command line (see
 * ka_config.h): the admin token, the metadata client's SASL password and the
 * cluster secret, each from a file or an environment variable, loaded once
 * at start with a sentence on failure. Kept apart from the flag parser so
 * that secret handling reads in one place.
 */
#include "ka_config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ka_error.h"

/* The first line of `file` (flag names it in errors), else the variable `env`. */
static int load_secret(const char *file, const char *flag, const char *env_name, char *out,
                       size_t cap, char *err, size_t errlen)
{
    out[0] = '\0';
    if (file[0] == '\0') {
        const char *env = getenv(env_name);
        if (env == NULL)
            return 0;
        size_t len = strlen(env);
        while (len > 0 && isspace((unsigned char)env[len - 1]))
            len--;
        if (len >= cap) {
            snprintf(err, errlen, "%s: the value is longer than %zu bytes", env_name, cap - 1);
            return KA_ELIMIT;
        }
        memcpy(out, env, len);
        out[len] = '\0';
        return 0;
    }
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        snprintf(err, errlen, "%s %s: %s", flag, file, strerror(errno));
        return KA_EINVALID;
    }
    char line[4096];
    int rc = 0;
    if (fgets(line, sizeof(line), f) == NULL) {
        if (ferror(f))
            snprintf(err, errlen, "%s %s: %s", flag, file, strerror(errno));
        else
            snprintf(err, errlen, "%s %s: the file is empty", flag, file);
        rc = KA_EINVALID;
    }
    fclose(f);
    if (rc < 0)
        return rc;
    size_t len = strlen(line);
    while (len > 0 && isspace((unsigned char)line[len - 1]))
        len--;
    if (len == 0) {
        snprintf(err, errlen, "%s %s: the first line is empty", flag, file);
        return KA_EINVALID;
    }
    if (len >= cap) {
        snprintf(err, errlen, "%s %s: the first line is longer than %zu bytes", flag, file,
                 cap - 1);
        return KA_ELIMIT;
    }
    memcpy(out, line, len);
    out[len] = '\0';
    return 0;
}

int ka_config_load_admin_token(const ka_config_t *cfg, char *out, size_t cap, char *err,
                               size_t errlen)
{
    return load_secret(cfg->admin_token_file, "--admin-token-file", "KADMIT_ADMIN_TOKEN", out, cap,
                       err, errlen);
}

int ka_config_load_sasl_password(const ka_config_t *cfg, char *out, size_t cap, char *err,
                                 size_t errlen)
{
    int rc = load_secret(cfg->metadata_sasl_password_file, "--metadata-sasl-password-file",
                         "KADMIT_METADATA_SASL_PASSWORD", out, cap, err, errlen);
    if (rc == 0 && out[0] == '\0' && cfg->metadata_sasl_mechanism[0] != '\0') {
        snprintf(err, errlen,
                 "--metadata-sasl-mechanism %s needs a password: "
                 "--metadata-sasl-password-file or KADMIT_METADATA_SASL_PASSWORD",
                 cfg->metadata_sasl_mechanism);
        return KA_EINVALID;
    }
    return rc;
}

int ka_config_load_cluster_secret(ka_config_t *cfg, size_t min_len, char *err, size_t errlen)
{
    int rc = load_secret(cfg->cluster_secret_file, "--cluster-secret-file", "KADMIT_CLUSTER_SECRET",
                         cfg->cluster_secret, sizeof(cfg->cluster_secret), err, errlen);
    cfg->cluster_secret_len = rc == 0 ? strlen(cfg->cluster_secret) : 0;
    if (rc == 0 && cfg->cluster_secret_len > 0 && cfg->cluster_secret_len < min_len) {
        snprintf(err, errlen,
                 "%s: the cluster secret has %zu bytes, fewer than the %zu it needs "
                 "(e.g. openssl rand -hex 32)",
                 cfg->cluster_secret_file[0] ? "--cluster-secret-file" : "KADMIT_CLUSTER_SECRET",
                 cfg->cluster_secret_len, min_len);
        memset(cfg->cluster_secret, 0, sizeof(cfg->cluster_secret));
        cfg->cluster_secret_len = 0;
        return KA_EINVALID;
    }
    return rc;
}
