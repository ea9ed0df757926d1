/*
 * libgnl against the real kernel, in a namespace of its own:
 *  - what iproute2 writes (seg6, seg6local End/End.DT6/End.DX4/End.DX6) our
 *    dump decoder reads back field by field, and what we write iproute2 shows;
 *  - a batch with bad requests in it: each error lands on its own request;
 *  - links, addresses, neighbours, rules through libgnl;
 *  - a link looked up by name (one request, not a dump): the right one, a
 *    missing or impossible name is ENODEV, an alternative name does not
 *    count, and the socket stays in step for the requests after it;
 *  - 50,000 seg6 routes in one batch run: all present, ENOMEM retried.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/fib_rules.h>
#include <linux/if_addr.h>
#include <linux/neighbour.h>
#include <linux/seg6_iptunnel.h>
#include <linux/seg6_local.h>

#include "agent/nl/objects.h"
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

static char NS[64], NS2[64];
static struct gnl_sock *nl;

static void setup(void)
{
	char err[256];

	if (geteuid() != 0)
		return;
	snprintf(NS, sizeof(NS), "gn%d-a", (int)getpid());
	snprintf(NS2, sizeof(NS2), "gn%d-b", (int)getpid());
	if (topo_sh("ip netns add %s && ip netns add %s && ip -n %s link set lo up && "
		    "ip -n %s link add up0 type veth peer name up0p && ip -n %s link set up0 up && ip -n %s link set up0p up && "
		    "ip -n %s addr add 2001:db8:f::1/64 dev up0 nodad && ip -n %s -6 route add fcbb:bb00:1:2::/64 via 2001:db8:f::2 dev up0",
		    NS, NS2, NS, NS, NS, NS, NS, NS) == 0)
		gnl_open(&nl, NS, err, sizeof(err));
}

static void teardown(void)
{
	gnl_close(nl);
	nl = NULL;
	if (NS[0]) {
		topo_sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", NS, NS2);
	}
}

#define NEED()                                                          \
	do {                                                            \
		if (geteuid() != 0)                                     \
			GT_SKIP("needs root for network namespaces");  \
		ck_assert_msg(nl != NULL, "namespace setup failed"); \
	} while (0)

struct find {
	const char *dst;
	uint32_t table;
	struct gnl_route r;
	int found;
};

static int find_cb(const struct nlmsghdr *h, void *arg)
{
	struct find *f = arg;
	struct gnl_route r;
	char s[64];

	if (gnl_route_parse(h, &r) == 0 && r.table == f->table && r.dst.family &&
	    !strcmp(gnl_addr_str(&r.dst, true, s, sizeof(s)), f->dst)) {
		f->r = r;
		f->found++;
	}
	return 0;
}

static int find_route(const char *dst, uint32_t table, struct gnl_route *out)
{
	struct find f = { .dst = dst, .table = table };
	struct nl_msg *m;
	int rc;

	gnl_route_dump_msg(&m, AF_INET6, 0);
	do {
		f.found = 0;
		rc = gnl_dump(nl, m, find_cb, &f);
	} while (rc == -EAGAIN);
	nlmsg_free(m);
	if (rc)
		return rc;
	*out = f.r;
	return f.found;
}

START_TEST(t_decode_what_iproute2_wrote)
{
	struct gnl_route r;
	char a[64];
	int up0;

	NEED();
	up0 = gnl_ifindex(nl, "up0");
	ck_assert_int_gt(up0, 0);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fd00:a::2/128 encap seg6 mode encap.red segs fcbb:bb00:1:2:e001:: dev up0 table 16385 proto 154", NS), 0);
	ck_assert_int_eq(find_route("fd00:a::2/128", 16385, &r), 1);
	ck_assert_int_eq(r.encap, GNL_ENCAP_SEG6);
	ck_assert_int_eq(r.seg6.mode, SEG6_IPTUN_MODE_ENCAP_RED);
	ck_assert_int_eq(r.seg6.nsegs, 1);
	ck_assert_str_eq(inet_ntop(AF_INET6, &r.seg6.segs[0], a, sizeof(a)), "fcbb:bb00:1:2:e001::");
	ck_assert_int_eq(r.protocol, 154);
	ck_assert_int_eq(r.oif, (uint32_t)up0);
	ck_assert_int_eq(r.priority, 1024);

	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fd00:a::3/128 encap seg6 mode encap segs fc00::1,fc00::2,fc00::3 dev up0 table 16385", NS), 0);
	ck_assert_int_eq(find_route("fd00:a::3/128", 16385, &r), 1);
	ck_assert_int_eq(r.seg6.mode, SEG6_IPTUN_MODE_ENCAP);
	ck_assert_int_eq(r.seg6.nsegs, 3);
	ck_assert_str_eq(inet_ntop(AF_INET6, &r.seg6.segs[0], a, sizeof(a)), "fc00::1"); /* travel order */
	ck_assert_str_eq(inet_ntop(AF_INET6, &r.seg6.segs[2], a, sizeof(a)), "fc00::3");

	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fcbb:bb00:1:1:e001::/128 encap seg6local action End.DT6 table 16385 dev up0", NS), 0);
	ck_assert_int_eq(find_route("fcbb:bb00:1:1:e001::/128", 254, &r), 1);
	ck_assert_int_eq(r.encap, GNL_ENCAP_SEG6LOCAL);
	ck_assert_int_eq(r.s6l.action, SEG6_LOCAL_ACTION_END_DT6);
	ck_assert_int_eq(r.s6l.table, 16385);

	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fcbb:bb00:1:1:d001::/128 encap seg6local action End.DX4 nh4 169.254.16.1 dev up0", NS), 0);
	ck_assert_int_eq(find_route("fcbb:bb00:1:1:d001::/128", 254, &r), 1);
	ck_assert_int_eq(r.s6l.action, SEG6_LOCAL_ACTION_END_DX4);
	ck_assert_str_eq(inet_ntop(AF_INET, &r.s6l.nh4, a, sizeof(a)), "169.254.16.1");

	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fcbb:bb00:1:1:c001::/128 encap seg6local action End.DX6 nh6 fe80::5 dev up0", NS), 0);
	ck_assert_int_eq(find_route("fcbb:bb00:1:1:c001::/128", 254, &r), 1);
	ck_assert_int_eq(r.s6l.action, SEG6_LOCAL_ACTION_END_DX6);
	ck_assert_str_eq(inet_ntop(AF_INET6, &r.s6l.nh6, a, sizeof(a)), "fe80::5");

	ck_assert_int_eq(topo_sh("ip -n %s -6 route add fcbb:bb00:1:1::/128 encap seg6local action End dev up0", NS), 0);
	ck_assert_int_eq(find_route("fcbb:bb00:1:1::/128", 254, &r), 1);
	ck_assert_int_eq(r.s6l.action, SEG6_LOCAL_ACTION_END);
}
END_TEST

