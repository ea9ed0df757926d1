/* galactic-cni configuration and environment: parsing, validation, errors. */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cni/base62.h"
#include "agent/cni/config.h"
#include "agent/cni/result.h"
#include "tests/lib/gtest.h"

#define GOOD_V4V6                                                                     \
	"{\"cniVersion\":\"1.1.0\",\"name\":\"vpc-net\",\"type\":\"galactic-cni\","   \
	"\"vpc\":\"7Hq2\",\"vpcattachment\":\"aZ09\",\"ipFamilies\":[\"IPv4\",\"IPv6\"]," \
	"\"addresses\":[{\"address\":\"10.1.0.5/24\",\"gateway\":\"10.1.0.1\"},"          \
	"{\"address\":\"fd00:a::5/64\",\"gateway\":\"fe80::1\"}],\"mtu\":1400,"           \
	"\"routes\":[{\"dst\":\"192.168.0.0/16\"}],"                                       \
	"\"egress\":{\"internet\":{\"families\":[\"IPv4\"]}},"                             \
	"\"dns\":{\"nameservers\":[\"10.1.0.2\"],\"search\":[\"svc\"]}}"

START_TEST(test_good_dual_stack)
{
	struct cni_conf c;
	struct cni_err e;
	char b[64];

	ck_assert_int_eq(cni_conf_parse(GOOD_V4V6, strlen(GOOD_V4V6), CNI_CMD_ADD, &c, &e), 0);
	ck_assert_int_eq(c.ver, CNI_V_1_1_0);
	ck_assert_str_eq(c.name, "vpc-net");
	ck_assert_str_eq(c.vpc_s, "7Hq2");
	/* 7*62^3 + 17*62^2 + 52*62 + 2 */
	ck_assert_uint_eq(c.vpc, 7ull * 238328 + 17 * 3844 + 52 * 62 + 2);
	ck_assert_int_eq(c.naddrs, 2);
	ck_assert_str_eq(cni_ip_str(&c.addrs[0].ip, b, sizeof(b)), "10.1.0.5");
	ck_assert_int_eq(c.addrs[0].plen, 24);
	ck_assert_int_eq(c.addrs[1].has_gw, 1);
	ck_assert_str_eq(cni_ip_str(&c.addrs[1].gw, b, sizeof(b)), "fe80::1");
	ck_assert_int_eq(c.mtu, 1400);
	ck_assert_uint_eq(c.families, CNI_FAM_V4 | CNI_FAM_V6);
	ck_assert_uint_eq(c.egress, CNI_FAM_V4);
	ck_assert_int_eq(c.nroutes, 1);
	ck_assert_ptr_nonnull(c.dns);
	ck_assert_int_eq(c.timeout_s, 60);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_roundtrip)
{
	struct cni_conf c, d;
	struct cni_err e;
	json_t *j;
	char *s1, *s2;

	ck_assert_int_eq(cni_conf_parse(GOOD_V4V6, strlen(GOOD_V4V6), CNI_CMD_ADD, &c, &e), 0);
	j = cni_conf_to_json(&c);
	ck_assert_int_eq(cni_conf_parse_json(j, CNI_CMD_ADD, &d, &e), 0);
	s1 = json_dumps(j, JSON_SORT_KEYS);
	json_decref(j);
	j = cni_conf_to_json(&d);
	s2 = json_dumps(j, JSON_SORT_KEYS);
	ck_assert_str_eq(s1, s2);
	ck_assert_int_eq(memcmp(c.addrs, d.addrs, sizeof(c.addrs)), 0);
	json_decref(j);
	free(s1);
	free(s2);
	cni_conf_free(&c);
	cni_conf_free(&d);
}
END_TEST

/* The bad-input table: each config must be refused with this code and a
 * detail naming the problem. */
struct bad {
	const char *what;
	enum cni_cmd cmd;
	const char *json;
	int code;
	const char *detail;
};

#define BASE(extra)                                                                    \
	"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"galactic-cni\","           \
	"\"vpc\":\"V1\",\"vpcattachment\":\"A1\",\"ipFamilies\":[\"IPv6\"]," extra "}"
#define ADDR6 "\"addresses\":[{\"address\":\"fd00::5/64\",\"gateway\":\"fd00::1\"}]"

/* The canonical (upstream) stanza, without addressing. */
#define UP(extra)                                                                      \
	"{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"galactic-veth\","          \
	"\"vpc\":\"V1\",\"vpcattachment\":\"A1\",\"namespace\":\"galactic-system\"" extra "}"
#define IPAM(addrs) ",\"ipam\":{\"type\":\"galactic-ipam\",\"addresses\":[" addrs "]}"

static char huge_name[2048];
static char huge_doc[CNI_CONF_MAX_BYTES + 64];

