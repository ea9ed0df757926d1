/*
 * The record's codec (agent/record_codec.h): for every object family,
 * decode(encode(x)) == x, and the encoded text is the on-disk format
 * byte for byte (the files of agents already running must read back).
 */
#include "tests/lib/gtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record_codec.h"

static char *text_of(json_t *o)
{
	char *s;

	ck_assert_ptr_nonnull(o);
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* encode's text is want; the returned tree is read back from that text (as a load does). */
static json_t *through_text(json_t *enc, const char *want)
{
	char *s = text_of(enc);
	json_t *back;

	ck_assert_str_eq(s, want);
	back = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(back);
	free(s);
	json_decref(enc);
	return back;
}

static struct gdp_prefix pfx(const char *s)
{
	struct gdp_prefix p;

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(gdp_prefix_parse(s, &p), 0);
	return p;
}

static void prefixes_eq(const struct gdp_prefix *a, const struct gdp_prefix *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(gdp_prefix_equal(&a[i], &b[i]), "prefix %zu differs", i);
}

START_TEST(node_family)
{
	struct gdp_node n = { .block = { 0xfd, 0, 0, 0x0a, 0, 0x01 }, .node_id = 0x1f, .uplink = "eth0" }, back;
	int mtu = 0;
	char err[200];
	json_t *o = through_text(rec_node_encode(&n, 1500),
				 "{\"block\":\"fd00:a:1::/48\",\"nodeID\":31,\"uplink\":\"eth0\",\"uplinkMTU\":1500}");

	memset(&back, 0, sizeof(back));
	ck_assert_int_eq(rec_node_decode(o, &back, &mtu, err, sizeof(err)), 0);
	ck_assert_mem_eq(back.block, n.block, 6);
	ck_assert_uint_eq(back.node_id, n.node_id);
	ck_assert_str_eq(back.uplink, n.uplink);
	ck_assert_int_eq(mtu, 1500);
	/* and a refusal names the field */
	json_object_set_new(o, "nodeID", json_integer(0xE000));
	ck_assert_int_eq(rec_node_decode(o, &back, &mtu, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "node: \"nodeID\" must be 1-0xDFFF");
	json_decref(o);
}
END_TEST

START_TEST(egress_family)
{
	struct gdp_egress e, back;
	char err[200];
	json_t *o;

	memset(&e, 0, sizeof(e));
	e.have = true;
	ck_assert_int_eq(inet_pton(AF_INET6, "fd00:a:2:e000::", &e.sid), 1);
	ck_assert_int_eq(inet_pton(AF_INET6, "2001:db8::7", &e.addr6), 1);
	/* without the optional fields */
	o = through_text(rec_egress_encode(&e), "{\"addressIPv6\":\"2001:db8::7\",\"sid\":\"fd00:a:2:e000::\"}");
	ck_assert_int_eq(rec_egress_decode(o, &back, err, sizeof(err)), 0);
	ck_assert(back.have && !back.have_v4 && !back.oif[0]);
	ck_assert_mem_eq(&back.sid, &e.sid, 16);
	ck_assert_mem_eq(&back.addr6, &e.addr6, 16);
	json_decref(o);
	/* with them */
	e.have_v4 = true;
	ck_assert_int_eq(inet_pton(AF_INET, "198.51.100.9", &e.addr4), 1);
	snprintf(e.oif, sizeof(e.oif), "ens5");
	o = through_text(rec_egress_encode(&e), "{\"addressIPv4\":\"198.51.100.9\",\"addressIPv6\":\"2001:db8::7\","
						"\"interface\":\"ens5\",\"sid\":\"fd00:a:2:e000::\"}");
	ck_assert_int_eq(rec_egress_decode(o, &back, err, sizeof(err)), 0);
	ck_assert(back.have && back.have_v4);
	ck_assert_uint_eq(back.addr4.s_addr, e.addr4.s_addr);
	ck_assert_str_eq(back.oif, "ens5");
	json_decref(o);
}
END_TEST

START_TEST(vpc_family)
{
	struct rec_vpc v, back;
	char err[200];
	json_t *o;

	for (int declared = 0; declared < 2; declared++) {
		memset(&v, 0, sizeof(v));
		snprintf(v.m.id, sizeof(v.m.id), "Vpc0123");
		v.m.arg = 0x2a;
		v.m.table = 1042;
		v.m.prefixes[0] = pfx("10.1.0.0/16");
		v.m.prefixes[1] = pfx("fd10::/48");
		v.m.n_prefixes = 2;
		v.declared = declared;
		o = through_text(rec_vpc_encode(&v),
				 declared ? "{\"arg\":42,\"declared\":true,\"id\":\"Vpc0123\",\"prefixes\":[\"10.1.0.0/16\","
					    "\"fd10::/48\"],\"table\":1042}"
					  : "{\"arg\":42,\"declared\":false,\"id\":\"Vpc0123\",\"prefixes\":[\"10.1.0.0/16\","
					    "\"fd10::/48\"],\"table\":1042}");
		ck_assert_int_eq(rec_vpc_decode(o, 3, &back, err, sizeof(err)), 0);
		ck_assert_str_eq(back.m.id, v.m.id);
		ck_assert_uint_eq(back.m.arg, v.m.arg);
		ck_assert_uint_eq(back.m.table, v.m.table);
		ck_assert_uint_eq(back.m.n_prefixes, 2);
		prefixes_eq(back.m.prefixes, v.m.prefixes, 2);
		ck_assert_int_eq(back.declared, v.declared);
		json_object_set_new(o, "declared", json_string("yes"));
		ck_assert_int_eq(rec_vpc_decode(o, 3, &back, err, sizeof(err)), -EINVAL);
		ck_assert_str_eq(err, "vpcs[3] (Vpc0123): \"declared\" must be a boolean");
		json_decref(o);
	}
}
END_TEST

static void att_eq(const struct rec_att *a, const struct rec_att *b)
{
	ck_assert_str_eq(a->m.vpc, b->m.vpc);
	ck_assert_str_eq(a->m.id, b->m.id);
	ck_assert_str_eq(a->m.container_id, b->m.container_id);
	ck_assert_str_eq(a->m.host_ifname, b->m.host_ifname);
	ck_assert_uint_eq(a->m.arg, b->m.arg);
	ck_assert_uint_eq(a->m.n_addrs, b->m.n_addrs);
	prefixes_eq(a->m.addrs, b->m.addrs, a->m.n_addrs);
	ck_assert_uint_eq(a->m.nh4.s_addr, b->m.nh4.s_addr);
	ck_assert_mem_eq(a->m.pod_mac, b->m.pod_mac, 6);
	ck_assert_uint_eq(a->m.mtu, b->m.mtu);
	ck_assert_int_eq(a->m.guest_addressed, b->m.guest_addressed);
	ck_assert_int_eq(a->src, b->src);
	ck_assert_int_eq(a->active, b->active);
	ck_assert_str_eq(a->network, b->network);
	ck_assert_str_eq(a->ifname, b->ifname);
	ck_assert_str_eq(a->netns ? a->netns : "", b->netns ? b->netns : "");
	ck_assert_str_eq(a->pod_ns, b->pod_ns);
	ck_assert_str_eq(a->pod_name, b->pod_name);
	ck_assert_str_eq(a->pod_uid, b->pod_uid);
	ck_assert_mem_eq(a->host_mac, b->host_mac, 6);
	ck_assert_uint_eq(a->egress, b->egress);
	ck_assert(json_equal(a->config, b->config) || (!a->config && !b->config));
}

START_TEST(attachment_cni)
{
	struct rec_att a, back;
	char why[200];
	json_t *o;

	memset(&a, 0, sizeof(a));
	a.src = REC_SRC_CNI;
	a.active = true;
	snprintf(a.m.vpc, sizeof(a.m.vpc), "Vpc0123");
	snprintf(a.m.id, sizeof(a.m.id), "Att9");
	snprintf(a.m.container_id, sizeof(a.m.container_id), "c0ffee");
	snprintf(a.m.host_ifname, sizeof(a.m.host_ifname), "gv1a2b3c");
	a.m.arg = 7;
	a.m.addrs[0] = pfx("10.1.0.5/32");
	a.m.addrs[1] = pfx("fd10::5/128");
	a.m.n_addrs = 2;
	ck_assert_int_eq(inet_pton(AF_INET, "169.254.0.7", &a.m.nh4), 1);
	memcpy(a.m.pod_mac, (uint8_t[]){ 0x02, 0, 0, 0, 0, 0x07 }, 6);
	memcpy(a.host_mac, (uint8_t[]){ 0x02, 0xab, 0, 0, 0, 0x07 }, 6);
	a.m.mtu = 1400;
	snprintf(a.network, sizeof(a.network), "galactic");
	snprintf(a.ifname, sizeof(a.ifname), "eth0");
	a.netns = strdup("/var/run/netns/p1");
	snprintf(a.pod_ns, sizeof(a.pod_ns), "default");
	snprintf(a.pod_name, sizeof(a.pod_name), "p1");
	snprintf(a.pod_uid, sizeof(a.pod_uid), "u-1");
	a.egress = REC_FAM_V4 | REC_FAM_V6;
	a.config = json_pack("{s:s, s:s}", "vpc", "Vpc0123", "vpcattachment", "Att9");
	o = through_text(rec_att_encode(&a),
			 "{\"addrs\":[\"10.1.0.5/32\",\"fd10::5/128\"],\"arg\":7,\"config\":{\"vpc\":\"Vpc0123\","
			 "\"vpcattachment\":\"Att9\"},\"containerID\":\"c0ffee\",\"egress\":[\"IPv6\",\"IPv4\"],"
			 "\"hostIfname\":\"gv1a2b3c\",\"hostMac\":\"02:ab:00:00:00:07\",\"id\":\"Att9\",\"ifname\":\"eth0\","
			 "\"mtu\":1400,\"netns\":\"/var/run/netns/p1\",\"network\":\"galactic\",\"nh4\":\"169.254.0.7\","
			 "\"podMac\":\"02:00:00:00:00:07\",\"podName\":\"p1\",\"podNamespace\":\"default\","
			 "\"podUID\":\"u-1\",\"source\":\"cni\",\"vpc\":\"Vpc0123\"}");
	ck_assert_int_eq(rec_att_decode(o, &back, why, sizeof(why)), 0);
	att_eq(&a, &back);
	rec_att_clear(&back);
	/* guest addressed: the flag goes through too */
	a.m.guest_addressed = true;
	json_decref(o);
	o = rec_att_encode(&a);
	ck_assert_int_eq(rec_att_decode(o, &back, why, sizeof(why)), 0);
	att_eq(&a, &back);
	rec_att_clear(&back);
	json_decref(o);
	rec_att_clear(&a);
}
END_TEST

START_TEST(attachment_declared)
{
	struct rec_att a, back;
	char why[200];
	json_t *o;

	memset(&a, 0, sizeof(a));
	a.src = REC_SRC_DECLARED;
	a.active = true;
	snprintf(a.m.vpc, sizeof(a.m.vpc), "V1");
	snprintf(a.m.id, sizeof(a.m.id), "A1");
	snprintf(a.m.host_ifname, sizeof(a.m.host_ifname), "veth-a1");
	a.m.arg = 1;
	a.network[0] = 0;
	o = through_text(rec_att_encode(&a),
			 "{\"addrs\":[],\"arg\":1,\"containerID\":\"\",\"hostIfname\":\"veth-a1\","
			 "\"hostMac\":\"00:00:00:00:00:00\",\"id\":\"A1\",\"ifname\":\"\",\"mtu\":0,\"network\":\"\","
			 "\"podMac\":\"00:00:00:00:00:00\",\"source\":\"declared\",\"vpc\":\"V1\"}");
	ck_assert_int_eq(rec_att_decode(o, &back, why, sizeof(why)), 0);
	att_eq(&a, &back);
	rec_att_clear(&back);
	json_object_set_new(o, "arg", json_integer(0));
	ck_assert_int_eq(rec_att_decode(o, &back, why, sizeof(why)), -1);
	ck_assert_str_eq(why, "\"arg\" must be 1-4095");
	rec_att_clear(&back);
	json_decref(o);
}
END_TEST

START_TEST(key_family)
{
	char kv[GDP_ID_MAX + 1], ki[GDP_ID_MAX + 1];
	json_t *o = through_text(rec_key_encode("Vpc0123", "Att9"), "{\"id\":\"Att9\",\"vpc\":\"Vpc0123\"}");

	ck_assert_int_eq(rec_key_decode(o, kv, ki), 0);
	ck_assert_str_eq(kv, "Vpc0123");
	ck_assert_str_eq(ki, "Att9");
	json_object_del(o, "id");
	ck_assert_int_eq(rec_key_decode(o, kv, ki), -EINVAL);
	json_decref(o);
}
END_TEST

START_TEST(remote_family)
{
	struct gdp_remote m, back;
	char *buf = NULL, err[200];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	json_t *o;

	memset(&m, 0, sizeof(m));
	m.prefix = pfx("10.9.0.0/24");
	ck_assert_int_eq(inet_pton(AF_INET6, "fd00:a:3:1::", &m.sid), 1);
	ck_assert_int_eq(gdp_remote_set_vpc(&m, "Vpc\"q"), 0); /* a VPC id is escaped as JSON */
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(rec_remote_encode(f, &m), 0);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_str_eq(buf, "{\"vpc\":\"Vpc\\\"q\",\"prefix\":\"10.9.0.0/24\",\"sid\":\"fd00:a:3:1::\"}");
	o = json_loads(buf, JSON_REJECT_DUPLICATES, NULL);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(rec_remote_decode(o, 0, &back, err, sizeof(err)), 0);
	ck_assert(gdp_prefix_equal(&back.prefix, &m.prefix));
	ck_assert_mem_eq(&back.sid, &m.sid, 16);
	ck_assert_uint_eq(back.vpc_ix, m.vpc_ix);
	ck_assert_str_eq(gdp_remote_vpc(&back), "Vpc\"q");
	json_object_set_new(o, "sid", json_string("10.0.0.1"));
	ck_assert_int_eq(rec_remote_decode(o, 4, &back, err, sizeof(err)), -EINVAL);
	ck_assert_str_eq(err, "remotes[4]: needs \"vpc\", a \"prefix\" and an IPv6 \"sid\"");
	json_decref(o);
	free(buf);
}
END_TEST

START_TEST(journal_header)
{
	char b[80];
	unsigned long ep = 0;
	int n = rec_journal_header_encode(b, sizeof(b), 123456789UL);

	ck_assert_str_eq(b, "{\"journal\":123456789,\"version\":2}\n");
	ck_assert_int_eq(n, (int)strlen(b));
	ck_assert_int_eq(rec_journal_header_decode(b, strlen(b) - 1, &ep), 0);
	ck_assert_uint_eq(ep, 123456789UL);
	ck_assert_int_eq(rec_journal_header_decode("{\"journal\":0,\"version\":2}", 26, &ep), -EINVAL);
	ck_assert_int_eq(rec_journal_header_decode("{\"journal\":1,\"version\":2,\"x\":1}", 32, &ep), -EINVAL);
	ck_assert_int_eq(rec_journal_header_decode("{\"journal\":1,\"version\":1}", 26, &ep), -EINVAL);
}
END_TEST

START_TEST(fields)
{
	int bad;
	json_t *f = rec_families_encode(REC_FAM_V4);

	/* MAC addresses: common/mac.h, tests/unit/test_common_mac.c */
	for (unsigned fam = 0; fam < 4; fam++) {
		json_t *e = rec_families_encode(fam);

		ck_assert_uint_eq(rec_families_decode(e, &bad), fam);
		ck_assert_int_eq(bad, 0);
		json_decref(e);
	}
	json_array_append_new(f, json_string("IPv5"));
	rec_families_decode(f, &bad);
	ck_assert_int_eq(bad, 1);
	json_decref(f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("record_codec");
	TCase *tc = tcase_create("roundtrip");

	tcase_add_test(tc, node_family);
	tcase_add_test(tc, egress_family);
	tcase_add_test(tc, vpc_family);
	tcase_add_test(tc, attachment_cni);
	tcase_add_test(tc, attachment_declared);
	tcase_add_test(tc, key_family);
	tcase_add_test(tc, remote_family);
	tcase_add_test(tc, journal_header);
	tcase_add_test(tc, fields);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
