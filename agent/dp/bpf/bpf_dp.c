/*
 * Loader for the SRv6 TC programs: skeleton, pinned maps with a versioned
 * layout, TC attach, map updates, counters, preflight. See bpf_dp.h.
 */
#include "agent/dp/bpf/bpf_dp.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <linux/if_ether.h>
#include <linux/magic.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "srv6.skel.h"

struct gbpf {
	struct srv6_bpf *skel;
	char root[256];          /* "" when not pinning */
	char dir[300];           /* root/v<layout> */
	bool fresh;
	int stale;
};

/* libbpf's own messages (verifier log, pin conflicts), kept for our errors. */
static __thread char last_libbpf[512];

static int capture_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	if (n)
		snprintf(last_libbpf, sizeof(last_libbpf), "%s", line);
	return 0;
}

static void quiet_libbpf(void)
{
	libbpf_set_print(capture_libbpf);
	last_libbpf[0] = 0;
}

static int fail(char *err, size_t errlen, int e, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int e, const char *fmt, ...)
{
	char what[384];
	va_list ap;

	if (e > 0)
		e = -e;
	if (!e)
		e = -EIO;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (err && errlen)
		snprintf(err, errlen, "%s: %s%s%s", what, strerror(-e),
			 last_libbpf[0] ? " (libbpf: " : "", last_libbpf[0] ? last_libbpf : "");
	if (err && errlen && last_libbpf[0])
		strncat(err, ")", errlen - strlen(err) - 1);
	last_libbpf[0] = 0;
	return e;
}

