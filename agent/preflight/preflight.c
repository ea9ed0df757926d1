/*
 * Kernel preflight: what this kernel can do for the SRv6 data plane.
 *
 * Link and route probes run in a child process inside a fresh, unnamed
 * network namespace (unshare(CLONE_NEWNET)), so nothing is left behind and
 * the node's own tables are never touched. BPF probes use libbpf's feature
 * probes plus one test run of bpf_fib_lookup with BPF_FIB_LOOKUP_TBID, which
 * older kernels reject with -EINVAL at run time, not at load time.
 */
#include "agent/preflight/preflight.h"
#include "agent/nl/objects.h"

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/lwtunnel.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/seg6.h>
#include <linux/seg6_iptunnel.h>
#include <linux/seg6_local.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void set(struct pf_probe *p, const char *name, int err)
{
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->ok = err == 0;
	snprintf(p->detail, sizeof(p->detail), "%s", err ? strerror(err) : "");
}

/* ---- netlink probes (run inside a private netns) ----
 *
 * Built with agent/nl (libgnl), the encoders the kernel backend itself
 * uses: a probe passes only when the kernel accepts the very message the
 * agent would send. Each returns 0 or a positive errno. */

/* mp, not the message: the builder that sets *mp is an argument of the same
 * call, and C leaves the order in which arguments are evaluated open. */
static int talk(struct gnl_sock *sk, struct nl_msg **mp, int rc)
{
	if (rc)
		return -rc;
	rc = gnl_talk(sk, *mp, NULL, 0);
	nlmsg_free(*mp);
	return -rc;
}

static int link_add(struct gnl_sock *sk, const char *name, const char *kind, const char *peer,
		    uint32_t vrf_table)
{
	struct gnl_link l;
	struct nl_msg *m = NULL;

	gnl_link_init(&l);
	snprintf(l.name, sizeof(l.name), "%s", name);
	snprintf(l.kind, sizeof(l.kind), "%s", kind);
	if (peer)
		snprintf(l.peer, sizeof(l.peer), "%s", peer);
	l.vrf_table = vrf_table;
	return talk(sk, &m, gnl_link_msg(&m, RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL, &l));
}

static int link_up(struct gnl_sock *sk, const char *name)
{
	struct gnl_link l;

	gnl_link_init(&l);
	l.ifindex = if_nametoindex(name);
	if (!l.ifindex)
		return ENODEV;
	l.flags = l.change = IFF_UP;
	return -gnl_link_set(sk, &l, NULL, 0);
}

static void probe_route(struct gnl_route *r, const char *dst, uint32_t table, int oif)
{
	memset(r, 0, sizeof(*r));
	r->family = AF_INET6;
	r->dst.family = AF_INET6;
	r->dst.len = 128;
	inet_pton(AF_INET6, dst, &r->dst.a.raw);
	r->table = table;
	r->protocol = RTPROT_STATIC;
	r->scope = RT_SCOPE_UNIVERSE;
	r->type = RTN_UNICAST;
	r->oif = (uint32_t)oif;
}

static int seg6_encap_probe(struct gnl_sock *sk, int mode, const char *dst, int oif)
{
	struct gnl_route r;
	struct nl_msg *m = NULL;

	probe_route(&r, dst, 100, oif);
	r.encap = GNL_ENCAP_SEG6;
	r.seg6.mode = mode;
	r.seg6.nsegs = 1;
	inet_pton(AF_INET6, "fc00:0:1:1::", &r.seg6.segs[0]);
	return talk(sk, &m, gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r));
}

static int seg6local_probe(struct gnl_sock *sk, uint32_t action, const char *dst, int oif)
{
	struct gnl_route r;
	struct nl_msg *m = NULL;

	probe_route(&r, dst, RT_TABLE_MAIN, oif);
	r.encap = GNL_ENCAP_SEG6LOCAL;
	r.s6l.action = (int)action;
	switch (action) {
	case SEG6_LOCAL_ACTION_END_DX6:
		inet_pton(AF_INET6, "fd00::2", &r.s6l.nh6);
		break;
	case SEG6_LOCAL_ACTION_END_DX4:
		inet_pton(AF_INET, "169.254.0.2", &r.s6l.nh4);
		break;
	case SEG6_LOCAL_ACTION_END_DT6:
		r.s6l.table = 100;
		break;
	case SEG6_LOCAL_ACTION_END_DT4:
	case SEG6_LOCAL_ACTION_END_DT46:
		r.s6l.vrftable = 100;
		break;
	}
	return talk(sk, &m, gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r));
}