static const struct bad bads[] = {
	{ "not JSON", CNI_CMD_ADD, "{\"cniVersion\":", CNI_ERR_DECODE, "JSON error" },
	{ "JSON array", CNI_CMD_ADD, "[1,2]", CNI_ERR_DECODE, "not a JSON object" },
	{ "duplicate key", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"cniVersion\":\"0.3.1\"}", CNI_ERR_DECODE, "duplicate" },
	{ "no cniVersion", CNI_CMD_ADD, "{\"name\":\"n\"}", CNI_ERR_INVALID_CONFIG, "cniVersion" },
	{ "unknown version", CNI_CMD_ADD,
	  "{\"cniVersion\":\"2.0.0\",\"name\":\"n\",\"type\":\"t\"}", CNI_ERR_INCOMPATIBLE_VERSION, "2.0.0" },
	{ "GC on 1.0.0", CNI_CMD_GC, BASE(ADDR6), CNI_ERR_INCOMPATIBLE_VERSION, "GC" },
	{ "missing vpc", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpcattachment\":\"A\"}",
	  CNI_ERR_INVALID_CONFIG, "'vpc': required" },
	{ "vpc not base62", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"ab-c\",\"vpcattachment\":\"A\"}",
	  CNI_ERR_INVALID_CONFIG, "not a base62 digit" },
	{ "vpcattachment overflow", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"a\",\"vpcattachment\":\"zzzzzzzzzzz\"}",
	  CNI_ERR_INVALID_CONFIG, "64 bits" },
	{ "vpc too long", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"aaaaaaaaaaaaaaaaaaaaa\",\"vpcattachment\":\"A\"}",
	  CNI_ERR_INVALID_CONFIG, "longer than 11" },
	{ "vpc is a number", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":12,\"vpcattachment\":\"A\"}",
	  CNI_ERR_INVALID_CONFIG, "must be a string" },
	{ "IPv4 address in an IPv6 VPC", CNI_CMD_ADD,
	  BASE("\"addresses\":[{\"address\":\"10.0.0.5/24\"}]"), CNI_ERR_INVALID_CONFIG,
	  "VPC carries only IPv6" },
	{ "no addresses", CNI_CMD_ADD, BASE("\"addresses\":[]"), CNI_ERR_INVALID_CONFIG, "at least one" },
	{ "address without prefix", CNI_CMD_ADD, BASE("\"addresses\":[{\"address\":\"fd00::5\"}]"),
	  CNI_ERR_INVALID_CONFIG, "prefix length" },
	{ "network address", CNI_CMD_ADD, BASE("\"addresses\":[{\"address\":\"fd00::/64\"}]"),
	  CNI_ERR_INVALID_CONFIG, "network address" },
	{ "multicast address", CNI_CMD_ADD, BASE("\"addresses\":[{\"address\":\"ff02::5/64\"}]"),
	  CNI_ERR_INVALID_CONFIG, "multicast" },
	{ "gateway other family", CNI_CMD_ADD,
	  BASE("\"addresses\":[{\"address\":\"fd00::5/64\",\"gateway\":\"10.0.0.1\"}]"),
	  CNI_ERR_INVALID_CONFIG, "family" },
	{ "gateway equals address", CNI_CMD_ADD,
	  BASE("\"addresses\":[{\"address\":\"fd00::5/64\",\"gateway\":\"fd00::5\"}]"),
	  CNI_ERR_INVALID_CONFIG, "equals the address" },
	{ "too many addresses", CNI_CMD_ADD,
	  BASE("\"addresses\":[{\"address\":\"fd00::1/64\"},{\"address\":\"fd00::2/64\"},{\"address\":\"fd00::3/64\"},"
	       "{\"address\":\"fd00::4/64\"},{\"address\":\"fd00::5/64\"},{\"address\":\"fd00::6/64\"},"
	       "{\"address\":\"fd00::7/64\"},{\"address\":\"fd00::8/64\"},{\"address\":\"fd00::9/64\"}]"),
	  CNI_ERR_INVALID_CONFIG, "at most 8" },
	{ "duplicate address", CNI_CMD_ADD,
	  BASE("\"addresses\":[{\"address\":\"fd00::1/64\"},{\"address\":\"fd00::1/64\"}]"),
	  CNI_ERR_INVALID_CONFIG, "duplicates" },
	{ "mtu too small for IPv6", CNI_CMD_ADD, BASE(ADDR6 ",\"mtu\":1000"), CNI_ERR_INVALID_CONFIG, "1280" },
	{ "mtu not integer", CNI_CMD_ADD, BASE(ADDR6 ",\"mtu\":\"1500\""), CNI_ERR_INVALID_CONFIG, "integer" },
	{ "egress family not carried", CNI_CMD_ADD,
	  BASE(ADDR6 ",\"egress\":{\"internet\":{\"families\":[\"IPv4\"]}}"), CNI_ERR_INVALID_CONFIG,
	  "does not carry" },
	{ "ipam beside legacy addresses", CNI_CMD_ADD,
	  BASE(ADDR6 ",\"ipam\":{\"type\":\"galactic-ipam\",\"addresses\":[]}"),
	  CNI_ERR_INVALID_CONFIG, "ipam.addresses only" },
	{ "legacy addresses without ipFamilies", CNI_CMD_ADD, UP("," ADDR6), CNI_ERR_INVALID_CONFIG, "ipFamilies" },
	{ "ipam delegation to another plugin", CNI_CMD_ADD, UP(",\"ipam\":{\"type\":\"host-local\"}"),
	  CNI_ERR_UNSUPPORTED_FIELD, "host-local" },
	{ "ipam not an object", CNI_CMD_ADD, UP(",\"ipam\":[]"), CNI_ERR_INVALID_CONFIG, "'ipam'" },
	{ "ipam without type", CNI_CMD_ADD, UP(",\"ipam\":{\"addresses\":[]}"), CNI_ERR_INVALID_CONFIG, "ipam.type" },
	{ "ipam without addresses", CNI_CMD_ADD, UP(",\"ipam\":{\"type\":\"galactic-ipam\"}"),
	  CNI_ERR_INVALID_CONFIG, "ipam.addresses" },
	{ "ipam addresses empty", CNI_CMD_ADD, UP(IPAM("")), CNI_ERR_INVALID_CONFIG, "1 or 2" },
	{ "ipam addresses not an array", CNI_CMD_ADD,
	  UP(",\"ipam\":{\"type\":\"galactic-ipam\",\"addresses\":{}}"), CNI_ERR_INVALID_CONFIG, "array" },
	{ "ipam IPv4 not /32", CNI_CMD_ADD, UP(IPAM("{\"address\":\"10.1.0.5/24\"}")),
	  CNI_ERR_INVALID_CONFIG, "must be a /32" },
	{ "ipam two IPv6", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"fd00::5/128\"},{\"address\":\"fd00::6/128\"}")),
	  CNI_ERR_INVALID_CONFIG, "one address per family" },
	{ "ipam two IPv4", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"10.1.0.5/32\"},{\"address\":\"10.1.0.6/32\"}")),
	  CNI_ERR_INVALID_CONFIG, "one address per family" },
	{ "ipam three addresses", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"10.1.0.5/32\"},{\"address\":\"fd00::6/128\"},{\"address\":\"fd00::7/128\"}")),
	  CNI_ERR_INVALID_CONFIG, "1 or 2" },
	{ "ipam /0", CNI_CMD_ADD, UP(IPAM("{\"address\":\"::/0\"}")), CNI_ERR_INVALID_CONFIG, "length 0" },
	{ "ipam no prefix length", CNI_CMD_ADD, UP(IPAM("{\"address\":\"fd00::5\"}")),
	  CNI_ERR_INVALID_CONFIG, "prefix length" },
	{ "ipam address not a string", CNI_CMD_ADD, UP(IPAM("{\"address\":5}")), CNI_ERR_INVALID_CONFIG, "address" },
	{ "ipam entry not an object", CNI_CMD_ADD, UP(IPAM("\"fd00::5/128\"")), CNI_ERR_INVALID_CONFIG,
	  "must be an object" },
	{ "ipam loopback", CNI_CMD_ADD, UP(IPAM("{\"address\":\"127.0.0.5/32\"}")), CNI_ERR_INVALID_CONFIG,
	  "loopback" },
	{ "ipam gateway other family", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"fd00::5/128\",\"gateway\":\"10.0.0.1\"}")), CNI_ERR_INVALID_CONFIG, "family" },
	{ "ipam gateway equals address", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"10.1.0.5/32\",\"gateway\":\"10.1.0.5\"}")), CNI_ERR_INVALID_CONFIG,
	  "equals the address" },
	{ "ipam gateway multicast", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"fd00::5/128\",\"gateway\":\"ff02::1\"}")), CNI_ERR_INVALID_CONFIG,
	  "multicast" },
	{ "ipam gateway garbage", CNI_CMD_ADD,
	  UP(IPAM("{\"address\":\"fd00::5/128\",\"gateway\":\"x\"}")), CNI_ERR_INVALID_CONFIG, "not an IP" },
	{ "top-level ipv6_subnet (moved into ipam upstream)", CNI_CMD_ADD,
	  UP(",\"ipv6_subnet\":\"fd00::/64\""), CNI_ERR_INVALID_CONFIG, "'ipv6_subnet'" },
	{ "top-level ipv4_subnet", CNI_CMD_ADD, UP(",\"ipv4_subnet\":\"10.0.0.0/24\""), CNI_ERR_INVALID_CONFIG,
	  "'ipv4_subnet'" },
	{ "top-level address_families", CNI_CMD_ADD, UP(",\"address_families\":[\"IPv6\"]"),
	  CNI_ERR_INVALID_CONFIG, "'address_families'" },
	{ "top-level static_ip", CNI_CMD_ADD, UP(IPAM("{\"address\":\"fd00::5/128\"}") ",\"static_ip\":\"x\""),
	  CNI_ERR_INVALID_CONFIG, "'static_ip'" },
	{ "vpcattachment empty", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"galactic-veth\",\"vpc\":\"V\",\"vpcattachment\":\"\"}",
	  CNI_ERR_INVALID_CONFIG, "vpcattachment" },
	{ "namespace not a string", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"galactic-veth\",\"vpc\":\"V\",\"vpcattachment\":\"A\",\"namespace\":7}",
	  CNI_ERR_INVALID_CONFIG, "'namespace'" },
	{ "egress mode bad", CNI_CMD_ADD, UP(",\"egress\":{\"internet\":{\"mode\":\"On\"}}"),
	  CNI_ERR_INVALID_CONFIG, "Enabled" },
	{ "ipMasq", CNI_CMD_ADD, UP(",\"ipMasq\":true"), CNI_ERR_UNSUPPORTED_FIELD, "masquerade" },
	{ "GC valid-attachments not a list", CNI_CMD_GC,
	  "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"V\",\"vpcattachment\":\"A\","
	  "\"cni.dev/valid-attachments\":{}}", CNI_ERR_INVALID_CONFIG, "valid-attachments" },
	{ "GC legacy attachments entry bad", CNI_CMD_GC,
	  "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"V\",\"vpcattachment\":\"A\","
	  "\"cni.dev/attachments\":[{\"containerID\":\"c\"}]}", CNI_ERR_INVALID_CONFIG, "cni.dev/attachments[0]" },
	{ "bad name", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"-x y\",\"type\":\"t\"}", CNI_ERR_INVALID_CONFIG, "'name'" },
	{ "type with a path", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"../bin/sh\"}", CNI_ERR_INVALID_CONFIG, "'type'" },
	{ "relative agent socket", CNI_CMD_ADD, BASE(ADDR6 ",\"agentSocket\":\"run/x.sock\""),
	  CNI_ERR_INVALID_CONFIG, "absolute" },
	{ "CHECK without prevResult", CNI_CMD_CHECK, BASE(ADDR6), CNI_ERR_INVALID_CONFIG, "prevResult" },
	{ "route with host bits", CNI_CMD_ADD, BASE(ADDR6 ",\"routes\":[{\"dst\":\"fd01::1/64\"}]"),
	  CNI_ERR_INVALID_CONFIG, "host bits" },
	{ "leading-zero IPv4", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"V\",\"vpcattachment\":\"A\","
	  "\"ipFamilies\":[\"IPv4\"],\"addresses\":[{\"address\":\"010.1.0.5/24\"}]}",
	  CNI_ERR_INVALID_CONFIG, "not an IP address" },
	{ "NUL in a string", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\\u0000x\",\"type\":\"t\"}", CNI_ERR_DECODE, "" },
	{ "families twice", CNI_CMD_ADD,
	  "{\"cniVersion\":\"1.0.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"V\",\"vpcattachment\":\"A\","
	  "\"ipFamilies\":[\"IPv6\",\"IPv6\"]}", CNI_ERR_INVALID_CONFIG, "twice" },
	{ "oversized name", CNI_CMD_ADD, huge_name, CNI_ERR_INVALID_CONFIG, "longer than 253" },
	{ "oversized document", CNI_CMD_ADD, huge_doc, CNI_ERR_INVALID_CONFIG, "at most" },
};