static int mkdir_p(const char *path)
{
	char tmp[320];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

/*
 * The bpffs the pins of @pin_root land on, mounted on /sys/fs/bpf if need
 * be; with @create the pin root itself is made too (a preflight checks the
 * filesystem only and leaves no directory behind).
 */
static int bpffs_ready(const char *pin_root, bool create, char *err, size_t errlen)
{
	const char *root = pin_root ? pin_root : GBPF_PIN_ROOT_DEFAULT;
	char parent[256];
	int e;

	if (!*root)
		return 0;
	/* Walk up to the first existing directory: that is where the pins land. */
	snprintf(parent, sizeof(parent), "%s", root);
	while (access(parent, F_OK)) {
		char *slash = strrchr(parent, '/');

		if (!slash || slash == parent)
			break;
		*slash = 0;
	}
	if (!is_bpffs(parent)) {
		if (strncmp(root, "/sys/fs/bpf", 11))
			return fail(err, errlen, ENOTSUP, "pin root %s: not on a bpffs", root);
		if ((e = mkdir_p("/sys/fs/bpf")))
			return fail(err, errlen, e, "mkdir /sys/fs/bpf");
		if (!is_bpffs("/sys/fs/bpf") && mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
			return fail(err, errlen, errno, "mount bpffs on /sys/fs/bpf");
	}
	if (create && (e = mkdir_p(root)))
		return fail(err, errlen, e, "mkdir %s", root);
	return 0;
}

int gbpf_ensure_bpffs(const char *pin_root, char *err, size_t errlen)
{
	return bpffs_ready(pin_root, true, err, errlen);
}

static struct bpf_map *map_of(const struct gbpf *g, enum gbpf_map m)
{
	switch (m) {
	case GBPF_MAP_CFG: return g->skel->maps.gbpf_cfg;
	case GBPF_MAP_VPCS: return g->skel->maps.gbpf_vpcs;
	case GBPF_MAP_IFACES: return g->skel->maps.gbpf_ifaces;
	case GBPF_MAP_ROUTES: return g->skel->maps.gbpf_routes;
	case GBPF_MAP_VSTATS: return g->skel->maps.gbpf_vstats;
	case GBPF_MAP_DROPS: return g->skel->maps.gbpf_drops;
	default: return NULL;
	}
}

static struct bpf_program *prog_of(const struct gbpf *g, enum gbpf_prog p)
{
	switch (p) {
	case GBPF_PROG_DECAP: return g->skel->progs.galactic_decap;
	case GBPF_PROG_ENCAP: return g->skel->progs.galactic_encap;
	case GBPF_PROG_PROBE_FIB: return g->skel->progs.galactic_probe_fib;
	case GBPF_PROG_PROBE_ADJ: return g->skel->progs.galactic_probe_adj;
	case GBPF_PROG_RESOLVE: return g->skel->progs.galactic_resolve;
	default: return NULL;
	}
}

static const char *prog_name(enum gbpf_prog p)
{
	static const char *const n[] = { "galactic_decap", "galactic_encap",
					 "galactic_probe_fib", "galactic_probe_adj",
					 "galactic_resolve" };
	return (unsigned)p < sizeof(n) / sizeof(n[0]) ? n[p] : "?";
}

const char *gbpf_map_name(enum gbpf_map m)
{
	static const char *const n[] = { "gbpf_cfg", "gbpf_vpcs", "gbpf_ifaces",
					 "gbpf_routes", "gbpf_vstats", "gbpf_drops" };
	return (unsigned)m < GBPF_MAP_COUNT ? n[m] : "?";
}

int gbpf_prog_fd(const struct gbpf *g, enum gbpf_prog p)
{
	struct bpf_program *pr = prog_of(g, p);

	return pr ? bpf_program__fd(pr) : -EINVAL;
}

int gbpf_map_fd(const struct gbpf *g, enum gbpf_map m)
{
	struct bpf_map *mp = map_of(g, m);

	return mp ? bpf_map__fd(mp) : -EINVAL;
}

int gbpf_map_memlock(const struct gbpf *g, enum gbpf_map m, uint64_t *out)
{
	int fd = gbpf_map_fd(g, m), e = -ENOENT;
	char path[64], line[128];
	unsigned long long v;
	FILE *f;

	if (fd < 0)
		return fd;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (!(f = fopen(path, "re")))
		return -errno;
	while (e && fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1) {
			*out = v;
			e = 0;
		}
	fclose(f);
	return e;
}

bool gbpf_maps_fresh(const struct gbpf *g) { return g->fresh; }
int gbpf_stale_layouts(const struct gbpf *g) { return g->stale; }

static int count_stale(const char *root, const char *mine)
{
	DIR *d = opendir(root);
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (e->d_name[0] == 'v' && strcmp(e->d_name, mine))
			n++;
	closedir(d);
	return n;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	return remove(path) ? -errno : 0;
}

static int rm_tree(const char *path)
{
	if (access(path, F_OK))
		return 0;
	return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* One load attempt; *existing says how many of our pins were there before. */
static int load(struct gbpf *g, int *existing, char *err, size_t errlen)
{
	char path[400];
	int e;

	g->skel = srv6_bpf__open();
	if (!g->skel)
		return fail(err, errlen, errno, "open bpf object srv6");
	*existing = 0;
	for (int m = 0; g->dir[0] && m < GBPF_MAP_COUNT; m++) {
		snprintf(path, sizeof(path), "%s/%s", g->dir, gbpf_map_name(m));
		if (!access(path, F_OK))
			(*existing)++;
		e = bpf_map__set_pin_path(map_of(g, m), path);
		if (e)
			return fail(err, errlen, e, "set pin path %s", path);
	}
	e = srv6_bpf__load(g->skel);
	if (e)
		return fail(err, errlen, e, "load bpf programs (maps in %s)",
			    g->dir[0] ? g->dir : "memory");
	return 0;
}

int gbpf_open(struct gbpf **out, const struct gbpf_opts *o, char *err, size_t errlen)
{
	const char *root = o && o->pin_root ? o->pin_root : GBPF_PIN_ROOT_DEFAULT;
	struct gbpf *g;
	char mine[16];
	int e, existing = 0;

	*out = NULL;
	quiet_libbpf();
	g = calloc(1, sizeof(*g));
	if (!g)
		return fail(err, errlen, ENOMEM, "allocate bpf backend");
	snprintf(mine, sizeof(mine), "v%d", GBPF_BPF_LAYOUT);
	if (*root) {
		snprintf(g->root, sizeof(g->root), "%s", root);
		snprintf(g->dir, sizeof(g->dir), "%s/%s", root, mine);
		if ((e = gbpf_ensure_bpffs(root, err, errlen)))
			goto out;
		if ((e = mkdir_p(g->dir))) {
			fail(err, errlen, e, "mkdir %s", g->dir);
			goto out;
		}
		g->stale = count_stale(root, mine);
	}
	e = load(g, &existing, err, errlen);
	if (e && existing) {
		/*
		 * Same layout number but a pinned map that libbpf cannot reuse
		 * (someone changed a map without bumping the layout): rebuild.
		 */
		srv6_bpf__destroy(g->skel);
		g->skel = NULL;
		rm_tree(g->dir);
		mkdir_p(g->dir);
		e = load(g, &existing, err, errlen);
		existing = 0;
	}
	if (e)
		goto out;
	g->fresh = existing < GBPF_MAP_COUNT;
	*out = g;
	return 0;
out:
	gbpf_close(g);
	return e;
}

void gbpf_close(struct gbpf *g)
{
	if (!g)
		return;
	srv6_bpf__destroy(g->skel);
	free(g);
}

int gbpf_prune_layouts(struct gbpf *g, char *err, size_t errlen)
{
	char mine[16], path[400];
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (!g->root[0] || !(d = opendir(g->root)))
		return 0;
	snprintf(mine, sizeof(mine), "v%d", GBPF_BPF_LAYOUT);
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'v' || !strcmp(e->d_name, mine))
			continue;
		snprintf(path, sizeof(path), "%s/%s", g->root, e->d_name);
		if (rm_tree(path) && !r)
			r = fail(err, errlen, errno, "remove old layout %s", path);
	}
	closedir(d);
	if (!r)
		g->stale = 0;
	return r;
}

int gbpf_unpin_all(const char *pin_root, char *err, size_t errlen)
{
	if (!pin_root || !*pin_root)
		return 0;
	if (rm_tree(pin_root))
		return fail(err, errlen, errno, "remove pins %s", pin_root);
	return 0;
}

/* ---- TC ---- */

int gbpf_attach(struct gbpf *g, int ifindex, enum gbpf_prog p, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = GBPF_TC_HANDLE, .priority = GBPF_TC_PRIO,
		    .flags = BPF_TC_F_REPLACE);
	int e;

	quiet_libbpf();
	opts.prog_fd = gbpf_prog_fd(g, p);
	e = bpf_tc_hook_create(&hook);
	if (e && e != -EEXIST)
		return fail(err, errlen, e, "create clsact on ifindex %d", ifindex);
	/* REPLACE swaps the program in place: no window without a filter. */
	e = bpf_tc_attach(&hook, &opts);
	if (e)
		return fail(err, errlen, e, "attach %s to ifindex %d ingress", prog_name(p), ifindex);
	return 0;
}

