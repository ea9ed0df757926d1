/*
 * Durable file writes, one helper for the whole tree: a file is replaced
 * atomically (temporary file in the same directory, write, fsync, rename,
 * fsync of the directory), so a reader or a crash sees the old content or
 * the new one, never half of it, and the new name survives a power cut.
 */
#ifndef GALACTIC_COMMON_FILEIO_H
#define GALACTIC_COMMON_FILEIO_H

#include <stddef.h>
#include <stdio.h>

/* Writes len bytes to path atomically. 0, or -errno (err says which step, may be NULL). */
int gfile_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* GFILE_NO_SYNC: replaced atomically for readers, not made durable (no fsync
 * of the file or the directory): for observation files rewritten often
 * (status.json), never for state a restart needs. */
#define GFILE_NO_SYNC 1u
int gfile_write_atomic_flags(const char *path, const void *data, size_t len, unsigned flags, char *err,
			     size_t errlen);

/*
 * The same, the content written by emit(f, ctx) through a stdio stream (a
 * large file is never one buffer in memory); emit returns 0 or -errno. The
 * stream's errors count as write errors.
 */
int gfile_write_atomic_fn(const char *path, int (*emit)(FILE *f, void *ctx), void *ctx,
			  char *err, size_t errlen);

/* Reads a whole file (NUL-terminated, *len without it). 0, -ENOENT, -EFBIG past max, -errno. */
int gfile_read(const char *path, size_t max, char **out, size_t *len);

/* mkdir -p with mode for the missing parts; 0 or -errno. */
int gfile_mkdir_p(const char *dir, unsigned mode);

#endif