static int file_exists(const char *p)
{
	return access(p, F_OK) == 0 ? 0 : ENOENT;
}

/* Runs in the child, inside its own netns. Fills probes[], returns count. */
static int netns_probes(struct pf_probe *p, int max)
{
	static const struct { const char *name; __u32 action; } locals[] = {
		{ "seg6local End", SEG6_LOCAL_ACTION_END },
		{ "seg6local End.DX6", SEG6_LOCAL_ACTION_END_DX6 },
		{ "seg6local End.DX4", SEG6_LOCAL_ACTION_END_DX4 },
		{ "seg6local End.DT6 (table)", SEG6_LOCAL_ACTION_END_DT6 },
		{ "seg6local End.DT4 (vrftable)", SEG6_LOCAL_ACTION_END_DT4 },
		{ "seg6local End.DT46 (vrftable)", SEG6_LOCAL_ACTION_END_DT46 },
	};
	static const struct { const char *name; int mode; } modes[] = {
		{ "seg6 encap", SEG6_IPTUN_MODE_ENCAP },
		{ "seg6 encap.red", SEG6_IPTUN_MODE_ENCAP_RED },
		{ "seg6 inline", SEG6_IPTUN_MODE_INLINE },
	};
	struct gnl_sock *sk = NULL;
	int n = 0, oif;
	char dst[64], err[128];

	if (gnl_open(&sk, NULL, err, sizeof(err))) {
		set(&p[n++], "netlink", EIO);
		return n;
	}
	set(&p[n++], "link veth", link_add(sk, "pfv0", "veth", "pfv1", 0));
	set(&p[n++], "link dummy", link_add(sk, "pfd0", "dummy", NULL, 0));
	set(&p[n++], "link vrf", link_add(sk, "pfvrf0", "vrf", NULL, 100));
	set(&p[n++], "link bridge", link_add(sk, "pfbr0", "bridge", NULL, 0));
	set(&p[n++], "sysctl net.vrf.strict_mode",
	    file_exists("/proc/sys/net/vrf/strict_mode"));
	/* egress shard (docs/dataplane-egress.md): seg6local's decapsulated
	 * packets pass netfilter only with it; present in every netns or none */
	set(&p[n++], "sysctl net.netfilter.nf_hooks_lwtunnel",
	    file_exists("/proc/sys/net/netfilter/nf_hooks_lwtunnel"));
	link_up(sk, "lo");
	link_up(sk, "pfv0");
	oif = (int)if_nametoindex("pfv0");
	if (!oif)
		oif = (int)if_nametoindex("lo");
	set(&p[n++], "qdisc clsact", -gnl_clsact_add(sk, (uint32_t)oif, NULL, 0));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]) && n < max; i++) {
		snprintf(dst, sizeof(dst), "fd00:1::%zx", i + 1);
		set(&p[n++], modes[i].name, seg6_encap_probe(sk, modes[i].mode, dst, oif));
	}
	for (size_t i = 0; i < sizeof(locals) / sizeof(locals[0]) && n < max; i++) {
		snprintf(dst, sizeof(dst), "fc00:0:1:%zx::", i + 1);
		set(&p[n++], locals[i].name, seg6local_probe(sk, locals[i].action, dst, oif));
	}
	gnl_close(sk);
	return n;
}