int gbpf_detach(int ifindex, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = GBPF_TC_HANDLE, .priority = GBPF_TC_PRIO);
	int e;

	quiet_libbpf();
	e = bpf_tc_detach(&hook, &opts);
	if (e == -ENOENT || e == -EINVAL || e == -ENODEV)
		return 0; /* no filter, no clsact or no device: nothing of ours there */
	if (e)
		return fail(err, errlen, e, "detach filter from ifindex %d ingress", ifindex);
	return 0;
}

static int prog_info(int fd, struct bpf_prog_info *info, __u32 *map_ids, __u32 nmaps)
{
	__u32 len = sizeof(*info);

	memset(info, 0, sizeof(*info));
	if (map_ids) {
		info->nr_map_ids = nmaps;
		info->map_ids = (__u64)(unsigned long)map_ids;
	}
	return bpf_obj_get_info_by_fd(fd, info, &len) ? -errno : 0;
}

/* Does a loaded program use only our maps? (Then it reads and counts where we write.) */
static bool uses_our_maps(const struct gbpf *g, const __u32 *ids, __u32 n)
{
	for (__u32 i = 0; i < n; i++) {
		bool ours = false;

		for (int m = 0; m < GBPF_MAP_COUNT && !ours; m++) {
			struct bpf_map_info mi;
			__u32 len = sizeof(mi);

			memset(&mi, 0, sizeof(mi));
			ours = !bpf_obj_get_info_by_fd(gbpf_map_fd(g, m), &mi, &len) && mi.id == ids[i];
		}
		if (!ours)
			return false;
	}
	return true;
}