static void fill_huge(void)
{
	char *p = huge_name;

	p += sprintf(p, "{\"cniVersion\":\"1.0.0\",\"name\":\"");
	memset(p, 'a', 1000);
	p += 1000;
	sprintf(p, "\",\"type\":\"t\"}");
	memset(huge_doc, ' ', sizeof(huge_doc) - 1);
	huge_doc[0] = '{';
	huge_doc[sizeof(huge_doc) - 2] = '}';
	huge_doc[sizeof(huge_doc) - 1] = 0;
}

START_TEST(test_bad_input)
{
	const struct bad *b = &bads[_i];
	struct cni_conf c;
	struct cni_err e;
	int rc;

	rc = cni_conf_parse(b->json, strlen(b->json), b->cmd, &c, &e);
	ck_assert_msg(rc == -1, "%s: accepted", b->what);
	ck_assert_msg(e.code == b->code, "%s: code %d, want %d (%s: %s)", b->what, e.code, b->code,
		      e.msg, e.details);
	ck_assert_msg(strstr(e.details, b->detail) != NULL, "%s: details \"%s\" lack \"%s\"",
		      b->what, e.details, b->detail);
	ck_assert_msg(e.msg[0] != 0, "%s: empty msg", b->what);
	/* Nothing is left to free on error. */
	ck_assert_ptr_null(c.dns);
	ck_assert_ptr_null(c.valid);
}
END_TEST

