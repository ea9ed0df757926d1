#include "agent/cni/config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cni/base62.h"

/* Addressing keys upstream's master plugin moved into "ipam" and refuses at
 * the top level (code 7); JSON null reads as absent, as there. */
static const char *const moved_keys[] = {
	"ipv6_subnet", "ipv4_subnet", "address_families", "static_ip",
};
/* Keys asking for behaviour this plugin does not have: refused with code 2. */
static const char *const unsupported_keys[] = { "ipMasq" };

const char *cni_ip_str(const struct cni_ip *ip, char *buf, size_t len)
{
	if (!inet_ntop(ip->family, ip->addr, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

int cni_ip_parse(const char *s, struct cni_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (strlen(s) > 45)
		return -1;
	if (strchr(s, ':')) {
		ip->family = AF_INET6;
		return inet_pton(AF_INET6, s, ip->addr) == 1 ? 0 : -1;
	}
	ip->family = AF_INET;
	if (inet_pton(AF_INET, s, ip->addr) != 1)
		return -1;
	/* inet_pton takes dotted quads only; also refuse leading zeros ("010"),
	 * which other tools read as octal. */
	for (const char *p = s; *p; p++)
		if (*p == '0' && (p == s || p[-1] == '.') && isdigit((unsigned char)p[1]))
			return -1;
	return 0;
}

int cni_cidr_parse(const char *s, struct cni_ip *ip, int *plen)
{
	char tmp[64];
	const char *slash = strchr(s, '/');
	char *end;
	long n;
	size_t al;

	if (!slash || strlen(s) >= sizeof(tmp))
		return -1;
	al = (size_t)(slash - s);
	memcpy(tmp, s, al);
	tmp[al] = 0;
	if (cni_ip_parse(tmp, ip))
		return -1;
	if (!isdigit((unsigned char)slash[1]) || (slash[1] == '0' && slash[2]))
		return -1;
	n = strtol(slash + 1, &end, 10);
	if (*end || n < 0 || n > (ip->family == AF_INET ? 32 : 128))
		return -1;
	*plen = (int)n;
	return 0;
}

static int alen(const struct cni_ip *ip)
{
	return ip->family == AF_INET ? 4 : 16;
}

/* Host bits of ip under plen: 0 all zero, 1 all one, 2 mixed. */
static int host_bits(const struct cni_ip *ip, int plen)
{
	int zero = 1, one = 1, bits = alen(ip) * 8;

	for (int b = plen; b < bits; b++) {
		int v = (ip->addr[b / 8] >> (7 - b % 8)) & 1;

		zero &= !v;
		one &= v;
	}
	return zero ? 0 : one ? 1 : 2;
}

static int ip_eq(const struct cni_ip *a, const struct cni_ip *b)
{
	return a->family == b->family && !memcmp(a->addr, b->addr, (size_t)alen(a));
}

/* Addresses that can never be a unicast interface address or next hop. */
static const char *bad_unicast(const struct cni_ip *ip, int allow_linklocal)
{
	const uint8_t *a = ip->addr;

	if (ip->family == AF_INET) {
		if (a[0] == 0)
			return "in 0.0.0.0/8";
		if (a[0] == 127)
			return "loopback";
		if (a[0] >= 224)
			return "multicast or reserved (224.0.0.0/3)";
		if (a[0] == 169 && a[1] == 254 && !allow_linklocal)
			return "link-local";
		return NULL;
	}
	static const uint8_t zero[16], one[16] = { [15] = 1 };
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	if (!memcmp(a, zero, 16))
		return "unspecified";
	if (!memcmp(a, one, 16))
		return "loopback";
	if (a[0] == 0xff)
		return "multicast";
	if (!memcmp(a, mapped, 12))
		return "IPv4-mapped";
	if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80 && !allow_linklocal)
		return "link-local";
	return NULL;
}

static int fam_bit(int family)
{
	return family == AF_INET ? CNI_FAM_V4 : CNI_FAM_V6;
}

static const char *fam_name(int family)
{
	return family == AF_INET ? "IPv4" : "IPv6";
}

static int in_list(const char *k, const char *const *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(k, l[i]))
			return 1;
	return 0;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int bad(struct cni_err *e, const char *field, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(struct cni_err *e, const char *field, const char *fmt, ...)
{
	char d[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d, sizeof(d), fmt, ap);
	va_end(ap);
	cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
		    "field '%s': %s", field, d);
	return -1;
}

/* Printable, bounded echo of untrusted text for error messages. */
static const char *echo(const char *s, char *buf, size_t len)
{
	size_t i = 0;

	for (; s[i] && i + 4 < len && i < 64; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (s[i])
		buf[i++] = '.', buf[i++] = '.', buf[i++] = '.';
	buf[i] = 0;
	return buf;
}

static int get_string(json_t *root, const char *key, int required, const char **out,
		      size_t maxlen, struct cni_err *e)
{
	json_t *v = json_object_get(root, key);

	*out = NULL;
	if (!v) {
		if (required)
			return bad(e, key, "required but missing");
		return 0;
	}
	if (!json_is_string(v))
		return bad(e, key, "must be a string");
	if (json_string_length(v) > maxlen)
		return bad(e, key, "longer than %zu bytes (%zu)", maxlen, json_string_length(v));
	if (strlen(json_string_value(v)) != json_string_length(v))
		return bad(e, key, "contains a NUL byte");
	*out = json_string_value(v);
	return 0;
}

static int parse_id(json_t *root, const char *key, char *s_out, uint64_t *v_out,
		    struct cni_err *e)
{
	const char *s, *why;
	char b[80];

	if (get_string(root, key, 1, &s, 64, e))
		return -1;
	if (b62_decode(s, v_out, &why))
		return bad(e, key, "\"%s\" is not a base62 id: %s", echo(s, b, sizeof(b)), why);
	snprintf(s_out, 12, "%s", s);
	return 0;
}

static int parse_families(json_t *v, const char *field, unsigned *out, struct cni_err *e)
{
	size_t i;
	json_t *f;

	*out = 0;
	if (!json_is_array(v))
		return bad(e, field, "must be an array of \"IPv4\" and/or \"IPv6\"");
	if (json_array_size(v) == 0 || json_array_size(v) > 2)
		return bad(e, field, "must list 1 or 2 families, got %zu", json_array_size(v));
	json_array_foreach(v, i, f) {
		const char *s = json_string_value(f);
		unsigned bit;
		char b[80];

		if (!s)
			return bad(e, field, "entry %zu is not a string", i);
		if (!strcmp(s, "IPv4"))
			bit = CNI_FAM_V4;
		else if (!strcmp(s, "IPv6"))
			bit = CNI_FAM_V6;
		else
			return bad(e, field, "entry %zu \"%s\" is neither \"IPv4\" nor \"IPv6\"", i,
				   echo(s, b, sizeof(b)));
		if (*out & bit)
			return bad(e, field, "\"%s\" listed twice", s);
		*out |= bit;
	}
	return 0;
}

static int check_keys(json_t *obj, const char *field, const char *const *keys, size_t n,
		      struct cni_err *e)
{
	const char *k;
	json_t *v;
	char b[80];

	json_object_foreach(obj, k, v) {
		if (!in_list(k, keys, n))
			return bad(e, field, "unknown key \"%s\"", echo(k, b, sizeof(b)));
	}
	return 0;
}

static int parse_addrs(json_t *root, struct cni_conf *c, struct cni_err *e)
{
	static const char *const keys[] = { "address", "gateway" };
	json_t *arr = json_object_get(root, "addresses"), *o;
	unsigned gws = 0;
	size_t i;

	if (!arr)
		return bad(e, "addresses", "required but missing");
	if (!json_is_array(arr))
		return bad(e, "addresses", "must be an array of {\"address\", \"gateway\"}");
	if (json_array_size(arr) == 0)
		return bad(e, "addresses", "must hold at least one address");
	if (json_array_size(arr) > CNI_MAX_ADDRS)
		return bad(e, "addresses", "at most %d entries, got %zu", CNI_MAX_ADDRS,
			   json_array_size(arr));
	json_array_foreach(arr, i, o) {
		struct cni_addr *a = &c->addrs[i];
		const char *s, *why;
		char f[40], b[80], ipb[64];

		snprintf(f, sizeof(f), "addresses[%zu]", i);
		if (!json_is_object(o))
			return bad(e, f, "must be an object");
		if (check_keys(o, f, keys, N(keys), e))
			return -1;
		if (get_string(o, "address", 1, &s, 64, e)) {
			snprintf(e->details, sizeof(e->details), "field '%s.address': required string, at most 64 bytes", f);
			return -1;
		}
		if (cni_cidr_parse(s, &a->ip, &a->plen))
			return bad(e, f, "address \"%s\" is not an IP address with a prefix length (a.b.c.d/n or x::y/n)",
				   echo(s, b, sizeof(b)));
		if (a->plen == 0)
			return bad(e, f, "address %s has prefix length 0", s);
		if (!(c->families & fam_bit(a->ip.family)))
			return bad(e, f, "address %s is %s but the VPC carries only %s", s,
				   fam_name(a->ip.family),
				   c->families == CNI_FAM_V4 ? "IPv4" : "IPv6");
		if ((why = bad_unicast(&a->ip, 0)))
			return bad(e, f, "address %s is %s", s, why);
		if (a->ip.family == AF_INET ? a->plen < 31 : a->plen < 127) {
			int hb = host_bits(&a->ip, a->plen);

			if (hb == 0)
				return bad(e, f, "address %s is the network address of its prefix", s);
			if (hb == 1 && a->ip.family == AF_INET)
				return bad(e, f, "address %s is the broadcast address of its prefix", s);
		}
		for (size_t j = 0; j < i; j++)
			if (ip_eq(&c->addrs[j].ip, &a->ip))
				return bad(e, f, "address %s duplicates addresses[%zu]",
					   cni_ip_str(&a->ip, ipb, sizeof(ipb)), j);
		c->naddrs = (int)i + 1;
		if (get_string(o, "gateway", 0, &s, 64, e)) {
			snprintf(e->details, sizeof(e->details), "field '%s.gateway': must be a string of at most 64 bytes", f);
			return -1;
		}
		if (!s)
			continue;
		if (cni_ip_parse(s, &a->gw))
			return bad(e, f, "gateway \"%s\" is not an IP address", echo(s, b, sizeof(b)));
		if (a->gw.family != a->ip.family)
			return bad(e, f, "gateway %s is not in the address's family (%s)", s,
				   fam_name(a->ip.family));
		if ((why = bad_unicast(&a->gw, 1)))
			return bad(e, f, "gateway %s is %s", s, why);
		if (ip_eq(&a->gw, &a->ip))
			return bad(e, f, "gateway %s equals the address", s);
		/* One default route per family: two gateways would be ambiguous. */
		if (gws & fam_bit(a->ip.family))
			return bad(e, f, "a second %s gateway (%s); give one gateway per family",
				   fam_name(a->ip.family), s);
		gws |= fam_bit(a->ip.family);
		a->has_gw = 1;
	}
	return 0;
}

/*
 * Canonical addressing: ipam {type galactic-ipam, addresses[{address,
 * gateway?}]} as upstream's galactic-ipam takes it. At most one address per
 * family; IPv4 is a /32; IPv6 of any length, where a prefix shorter than /128
 * is a delegated block routed to the pod as a whole; the gateway is optional,
 * of the address's family, and may lie outside the prefix. Unknown keys are
 * ignored, as upstream does.
 */
static int parse_ipam(json_t *ipam, struct cni_conf *c, struct cni_err *e)
{
	json_t *arr, *o;
	const char *s, *why;
	unsigned fams = 0;
	size_t i;
	char b[80];

	if (!json_is_object(ipam))
		return bad(e, "ipam", "must be an object {\"type\": \"" CNI_IPAM_TYPE "\", \"addresses\": [...]}");
	if (get_string(ipam, "type", 1, &s, 63, e)) {
		snprintf(e->details, sizeof(e->details), "field 'ipam.type': required string \"" CNI_IPAM_TYPE "\"");
		return -1;
	}
	if (strcmp(s, CNI_IPAM_TYPE)) {
		cni_err_set(e, CNI_ERR_UNSUPPORTED_FIELD, "unsupported IPAM",
			    "field 'ipam.type': \"%s\" is not supported: galactic-cni takes the addresses of "
			    "\"" CNI_IPAM_TYPE "\" and delegates to no IPAM plugin", echo(s, b, sizeof(b)));
		return -1;
	}
	arr = json_object_get(ipam, "addresses");
	if (!arr)
		return bad(e, "ipam.addresses", "required but missing");
	if (!json_is_array(arr))
		return bad(e, "ipam.addresses", "must be an array of {\"address\", \"gateway\"}");
	if (json_array_size(arr) == 0 || json_array_size(arr) > 2)
		return bad(e, "ipam.addresses", "must hold 1 or 2 addresses (at most one per family), got %zu",
			   json_array_size(arr));
	json_array_foreach(arr, i, o) {
		struct cni_addr *a = &c->addrs[i];
		char f[40];

		snprintf(f, sizeof(f), "ipam.addresses[%zu]", i);
		if (!json_is_object(o))
			return bad(e, f, "must be an object");
		if (get_string(o, "address", 1, &s, 64, e)) {
			snprintf(e->details, sizeof(e->details), "field '%s.address': required string, at most 64 bytes", f);
			return -1;
		}
		if (cni_cidr_parse(s, &a->ip, &a->plen))
			return bad(e, f, "address \"%s\" is not an IP address with a prefix length (a.b.c.d/32 or x::y/n)",
				   echo(s, b, sizeof(b)));
		if (fams & fam_bit(a->ip.family))
			return bad(e, f, "a second %s address (%s); at most one address per family",
				   fam_name(a->ip.family), s);
		fams |= fam_bit(a->ip.family);
		if (a->ip.family == AF_INET && a->plen != 32)
			return bad(e, f, "IPv4 address %s must be a /32", s);
		if (a->plen == 0)
			return bad(e, f, "address %s has prefix length 0 (it would take the VPC's default route)", s);
		if ((why = bad_unicast(&a->ip, 0)))
			return bad(e, f, "address %s is %s", s, why);
		a->block = a->ip.family == AF_INET6 && a->plen < 128;
		c->naddrs = (int)i + 1;
		if (get_string(o, "gateway", 0, &s, 64, e)) {
			snprintf(e->details, sizeof(e->details), "field '%s.gateway': must be a string of at most 64 bytes", f);
			return -1;
		}
		if (!s || !*s)
			continue; /* "" as Go's zero value: no gateway */
		if (cni_ip_parse(s, &a->gw))
			return bad(e, f, "gateway \"%s\" is not an IP address", echo(s, b, sizeof(b)));
		if (a->gw.family != a->ip.family)
			return bad(e, f, "gateway %s is not in the address's family (%s)", s,
				   fam_name(a->ip.family));
		if ((why = bad_unicast(&a->gw, 1)))
			return bad(e, f, "gateway %s is %s", s, why);
		if (ip_eq(&a->gw, &a->ip))
			return bad(e, f, "gateway %s equals the address", s);
		a->has_gw = 1;
	}
	c->families = fams;
	c->ipam = 1;
	return 0;
}

static int parse_routes(json_t *root, struct cni_conf *c, struct cni_err *e)
{
	static const char *const keys[] = { "dst", "gw" };
	json_t *arr = json_object_get(root, "routes"), *o;
	size_t i;

	if (!arr)
		return 0;
	if (!json_is_array(arr))
		return bad(e, "routes", "must be an array of {\"dst\", \"gw\"}");
	if (json_array_size(arr) > CNI_MAX_ROUTES)
		return bad(e, "routes", "at most %d entries, got %zu", CNI_MAX_ROUTES,
			   json_array_size(arr));
	json_array_foreach(arr, i, o) {
		struct cni_route *r = &c->routes[i];
		const char *s, *why;
		char f[40], b[80];

		snprintf(f, sizeof(f), "routes[%zu]", i);
		if (!json_is_object(o))
			return bad(e, f, "must be an object");
		if (check_keys(o, f, keys, N(keys), e))
			return -1;
		if (get_string(o, "dst", 1, &s, 64, e)) {
			snprintf(e->details, sizeof(e->details), "field '%s.dst': required string, at most 64 bytes", f);
			return -1;
		}
		if (cni_cidr_parse(s, &r->dst, &r->plen))
			return bad(e, f, "dst \"%s\" is not a prefix (a.b.c.d/n or x::y/n)",
				   echo(s, b, sizeof(b)));
		if (!(c->families & fam_bit(r->dst.family)))
			return bad(e, f, "dst %s is %s, which the VPC does not carry", s,
				   fam_name(r->dst.family));
		if (host_bits(&r->dst, r->plen) != 0)
			return bad(e, f, "dst %s has host bits set", s);
		for (size_t j = 0; j < i; j++)
			if (c->routes[j].plen == r->plen && ip_eq(&c->routes[j].dst, &r->dst))
				return bad(e, f, "dst %s duplicates routes[%zu]", s, j);
		c->nroutes = (int)i + 1;
		if (get_string(o, "gw", 0, &s, 64, e)) {
			snprintf(e->details, sizeof(e->details), "field '%s.gw': must be a string of at most 64 bytes", f);
			return -1;
		}
		if (!s)
			continue;
		if (cni_ip_parse(s, &r->gw) || r->gw.family != r->dst.family)
			return bad(e, f, "gw \"%s\" is not an %s address", echo(s, b, sizeof(b)),
				   fam_name(r->dst.family));
		if ((why = bad_unicast(&r->gw, 1)))
			return bad(e, f, "gw %s is %s", s, why);
		r->has_gw = 1;
	}
	/* A route without gw goes through the family's gateway: it must exist. */
	for (int i2 = 0; i2 < c->nroutes; i2++) {
		int ok = c->routes[i2].has_gw;
		char f[40];

		for (int j = 0; j < c->naddrs && !ok; j++)
			ok = c->addrs[j].has_gw && c->addrs[j].ip.family == c->routes[i2].dst.family;
		snprintf(f, sizeof(f), "routes[%d]", i2);
		if (!ok)
			return bad(e, f, "no gw and no %s gateway in addresses",
				   fam_name(c->routes[i2].dst.family));
	}
	return 0;
}

static int parse_dns(json_t *root, struct cni_conf *c, struct cni_err *e)
{
	static const char *const keys[] = { "nameservers", "domain", "search", "options" };
	json_t *d = json_object_get(root, "dns"), *v;
	const char *k;

	if (!d)
		return 0;
	if (!json_is_object(d))
		return bad(e, "dns", "must be an object");
	if (check_keys(d, "dns", keys, N(keys), e))
		return -1;
	json_object_foreach(d, k, v) {
		size_t i;
		json_t *s;

		if (!strcmp(k, "domain")) {
			if (!json_is_string(v) || json_string_length(v) > 253)
				return bad(e, "dns.domain", "must be a string of at most 253 bytes");
			continue;
		}
		if (!json_is_array(v) || json_array_size(v) > 32)
			return bad(e, "dns", "'%s' must be an array of at most 32 strings", k);
		json_array_foreach(v, i, s) {
			struct cni_ip ip;

			if (!json_is_string(s) || json_string_length(s) > 253)
				return bad(e, "dns", "'%s'[%zu] must be a string of at most 253 bytes", k, i);
			if (!strcmp(k, "nameservers") && cni_ip_parse(json_string_value(s), &ip))
				return bad(e, "dns", "nameservers[%zu] is not an IP address", i);
		}
	}
	c->dns = json_incref(d);
	return 0;
}

static int parse_valid(json_t *root, struct cni_conf *c, struct cni_err *e)
{
	static const char *const keys[] = { "containerID", "ifname" };
	const char *field = "cni.dev/valid-attachments";
	json_t *arr = json_object_get(root, field), *o;
	size_t i;

	/* libcni also sends the spec's earlier name (same list). */
	if (!arr && (arr = json_object_get(root, "cni.dev/attachments")))
		field = "cni.dev/attachments";
	/* Neither key: the runtime named no valid set (libcni without GC
	 * args). Nothing may be collected then. */
	if (!arr)
		return 0;
	c->has_valid = 1;
	if (json_is_null(arr))
		arr = NULL; /* a nil list from Go: no attachment is valid */
	else if (!json_is_array(arr))
		return bad(e, field, "must be an array of {\"containerID\", \"ifname\"} (or null)");
	if (arr && json_array_size(arr) > CNI_MAX_VALID_ATTACHMENTS)
		return bad(e, field, "more than %d entries", CNI_MAX_VALID_ATTACHMENTS);
	c->valid = calloc(arr && json_array_size(arr) ? json_array_size(arr) : 1, sizeof(*c->valid));
	if (!c->valid) {
		cni_err_set(e, CNI_ERR_IO, "out of memory", "allocating %zu valid attachments",
			    json_array_size(arr));
		return -1;
	}
	json_array_foreach(arr, i, o) {
		const char *cid, *ifn, *why;
		char f[64];

		snprintf(f, sizeof(f), "%s[%zu]", field, i);
		if (!json_is_object(o))
			return bad(e, f, "must be an object");
		if (check_keys(o, f, keys, N(keys), e))
			return -1;
		if (get_string(o, "containerID", 1, &cid, CNI_CONTAINERID_MAX, e) ||
		    get_string(o, "ifname", 1, &ifn, 64, e))
			return bad(e, f, "needs string containerID (<= %d bytes) and ifname",
				   CNI_CONTAINERID_MAX);
		if (cni_container_id_valid(cid, &why))
			return bad(e, f, "containerID %s", why);
		if (cni_ifname_valid(ifn, &why))
			return bad(e, f, "ifname %s", why);
		snprintf(c->valid[i].container_id, sizeof(c->valid[i].container_id), "%s", cid);
		snprintf(c->valid[i].ifname, sizeof(c->valid[i].ifname), "%s", ifn);
		c->nvalid = i + 1;
	}
	return 0;
}

static int parse_prev(json_t *root, enum cni_cmd cmd, struct cni_conf *c, struct cni_err *e)
{
	json_t *p = json_object_get(root, "prevResult");

	if (!p) {
		/* Since 0.4.0 CHECK must be given the result of ADD to compare. */
		if (cmd == CNI_CMD_CHECK)
			return bad(e, "prevResult", "required for CHECK but missing");
		return 0;
	}
	if (!json_is_object(p))
		return bad(e, "prevResult", "must be an object (a CNI result)");
	json_t *ips = json_object_get(p, "ips");
	if (ips && !json_is_array(ips))
		return bad(e, "prevResult.ips", "must be an array");
	json_t *ifs = json_object_get(p, "interfaces");
	if (ifs && !json_is_array(ifs))
		return bad(e, "prevResult.interfaces", "must be an array");
	c->prev_result = json_incref(p);
	return 0;
}

int cni_conf_parse_json(json_t *root, enum cni_cmd cmd, struct cni_conf *c, struct cni_err *e)
{
	const char *s, *k;
	json_t *v;
	char b[80];

	memset(c, 0, sizeof(*c));
	memset(e, 0, sizeof(*e));
	c->ver = CNI_V_UNKNOWN;
	if (!json_is_object(root)) {
		cni_err_set(e, CNI_ERR_DECODE, "cannot decode network configuration",
			    "the configuration is not a JSON object");
		return -1;
	}
	/* cniVersion first: every other error is reported in that version. */
	if (get_string(root, "cniVersion", 1, &s, 32, e))
		goto fail;
	c->ver = cni_ver_parse(s);
	if (c->ver == CNI_V_UNKNOWN) {
		cni_err_set(e, CNI_ERR_INCOMPATIBLE_VERSION, "incompatible CNI version",
			    "cniVersion \"%s\" is not supported; supported: %s",
			    echo(s, b, sizeof(b)), cni_ver_list());
		goto fail;
	}
	if (cmd != CNI_CMD_UNKNOWN && !cni_ver_has_cmd(c->ver, cmd)) {
		cni_err_set(e, CNI_ERR_INCOMPATIBLE_VERSION, "incompatible CNI version",
			    "%s is not defined by cniVersion %s (CHECK needs 0.4.0, GC and STATUS 1.1.0)",
			    cni_cmd_str(cmd), cni_ver_str(c->ver));
		goto fail;
	}
	json_object_foreach(root, k, v) {
		if (in_list(k, unsupported_keys, N(unsupported_keys))) {
			cni_err_set(e, CNI_ERR_UNSUPPORTED_FIELD, "unsupported field",
				    "field '%s': galactic-cni routes the pod's own addresses and does not masquerade",
				    k);
			goto fail;
		}
		if (in_list(k, moved_keys, N(moved_keys)) && !json_is_null(v)) {
			cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
				    "field '%s': addressing is not taken at the top level of the configuration; "
				    "give the pod's addresses in ipam {\"type\": \"" CNI_IPAM_TYPE "\", \"addresses\": [...]}",
				    k);
			goto fail;
		}
		/* Any other key is ignored, as upstream's plugin does (the chain's
		 * other stanzas and newer operator fields must not break ADD). */
	}
	if (get_string(root, "name", 1, &s, CNI_NAME_MAX, e))
		goto fail;
	if (!isalnum((unsigned char)s[0])) {
		bad(e, "name", "\"%s\" must start with a letter or digit", echo(s, b, sizeof(b)));
		goto fail;
	}
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-", *p)) {
			bad(e, "name", "\"%s\" may hold only letters, digits, '_', '.', '-'",
			    echo(s, b, sizeof(b)));
			goto fail;
		}
	snprintf(c->name, sizeof(c->name), "%s", s);
	if (get_string(root, "type", 1, &s, sizeof(c->type) - 1, e))
		goto fail;
	if (!*s || strchr(s, '/') || strchr(s, '\\')) {
		bad(e, "type", "\"%s\" must be a plugin file name", echo(s, b, sizeof(b)));
		goto fail;
	}
	snprintf(c->type, sizeof(c->type), "%s", s);

	if (parse_id(root, "vpc", c->vpc_s, &c->vpc, e) ||
	    parse_id(root, "vpcattachment", c->att_s, &c->att, e))
		goto fail;
	v = json_object_get(root, "namespace");
	if (v) {
		if (!json_is_string(v) || json_string_length(v) >= sizeof(c->ns) ||
		    strlen(json_string_value(v)) != json_string_length(v)) {
			bad(e, "namespace", "must be a string of at most %zu bytes", sizeof(c->ns) - 1);
			goto fail;
		}
		snprintf(c->ns, sizeof(c->ns), "%s", json_string_value(v));
	}
	c->legacy = json_object_get(root, "ipFamilies") || json_object_get(root, "addresses");
	if (c->legacy) {
		/* galactic-cni's earlier shape: the families the VPC carries and
		 * the addresses at the top level. */
		if (json_object_get(root, "ipam")) {
			bad(e, "ipam", "given together with top-level ipFamilies/addresses; give the addresses in "
			    "ipam.addresses only (the canonical shape, docs/cni.md)");
			goto fail;
		}
		if (!json_object_get(root, "ipFamilies")) {
			bad(e, "ipFamilies", "required with top-level addresses (the families the VPC carries)");
			goto fail;
		}
		if (parse_families(json_object_get(root, "ipFamilies"), "ipFamilies", &c->families, e) ||
		    parse_addrs(root, c, e))
			goto fail;
	} else if ((v = json_object_get(root, "ipam")) && !json_is_null(v)) {
		if (parse_ipam(v, c, e))
			goto fail;
	} else {
		/* No ipam: the guest addresses itself; both families are routed
		 * from the pod into the VPC. */
		c->families = CNI_FAM_V4 | CNI_FAM_V6;
	}
	if (parse_routes(root, c, e))
		goto fail;

	v = json_object_get(root, "mtu");
	if (v) {
		int min = (c->families & CNI_FAM_V6) ? CNI_MTU_MIN_V6 : CNI_MTU_MIN_V4;

		if (!json_is_integer(v)) {
			bad(e, "mtu", "must be an integer");
			goto fail;
		}
		if (json_integer_value(v) < min || json_integer_value(v) > CNI_MTU_MAX) {
			bad(e, "mtu", "%lld is outside %d..%d%s", (long long)json_integer_value(v), min,
			    CNI_MTU_MAX, min == CNI_MTU_MIN_V6 ? " (IPv6 needs at least 1280)" : "");
			goto fail;
		}
		c->mtu = (int)json_integer_value(v);
	}
	v = json_object_get(root, "egress");
	if (v && !json_is_null(v)) {
		json_t *in, *mode;

		if (!json_is_object(v)) {
			bad(e, "egress", "must be an object {\"internet\": {...}}");
			goto fail;
		}
		in = json_object_get(v, "internet");
		if (in && !json_is_object(in)) {
			bad(e, "egress.internet", "must be an object {\"mode\": \"Enabled\"} or {\"families\": [...]}");
			goto fail;
		}
		mode = json_object_get(in, "mode");
		if (mode) {
			/* Upstream's shape: internet egress for every family carried. */
			const char *m = json_string_value(mode);

			if (!m || (strcmp(m, "Enabled") && strcmp(m, "Disabled"))) {
				bad(e, "egress.internet.mode", "must be \"Enabled\" or \"Disabled\"");
				goto fail;
			}
			c->egress = strcmp(m, "Enabled") ? 0 : c->families;
		}
		if (in && json_object_get(in, "families")) {
			if (mode) {
				bad(e, "egress.internet", "give either mode or families, not both");
				goto fail;
			}
			if (parse_families(json_object_get(in, "families"), "egress.internet.families",
					   &c->egress, e))
				goto fail;
			if (c->egress & ~c->families) {
				bad(e, "egress.internet.families", "declares %s, which the VPC does not carry",
				    (c->egress & ~c->families) == CNI_FAM_V4 ? "IPv4" : "IPv6");
				goto fail;
			}
		}
	}
	if (get_string(root, "agentSocket", 0, &s, CNI_SOCKET_MAX, e))
		goto fail;
	if (s) {
		if (s[0] != '/') {
			bad(e, "agentSocket", "\"%s\" must be an absolute path", echo(s, b, sizeof(b)));
			goto fail;
		}
		snprintf(c->agent_socket, sizeof(c->agent_socket), "%s", s);
	}
	v = json_object_get(root, "timeoutSeconds");
	c->timeout_s = 60;
	if (v) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 600) {
			bad(e, "timeoutSeconds", "must be an integer in 1..600");
			goto fail;
		}
		c->timeout_s = (int)json_integer_value(v);
	}
	v = json_object_get(root, "runtimeConfig");
	if (v && !json_is_object(v)) {
		bad(e, "runtimeConfig", "must be an object");
		goto fail;
	}
	v = json_object_get(root, "args");
	if (v && !json_is_object(v)) {
		bad(e, "args", "must be an object");
		goto fail;
	}
	if (parse_dns(root, c, e) || parse_prev(root, cmd, c, e))
		goto fail;
	if (cmd == CNI_CMD_GC && parse_valid(root, c, e))
		goto fail;
	return 0;