/*
 * Our filter slot (handle/priority on clsact ingress) of ifindex: 0 when
 * empty, 1 with the attached program's id and info (map ids into ids, up to
 * nids), or -errno.
 */
static int filter_info(int ifindex, __u32 *prog_id, struct bpf_prog_info *info, __u32 *ids, __u32 nids)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = GBPF_TC_HANDLE, .priority = GBPF_TC_PRIO);
	int fd, e;

	quiet_libbpf();
	e = bpf_tc_query(&hook, &opts);
	if (e == -ENOENT || e == -EINVAL)
		return 0;
	if (e)
		return e;
	fd = bpf_prog_get_fd_by_id(opts.prog_id);
	if (fd < 0)
		return -errno;
	e = prog_info(fd, info, ids, nids);
	close(fd);
	if (e)
		return e;
	*prog_id = opts.prog_id;
	return 1;
}

int gbpf_attached(const struct gbpf *g, int ifindex, enum gbpf_prog p)
{
	struct bpf_prog_info info, mine;
	__u32 ids[16], id;
	int e;

	if ((e = filter_info(ifindex, &id, &info, ids, 16)) <= 0)
		return e;
	if ((e = prog_info(gbpf_prog_fd(g, p), &mine, NULL, 0)))
		return e;
	/* Kernel names are cut at 15 characters; ours fit. */
	if (strncmp(info.name, prog_name(p), sizeof(info.name) - 1))
		return 0;
	/*
	 * Current: our very load, or the same instructions (tag) on our maps,
	 * as a previous agent of the same version leaves it. A different tag
	 * (new code) or other maps (an older layout) must be replaced.
	 */
	if (id == mine.id ||
	    (!memcmp(info.tag, mine.tag, sizeof(info.tag)) && info.nr_map_ids <= 16 &&
	     uses_our_maps(g, ids, info.nr_map_ids)))
		return 2;
	return 1;
}

int gbpf_filter_name(int ifindex, char *name, size_t len)
{
	struct bpf_prog_info info;
	__u32 id;
	int e;

	if ((e = filter_info(ifindex, &id, &info, NULL, 0)) <= 0)
		return e;
	snprintf(name, len, "%s", info.name);
	return 1;
}

/* ---- maps ---- */

static int update(struct gbpf *g, enum gbpf_map m, const void *k, const void *v,
		  char *err, size_t errlen, const char *what)
{
	if (bpf_map_update_elem(gbpf_map_fd(g, m), k, v, BPF_ANY))
		return fail(err, errlen, errno, "update %s %s", gbpf_map_name(m), what);
	return 0;
}

static int delete(struct gbpf *g, enum gbpf_map m, const void *k, char *err, size_t errlen,
		  const char *what)
{
	if (bpf_map_delete_elem(gbpf_map_fd(g, m), k) && errno != ENOENT)
		return fail(err, errlen, errno, "delete %s %s", gbpf_map_name(m), what);
	return 0;
}