START_TEST(t_iproute2_reads_what_we_wrote)
{
	struct gnl_route r;
	struct nl_msg *m;
	char ext[128];

	NEED();
	memset(&r, 0, sizeof(r));
	r.family = AF_INET6;
	r.table = 254;
	r.protocol = 154;
	r.oif = (uint32_t)gnl_ifindex(nl, "up0");
	gnl_addr_parse("fcbb:bb00:1:1:e002::/128", &r.dst);
	r.encap = GNL_ENCAP_SEG6LOCAL;
	r.s6l.action = SEG6_LOCAL_ACTION_END_DT6;
	r.s6l.table = 16386;
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r), 0);
	ck_assert_int_eq(gnl_talk(nl, m, ext, sizeof(ext)), 0);
	/* the same again: EEXIST, with the kernel's reason */
	ck_assert_int_eq(gnl_talk(nl, m, ext, sizeof(ext)), -EEXIST);
	nlmsg_free(m);
	ck_assert_int_eq(topo_sh("ip -n %s -6 route show fcbb:bb00:1:1:e002:: | grep -q 'encap seg6local action End.DT6 table 16386 dev up0 proto 154'", NS), 0);

	gnl_addr_parse("10.1.0.9/32", &r.dst);
	r.family = AF_INET;
	r.table = 16386;
	r.scope = RT_SCOPE_LINK;
	r.encap = GNL_ENCAP_SEG6;
	r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
	r.seg6.nsegs = 1;
	inet_pton(AF_INET6, "fcbb:bb00:1:2:d001::", &r.seg6.segs[0]);
	ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r), 0);
	ck_assert_int_eq(gnl_talk(nl, m, NULL, 0), 0);
	nlmsg_free(m);
	ck_assert_int_eq(topo_sh("ip -n %s route show table 16386 | grep -q '10.1.0.9 *encap seg6 mode encap.red segs 1 \\[ fcbb:bb00:1:2:d001:: \\] dev up0 proto 154 scope link'", NS), 0);
}
END_TEST