fail:
	{
		enum cni_ver ver = c->ver;

		cni_conf_free(c);
		c->ver = ver;
	}
	return -1;
}

int cni_conf_parse(const char *buf, size_t len, enum cni_cmd cmd, struct cni_conf *c,
		   struct cni_err *e)
{
	json_error_t je;
	json_t *root;
	int rc;

	memset(c, 0, sizeof(*c));
	c->ver = CNI_V_UNKNOWN;
	if (len > CNI_CONF_MAX_BYTES) {
		cni_err_set(e, CNI_ERR_INVALID_CONFIG, "invalid network configuration",
			    "the configuration is %zu bytes; at most %u are accepted", len,
			    CNI_CONF_MAX_BYTES);
		return -1;
	}
	/* Duplicate keys are refused: the two copies could be read differently. */
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		cni_err_set(e, CNI_ERR_DECODE, "cannot decode network configuration",
			    "JSON error at line %d column %d: %s", je.line, je.column, je.text);
		return -1;
	}
	rc = cni_conf_parse_json(root, cmd, c, e);
	json_decref(root);
	return rc;
}

void cni_conf_free(struct cni_conf *c)
{
	json_decref(c->dns);
	json_decref(c->prev_result);
	free(c->valid);
	memset(c, 0, sizeof(*c));
	c->ver = CNI_V_UNKNOWN;
}

