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

/* ---- netlink probes (run inside a private netns) ---- */

/* libnl maps kernel errnos to its own codes; recover a readable errno. */
static int nlerr_errno(int nlerr)
{
	switch (-nlerr) {
	case NLE_OPNOTSUPP: return EOPNOTSUPP;
	case NLE_INVAL: return EINVAL;
	case NLE_EXIST: return EEXIST;
	case NLE_NOACCESS: return EACCES;
	case NLE_PERM: return EPERM;
	case NLE_NODEV: return ENODEV;
	case NLE_OBJ_NOTFOUND: return ENOENT;
	case NLE_NOMEM: return ENOMEM;
	case NLE_AF_NOSUPPORT: return EAFNOSUPPORT;
	case NLE_RANGE: return ERANGE;
	default: return EIO;
	}
}

static int send_ack(struct nl_sock *sk, struct nl_msg *msg)
{
	int err = nl_send_sync(sk, msg);

	return err < 0 ? nlerr_errno(err) : 0;
}

static int link_add(struct nl_sock *sk, const char *name, const char *kind,
		    const char *peer, __u32 vrf_table)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
	struct nlattr *li, *data, *pi;

	if (!m)
		return ENOMEM;
	nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO);
	nla_put_string(m, IFLA_IFNAME, name);
	li = nla_nest_start(m, IFLA_LINKINFO);
	nla_put_string(m, IFLA_INFO_KIND, kind);
	if (peer || vrf_table) {
		data = nla_nest_start(m, IFLA_INFO_DATA);
		if (peer) {
			pi = nla_nest_start(m, 1 /* VETH_INFO_PEER */);
			nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO);
			nla_put_string(m, IFLA_IFNAME, peer);
			nla_nest_end(m, pi);
		}
		if (vrf_table)
			nla_put_u32(m, IFLA_VRF_TABLE, vrf_table);
		nla_nest_end(m, data);
	}
	nla_nest_end(m, li);
	return send_ack(sk, m);
}

static int link_up(struct nl_sock *sk, const char *name)
{
	struct ifinfomsg ifi = { .ifi_family = AF_UNSPEC, .ifi_flags = IFF_UP,
				 .ifi_change = IFF_UP };
	struct nl_msg *m;

	ifi.ifi_index = (int)if_nametoindex(name);
	if (!ifi.ifi_index)
		return ENODEV;
	m = nlmsg_alloc_simple(RTM_NEWLINK, 0);
	if (!m)
		return ENOMEM;
	nlmsg_append(m, &ifi, sizeof(ifi), NLMSG_ALIGNTO);
	return send_ack(sk, m);
}

static struct nl_msg *route_msg(const char *dst, __u32 table, int oif)
{
	struct rtmsg rt = { .rtm_family = AF_INET6, .rtm_dst_len = 128,
			    .rtm_table = RT_TABLE_UNSPEC, .rtm_protocol = RTPROT_STATIC,
			    .rtm_scope = RT_SCOPE_UNIVERSE, .rtm_type = RTN_UNICAST };
	struct in6_addr a;
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);

	if (!m)
		return NULL;
	inet_pton(AF_INET6, dst, &a);
	nlmsg_append(m, &rt, sizeof(rt), NLMSG_ALIGNTO);
	nla_put(m, RTA_DST, sizeof(a), &a);
	nla_put_u32(m, RTA_TABLE, table);
	nla_put_u32(m, RTA_OIF, (__u32)oif);
	return m;
}

static int seg6_encap_probe(struct nl_sock *sk, int mode, const char *dst, int oif)
{
	struct nl_msg *m = route_msg(dst, 100, oif);
	struct {
		struct seg6_iptunnel_encap t;
		struct ipv6_sr_hdr srh;
		struct in6_addr seg;
	} __attribute__((packed)) e;
	struct nlattr *enc;

	if (!m)
		return ENOMEM;
	memset(&e, 0, sizeof(e));
	e.t.mode = mode;
	e.srh.hdrlen = 2; /* one segment: 16 bytes = 2 * 8 */
	e.srh.type = 4;   /* IPV6_SRCRT_TYPE_4 */
	e.srh.segments_left = 0;
	e.srh.first_segment = 0;
	inet_pton(AF_INET6, "fc00:0:1:1::", &e.seg);
	nla_put_u16(m, RTA_ENCAP_TYPE, LWTUNNEL_ENCAP_SEG6);
	enc = nla_nest_start(m, RTA_ENCAP);
	nla_put(m, SEG6_IPTUNNEL_SRH, sizeof(e), &e);
	nla_nest_end(m, enc);
	return send_ack(sk, m);
}