START_TEST(t_batch_errors_land_on_their_request)
{
	struct gnl_batch b;
	struct gnl_route r;
	struct nl_msg *m;
	unsigned i, bad = 0;
	char pf[64];

	NEED();
	gnl_batch_init(&b);
	b.per_trip = 64; /* several trips */
	for (i = 0; i < 1000; i++) {
		memset(&r, 0, sizeof(r));
		r.family = AF_INET6;
		r.table = 16387;
		r.protocol = 154;
		snprintf(pf, sizeof(pf), "fd00:b::%x/128", i + 1);
		gnl_addr_parse(pf, &r.dst);
		/* every 97th names a device that does not exist */
		r.oif = i % 97 == 5 ? 99999 : (uint32_t)gnl_ifindex(nl, "up0");
		r.encap = GNL_ENCAP_SEG6;
		r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
		r.seg6.nsegs = 1;
		inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.seg6.segs[0]);
		ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r), 0);
		ck_assert_int_eq(gnl_batch_add(&b, m, (void *)(uintptr_t)(i + 1)), 0);
		nlmsg_free(m);
	}
	ck_assert_int_eq(gnl_batch_run(nl, &b), 0);
	ck_assert_int_ge(b.trips, 16);
	for (i = 0; i < b.n; i++) {
		unsigned idx = (unsigned)(uintptr_t)b.v[i].tag - 1;

		ck_assert_uint_eq(idx, i);
		if (idx % 97 == 5) {
			bad++;
			ck_assert_msg(b.v[i].err == -ENODEV, "request %u: %d", i, b.v[i].err);
		} else {
			ck_assert_msg(b.v[i].err == 0, "request %u: %s (%s)", i, strerror(-b.v[i].err), b.v[i].ext);
		}
	}
	ck_assert_uint_eq(bad, 11);
	/* a second run of the same adds: every request fails alone with EEXIST/ENODEV */
	ck_assert_int_eq(gnl_batch_run(nl, &b), 0);
	for (i = 0; i < b.n; i++)
		ck_assert_int_eq(b.v[i].err, i % 97 == 5 ? -ENODEV : -EEXIST);
	gnl_batch_free(&b);
	ck_assert_int_eq(topo_sh("test $(ip -n %s -6 route show table 16387 | wc -l) = 989", NS), 0);
}
END_TEST

