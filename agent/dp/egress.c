/* The egress shard's nftables translator (agent/dp/egress.h). */
#include "agent/dp/egress.h"
#include "common/grow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <nftables/libnftables.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gde_vpc_sid(const struct in6_addr *shard_sid, int af, uint16_t arg, struct in6_addr *out)
{
	unsigned fn = af == AF_INET ? GDE_FN_V4 : GDE_FN_V6;

	if ((af != AF_INET && af != AF_INET6) || !arg || arg > GDE_VPCS_MAX)
		return -EINVAL;
	*out = *shard_sid;
	out->s6_addr[10] = (uint8_t)(fn << 4 | ((arg >> 8) & 0xf));
	out->s6_addr[11] = (uint8_t)arg;
	return 0;
}

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	return n && n < 16 && !strpbrk(s, "/ \t\n:\"\\");
}

int gde_validate_shard(const struct gde_shard *s, char *err, size_t errlen)
{
	static const uint8_t zero[6];

	if (IN6_IS_ADDR_UNSPECIFIED(&s->sid) || IN6_IS_ADDR_MULTICAST(&s->sid) ||
	    IN6_IS_ADDR_LINKLOCAL(&s->sid) || IN6_IS_ADDR_LOOPBACK(&s->sid)) {
		snprintf(err, errlen, "shardSID must be a unicast address");
		return -EINVAL;
	}
	if (memcmp(s->sid.s6_addr + 10, zero, 6)) {
		snprintf(err, errlen, "shardSID must end in 48 zero bits (bytes 10-15 carry the VPC argument)");
		return -EINVAL;
	}
	if (IN6_IS_ADDR_UNSPECIFIED(&s->addr6) || IN6_IS_ADDR_MULTICAST(&s->addr6) ||
	    IN6_IS_ADDR_LINKLOCAL(&s->addr6) || IN6_IS_ADDR_LOOPBACK(&s->addr6)) {
		snprintf(err, errlen, "shardAddressIPv6 must be a unicast address");
		return -EINVAL;
	}
	if (s->have_v4 && (!s->addr4.s_addr || (ntohl(s->addr4.s_addr) >> 28) >= 0xE ||
			   (ntohl(s->addr4.s_addr) >> 24) == 127)) {
		snprintf(err, errlen, "shardAddressIPv4 must be a unicast address");
		return -EINVAL;
	}
	if (!valid_ifname(s->oif)) {
		snprintf(err, errlen, "internet interface '%s' is not a valid device name", s->oif);
		return -EINVAL;
	}
	return 0;
}

struct sb {
	char *p;
	size_t n, cap;
	bool oom;
};

static void sb_add(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_add(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (b->oom)
		return;
	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if (k < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)k < b->cap - b->n) {
			b->n += (size_t)k;
			return;
		}
		if (G_RESERVE(b->p, b->cap, b->n + (size_t)k + 1, 256)) {
			b->oom = true;
			return;
		}
	}
}

