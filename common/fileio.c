#include "common/fileio.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(char *err, size_t errlen, const char *step, const char *path, int e)
{
	if (err && errlen)
		snprintf(err, errlen, "%s %s: %s", step, path, strerror(e));
	return -e;
}

static int commit_tmp(const char *tmp, const char *path, bool sync, char *err, size_t errlen);

int gfile_write_atomic(const char *path, const void *data, size_t len, char *err, size_t errlen)
{
	return gfile_write_atomic_flags(path, data, len, 0, err, errlen);
}

int gfile_write_atomic_flags(const char *path, const void *data, size_t len, unsigned flags, char *err,
			     size_t errlen)
{
	char tmp[4200];
	const char *p = data;
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return fail(err, errlen, "write", path, ENAMETOOLONG);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(err, errlen, "create", tmp, errno);
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			close(fd);
			unlink(tmp);
			return fail(err, errlen, "write", tmp, e);
		}
		p += n;
		len -= (size_t)n;
	}
	/* The data must be on disk before the name points at it. */
	if ((!(flags & GFILE_NO_SYNC) && fsync(fd) < 0) || close(fd) < 0) {
		e = errno;
		unlink(tmp);
		return fail(err, errlen, "sync", tmp, e);
	}
	return commit_tmp(tmp, path, !(flags & GFILE_NO_SYNC), err, errlen);
}

int gfile_write_atomic_fn(const char *path, int (*emit)(FILE *f, void *ctx), void *ctx, char *err,
			  size_t errlen)
{
	char tmp[4200];
	FILE *f;
	int fd, e;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return fail(err, errlen, "write", path, ENAMETOOLONG);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(err, errlen, "create", tmp, errno);
	f = fdopen(fd, "w");
	if (!f) {
		e = errno;
		close(fd);
		unlink(tmp);
		return fail(err, errlen, "create", tmp, e);
	}
	e = emit(f, ctx);
	if (!e && (fflush(f) || ferror(f)))
		e = -(errno ? errno : EIO);
	/* The data must be on disk before the name points at it. */
	if (!e && fsync(fd) < 0)
		e = -errno;
	if (fclose(f) && !e)
		e = -(errno ? errno : EIO);
	if (e) {
		unlink(tmp);
		return fail(err, errlen, "write", tmp, -e);
	}
	return commit_tmp(tmp, path, true, err, errlen);
}

/* Renames the synced tmp over path and (sync) syncs the directory. */
static int commit_tmp(const char *tmp, const char *path, bool sync, char *err, size_t errlen)
{
	char dir[4096];
	const char *slash;
	int dfd, e;

	if (rename(tmp, path) < 0) {
		e = errno;
		unlink(tmp);
		return fail(err, errlen, "rename", tmp, e);
	}
	if (!sync)
		return 0;
	/* And the new name must be on disk before we say it is committed. */
	slash = strrchr(path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(err, errlen, "open directory", dir, errno);
	if (fsync(dfd) < 0) {
		e = errno;
		close(dfd);
		return fail(err, errlen, "sync directory", dir, e);
	}
	close(dfd);
	return 0;
}

int gfile_read(const char *path, size_t max, char **out, size_t *len)
{
	struct stat st;
	char *buf;
	size_t off = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size > max) {
		int e = errno;

		close(fd);
		return (size_t)st.st_size > max ? -EFBIG : -e;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (off < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + off, (size_t)st.st_size - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = 0;
	*out = buf;
	*len = off;
	return 0;
}

int gfile_mkdir_p(const char *dir, unsigned mode)
{
	char tmp[4096];

	if (snprintf(tmp, sizeof(tmp), "%s", dir) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(tmp, mode) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}