START_TEST(test_gc_valid_list)
{
	const char *j = "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"V\",\"vpcattachment\":\"A\","
			"\"ipFamilies\":[\"IPv6\"]," ADDR6 ",\"cni.dev/valid-attachments\":"
			"[{\"containerID\":\"abc\",\"ifname\":\"eth0\"},{\"containerID\":\"d.e_f-1\",\"ifname\":\"net1\"}]}";
	const char *bad = "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"t\",\"vpc\":\"V\",\"vpcattachment\":\"A\","
			  "\"ipFamilies\":[\"IPv6\"]," ADDR6 ",\"cni.dev/valid-attachments\":"
			  "[{\"containerID\":\"a/b\",\"ifname\":\"eth0\"}]}";
	struct cni_conf c;
	struct cni_err e;

	ck_assert_int_eq(cni_conf_parse(j, strlen(j), CNI_CMD_GC, &c, &e), 0);
	ck_assert_uint_eq(c.nvalid, 2);
	ck_assert_str_eq(c.valid[1].container_id, "d.e_f-1");
	ck_assert_str_eq(c.valid[1].ifname, "net1");
	cni_conf_free(&c);
	ck_assert_int_eq(cni_conf_parse(bad, strlen(bad), CNI_CMD_GC, &c, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_INVALID_CONFIG);
	ck_assert_ptr_nonnull(strstr(e.details, "containerID"));
}
END_TEST

/* --- environment ------------------------------------------------------- */

struct kv {
	const char *k, *v;
};

static const char *kv_get(const char *k, void *arg)
{
	for (const struct kv *p = arg; p->k; p++)
		if (!strcmp(p->k, k))
			return p->v;
	return NULL;
}

/* The per-attachment stanzas as the VPC operator renders them, with what
 * libcni adds (name, cniVersion from the list; runtimeConfig). */
#define OP_STANZA(ipam)                                                                        \
	"{\"cniVersion\":\"1.0.0\",\"name\":\"att-7Hq2aZ09\",\"type\":\"galactic-veth\",\"vpc\":\"7Hq2\","     \
	"\"vpcattachment\":\"aZ09\",\"namespace\":\"galactic-system\",\"mtu\":1400" ipam ","                \
	"\"runtimeConfig\":{},\"someFutureKey\":{\"x\":[1,2]},\"egress\":{\"internet\":{\"mode\":\"Enabled\"}}}"

START_TEST(test_operator_stanza_with_ipam)
{
	static const char *j = OP_STANZA(IPAM("{\"address\":\"10.1.0.5/32\",\"gateway\":\"169.254.1.1\"},"
					      "{\"address\":\"fd00:a::5/128\",\"gateway\":\"fd00:a::1\"}"));
	struct cni_conf c, d;
	struct cni_err e;
	json_t *o;
	char b[64];

	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	ck_assert_int_eq(c.legacy, 0);
	ck_assert_int_eq(c.ipam, 1);
	ck_assert_str_eq(c.type, "galactic-veth");
	ck_assert_str_eq(c.ns, "galactic-system");
	ck_assert_int_eq(c.naddrs, 2);
	ck_assert_uint_eq(c.families, CNI_FAM_V4 | CNI_FAM_V6);
	ck_assert_uint_eq(c.egress, CNI_FAM_V4 | CNI_FAM_V6);
	ck_assert_int_eq(c.addrs[0].plen, 32);
	ck_assert_int_eq(c.addrs[0].block, 0);
	ck_assert_int_eq(c.addrs[1].block, 0);
	/* The gateway lies outside the /128: fine, the pod routes to it on-link. */
	ck_assert_str_eq(cni_ip_str(&c.addrs[1].gw, b, sizeof(b)), "fd00:a::1");
	ck_assert_int_eq(c.mtu, 1400);
	/* Normalized for the agent: the canonical shape again, same values. */
	o = cni_conf_to_json(&c);
	ck_assert_ptr_null(json_object_get(o, "ipFamilies"));
	ck_assert_ptr_null(json_object_get(o, "addresses"));
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(o, "ipam"), "type")), "galactic-ipam");
	ck_assert_int_eq(cni_conf_parse_json(o, CNI_CMD_ADD, &d, &e), 0);
	ck_assert_int_eq(memcmp(c.addrs, d.addrs, sizeof(c.addrs)), 0);
	ck_assert_uint_eq(d.families, c.families);
	ck_assert_str_eq(d.ns, c.ns);
	json_decref(o);
	cni_conf_free(&c);
	cni_conf_free(&d);
}
END_TEST

