/*
 * galactic-cni-install: the agent DaemonSet's init step. Installs the
 * galactic-cni plugin binary into the node's CNI bin directory under its own
 * name and under the upstream plugin names (docs/cni.md, docs/migration.md),
 * each one atomically:
 *
 *   copy to DIR/.NAME.galactic-tmp (O_EXCL, 0755, fsync) -> rename to DIR/NAME
 *
 * A runtime executing the old binary at that moment keeps its inode (never
 * opened for writing, so no ETXTBSY), and a runtime starting one sees either
 * the old or the new file, never a partly written one. Running it twice is
 * the same as once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define INSTALL_VERSION "0.1.0"

static const char *const default_names[] = { "galactic-cni", "galactic-veth", "galactic-bgp", "galactic-tap" };

static void usage(FILE *f)
{
	fprintf(f, "usage: galactic-cni-install --to DIR [--from FILE] [--name NAME]...\n"
		   "  copies FILE (default: galactic-cni beside this program) into DIR under each\n"
		   "  NAME (default: galactic-cni galactic-veth galactic-bgp galactic-tap),\n"
		   "  each by a temporary copy renamed over the old one\n");
}

/* A valid plugin file name: no '/', not "." or "..", at most 63 bytes (docs/cni.md). */
static int name_ok(const char *n)
{
	size_t l = strlen(n);

	return l && l <= 63 && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..");
}

/* Copies src (an open fd at offset 0) to dir/name through a temporary name. */
static int install_one(int src, off_t size, const char *dir, const char *name)
{
	char tmp[PATH_MAX], dst[PATH_MAX], buf[65536];
	ssize_t r;
	off_t done = 0;
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.galactic-tmp", dir, name) >= sizeof(tmp) ||
	    (size_t)snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= sizeof(dst)) {
		fprintf(stderr, "galactic-cni-install: path too long in %s\n", dir);
		return -1;
	}
	/* a temporary file left by an interrupted earlier run is only ours */
	if (unlink(tmp) && errno != ENOENT) {
		fprintf(stderr, "galactic-cni-install: unlink %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (fd < 0) {
		fprintf(stderr, "galactic-cni-install: create %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	if (lseek(src, 0, SEEK_SET) < 0)
		goto fail;
	while ((r = read(src, buf, sizeof(buf))) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(fd, buf + off, (size_t)(r - off));
			if (w < 0) {
				if (errno == EINTR)
					continue;
				goto fail;
			}
			off += w;
		}
		done += r;
	}
	if (done != size) {
		errno = EIO;
		goto fail;
	}
	/* the mode regardless of the umask; durable before it becomes visible */
	if (fchmod(fd, 0755) || fsync(fd))
		goto fail;
	if (close(fd)) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, dst))
		goto fail;
	return 0;
fail:
	fprintf(stderr, "galactic-cni-install: install %s: %s\n", dst, strerror(errno));
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "to", required_argument, 0, 't' },   { "from", required_argument, 0, 'f' },
		{ "name", required_argument, 0, 'n' }, { "version", no_argument, 0, 'v' },
		{ "help", no_argument, 0, 'h' },       { 0, 0, 0, 0 },
	};
	const char *names[32], *dir = NULL, *from = NULL;
	char self[PATH_MAX], src_path[PATH_MAX];
	size_t nn = 0;
	struct stat st;
	int c, src, dfd, rc = 0;

	while ((c = getopt_long(argc, argv, "t:f:n:vh", lo, NULL)) != -1) {
		switch (c) {
		case 't': dir = optarg; break;
		case 'f': from = optarg; break;
		case 'n':
			if (nn == sizeof(names) / sizeof(names[0]) || !name_ok(optarg)) {
				fprintf(stderr, "galactic-cni-install: bad or too many --name '%s'\n", optarg);
				return 2;
			}
			names[nn++] = optarg;
			break;
		case 'v': printf("galactic-cni-install %s\n", INSTALL_VERSION); return 0;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!dir || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!nn)
		for (; nn < sizeof(default_names) / sizeof(default_names[0]); nn++)
			names[nn] = default_names[nn];
	if (!from) {
		ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
		char *slash;

		/* without /proc: the path this program was started by */
		if (l < 0 && argv[0] && strchr(argv[0], '/'))
			l = (ssize_t)snprintf(self, sizeof(self), "%s", argv[0]);
		if (l < 0 || (size_t)l >= sizeof(self)) {
			fprintf(stderr, "galactic-cni-install: cannot tell where galactic-cni is (give --from)\n");
			return 1;
		}
		self[l] = 0;
		slash = strrchr(self, '/');
		if (slash)
			*slash = 0;
		snprintf(src_path, sizeof(src_path), "%s/galactic-cni", self);
		from = src_path;
	}
	src = open(from, O_RDONLY | O_CLOEXEC);
	if (src < 0 || fstat(src, &st) || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "galactic-cni-install: %s: %s\n", from, src < 0 ? strerror(errno) : "not a regular file");
		return 1;
	}
	for (size_t i = 0; i < nn; i++) {
		if (install_one(src, st.st_size, dir, names[i])) {
			rc = 1;
			continue;
		}
		printf("galactic-cni-install: %s/%s (%lld bytes)\n", dir, names[i], (long long)st.st_size);
	}
	close(src);
	/* the renames durable too */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd)) {
		fprintf(stderr, "galactic-cni-install: sync %s: %s\n", dir, strerror(errno));
		rc = 1;
	}
	if (dfd >= 0)
		close(dfd);
	return rc;
}