START_TEST(t_links_addrs_neigh_rules)
{
	struct gnl_link l;
	struct gnl_ifaddr a;
	struct gnl_neigh n;
	struct gnl_rule ru;
	struct nl_msg *m;
	char path[128], ext[128];
	int fd, idx;

	NEED();
	snprintf(path, sizeof(path), "/run/netns/%s", NS2);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	/* veth whose peer is created directly in the other namespace */
	ck_assert_int_eq(gnl_veth_add(nl, "hpod1", "eth0", fd, ext, sizeof(ext)), 0);
	ck_assert_int_eq(gnl_veth_add(nl, "hpod1", "eth0", fd, ext, sizeof(ext)), -EEXIST);
	close(fd);
	ck_assert_int_eq(topo_sh("ip -n %s link show eth0 >/dev/null", NS2), 0);
	ck_assert_int_eq(gnl_link_get(nl, "hpod1", &l), 0);
	ck_assert_str_eq(l.kind, "veth");
	idx = (int)l.ifindex;
	gnl_link_init(&l);
	l.ifindex = (uint32_t)idx;
	l.flags = l.change = IFF_UP;
	l.mtu = 1400;
	ck_assert_int_eq(gnl_link_set(nl, &l, ext, sizeof(ext)), 0);
	ck_assert_int_eq(gnl_link_get(nl, "hpod1", &l), 0);
	ck_assert_int_eq(l.mtu, 1400);
	ck_assert(l.flags & IFF_UP);

	memset(&a, 0, sizeof(a));
	a.family = AF_INET6;
	a.ifindex = (uint32_t)idx;
	a.scope = RT_SCOPE_LINK;
	a.flags = IFA_F_NODAD;
	a.protocol = 154;
	gnl_addr_parse("fe80::1/64", &a.addr);
	ck_assert_int_eq(gnl_ifaddr_msg(&m, RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL, &a), 0);
	ck_assert_int_eq(gnl_talk(nl, m, ext, sizeof(ext)), 0);
	nlmsg_free(m);
	ck_assert_int_eq(topo_sh("ip -n %s addr show hpod1 | grep -q 'inet6 fe80::1/64 scope link nodad'", NS), 0);

	memset(&n, 0, sizeof(n));
	n.family = AF_INET6;
	n.ifindex = (uint32_t)idx;
	gnl_addr_parse("fd00:a::7", &n.dst);
	memcpy(n.lladdr, (uint8_t[]){ 2, 0, 0, 0, 0, 7 }, 6);
	n.has_lladdr = true;
	n.state = NUD_PERMANENT;
	n.protocol = 154;
	ck_assert_int_eq(gnl_neigh_msg(&m, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_REPLACE, &n), 0);
	ck_assert_int_eq(gnl_talk(nl, m, ext, sizeof(ext)), 0);
	nlmsg_free(m);
	ck_assert_int_eq(topo_sh("ip -n %s -6 neigh show dev hpod1 | grep -q 'fd00:a::7 lladdr 02:00:00:00:00:07 PERMANENT proto 154'", NS), 0);

	memset(&ru, 0, sizeof(ru));
	ru.family = AF_INET6;
	ru.priority = 1000;
	ru.table = 16385;
	ru.protocol = 154;
	strcpy(ru.iifname, "hpod1");
	ck_assert_int_eq(gnl_rule_msg(&m, RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, &ru), 0);
	ck_assert_int_eq(gnl_talk(nl, m, ext, sizeof(ext)), 0);
	nlmsg_free(m);
	ck_assert_int_eq(topo_sh("ip -n %s -6 rule | grep -q '1000:.*iif hpod1 lookup 16385 proto 154'", NS), 0);

	ck_assert_int_eq(gnl_link_del(nl, "hpod1", ext, sizeof(ext)), 0);
	ck_assert_int_eq(gnl_link_get(nl, "hpod1", &l), -ENODEV);
}
END_TEST

START_TEST(t_link_get_by_name)
{
	struct gnl_link l;
	char out[32], ext[128];
	int idx;

	NEED();
	ck_assert_int_eq(topo_out(out, sizeof(out), "ip netns exec %s cat /sys/class/net/up0/ifindex", NS), 0);
	idx = atoi(out);
	ck_assert_int_eq(gnl_link_get(nl, "up0", &l), 0);
	ck_assert_int_eq((int)l.ifindex, idx);
	ck_assert_str_eq(l.name, "up0");
	ck_assert_str_eq(l.kind, "veth");
	ck_assert_int_eq(gnl_link_get(nl, "nosuch0", &l), -ENODEV);
	ck_assert_int_eq(gnl_link_get(nl, "", &l), -ENODEV);
	ck_assert_int_eq(gnl_link_get(nl, "a-name-far-too-long-for-a-link", &l), -ENODEV);
	/* every reply and ack was read: the next request gets its own answer */
	ck_assert_int_eq(gnl_link_get(nl, "lo", &l), 0);
	ck_assert_str_eq(l.name, "lo");
	gnl_link_init(&l);
	l.ifindex = (uint32_t)idx;
	l.mtu = 1420;
	ck_assert_int_eq(gnl_link_set(nl, &l, ext, sizeof(ext)), 0);
	ck_assert_int_eq(gnl_link_get(nl, "up0", &l), 0);
	ck_assert_int_eq(l.mtu, 1420);
	ck_assert_int_eq(gnl_ifindex(nl, "up0"), idx);
}
END_TEST

START_TEST(t_link_get_ignores_altnames)
{
	struct gnl_link l;

	NEED();
	if (topo_sh("ip -n %s link property add dev up0 altname galt0 2>/dev/null", NS))
		GT_SKIP("kernel or iproute2 without alternative link names (ip link property add ... altname)");
	ck_assert_int_eq(topo_sh("ip -n %s link show galt0 >/dev/null", NS), 0);
	/* the kernel finds up0 by its alternative name; only the name itself counts */
	ck_assert_int_eq(gnl_link_get(nl, "galt0", &l), -ENODEV);
	ck_assert_int_eq(gnl_link_get(nl, "up0", &l), 0);
	ck_assert_int_eq(topo_sh("ip -n %s link property del dev up0 altname galt0", NS), 0);
}
END_TEST