static int seg6local_probe(struct nl_sock *sk, __u32 action, const char *dst, int oif)
{
	struct nl_msg *m = route_msg(dst, RT_TABLE_MAIN, oif);
	struct nlattr *enc;
	struct in6_addr nh6;
	struct in_addr nh4;

	if (!m)
		return ENOMEM;
	nla_put_u16(m, RTA_ENCAP_TYPE, LWTUNNEL_ENCAP_SEG6_LOCAL);
	enc = nla_nest_start(m, RTA_ENCAP);
	nla_put_u32(m, SEG6_LOCAL_ACTION, action);
	switch (action) {
	case SEG6_LOCAL_ACTION_END_DX6:
		inet_pton(AF_INET6, "fd00::2", &nh6);
		nla_put(m, SEG6_LOCAL_NH6, sizeof(nh6), &nh6);
		break;
	case SEG6_LOCAL_ACTION_END_DX4:
		inet_pton(AF_INET, "169.254.0.2", &nh4);
		nla_put(m, SEG6_LOCAL_NH4, sizeof(nh4), &nh4);
		break;
	case SEG6_LOCAL_ACTION_END_DT6:
		nla_put_u32(m, SEG6_LOCAL_TABLE, 100);
		break;
	case SEG6_LOCAL_ACTION_END_DT4:
	case SEG6_LOCAL_ACTION_END_DT46:
		nla_put_u32(m, SEG6_LOCAL_VRFTABLE, 100);
		break;
	}
	nla_nest_end(m, enc);
	return send_ack(sk, m);
}

static int clsact_probe(struct nl_sock *sk, int ifindex)
{
	struct tcmsg tc = { .tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex,
			    .tcm_handle = TC_H_MAKE(TC_H_CLSACT, 0),
			    .tcm_parent = TC_H_CLSACT };
	struct nl_msg *m = nlmsg_alloc_simple(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL);

	if (!m)
		return ENOMEM;
	nlmsg_append(m, &tc, sizeof(tc), NLMSG_ALIGNTO);
	nla_put_string(m, TCA_KIND, "clsact");
	return send_ack(sk, m);
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
	struct nl_sock *sk = nl_socket_alloc();
	int n = 0, oif;
	char dst[64];

	if (!sk || nl_connect(sk, NETLINK_ROUTE) < 0) {
		set(&p[n++], "netlink", EIO);
		return n;
	}
	set(&p[n++], "link veth", link_add(sk, "pfv0", "veth", "pfv1", 0));
	set(&p[n++], "link dummy", link_add(sk, "pfd0", "dummy", NULL, 0));
	set(&p[n++], "link vrf", link_add(sk, "pfvrf0", "vrf", NULL, 100));
	set(&p[n++], "link bridge", link_add(sk, "pfbr0", "bridge", NULL, 0));
	set(&p[n++], "sysctl net.vrf.strict_mode",
	    file_exists("/proc/sys/net/vrf/strict_mode"));
	link_up(sk, "lo");
	link_up(sk, "pfv0");
	oif = (int)if_nametoindex("pfv0");
	if (!oif)
		oif = (int)if_nametoindex("lo");
	set(&p[n++], "qdisc clsact", clsact_probe(sk, oif));
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]) && n < max; i++) {
		snprintf(dst, sizeof(dst), "fd00:1::%zx", i + 1);
		set(&p[n++], modes[i].name, seg6_encap_probe(sk, modes[i].mode, dst, oif));
	}
	for (size_t i = 0; i < sizeof(locals) / sizeof(locals[0]) && n < max; i++) {
		snprintf(dst, sizeof(dst), "fc00:0:1:%zx::", i + 1);
		set(&p[n++], locals[i].name, seg6local_probe(sk, locals[i].action, dst, oif));
	}
	nl_socket_free(sk);
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