int gbpf_set_cfg(struct gbpf *g, const struct gbpf_cfg *c, char *err, size_t errlen)
{
	__u32 zero = 0;

	return update(g, GBPF_MAP_CFG, &zero, c, err, errlen, "node config");
}

int gbpf_get_cfg(struct gbpf *g, struct gbpf_cfg *c)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(gbpf_map_fd(g, GBPF_MAP_CFG), &zero, c) ? -errno : 0;
}

int gbpf_set_vpc(struct gbpf *g, uint16_t arg, uint32_t table, char *err, size_t errlen)
{
	struct gbpf_vpc v = { .table = table, .flags = GBPF_VPC_VALID };
	__u32 k = arg;
	char what[48];

	snprintf(what, sizeof(what), "arg %u table %u", arg, table);
	if (arg >= GBPF_MAX_ARG)
		return fail(err, errlen, EINVAL, "update gbpf_vpcs %s", what);
	return update(g, GBPF_MAP_VPCS, &k, &v, err, errlen, what);
}

int gbpf_del_vpc(struct gbpf *g, uint16_t arg, char *err, size_t errlen)
{
	struct gbpf_vpc v = { 0 };
	__u32 k = arg;
	char what[32];

	/* Array entries cannot be deleted: an invalid entry is the absence. */
	snprintf(what, sizeof(what), "arg %u (clear)", arg);
	return update(g, GBPF_MAP_VPCS, &k, &v, err, errlen, what);
}

int gbpf_get_vpc(struct gbpf *g, uint16_t arg, struct gbpf_vpc *v)
{
	__u32 k = arg;

	return bpf_map_lookup_elem(gbpf_map_fd(g, GBPF_MAP_VPCS), &k, v) ? -errno : 0;
}

int gbpf_set_iface(struct gbpf *g, uint32_t ifindex, uint16_t arg, char *err, size_t errlen)
{
	struct gbpf_iface v = { .arg = arg, .flags = GBPF_IFACE_VALID };
	char what[48];

	snprintf(what, sizeof(what), "ifindex %u -> arg %u", ifindex, arg);
	return update(g, GBPF_MAP_IFACES, &ifindex, &v, err, errlen, what);
}

int gbpf_del_iface(struct gbpf *g, uint32_t ifindex, char *err, size_t errlen)
{
	char what[32];

	snprintf(what, sizeof(what), "ifindex %u", ifindex);
	return delete(g, GBPF_MAP_IFACES, &ifindex, err, errlen, what);
}

void gbpf_route_key(struct gbpf_route_key *k, uint16_t arg, int family, const void *addr,
		    unsigned plen)
{
	unsigned bytes = family == AF_INET ? 4 : 16, full;

	memset(k, 0, sizeof(*k));
	k->arg = htons(arg);
	k->family = family == AF_INET ? GBPF_AF_INET : GBPF_AF_INET6;
	if (plen > bytes * 8)
		plen = bytes * 8;
	/* Only the prefix's bytes, host bits zeroed: equal prefixes give equal keys. */
	full = plen / 8;
	memcpy(k->addr, addr, full);
	if (plen % 8)
		k->addr[full] = (uint8_t)(((const uint8_t *)addr)[full] & (0xff00u >> (plen % 8)));
	k->prefixlen = GBPF_ROUTE_KEY_BITS + plen;
}

static void route_what(const struct gbpf_route_key *k, char *buf, size_t len)
{
	char a[64];
	int af = k->family == GBPF_AF_INET ? AF_INET : AF_INET6;

	inet_ntop(af, k->addr, a, sizeof(a));
	snprintf(buf, len, "%s/%u (vpc arg %u)", a, k->prefixlen - GBPF_ROUTE_KEY_BITS,
		 ntohs(k->arg));
}

int gbpf_set_route(struct gbpf *g, const struct gbpf_route_key *k, const struct gbpf_route *r,
		   char *err, size_t errlen)
{
	char what[96];

	if (bpf_map_update_elem(gbpf_map_fd(g, GBPF_MAP_ROUTES), k, r, BPF_ANY)) {
		int e = errno;

		route_what(k, what, sizeof(what));
		return fail(err, errlen, e, "update gbpf_routes %s", what);
	}
	return 0;
}