/* ---- BPF probes (run in the caller's namespace; they create nothing lasting) ---- */

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/* bpf_fib_lookup(skb, &params, 64, DIRECT|TBID) with tbid = main; returns r0. */
static int fib_tbid_probe(char *detail, size_t dlen)
{
	struct bpf_insn prog[32];
	int i = 0, fd, err;
	unsigned char pkt[14 + 40] = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = sizeof(pkt),
		    .repeat = 1);

	prog[i++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_6, BPF_REG_1, 0, 0);
	for (int off = -64; off < 0; off += 8)
		prog[i++] = INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, (short)off, 0);
	prog[i++] = INSN(BPF_ST | BPF_MEM | BPF_B, BPF_REG_10, 0, -64, AF_INET6);
	prog[i++] = INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -64 + 8, 1);        /* ifindex lo */
	prog[i++] = INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -64 + 48, RT_TABLE_MAIN); /* tbid */
	prog[i++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_6, 0, 0);
	prog[i++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
	prog[i++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -64);
	prog[i++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_3, 0, 0, 64);
	prog[i++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0,
			 BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_TBID);
	prog[i++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_fib_lookup);
	prog[i++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

	pkt[12] = 0x86;
	pkt[13] = 0xdd; /* ethertype IPv6 */
	pkt[14] = 0x60;
	fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "pf_fib_tbid", "GPL", prog, (size_t)i, NULL);
	if (fd < 0) {
		snprintf(detail, dlen, "load: %s", strerror(errno));
		return errno;
	}
	err = bpf_prog_test_run_opts(fd, &opts);
	close(fd);
	if (err) {
		snprintf(detail, dlen, "test run: %s", strerror(errno));
		return errno;
	}
	if ((int)opts.retval == -EINVAL) {
		snprintf(detail, dlen, "flag BPF_FIB_LOOKUP_TBID rejected (-EINVAL)");
		return EINVAL;
	}
	snprintf(detail, dlen, "lookup returned %d", (int)opts.retval);
	return 0;
}

static int bpf_probes(struct pf_probe *p, int max)
{
	static const struct { const char *name; enum bpf_prog_type t; } progs[] = {
		{ "bpf prog sched_cls (tc)", BPF_PROG_TYPE_SCHED_CLS },
		{ "bpf prog xdp", BPF_PROG_TYPE_XDP },
	};
	static const struct { const char *name; enum bpf_map_type t; } maps[] = {
		{ "bpf map lpm_trie", BPF_MAP_TYPE_LPM_TRIE },
		{ "bpf map hash", BPF_MAP_TYPE_HASH },
		{ "bpf map array", BPF_MAP_TYPE_ARRAY },
		{ "bpf map percpu_array", BPF_MAP_TYPE_PERCPU_ARRAY },
	};
	static const struct { const char *name; enum bpf_func_id f; } helpers[] = {
		{ "bpf helper fib_lookup", BPF_FUNC_fib_lookup },
		{ "bpf helper skb_adjust_room", BPF_FUNC_skb_adjust_room },
		{ "bpf helper redirect", BPF_FUNC_redirect },
		{ "bpf helper redirect_peer", BPF_FUNC_redirect_peer },
		{ "bpf helper redirect_neigh", BPF_FUNC_redirect_neigh },
	};
	struct btf *btf;
	int n = 0, r;

	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]) && n < max; i++) {
		r = libbpf_probe_bpf_prog_type(progs[i].t, NULL);
		set(&p[n++], progs[i].name, r == 1 ? 0 : r < 0 ? -r : EOPNOTSUPP);
	}
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]) && n < max; i++) {
		r = libbpf_probe_bpf_map_type(maps[i].t, NULL);
		set(&p[n++], maps[i].name, r == 1 ? 0 : r < 0 ? -r : EOPNOTSUPP);
	}
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]) && n < max; i++) {
		r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, helpers[i].f, NULL);
		set(&p[n++], helpers[i].name, r == 1 ? 0 : r < 0 ? -r : EOPNOTSUPP);
	}
	btf = btf__load_vmlinux_btf();
	set(&p[n++], "btf vmlinux", btf ? 0 : errno ? errno : ENOENT);
	btf__free(btf);
	if (n < max) {
		char d[sizeof(p[0].detail)];
		r = fib_tbid_probe(d, sizeof(d));
		set(&p[n], "bpf fib_lookup tbid", r);
		snprintf(p[n].detail, sizeof(p[n].detail), "%s", d);
		n++;
	}
	return n;
}

int pf_run(struct pf_probe *probes, int max)
{
	int fds[2], n = 0, status;
	pid_t pid;
	ssize_t got;

	if (pipe(fds) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		struct pf_probe local[32];
		int k;

		close(fds[0]);
		if (unshare(CLONE_NEWNET) < 0) {
			set(&local[0], "netns (unshare)", errno);
			k = 1;
		} else {
			k = netns_probes(local, 32);
		}
		if (write(fds[1], local, sizeof(local[0]) * (size_t)k) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	while (n < max && (got = read(fds[0], &probes[n], sizeof(probes[0]))) ==
				  (ssize_t)sizeof(probes[0]))
		n++;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return n + bpf_probes(probes + n, max - n);
}

const struct pf_probe *pf_find(const struct pf_probe *p, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(p[i].name, name))
			return &p[i];
	return NULL;
}