START_TEST(test_operator_stanza_without_ipam)
{
	static const char *j = OP_STANZA("");
	struct cni_conf c, d;
	struct cni_err e;
	json_t *o;

	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	ck_assert_int_eq(c.ipam, 0);
	ck_assert_int_eq(c.legacy, 0);
	ck_assert_int_eq(c.naddrs, 0);
	ck_assert_uint_eq(c.families, CNI_FAM_V4 | CNI_FAM_V6);
	o = cni_conf_to_json(&c);
	ck_assert_ptr_null(json_object_get(o, "ipam"));
	ck_assert_int_eq(cni_conf_parse_json(o, CNI_CMD_ADD, &d, &e), 0);
	ck_assert_int_eq(d.naddrs, 0);
	json_decref(o);
	cni_conf_free(&c);
	cni_conf_free(&d);
	/* An explicit null ipam, or a moved key set to null, reads as absent. */
	j = UP(",\"ipam\":null,\"static_ip\":null,\"ipv6_subnet\":null");
	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	ck_assert_int_eq(c.naddrs, 0);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_operator_stanza_block96)
{
	static const char *j = OP_STANZA(IPAM("{\"address\":\"2001:db8:a001::/96\",\"gateway\":\"fd20:60:ff03::1\"}"));
	struct cni_conf c;
	struct cni_err e;
	char b[64];

	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	ck_assert_int_eq(c.naddrs, 1);
	ck_assert_int_eq(c.addrs[0].plen, 96);
	ck_assert_int_eq(c.addrs[0].block, 1);
	ck_assert_str_eq(cni_ip_str(&c.addrs[0].ip, b, sizeof(b)), "2001:db8:a001::");
	ck_assert_uint_eq(c.families, CNI_FAM_V6);
	/* IPv6 only: the mtu floor is 1280 */
	cni_conf_free(&c);
	/* An address inside a block keeps its prefix (the block is still routed whole). */
	j = UP(IPAM("{\"address\":\"fd00:b::5/64\",\"gateway\":\"\"}"));
	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	ck_assert_int_eq(c.addrs[0].block, 1);
	ck_assert_int_eq(c.addrs[0].has_gw, 0);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_unknown_keys_ignored)
{
	/* Upstream ignores what it does not know; so do we (the chain's other
	 * stanzas' keys and newer operator fields must not break an ADD). */
	static const char *j = UP(",\"mut\":1400,\"bgp\":{\"asn\":65000},\"cni.dev/x\":1");
	struct cni_conf c;
	struct cni_err e;

	ck_assert_msg(cni_conf_parse(j, strlen(j), CNI_CMD_ADD, &c, &e) == 0, "%s: %s", e.msg, e.details);
	ck_assert_int_eq(c.mtu, 0);
	cni_conf_free(&c);
}
END_TEST

