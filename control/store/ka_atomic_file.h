/*
 * ka_atomic_file.h: replacing a file so that readers see the old or the new
 * content, never a mix, and a crash leaves one of the two on disk.
 *
 * The new content goes to a temporary file in the same directory (a rename
 * is atomic only within one file system), is fsynced, takes the old file's
 * permission bits, and is renamed over the old name; the directory is then
 * fsynced so the rename itself survives a crash. When `path` is a symbolic
 * link, the file it points to is replaced and the link is kept, so an
 * operator's link (or a chain of them) still works afterwards.
 */
#ifndef KA_ATOMIC_FILE_H
#define KA_ATOMIC_FILE_H

#include <stddef.h>

/*
 * Writes `len` bytes of `data` to `path` atomically. Returns 0, or a
 * negative ka_err with a sentence in err naming the file and the system's
 * reason ("policy.json: cannot create a temporary file in /etc/kadmit:
 * Read-only file system"). The temporary file is removed on failure.
 */
int ka_atomic_write(const char *path, const void *data, size_t len, char *err, size_t errlen);

/*
 * The file that `path` names after following symbolic links (the link's
 * target, resolved against the link's directory), or `path` itself when it
 * is not a link or does not exist yet. Returns 0, or KA_EINVALID when the
 * result does not fit in cap or the links loop.
 */
int ka_atomic_resolve(const char *path, char *out, size_t cap);

/* Whether the file (after links) and its directory are writable by kadmit. */
int ka_atomic_writable(const char *path);

#endif