int gbpf_del_route(struct gbpf *g, const struct gbpf_route_key *k, char *err, size_t errlen)
{
	char what[96];

	if (bpf_map_delete_elem(gbpf_map_fd(g, GBPF_MAP_ROUTES), k) && errno != ENOENT) {
		int e = errno;

		route_what(k, what, sizeof(what));
		return fail(err, errlen, e, "delete gbpf_routes %s", what);
	}
	return 0;
}

int gbpf_set_routes(struct gbpf *g, const struct gbpf_route_key *k, const struct gbpf_route *r,
		    size_t n, char *err, size_t errlen)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts, .elem_flags = BPF_ANY);
	int fd = gbpf_map_fd(g, GBPF_MAP_ROUTES);
	size_t done = 0;

	while (done < n) {
		__u32 count = (__u32)(n - done);

		if (!bpf_map_update_batch(fd, k + done, r + done, &count, &opts)) {
			done += count;
			continue;
		}
		if (errno == EINVAL || errno == ENOTSUP || errno == EOPNOTSUPP) {
			/* No batch op for this map on this kernel: one by one. */
			for (; done < n; done++) {
				int e = gbpf_set_route(g, k + done, r + done, err, errlen);

				if (e)
					return e;
			}
			return 0;
		}
		done += count; /* count = entries the kernel took before failing */
		if (done < n) {
			char what[96];
			int e = errno;

			route_what(k + done, what, sizeof(what));
			return fail(err, errlen, e, "batch update gbpf_routes at entry %zu of %zu, %s",
				    done, n, what);
		}
	}
	return 0;
}

int gbpf_resolve(struct gbpf *g, const uint8_t src[16], const uint8_t sid[16], struct gbpf_route *r)
{
	return gbpf_resolve_nh(g, src, sid, r, NULL);
}

int gbpf_resolve_nh(struct gbpf *g, const uint8_t src[16], const uint8_t sid[16], struct gbpf_route *r,
		    struct gbpf_nexthop *nh)
{
	unsigned char pkt[14 + 40 + sizeof(struct gbpf_resolved)] = { [12] = 0x86, [13] = 0xdd,
								      [14] = 0x60, [20] = 59, [21] = 64 };
	unsigned char out[sizeof(pkt)];
	struct gbpf_resolved res;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	memcpy(pkt + 22, src, 16);
	memcpy(pkt + 38, sid, 16);
	if (bpf_prog_test_run_opts(gbpf_prog_fd(g, GBPF_PROG_RESOLVE), &opts))
		return -errno;
	if (opts.retval || opts.data_size_out < sizeof(pkt))
		return -EIO;
	memcpy(&res, out + 54, sizeof(res));
	if (nh) {
		nh->ifindex = res.rc == 0 || res.rc == 7 ? res.ifindex : 0;
		memcpy(nh->addr, res.nh, 16);
	}
	if (res.rc == 7 /* BPF_FIB_LKUP_RET_NO_NEIGH */)
		return -EAGAIN;
	if (res.rc != 0)
		return -EHOSTUNREACH;
	r->ifindex = res.ifindex;
	memcpy(r->smac, res.smac, 6);
	memcpy(r->dmac, res.dmac, 6);
	r->flags |= GBPF_RT_L2;
	return 0;
}

/* ---- counters ---- */

static int vstats_fd(int fd, uint16_t arg, struct gbpf_vpc_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct gbpf_vpc_stats *v;
	__u32 k = arg;

	memset(out, 0, sizeof(*out));
	if (ncpu < 0)
		return ncpu;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &k, v)) {
		int e = -errno;

		free(v);
		return e;
	}
	for (int c = 0; c < ncpu; c++) {
		out->decap_pkts += v[c].decap_pkts;
		out->decap_bytes += v[c].decap_bytes;
		out->encap_pkts += v[c].encap_pkts;
		out->encap_bytes += v[c].encap_bytes;
		out->local_pkts += v[c].local_pkts;
		out->drop_pkts += v[c].drop_pkts;
	}
	free(v);
	return 0;
}