START_TEST(test_gc_valid_sets)
{
	/* libcni v1.3.1 without GC args: neither key; nothing may be collected. */
	static const char *none = "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"galactic-veth\","
				  "\"vpc\":\"V\",\"vpcattachment\":\"A\"}";
	/* with GC args and a nil list: JSON null in both keys = nothing is valid */
	static const char *nul = "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"galactic-veth\","
				 "\"vpc\":\"V\",\"vpcattachment\":\"A\",\"cni.dev/valid-attachments\":null,"
				 "\"cni.dev/attachments\":null}";
	/* only the legacy key (a runtime following the spec's earlier name) */
	static const char *old = "{\"cniVersion\":\"1.1.0\",\"name\":\"n\",\"type\":\"galactic-veth\","
				 "\"vpc\":\"V\",\"vpcattachment\":\"A\","
				 "\"cni.dev/attachments\":[{\"containerID\":\"c1\",\"ifname\":\"eth0\"}]}";
	struct cni_conf c, d;
	struct cni_err e;
	json_t *o;

	ck_assert_msg(cni_conf_parse(none, strlen(none), CNI_CMD_GC, &c, &e) == 0, "%s", e.details);
	ck_assert_int_eq(c.has_valid, 0);
	o = cni_conf_to_json(&c);
	ck_assert_ptr_null(json_object_get(o, "cni.dev/valid-attachments"));
	ck_assert_int_eq(cni_conf_parse_json(o, CNI_CMD_GC, &d, &e), 0);
	ck_assert_int_eq(d.has_valid, 0);
	json_decref(o);
	cni_conf_free(&c);
	cni_conf_free(&d);

	ck_assert_msg(cni_conf_parse(nul, strlen(nul), CNI_CMD_GC, &c, &e) == 0, "%s", e.details);
	ck_assert_int_eq(c.has_valid, 1);
	ck_assert_uint_eq(c.nvalid, 0);
	o = cni_conf_to_json(&c);
	ck_assert_int_eq(cni_conf_parse_json(o, CNI_CMD_GC, &d, &e), 0);
	ck_assert_int_eq(d.has_valid, 1);
	ck_assert_uint_eq(d.nvalid, 0);
	json_decref(o);
	cni_conf_free(&c);
	cni_conf_free(&d);

	ck_assert_msg(cni_conf_parse(old, strlen(old), CNI_CMD_GC, &c, &e) == 0, "%s", e.details);
	ck_assert_int_eq(c.has_valid, 1);
	ck_assert_uint_eq(c.nvalid, 1);
	ck_assert_str_eq(c.valid[0].container_id, "c1");
	cni_conf_free(&c);
}
END_TEST