int gde_render(const struct gde_shard *s, const struct gde_vpc *v, size_t n, char **out,
	       char *err, size_t errlen)
{
	char a6[INET6_ADDRSTRLEN], a4[INET_ADDRSTRLEN], sid[INET6_ADDRSTRLEN];
	struct sb b = { 0 };
	int rc = gde_validate_shard(s, err, errlen);

	*out = NULL;
	if (rc)
		return rc;
	if (n > GDE_VPCS_MAX) {
		snprintf(err, errlen, "%zu VPCs: at most %u", n, (unsigned)GDE_VPCS_MAX);
		return -E2BIG;
	}
	for (size_t i = 0; i < n; i++) {
		if (!v[i].arg || v[i].arg > GDE_VPCS_MAX) {
			snprintf(err, errlen, "vpc argument %u outside 1-%u", v[i].arg, (unsigned)GDE_VPCS_MAX);
			return -EINVAL;
		}
		for (size_t j = 0; j < i; j++)
			if (v[j].arg == v[i].arg) {
				snprintf(err, errlen, "vpc argument %u listed twice", v[i].arg);
				return -EEXIST;
			}
	}
	inet_ntop(AF_INET6, &s->addr6, a6, sizeof(a6));
	inet_ntop(AF_INET, &s->addr4, a4, sizeof(a4));
	/* Replace the table as one transaction: add (so delete cannot fail), delete, define. */
	sb_add(&b, "add table inet %s\ndelete table inet %s\ntable inet %s {\n", GDE_TABLE, GDE_TABLE,
	       GDE_TABLE);
	sb_add(&b, "\tcounter decap {\n\t}\n\tcounter snat6 {\n\t}\n\tcounter snat4 {\n\t}\n\tcounter replies {\n\t}\n\tcounter untranslated {\n\t}\n");
	/* Outer destination (the VPC's shard SID) -> mark, before decap. */
	sb_add(&b, "\tmap sid_vpc {\n\t\ttypeof ip6 daddr : meta mark\n");
	if (n) {
		sb_add(&b, "\t\telements = { ");
		for (size_t i = 0; i < n; i++)
			for (int f = 0; f < 2; f++) {
				struct in6_addr x;

				gde_vpc_sid(&s->sid, f ? AF_INET : AF_INET6, v[i].arg, &x);
				inet_ntop(AF_INET6, &x, sid, sizeof(sid));
				sb_add(&b, "%s%s : 0x%x", i || f ? ", " : "", sid, GDE_MARK_OUT | v[i].arg);
			}
		sb_add(&b, " }\n");
	}
	sb_add(&b, "\t}\n");
	sb_add(&b, "\tmap vpc_zone {\n\t\ttypeof meta mark : ct zone\n");
	if (n) {
		sb_add(&b, "\t\telements = { ");
		for (size_t i = 0; i < n; i++)
			sb_add(&b, "%s0x%x : %u", i ? ", " : "", GDE_MARK_OUT | v[i].arg, v[i].arg);
		sb_add(&b, " }\n");
	}
	sb_add(&b, "\t}\n");
	/* seg6local's LOCAL_IN hook sees the outer packet (net.netfilter.nf_hooks_lwtunnel=1). */
	sb_add(&b, "\tchain mark_sid {\n\t\ttype filter hook input priority -400; policy accept;\n"
		   "\t\tmeta nfproto ipv6 ip6 daddr @sid_vpc meta mark set ip6 daddr map @sid_vpc counter name \"decap\"\n\t}\n");
	/* The decapsulated packet's PRE_ROUTING: its flow lives in its VPC's zone (original direction only). */
	sb_add(&b, "\tchain set_zone {\n\t\ttype filter hook prerouting priority -300; policy accept;\n"
		   "\t\tmeta mark & 0x%x == 0x%x meta mark @vpc_zone ct original zone set meta mark map @vpc_zone\n\t}\n",
	       GDE_MARK_KIND, GDE_MARK_OUT);
	/* A reply (default zone, unique shard address) takes its VPC back from the conntrack mark. */
	sb_add(&b, "\tchain mark_reply {\n\t\ttype filter hook prerouting priority -150; policy accept;\n"
		   "\t\tct direction reply ct mark & 0x%x == 0x%x meta mark set ct mark counter name \"replies\"\n\t}\n",
	       GDE_MARK_KIND, GDE_MARK_REPLY);
	sb_add(&b, "\tchain translate {\n\t\ttype nat hook postrouting priority 100; policy accept;\n");
	sb_add(&b, "\t\toifname \"%s\" meta mark & 0x%x == 0x%x meta nfproto ipv6 ct mark set meta mark ^ 0x%x counter name \"snat6\" snat ip6 to %s\n",
	       s->oif, GDE_MARK_KIND, GDE_MARK_OUT, GDE_MARK_KIND, a6);
	if (s->have_v4)
		sb_add(&b, "\t\toifname \"%s\" meta mark & 0x%x == 0x%x meta nfproto ipv4 ct mark set meta mark ^ 0x%x counter name \"snat4\" snat ip to %s\n",
		       s->oif, GDE_MARK_KIND, GDE_MARK_OUT, GDE_MARK_KIND, a4);
	/* Egress-marked traffic leaves with the shard's address or not at all (IPv4 without a shard IPv4 address). */
	sb_add(&b, "\t}\n\tchain untranslated {\n\t\ttype filter hook postrouting priority 101; policy accept;\n"
		   "\t\tmeta mark & 0x%x == 0x%x meta nfproto ipv6 ip6 saddr != %s counter name \"untranslated\" drop\n",
	       GDE_MARK_KIND, GDE_MARK_OUT, a6);
	if (s->have_v4)
		sb_add(&b, "\t\tmeta mark & 0x%x == 0x%x meta nfproto ipv4 ip saddr != %s counter name \"untranslated\" drop\n",
		       GDE_MARK_KIND, GDE_MARK_OUT, a4);
	else
		sb_add(&b, "\t\tmeta mark & 0x%x == 0x%x meta nfproto ipv4 counter name \"untranslated\" drop\n",
		       GDE_MARK_KIND, GDE_MARK_OUT);
	sb_add(&b, "\t}\n}\n");
	if (b.oom) {
		free(b.p);
		snprintf(err, errlen, "out of memory rendering the egress table");
		return -ENOMEM;
	}
	*out = b.p;
	return 0;
}