START_TEST(t_50k_seg6_routes_none_lost)
{
	struct gnl_batch b;
	struct gnl_route r;
	struct nl_msg *m;
	char pf[64], out[32];
	unsigned i, failed = 0;

	NEED();
	gnl_batch_init(&b);
	memset(&r, 0, sizeof(r));
	r.family = AF_INET6;
	r.table = 16388;
	r.protocol = 154;
	r.oif = (uint32_t)gnl_ifindex(nl, "up0");
	r.encap = GNL_ENCAP_SEG6;
	r.seg6.mode = SEG6_IPTUN_MODE_ENCAP_RED;
	r.seg6.nsegs = 1;
	inet_pton(AF_INET6, "fcbb:bb00:1:2:e001::", &r.seg6.segs[0]);
	for (i = 0; i < 50000; i++) {
		snprintf(pf, sizeof(pf), "fd00:c::%x:%x/128", (i >> 16) + 1, i & 0xffff);
		gnl_addr_parse(pf, &r.dst);
		ck_assert_int_eq(gnl_route_msg(&m, RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL, &r), 0);
		ck_assert_int_eq(gnl_batch_add(&b, m, NULL), 0);
		nlmsg_free(m);
	}
	ck_assert_int_eq(gnl_batch_run(nl, &b), 0);
	for (i = 0; i < b.n; i++)
		failed += b.v[i].err != 0;
	topo_out(out, sizeof(out), "ip -n %s -6 route show table 16388 | wc -l", NS);
	printf("50000 seg6 routes in one batch run: %s present, %u failed, %lu ENOMEM retries, %lu trips\n", out,
	       failed, b.retries, b.trips);
	ck_assert_uint_eq(failed, 0);
	ck_assert_int_eq(atoi(out), 50000);
	gnl_batch_free(&b);
	topo_sh("ip -n %s -6 route flush table 16388", NS);
}
END_TEST

/* A test process that fails (exit or abort) after building a topology leaves nothing behind. */
START_TEST(t_topology_removed_on_failure)
{
	static const int how[] = { 0, 1, 2 };
	size_t i;

	NEED();
	for (i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		char prefix[32], out[64];
		int st;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			struct topo t;

			if (topo_up(&t, 2) || topo_add_pod(&t, 1, "p1", TOPO_VPC_A, "fd00:a::1", "10.1.0.1") < 0)
				_exit(90);
			if (how[i] == 0)
				exit(1);        /* a failed assertion ends the process like this */
			if (how[i] == 1)
				abort();
			raise(SIGTERM);         /* killed by the runner */
			_exit(91);
		}
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert_msg(!(WIFEXITED(st) && WEXITSTATUS(st) >= 90), "child could not build the topology");
		snprintf(prefix, sizeof(prefix), "gt%d-", (int)pid);
		topo_out(out, sizeof(out), "ip netns list | grep -c '^%s' || true", prefix);
		ck_assert_msg(atoi(out) == 0, "%s namespaces left by %s: %s", prefix,
			      how[i] == 0 ? "exit" : how[i] == 1 ? "abort" : "SIGTERM", out);
	}
	/* shell tests: topo.sh run removes everything when the command fails */
	{
		char out[64];
		const char *top = getenv("GT_TOP") ? getenv("GT_TOP") : ".";

		ck_assert_int_eq(topo_sh("TOPO_PREFIX=gts%d %s/tests/lib/topo.sh run sh -c '%s/tests/lib/topo.sh up $TOPO_PREFIX 2 && exit 7'",
					 (int)getpid(), top, top), 7);
		topo_out(out, sizeof(out), "ip netns list | grep -c '^gts%d-' || true", (int)getpid());
		ck_assert_int_eq(atoi(out), 0);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("kernel_nl");
	TCase *tc = tcase_create("nl");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, t_decode_what_iproute2_wrote);
	tcase_add_test(tc, t_iproute2_reads_what_we_wrote);
	tcase_add_test(tc, t_batch_errors_land_on_their_request);
	tcase_add_test(tc, t_links_addrs_neigh_rules);
	tcase_add_test(tc, t_link_get_by_name);
	tcase_add_test(tc, t_link_get_ignores_altnames);
	tcase_add_test(tc, t_50k_seg6_routes_none_lost);
	tcase_add_test(tc, t_topology_removed_on_failure);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