/* galactic-bgp chained after the attach: prevResult goes on unchanged. */
START_TEST(test_pass_through)
{
	static const struct { const char *in; enum cni_cmd cmd; int code; } bad[] = {
		{ "{\"cniVersion\":", CNI_CMD_ADD, CNI_ERR_DECODE },
		{ "[]", CNI_CMD_ADD, CNI_ERR_DECODE },
		{ "{\"cniVersion\":\"1.0.0\",\"cniVersion\":\"1.0.0\"}", CNI_CMD_ADD, CNI_ERR_DECODE },
		{ "{\"name\":\"n\"}", CNI_CMD_ADD, CNI_ERR_INCOMPATIBLE_VERSION },
		{ "{\"cniVersion\":\"1.0.0\"}", CNI_CMD_GC, CNI_ERR_INCOMPATIBLE_VERSION },
		{ "{\"cniVersion\":\"1.0.0\",\"prevResult\":[1]}", CNI_CMD_ADD, CNI_ERR_DECODE },
	};
	static const char *good = "{\"cniVersion\":\"1.1.0\",\"name\":\"att\",\"type\":\"galactic-bgp\","
				  "\"vpc\":\"7Hq2\",\"vpcattachment\":\"aZ09\",\"namespace\":\"galactic-system\","
				  "\"prevResult\":{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"gc1\"}],"
				  "\"ips\":[{\"address\":\"2001:db8:a001::/96\",\"interface\":0}]}}";
	struct cni_err e;
	enum cni_ver v;
	json_t *out, *want;

	ck_assert_int_eq(cni_pass_through(good, strlen(good), CNI_CMD_ADD, &v, &out, &e), 0);
	ck_assert_int_eq(v, CNI_V_1_1_0);
	want = json_loads("{\"cniVersion\":\"1.1.0\",\"interfaces\":[{\"name\":\"gc1\"}],"
			  "\"ips\":[{\"address\":\"2001:db8:a001::/96\",\"interface\":0}]}", 0, NULL);
	ck_assert(json_equal(out, want));
	json_decref(want);
	json_decref(out);
	/* DEL, CHECK, GC, STATUS: nothing to print */
	ck_assert_int_eq(cni_pass_through(good, strlen(good), CNI_CMD_DEL, &v, &out, &e), 0);
	ck_assert_ptr_null(out);
	ck_assert_int_eq(cni_pass_through(good, strlen(good), CNI_CMD_GC, &v, &out, &e), 0);
	ck_assert_ptr_null(out);
	/* no prevResult: an empty result of the stanza's version */
	ck_assert_int_eq(cni_pass_through("{\"cniVersion\":\"1.0.0\"}", 22, CNI_CMD_ADD, &v, &out, &e), 0);
	ck_assert_str_eq(json_string_value(json_object_get(out, "cniVersion")), "1.0.0");
	ck_assert_int_eq(json_object_size(out), 1);
	json_decref(out);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		ck_assert_int_eq(cni_pass_through(bad[i].in, strlen(bad[i].in), bad[i].cmd, &v, &out, &e), -1);
		ck_assert_msg(e.code == bad[i].code, "case %zu: code %d (%s)", i, e.code, e.details);
		ck_assert_ptr_null(out);
	}
}
END_TEST

START_TEST(test_env_good)
{
	struct kv env[] = {
		{ "CNI_COMMAND", "ADD" }, { "CNI_CONTAINERID", "0123abcd" },
		{ "CNI_NETNS", "/var/run/netns/x" }, { "CNI_IFNAME", "net1" },
		{ "CNI_ARGS", "IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web-0;K8S_POD_UID=u-1" },
		{ NULL, NULL },
	};
	struct cni_env ev;
	struct cni_err e;

	ck_assert_int_eq(cni_env_parse(kv_get, env, &ev, &e), 0);
	ck_assert_int_eq(ev.cmd, CNI_CMD_ADD);
	ck_assert_str_eq(ev.container_id, "0123abcd");
	ck_assert_str_eq(ev.ifname, "net1");
	ck_assert_str_eq(ev.pod_namespace, "ns1");
	ck_assert_str_eq(ev.pod_name, "web-0");
	ck_assert_str_eq(ev.pod_uid, "u-1");
}
END_TEST

struct bad_env {
	const char *cmd, *cid, *netns, *ifname, *args, *detail;
};

static const struct bad_env bad_envs[] = {
	{ NULL, "c", "/n", "eth0", NULL, "CNI_COMMAND is not set" },
	{ "ATTACH", "c", "/n", "eth0", NULL, "ATTACH" },
	{ "ADD", NULL, "/n", "eth0", NULL, "CNI_CONTAINERID is not set" },
	{ "ADD", "c/../x", "/n", "eth0", NULL, "CNI_CONTAINERID may hold" },
	{ "ADD", "c", "/n", "this-name-is-too-long", NULL, "15 bytes" },
	{ "ADD", "c", "/n", "eth/0", NULL, "may not contain" },
	{ "ADD", "c", "/n", "..", NULL, "\"..\"" },
	{ "ADD", "c", NULL, "eth0", NULL, "CNI_NETNS is required" },
	{ "ADD", "c", "relative/ns", "eth0", NULL, "absolute path" },
	{ "CHECK", "c", "/proc/../etc", "eth0", NULL, "without '..'" },
	{ "ADD", "c", "/n", "eth0", "K8S_POD_NAME", "not KEY=VALUE" },
};