const char *gde_render_remove(void)
{
	return "add table inet " GDE_TABLE "\ndelete table inet " GDE_TABLE "\n";
}

static struct nft_ctx *ctx_new(char *err, size_t errlen)
{
	struct nft_ctx *c = nft_ctx_new(NFT_CTX_DEFAULT);

	if (!c) {
		snprintf(err, errlen, "libnftables: cannot create a context");
		return NULL;
	}
	nft_ctx_buffer_error(c);
	nft_ctx_buffer_output(c);
	return c;
}

static void ctx_err(struct nft_ctx *c, const char *what, char *err, size_t errlen)
{
	const char *e = nft_ctx_get_error_buffer(c);
	size_t k;

	snprintf(err, errlen, "%s: %s", what, e && *e ? e : "failed");
	k = strlen(err);
	while (k && (err[k - 1] == '\n'))
		err[--k] = 0;
}

int gde_nft_apply(const char *text, char *err, size_t errlen)
{
	struct nft_ctx *c = ctx_new(err, errlen);
	int rc;

	if (!c)
		return -ENOMEM;
	rc = nft_run_cmd_from_buffer(c, text);
	if (rc)
		ctx_err(c, "nftables table " GDE_TABLE, err, errlen);
	nft_ctx_free(c);
	return rc ? -EIO : 0;
}

int gde_nft_list(char **out, char *err, size_t errlen)
{
	struct nft_ctx *c = ctx_new(err, errlen);
	const char *o;
	int rc = 0;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	nft_ctx_output_set_flags(c, nft_ctx_output_get_flags(c) | NFT_CTX_OUTPUT_STATELESS);
	if (nft_run_cmd_from_buffer(c, "list table inet " GDE_TABLE)) {
		ctx_err(c, "list table inet " GDE_TABLE, err, errlen);
		rc = -ENOENT;
	} else {
		o = nft_ctx_get_output_buffer(c);
		*out = strdup(o ? o : "");
		if (!*out) {
			snprintf(err, errlen, "out of memory listing the egress table");
			rc = -ENOMEM;
		}
	}
	nft_ctx_free(c);
	return rc;
}

long gde_nft_counter(const char *name, char *err, size_t errlen)
{
	struct nft_ctx *c;
	char cmd[128];
	const char *o, *p;
	long v = -ENOENT;

	if (!valid_ifname(name)) {
		snprintf(err, errlen, "counter name '%s' invalid", name);
		return -EINVAL;
	}
	c = ctx_new(err, errlen);
	if (!c)
		return -ENOMEM;
	snprintf(cmd, sizeof(cmd), "list counter inet %s %s", GDE_TABLE, name);
	if (nft_run_cmd_from_buffer(c, cmd)) {
		ctx_err(c, cmd, err, errlen);
		nft_ctx_free(c);
		return -EIO;
	}
	o = nft_ctx_get_output_buffer(c);
	p = o ? strstr(o, "packets ") : NULL;
	if (p)
		v = strtol(p + 8, NULL, 10);
	else
		snprintf(err, errlen, "%s: no packet count in the output", cmd);
	nft_ctx_free(c);
	return v;
}