static int drops_fd(int fd, uint64_t out[GBPF_DROP_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *v;

	memset(out, 0, sizeof(uint64_t) * GBPF_DROP_MAX);
	if (ncpu < 0)
		return ncpu;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (__u32 r = 0; r < GBPF_DROP_MAX; r++) {
		if (bpf_map_lookup_elem(fd, &r, v)) {
			int e = -errno;

			free(v);
			return e;
		}
		for (int c = 0; c < ncpu; c++)
			out[r] += v[c];
	}
	free(v);
	return 0;
}

int gbpf_vpc_stats(struct gbpf *g, uint16_t arg, struct gbpf_vpc_stats *out)
{
	return vstats_fd(gbpf_map_fd(g, GBPF_MAP_VSTATS), arg, out);
}

int gbpf_drops(struct gbpf *g, uint64_t out[GBPF_DROP_MAX])
{
	return drops_fd(gbpf_map_fd(g, GBPF_MAP_DROPS), out);
}

/* The running data plane's counters, from the pins alone (loads nothing). */
static int pinned_fd(const char *pin_root, enum gbpf_map m, char *err, size_t errlen)
{
	char path[400];
	int fd;

	quiet_libbpf();
	snprintf(path, sizeof(path), "%s/v%d/%s", pin_root && *pin_root ? pin_root : GBPF_PIN_ROOT_DEFAULT,
		 GBPF_BPF_LAYOUT, gbpf_map_name(m));
	fd = bpf_obj_get(path);
	if (fd < 0)
		return fail(err, errlen, errno, "open pinned map %s", path);
	return fd;
}

int gbpf_pinned_vpc_stats(const char *pin_root, uint16_t arg, struct gbpf_vpc_stats *out, char *err,
			  size_t errlen)
{
	int fd = pinned_fd(pin_root, GBPF_MAP_VSTATS, err, errlen), e;

	if (fd < 0)
		return fd;
	if ((e = vstats_fd(fd, arg, out)))
		fail(err, errlen, e, "read gbpf_vstats[%u]", arg);
	close(fd);
	return e;
}

int gbpf_pinned_drops(const char *pin_root, uint64_t out[GBPF_DROP_MAX], char *err, size_t errlen)
{
	int fd = pinned_fd(pin_root, GBPF_MAP_DROPS, err, errlen), e;

	if (fd < 0)
		return fd;
	if ((e = drops_fd(fd, out)))
		fail(err, errlen, e, "read gbpf_drops");
	close(fd);
	return e;
}

const char *gbpf_drop_name(int reason)
{
	static const char *const n[GBPF_DROP_MAX] = {
		[GBPF_DROP_NONE] = "none",
		[GBPF_DROP_UNKNOWN_ARG] = "unknown_arg",
		[GBPF_DROP_BAD_NEXTHDR] = "bad_nexthdr",
		[GBPF_DROP_MALFORMED_INNER] = "malformed_inner",
		[GBPF_DROP_TTL] = "ttl_exceeded",
		[GBPF_DROP_FIB] = "no_route",
		[GBPF_DROP_ADJUST] = "adjust_room",
		[GBPF_DROP_NO_CFG] = "no_node_config",
		[GBPF_DROP_ENCAP_FIB] = "no_route_to_sid",
		[GBPF_DROP_TOO_BIG] = "too_big",
	};
	return reason >= 0 && reason < GBPF_DROP_MAX ? n[reason] : "?";
}

/* ---- preflight ---- */

static int test_run(int fd, void *pkt, __u32 len, int *retval)
{
	unsigned char out[256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	if (bpf_prog_test_run_opts(fd, &opts))
		return -errno;
	*retval = (int)opts.retval;
	return 0;
}

int gbpf_preflight(const char *pin_root, char *why, size_t whylen)
{
	static const struct { enum bpf_map_type t; const char *name; } maps[] = {
		{ BPF_MAP_TYPE_ARRAY, "array" }, { BPF_MAP_TYPE_HASH, "hash" },
		{ BPF_MAP_TYPE_LPM_TRIE, "lpm_trie" }, { BPF_MAP_TYPE_PERCPU_ARRAY, "percpu_array" },
	};
	static const struct { enum bpf_func_id f; const char *name; } helpers[] = {
		{ BPF_FUNC_fib_lookup, "bpf_fib_lookup" },
		{ BPF_FUNC_skb_adjust_room, "bpf_skb_adjust_room" },
		{ BPF_FUNC_redirect, "bpf_redirect" },
		{ BPF_FUNC_redirect_peer, "bpf_redirect_peer" },
		{ BPF_FUNC_redirect_neigh, "bpf_redirect_neigh" },
	};
	/* eth | IPv6 (nexthdr 4) | IPv4 header, enough for both probes. */
	unsigned char pkt[14 + 40 + 20] = { [12] = 0x86, [13] = 0xdd, [14] = 0x60, [19] = 20,
					    [20] = IPPROTO_IPIP, [21] = 64, [54] = 0x45,
					    [57] = 20, [62] = 64 };
	struct gbpf_opts o = { .pin_root = "" };
	struct gbpf *g = NULL;
	struct btf *btf;
	char err[512];
	int r, rv;

	quiet_libbpf();
	r = libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_SCHED_CLS, NULL);
	if (r != 1)
		return fail(why, whylen, r < 0 ? r : EOPNOTSUPP, "program type sched_cls (tc)");
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		r = libbpf_probe_bpf_map_type(maps[i].t, NULL);
		if (r != 1)
			return fail(why, whylen, r < 0 ? r : EOPNOTSUPP, "map type %s", maps[i].name);
	}
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++) {
		r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, helpers[i].f, NULL);
		if (r != 1)
			return fail(why, whylen, r < 0 ? r : EOPNOTSUPP, "helper %s for tc",
				    helpers[i].name);
	}
	btf = btf__load_vmlinux_btf();
	if (!btf)
		return fail(why, whylen, errno ? errno : ENOENT,
			    "kernel BTF (/sys/kernel/btf/vmlinux, needed for CO-RE)");
	btf__free(btf);
	if ((r = bpffs_ready(pin_root && *pin_root ? pin_root : "/sys/fs/bpf", false, err,
			     sizeof(err)))) {
		snprintf(why, whylen, "bpffs: %s", err);
		return r;
	}
	if ((r = gbpf_open(&g, &o, err, sizeof(err)))) {
		snprintf(why, whylen, "verifier: %s", err);
		return r;
	}
	r = test_run(gbpf_prog_fd(g, GBPF_PROG_PROBE_FIB), pkt, sizeof(pkt), &rv);
	if (!r && rv == -EINVAL)
		r = fail(why, whylen, EINVAL, "bpf_fib_lookup with BPF_FIB_LOOKUP_TBID (kernel < 6.8?)");
	else if (r)
		r = fail(why, whylen, r, "test run of the fib probe");
	if (!r) {
		r = test_run(gbpf_prog_fd(g, GBPF_PROG_PROBE_ADJ), pkt, sizeof(pkt), &rv);
		if (!r && rv)
			r = fail(why, whylen, rv, "bpf_skb_adjust_room with BPF_F_ADJ_ROOM_DECAP_L3_IPV4 "
				 "(kernel < 6.3?)");
		else if (r)
			r = fail(why, whylen, r, "test run of the decap probe");
	}
	gbpf_close(g);
	return r;
}