static json_t *fam_json(unsigned f)
{
	json_t *a = json_array();

	if (f & CNI_FAM_V4)
		json_array_append_new(a, json_string("IPv4"));
	if (f & CNI_FAM_V6)
		json_array_append_new(a, json_string("IPv6"));
	return a;
}

json_t *cni_conf_to_json(const struct cni_conf *c)
{
	json_t *o = json_object(), *a = json_array();
	char b[64], cidr[80];

	json_object_set_new(o, "cniVersion", json_string(cni_ver_str(c->ver)));
	json_object_set_new(o, "name", json_string(c->name));
	json_object_set_new(o, "type", json_string(c->type));
	json_object_set_new(o, "vpc", json_string(c->vpc_s));
	json_object_set_new(o, "vpcattachment", json_string(c->att_s));
	if (c->ns[0])
		json_object_set_new(o, "namespace", json_string(c->ns));
	if (c->legacy)
		json_object_set_new(o, "ipFamilies", fam_json(c->families));
	for (int i = 0; i < c->naddrs; i++) {
		json_t *x = json_object();

		snprintf(cidr, sizeof(cidr), "%s/%d", cni_ip_str(&c->addrs[i].ip, b, sizeof(b)),
			 c->addrs[i].plen);
		json_object_set_new(x, "address", json_string(cidr));
		if (c->addrs[i].has_gw)
			json_object_set_new(x, "gateway", json_string(cni_ip_str(&c->addrs[i].gw, b, sizeof(b))));
		json_array_append_new(a, x);
	}
	if (c->legacy) {
		json_object_set_new(o, "addresses", a);
	} else if (c->ipam) {
		json_t *ip = json_object();

		json_object_set_new(ip, "type", json_string(CNI_IPAM_TYPE));
		json_object_set_new(ip, "addresses", a);
		json_object_set_new(o, "ipam", ip);
	} else {
		json_decref(a);
	}
	if (c->nroutes) {
		a = json_array();
		for (int i = 0; i < c->nroutes; i++) {
			json_t *x = json_object();

			snprintf(cidr, sizeof(cidr), "%s/%d",
				 cni_ip_str(&c->routes[i].dst, b, sizeof(b)), c->routes[i].plen);
			json_object_set_new(x, "dst", json_string(cidr));
			if (c->routes[i].has_gw)
				json_object_set_new(x, "gw", json_string(cni_ip_str(&c->routes[i].gw, b, sizeof(b))));
			json_array_append_new(a, x);
		}
		json_object_set_new(o, "routes", a);
	}
	if (c->mtu)
		json_object_set_new(o, "mtu", json_integer(c->mtu));
	if (c->egress) {
		json_t *in = json_object(), *eg = json_object();

		json_object_set_new(in, "families", fam_json(c->egress));
		json_object_set_new(eg, "internet", in);
		json_object_set_new(o, "egress", eg);
	}
	if (c->agent_socket[0])
		json_object_set_new(o, "agentSocket", json_string(c->agent_socket));
	json_object_set_new(o, "timeoutSeconds", json_integer(c->timeout_s));
	if (c->dns)
		json_object_set(o, "dns", c->dns);
	if (c->prev_result)
		json_object_set(o, "prevResult", c->prev_result);
	if (c->has_valid) {
		a = json_array();
		for (size_t i = 0; i < c->nvalid; i++) {
			json_t *x = json_object();

			json_object_set_new(x, "containerID", json_string(c->valid[i].container_id));
			json_object_set_new(x, "ifname", json_string(c->valid[i].ifname));
			json_array_append_new(a, x);
		}
		json_object_set_new(o, "cni.dev/valid-attachments", a);
	}
	return o;
}