START_TEST(test_env_bad)
{
	const struct bad_env *b = &bad_envs[_i];
	struct kv env[] = {
		{ "CNI_COMMAND", b->cmd }, { "CNI_CONTAINERID", b->cid }, { "CNI_NETNS", b->netns },
		{ "CNI_IFNAME", b->ifname }, { "CNI_ARGS", b->args }, { NULL, NULL },
	};
	struct cni_env ev;
	struct cni_err e;

	ck_assert_int_eq(cni_env_parse(kv_get, env, &ev, &e), -1);
	ck_assert_int_eq(e.code, CNI_ERR_INVALID_ENV);
	ck_assert_msg(strstr(e.details, b->detail), "details \"%s\" lack \"%s\"", e.details, b->detail);
}
END_TEST

START_TEST(test_env_del_without_netns)
{
	struct kv env[] = { { "CNI_COMMAND", "DEL" }, { "CNI_CONTAINERID", "c1" },
			    { "CNI_IFNAME", "eth0" }, { NULL, NULL } };
	struct cni_env ev;
	struct cni_err e;

	ck_assert_int_eq(cni_env_parse(kv_get, env, &ev, &e), 0);
	ck_assert_int_eq(ev.cmd, CNI_CMD_DEL);
	ck_assert_str_eq(ev.netns, "");
}
END_TEST

/* --- base62 -------------------------------------------------------------- */

START_TEST(test_base62)
{
	const char *why;
	uint64_t v;
	char buf[16];

	ck_assert_int_eq(b62_decode("0", &v, &why), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(b62_decode("z", &v, &why), 0);
	ck_assert_uint_eq(v, 61);
	ck_assert_int_eq(b62_decode("10", &v, &why), 0);
	ck_assert_uint_eq(v, 62);
	/* 2^64-1 is "LygHa16AHYF" */
	ck_assert_int_eq(b62_decode("LygHa16AHYF", &v, &why), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(b62_decode("LygHa16AHYG", &v, &why), -1);
	ck_assert_int_eq(b62_decode("", &v, &why), -1);
	ck_assert_int_eq(b62_decode("a_b", &v, &why), -1);
	ck_assert_int_eq(b62_decode("\xc3\xa9", &v, &why), -1);
	for (uint64_t x = 1; x < UINT64_MAX / 3; x = x * 3 + 7) {
		uint64_t y;

		b62_encode(x, buf, sizeof(buf));
		ck_assert_int_eq(b62_decode(buf, &y, &why), 0);
		ck_assert_uint_eq(x, y);
	}
	ck_assert_uint_eq(b62_encode(UINT64_MAX, buf, sizeof(buf)), 11);
	ck_assert_str_eq(buf, "LygHa16AHYF");
}
END_TEST

START_TEST(test_cidr)
{
	struct cni_ip ip;
	int plen;

	ck_assert_int_eq(cni_cidr_parse("10.0.0.1/32", &ip, &plen), 0);
	ck_assert_int_eq(plen, 32);
	ck_assert_int_eq(cni_cidr_parse("10.0.0.1/33", &ip, &plen), -1);
	ck_assert_int_eq(cni_cidr_parse("10.0.0.1/", &ip, &plen), -1);
	ck_assert_int_eq(cni_cidr_parse("10.0.0.1/08", &ip, &plen), -1);
	ck_assert_int_eq(cni_cidr_parse("10.0.0.1/-1", &ip, &plen), -1);
	ck_assert_int_eq(cni_cidr_parse("fd00::1/128", &ip, &plen), 0);
	ck_assert_int_eq(ip.family, AF_INET6);
	ck_assert_int_eq(cni_cidr_parse("fd00::1/129", &ip, &plen), -1);
	ck_assert_int_eq(cni_cidr_parse("fd00:::1/64", &ip, &plen), -1);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cni_config");
	TCase *t = tcase_create("config");

	fill_huge();
	tcase_add_test(t, test_good_dual_stack);
	tcase_add_test(t, test_roundtrip);
	tcase_add_loop_test(t, test_bad_input, 0, (int)(sizeof(bads) / sizeof(bads[0])));
	tcase_add_test(t, test_gc_valid_list);
	tcase_add_test(t, test_operator_stanza_with_ipam);
	tcase_add_test(t, test_operator_stanza_without_ipam);
	tcase_add_test(t, test_operator_stanza_block96);
	tcase_add_test(t, test_unknown_keys_ignored);
	tcase_add_test(t, test_gc_valid_sets);
	tcase_add_test(t, test_pass_through);
	tcase_add_test(t, test_env_good);
	tcase_add_loop_test(t, test_env_bad, 0, (int)(sizeof(bad_envs) / sizeof(bad_envs[0])));
	tcase_add_test(t, test_env_del_without_netns);
	tcase_add_test(t, test_base62);
	tcase_add_test(t, test_cidr);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return gt_run(suite());
}
