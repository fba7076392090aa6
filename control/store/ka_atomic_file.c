/*
 * ka_atomic_file.c: see ka_atomic_file.h.
 */
#include "ka_atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ka_error.h"

#define MAX_LINKS 16

int ka_atomic_resolve(const char *path, char *out, size_t cap)
{
    char cur[PATH_MAX], target[PATH_MAX], dir[PATH_MAX];

    if (snprintf(cur, sizeof(cur), "%s", path) >= (int)sizeof(cur))
        return KA_EINVALID;
    for (int hops = 0; hops < MAX_LINKS; hops++) {
        ssize_t n = readlink(cur, target, sizeof(target) - 1);

        if (n < 0) /* not a link (EINVAL) or not there (ENOENT): this is the file */
            return snprintf(out, cap, "%s", cur) < (int)cap ? 0 : KA_EINVALID;
        target[n] = '\0';
        if (target[0] == '/') {
            memcpy(cur, target, (size_t)n + 1);
            continue;
        }
        /* A relative target is relative to the link's own directory. */
        snprintf(dir, sizeof(dir), "%s", cur);
        if (snprintf(cur, sizeof(cur), "%s/%s", dirname(dir), target) >= (int)sizeof(cur))
            return KA_EINVALID;
    }
    return KA_EINVALID;
}

int ka_atomic_writable(const char *path)
{
    char file[PATH_MAX], dir[PATH_MAX];

    if (ka_atomic_resolve(path, file, sizeof(file)) < 0)
        return 0;
    snprintf(dir, sizeof(dir), "%s", file);
    if (access(dirname(dir), W_OK) != 0)
        return 0;
    return access(file, W_OK) == 0 || errno == ENOENT;
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int ka_atomic_write(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
    char file[PATH_MAX], dir[PATH_MAX], base[PATH_MAX], tmp[PATH_MAX + 32];
    struct stat st;
    int fd, dfd;

    if (ka_atomic_resolve(path, file, sizeof(file)) < 0) {
        snprintf(err, errlen, "%s: the path is too long or its links loop", path);
        return KA_EINVALID;
    }
    snprintf(dir, sizeof(dir), "%s", file);
    snprintf(base, sizeof(base), "%s", file);
    const char *d = dirname(dir), *b = basename(base);
    /* A dot name keeps the temporary file out of shell globs and out of
     * the policy watcher's way. */
    if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp.XXXXXX", d, b) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%s: the path is too long", path);
        return KA_EINVALID;
    }
    fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temporary file in %s: %s", path, d,
                 strerror(errno));
        return KA_EINVALID;
    }
    /* mkstemp creates 0600; keep the old file's bits so readers keep access. */
    if (fchmod(fd, stat(file, &st) == 0 ? (st.st_mode & 07777) : 0644) != 0 ||
        write_all(fd, data, len) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s: cannot write %s: %s", path, tmp, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        snprintf(err, errlen, "%s: cannot write %s: %s", path, tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (rename(tmp, file) != 0) {
        snprintf(err, errlen, "%s: cannot rename %s over %s: %s", path, tmp, file, strerror(errno));
        goto fail;
    }
    dfd = open(d, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        (void)fsync(dfd); /* best effort: some file systems refuse fsync on directories */
        close(dfd);
    }
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    unlink(tmp);
    return KA_EINVALID;
}