/* --- environment ------------------------------------------------------- */

int cni_ifname_valid(const char *s, const char **why)
{
	size_t n = strlen(s);

	if (n == 0)
		return *why = "is empty", -1;
	if (n > CNI_IFNAME_MAX)
		return *why = "is longer than 15 bytes (IFNAMSIZ)", -1;
	if (!strcmp(s, ".") || !strcmp(s, ".."))
		return *why = "may not be \".\" or \"..\"", -1;
	for (const char *p = s; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == '/' || *p == ':')
			return *why = "may not contain '/', ':', whitespace or non-ASCII", -1;
	return 0;
}

int cni_container_id_valid(const char *s, const char **why)
{
	size_t n = strlen(s);

	if (n == 0)
		return *why = "is empty", -1;
	if (n > CNI_CONTAINERID_MAX)
		return *why = "is longer than 127 bytes", -1;
	if (!isalnum((unsigned char)s[0]))
		return *why = "must start with a letter or digit", -1;
	for (const char *p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-", *p))
			return *why = "may hold only letters, digits, '_', '.', '-'", -1;
	return 0;
}

int cni_args_parse(const char *s, struct cni_env *env, struct cni_err *e)
{
	const char *p = s;

	if (strlen(s) > 4096) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid CNI_ARGS", "longer than 4096 bytes");
		return -1;
	}
	while (*p) {
		const char *semi = strchr(p, ';'), *eq;
		size_t n = semi ? (size_t)(semi - p) : strlen(p);
		char kv[4097];
		size_t kl;

		memcpy(kv, p, n);
		kv[n] = 0;
		p += n + (semi ? 1 : 0);
		if (!n)
			continue;
		eq = strchr(kv, '=');
		if (!eq || eq == kv) {
			cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid CNI_ARGS",
				    "element %zu bytes long is not KEY=VALUE", n);
			return -1;
		}
		kl = (size_t)(eq - kv);
#define TAKE(key, dst)                                                               \
		if (kl == strlen(key) && !strncmp(kv, key, kl)) {                    \
			if (strlen(eq + 1) >= sizeof(dst)) {                         \
				cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid CNI_ARGS", \
					    "%s is longer than %zu bytes", key, sizeof(dst) - 1); \
				return -1;                                           \
			}                                                            \
			snprintf(dst, sizeof(dst), "%s", eq + 1);                    \
			continue;                                                    \
		}
		TAKE("K8S_POD_NAMESPACE", env->pod_namespace)
		TAKE("K8S_POD_NAME", env->pod_name)
		TAKE("K8S_POD_UID", env->pod_uid)
#undef TAKE
		/* Other keys (IgnoreUnknown, K8S_POD_INFRA_CONTAINER_ID...) are not ours. */
	}
	return 0;
}

int cni_env_parse(const char *(*getenv_fn)(const char *, void *), void *arg,
		  struct cni_env *env, struct cni_err *e)
{
	const char *cmd = getenv_fn("CNI_COMMAND", arg), *v, *why;
	char b[80];

	memset(env, 0, sizeof(*env));
	if (!cmd || !*cmd) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment", "CNI_COMMAND is not set");
		return -1;
	}
	env->cmd = cni_cmd_parse(cmd);
	if (env->cmd == CNI_CMD_UNKNOWN) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment",
			    "CNI_COMMAND \"%s\" is not ADD, DEL, CHECK, GC, STATUS or VERSION",
			    echo(cmd, b, sizeof(b)));
		return -1;
	}
	if (env->cmd == CNI_CMD_VERSION || env->cmd == CNI_CMD_GC || env->cmd == CNI_CMD_STATUS)
		return 0;

	v = getenv_fn("CNI_CONTAINERID", arg);
	if (!v || cni_container_id_valid(v, &why)) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment", "CNI_CONTAINERID %s",
			    v ? why : "is not set");
		return -1;
	}
	snprintf(env->container_id, sizeof(env->container_id), "%s", v);

	v = getenv_fn("CNI_IFNAME", arg);
	if (!v || cni_ifname_valid(v, &why)) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment", "CNI_IFNAME \"%s\" %s",
			    v ? echo(v, b, sizeof(b)) : "", v ? why : "is not set");
		return -1;
	}
	snprintf(env->ifname, sizeof(env->ifname), "%s", v);

	/* DEL may come after the namespace is gone: CNI_NETNS is optional there. */
	v = getenv_fn("CNI_NETNS", arg);
	if (v && *v) {
		if (v[0] != '/' || strlen(v) > CNI_NETNS_MAX || strstr(v, "/../") ||
		    (strlen(v) >= 3 && !strcmp(v + strlen(v) - 3, "/.."))) {
			cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment",
				    "CNI_NETNS \"%s\" must be an absolute path without '..' of at most %d bytes",
				    echo(v, b, sizeof(b)), CNI_NETNS_MAX);
			return -1;
		}
		snprintf(env->netns, sizeof(env->netns), "%s", v);
	} else if (env->cmd != CNI_CMD_DEL) {
		cni_err_set(e, CNI_ERR_INVALID_ENV, "invalid environment",
			    "CNI_NETNS is required for %s", cni_cmd_str(env->cmd));
		return -1;
	}
	v = getenv_fn("CNI_ARGS", arg);
	if (v && cni_args_parse(v, env, e))
		return -1;
	return 0;
}
