/* The record's JSON <-> struct: one encoder and one decoder per object family (agent/record_codec.h). */
#include "agent/record_codec.h"
#include "agent/record_index.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/mac.h"

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto bad; } while (0)

/* ---- what decoders allocate ---------------------------------------------- */

void rec_att_clear(struct rec_att *a)
{
	if (!a)
		return;
	free(a->netns);
	json_decref(a->config);
	a->netns = NULL;
	a->config = NULL;
}

void record_atts_free(struct rec_att *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		rec_att_clear(&v[i]);
	free(v);
}

void record_data_free(struct rec_data *d)
{
	record_atts_free(d->atts, d->natts);
	free(d->vpcs);
	memset(d, 0, sizeof(*d));
}

/* ---- fields ---------------------------------------------------------------- */

const char *rec_jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Optional string field into dst; -1 if present but not a string or too long. */
int rec_jcopy(json_t *o, const char *k, char *dst, size_t cap, bool required)
{
	json_t *v = json_object_get(o, k);

	if (!v)
		return required ? -1 : 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) >= cap)
		return -1;
	memcpy(dst, json_string_value(v), strlen(json_string_value(v)) + 1);
	return 0;
}

/* Integer field in [lo, hi]; absent gives def when def >= 0 (else an error). */
int rec_jint(json_t *o, const char *k, long long lo, long long hi, long long def, long long *out)
{
	json_t *v = json_object_get(o, k);

	if (!v) {
		*out = def;
		return def >= 0 ? 0 : -1;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return -1;
	*out = json_integer_value(v);
	return 0;
}

json_t *rec_prefix_encode(const struct gdp_prefix *p)
{
	char b[64];

	return json_string(gdp_prefix_str(p, b, sizeof(b)));
}

int rec_prefixes_decode(json_t *arr, struct gdp_prefix *out, size_t max, size_t *n, bool host)
{
	size_t i;
	json_t *x;

	*n = 0;
	if (arr && !json_is_array(arr))
		return -1;
	json_array_foreach(arr, i, x) {
		if (*n == max || !json_is_string(x) || gdp_prefix_parse(json_string_value(x), &out[*n]))
			return -1;
		if (host && out[*n].len != (out[*n].family == AF_INET ? 32 : 128))
			return -1;
		(*n)++;
	}
	return 0;
}

json_t *rec_families_encode(unsigned f)
{
	json_t *a = json_array();

	if (f & REC_FAM_V6)
		json_array_append_new(a, json_string("IPv6"));
	if (f & REC_FAM_V4)
		json_array_append_new(a, json_string("IPv4"));
	return a;
}

unsigned rec_families_decode(json_t *arr, int *bad)
{
	unsigned f = 0;
	size_t i;
	json_t *x;

	*bad = arr && !json_is_array(arr);
	json_array_foreach(arr, i, x) {
		const char *s = json_is_string(x) ? json_string_value(x) : "";

		if (!strcmp(s, "IPv4"))
			f |= REC_FAM_V4;
		else if (!strcmp(s, "IPv6"))
			f |= REC_FAM_V6;
		else
			*bad = 1;
	}
	return f;
}

/* ---- node -------------------------------------------------------------------- */

json_t *rec_node_encode(const struct gdp_node *n, int uplink_mtu)
{
	struct gdp_prefix blk = { .family = AF_INET6, .len = 48 };

	memcpy(blk.addr.raw, n->block, 6);
	return json_pack("{s:o, s:i, s:s, s:i}", "block", rec_prefix_encode(&blk), "nodeID", (int)n->node_id,
			 "uplink", n->uplink, "uplinkMTU", uplink_mtu);
}

int rec_node_decode(json_t *o, struct gdp_node *n, int *uplink_mtu, char *err, size_t errlen)
{
	struct gdp_prefix blk;
	const char *b = rec_jstr(o, "block");
	long long id, mtu;

	if (!json_is_object(o) || !b || gdp_prefix_parse(b, &blk) || blk.family != AF_INET6 || blk.len != 48)
		return snprintf(err, errlen, "node: \"block\" must be an IPv6 /48"), -EINVAL;
	if (rec_jint(o, "nodeID", 1, 0xDFFF, -1, &id))
		return snprintf(err, errlen, "node: \"nodeID\" must be 1-0xDFFF"), -EINVAL;
	if (rec_jint(o, "uplinkMTU", 0, 65535, 0, &mtu))
		return snprintf(err, errlen, "node: \"uplinkMTU\" must be 0-65535"), -EINVAL;
	if (rec_jcopy(o, "uplink", n->uplink, sizeof(n->uplink), false))
		return snprintf(err, errlen, "node: \"uplink\" must be an interface name"), -EINVAL;
	memcpy(n->block, blk.addr.raw, 6);
	n->node_id = (uint16_t)id;
	*uplink_mtu = (int)mtu;
	return 0;
}

/* ---- egress shard ------------------------------------------------------------ */

/* {"sid", "addressIPv6", "addressIPv4"?, "interface"?}: the shard identity the node routes toward. */
json_t *rec_egress_encode(const struct gdp_egress *e)
{
	char a[INET6_ADDRSTRLEN];
	json_t *o = json_object();

	json_object_set_new(o, "sid", json_string(inet_ntop(AF_INET6, &e->sid, a, sizeof(a))));
	json_object_set_new(o, "addressIPv6", json_string(inet_ntop(AF_INET6, &e->addr6, a, sizeof(a))));
	if (e->have_v4)
		json_object_set_new(o, "addressIPv4", json_string(inet_ntop(AF_INET, &e->addr4, a, sizeof(a))));
	if (e->oif[0])
		json_object_set_new(o, "interface", json_string(e->oif));
	return o;
}

int rec_egress_decode(json_t *o, struct gdp_egress *e, char *err, size_t errlen)
{
	const char *sid = rec_jstr(o, "sid"), *a6 = rec_jstr(o, "addressIPv6"), *a4;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(o) || !sid || inet_pton(AF_INET6, sid, &e->sid) != 1)
		return snprintf(err, errlen, "egressShard: \"sid\" must be an IPv6 address"), -EINVAL;
	if (!a6 || inet_pton(AF_INET6, a6, &e->addr6) != 1)
		return snprintf(err, errlen, "egressShard: \"addressIPv6\" must be an IPv6 address"), -EINVAL;
	if (json_object_get(o, "addressIPv4")) {
		a4 = rec_jstr(o, "addressIPv4");
		if (!a4 || inet_pton(AF_INET, a4, &e->addr4) != 1)
			return snprintf(err, errlen, "egressShard: \"addressIPv4\" must be an IPv4 address"), -EINVAL;
		e->have_v4 = true;
	}
	if (rec_jcopy(o, "interface", e->oif, sizeof(e->oif), false))
		return snprintf(err, errlen, "egressShard: \"interface\" must be an interface name"), -EINVAL;
	e->have = true;
	return 0;
}

/* ---- VPC ------------------------------------------------------------------------ */

json_t *rec_vpc_encode(const struct rec_vpc *v)
{
	json_t *pf = json_array();

	for (size_t k = 0; k < v->m.n_prefixes; k++)
		json_array_append_new(pf, rec_prefix_encode(&v->m.prefixes[k]));
	return json_pack("{s:s, s:i, s:I, s:o, s:b}", "id", v->m.id, "arg", (int)v->m.arg, "table",
			 (json_int_t)v->m.table, "prefixes", pf, "declared", v->declared);
}

int rec_vpc_decode(json_t *x, size_t i, struct rec_vpc *v, char *err, size_t errlen)
{
	json_t *dc = json_object_get(x, "declared");
	long long a, t;

	memset(v, 0, sizeof(*v));
	if (!json_is_object(x) || rec_jcopy(x, "id", v->m.id, sizeof(v->m.id), true) || !v->m.id[0])
		return snprintf(err, errlen, "vpcs[%zu]: \"id\" must be a non-empty string", i), -EINVAL;
	if (rec_jint(x, "arg", 1, GDP_ARG_MAX, -1, &a) || rec_jint(x, "table", 1, 0xFFFFFFFFLL, -1, &t))
		return snprintf(err, errlen, "vpcs[%zu] (%s): \"arg\" must be 1-%d and \"table\" a table number", i,
				v->m.id, GDP_ARG_MAX), -EINVAL;
	if (rec_prefixes_decode(json_object_get(x, "prefixes"), v->m.prefixes, GDP_VPC_PREFIXES_MAX,
				&v->m.n_prefixes, false))
		return snprintf(err, errlen, "vpcs[%zu] (%s): \"prefixes\" must be at most %d prefixes", i, v->m.id,
				GDP_VPC_PREFIXES_MAX), -EINVAL;
	if (dc && !json_is_boolean(dc))
		return snprintf(err, errlen, "vpcs[%zu] (%s): \"declared\" must be a boolean", i, v->m.id), -EINVAL;
	v->m.arg = (uint16_t)a;
	v->m.table = (uint32_t)t;
	v->declared = json_is_true(dc);
	return 0;
}

int rec_vpcs_decode(json_t *arr, struct rec_vpc **out, size_t *n, char *err, size_t errlen)
{
	struct rec_vpc *vs;
	json_t *x;
	size_t i;

	*out = NULL;
	*n = 0;
	if (!json_is_array(arr))
		return snprintf(err, errlen, "\"vpcs\" must be an array"), -EINVAL;
	vs = calloc(json_array_size(arr) + 1, sizeof(*vs));
	if (!vs)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	json_array_foreach(arr, i, x) {
		struct rec_vpc *v = &vs[*n];

		if (rec_vpc_decode(x, i, v, err, errlen))
			goto bad;
		for (size_t k = 0; k < *n; k++)
			if (!strcmp(vs[k].m.id, v->m.id) || vs[k].m.arg == v->m.arg || vs[k].m.table == v->m.table)
				BAD("vpcs[%zu] (%s): id, number or table already used by vpc %s", i, v->m.id, vs[k].m.id);
		(*n)++;
	}
	*out = vs;
	return 0;
bad:
	free(vs);
	*n = 0;
	return -EINVAL;
}

/* ---- attachment ----------------------------------------------------------------- */

/* One attachment as record.json (and a journal "put") has it. */
json_t *rec_att_encode(const struct rec_att *a)
{
	char b[INET6_ADDRSTRLEN + 8], m1[GMAC_STRLEN], m2[GMAC_STRLEN];
	json_t *ad = json_array(), *x;

	for (size_t k = 0; k < a->m.n_addrs; k++)
		json_array_append_new(ad, rec_prefix_encode(&a->m.addrs[k]));
	x = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:o, s:s, s:s, s:i}", "vpc", a->m.vpc, "id", a->m.id,
		      "source", a->src == REC_SRC_CNI ? "cni" : "declared", "containerID", a->m.container_id,
		      "hostIfname", a->m.host_ifname, "arg", (int)a->m.arg, "addrs", ad, "podMac",
		      gmac_str(a->m.pod_mac, m1), "hostMac", gmac_str(a->host_mac, m2), "mtu", (int)a->m.mtu);
	if (a->m.guest_addressed)
		json_object_set_new(x, "guestAddressed", json_true());
	if (a->m.nh4.s_addr)
		json_object_set_new(x, "nh4", json_string(inet_ntop(AF_INET, &a->m.nh4, b, sizeof(b))));
	json_object_set_new(x, "network", json_string(a->network));
	json_object_set_new(x, "ifname", json_string(a->ifname));
	if (a->src == REC_SRC_CNI) {
		json_object_set_new(x, "netns", json_string(a->netns ? a->netns : ""));
		json_object_set_new(x, "podNamespace", json_string(a->pod_ns));
		json_object_set_new(x, "podName", json_string(a->pod_name));
		json_object_set_new(x, "podUID", json_string(a->pod_uid));
		json_object_set_new(x, "egress", rec_families_encode(a->egress));
		if (a->config)
			json_object_set(x, "config", a->config);
	}
	return x;
}

int rec_att_decode(json_t *o, struct rec_att *a, char *why, size_t n)
{
	const char *src = rec_jstr(o, "source"), *s;
	char netns[4096] = "", m[20] = "";
	json_t *cfg = json_object_get(o, "config"), *ga;
	long long arg, mtu;
	int badf;

	memset(a, 0, sizeof(*a));
	a->active = true;
	if (!json_is_object(o))
		return snprintf(why, n, "not an object"), -1;
	if (rec_jcopy(o, "vpc", a->m.vpc, sizeof(a->m.vpc), true) || rec_jcopy(o, "id", a->m.id, sizeof(a->m.id), true) ||
	    !a->m.vpc[0] || !a->m.id[0])
		return snprintf(why, n, "\"vpc\" and \"id\" must be non-empty strings"), -1;
	if (!src || (strcmp(src, "cni") && strcmp(src, "declared")))
		return snprintf(why, n, "\"source\" must be \"cni\" or \"declared\""), -1;
	a->src = !strcmp(src, "cni") ? REC_SRC_CNI : REC_SRC_DECLARED;
	if (rec_jcopy(o, "containerID", a->m.container_id, sizeof(a->m.container_id), false) ||
	    rec_jcopy(o, "hostIfname", a->m.host_ifname, sizeof(a->m.host_ifname), true) || !a->m.host_ifname[0])
		return snprintf(why, n, "\"hostIfname\" / \"containerID\" missing or too long"), -1;
	if (rec_jint(o, "arg", 1, GDP_ARG_MAX, -1, &arg))
		return snprintf(why, n, "\"arg\" must be 1-%d", GDP_ARG_MAX), -1;
	a->m.arg = (uint16_t)arg;
	if (rec_jint(o, "mtu", 0, 65535, 0, &mtu))
		return snprintf(why, n, "\"mtu\" must be 0-65535"), -1;
	a->m.mtu = (uint32_t)mtu;
	/* host addresses, or an IPv6 block delegated to the pod */
	if (rec_prefixes_decode(json_object_get(o, "addrs"), a->m.addrs, GDP_ADDRS_MAX, &a->m.n_addrs, false))
		return snprintf(why, n, "\"addrs\" must be at most %d prefixes", GDP_ADDRS_MAX), -1;
	if ((ga = json_object_get(o, "guestAddressed")) && !json_is_boolean(ga))
		return snprintf(why, n, "\"guestAddressed\" must be a boolean"), -1;
	a->m.guest_addressed = json_is_true(ga);
	if ((s = rec_jstr(o, "nh4")) && inet_pton(AF_INET, s, &a->m.nh4) != 1)
		return snprintf(why, n, "\"nh4\" is not an IPv4 address"), -1;
	if (rec_jcopy(o, "podMac", m, sizeof(m), false) || (m[0] && gmac_parse(m, a->m.pod_mac)))
		return snprintf(why, n, "\"podMac\" is not a MAC address"), -1;
	m[0] = 0;
	if (rec_jcopy(o, "hostMac", m, sizeof(m), false) || (m[0] && gmac_parse(m, a->host_mac)))
		return snprintf(why, n, "\"hostMac\" is not a MAC address"), -1;
	if (rec_jcopy(o, "network", a->network, sizeof(a->network), a->src == REC_SRC_CNI) ||
	    rec_jcopy(o, "ifname", a->ifname, sizeof(a->ifname), a->src == REC_SRC_CNI) ||
	    rec_jcopy(o, "netns", netns, sizeof(netns), false) ||
	    rec_jcopy(o, "podNamespace", a->pod_ns, sizeof(a->pod_ns), false) ||
	    rec_jcopy(o, "podName", a->pod_name, sizeof(a->pod_name), false) ||
	    rec_jcopy(o, "podUID", a->pod_uid, sizeof(a->pod_uid), false))
		return snprintf(why, n, "a CNI field (network, ifname, netns, pod) is missing or too long"), -1;
	a->egress = rec_families_decode(json_object_get(o, "egress"), &badf);
	if (badf)
		return snprintf(why, n, "\"egress\" must list \"IPv4\" / \"IPv6\""), -1;
	if (cfg && !json_is_object(cfg))
		return snprintf(why, n, "\"config\" must be an object"), -1;
	a->config = json_incref(cfg);
	a->netns = netns[0] ? strdup(netns) : NULL;
	return 0;
}

/* ---- attachment key (a journal line's "del") -------------------------------------- */

json_t *rec_key_encode(const char *vpc, const char *id)
{
	return json_pack("{s:s, s:s}", "vpc", vpc, "id", id);
}

int rec_key_decode(json_t *o, char vpc[GDP_ID_MAX + 1], char id[GDP_ID_MAX + 1])
{
	if (!json_is_object(o) || rec_jcopy(o, "vpc", vpc, GDP_ID_MAX + 1, true) ||
	    rec_jcopy(o, "id", id, GDP_ID_MAX + 1, true))
		return -EINVAL;
	return 0;
}

/* ---- remote -------------------------------------------------------------------- */

int rec_remote_encode(FILE *f, const struct gdp_remote *m)
{
	char sid[INET6_ADDRSTRLEN], pb[64];
	json_t *id = json_string(gdp_remote_vpc(m));
	char *q = id ? json_dumps(id, JSON_ENCODE_ANY) : NULL;

	json_decref(id);
	if (!q)
		return -ENOMEM;
	inet_ntop(AF_INET6, &m->sid, sid, sizeof(sid));
	fprintf(f, "{\"vpc\":%s,\"prefix\":\"%s\",\"sid\":\"%s\"}", q, gdp_prefix_str(&m->prefix, pb, sizeof(pb)), sid);
	free(q);
	return ferror(f) ? -(errno ? errno : EIO) : 0;
}

int rec_remote_decode(json_t *x, size_t i, struct gdp_remote *m, char *err, size_t errlen)
{
	const char *pf = rec_jstr(x, "prefix"), *sid = rec_jstr(x, "sid");
	char vpc[GDP_ID_MAX + 1];
	int rc;

	memset(m, 0, sizeof(*m));
	if (!json_is_object(x) || rec_jcopy(x, "vpc", vpc, sizeof(vpc), true) || !vpc[0] || !pf ||
	    gdp_prefix_parse(pf, &m->prefix) || !sid || inet_pton(AF_INET6, sid, &m->sid) != 1)
		return snprintf(err, errlen, "remotes[%zu]: needs \"vpc\", a \"prefix\" and an IPv6 \"sid\"", i),
		       -EINVAL;
	if ((rc = gdp_remote_set_vpc(m, vpc)))
		return snprintf(err, errlen, "remotes[%zu]: vpc '%s': %s", i, vpc, strerror(-rc)), rc;
	return 0;
}

/* ---- journal header ----------------------------------------------------------- */

int rec_journal_header_encode(char *buf, size_t n, unsigned long ep)
{
	return snprintf(buf, n, "{\"journal\":%lu,\"version\":%d}\n", ep, RECORD_VERSION);
}

int rec_journal_header_decode(const char *line, size_t len, unsigned long *ep)
{
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	long long ver, e;
	int rc = -EINVAL;

	if (o && json_is_object(o) && !rec_jint(o, "version", RECORD_VERSION, RECORD_VERSION, -1, &ver) &&
	    !rec_jint(o, "journal", 1, 0x7FFFFFFFFFFFLL, -1, &e) && json_object_size(o) == 2) {
		*ep = (unsigned long)e;
		rc = 0;
	}
	json_decref(o);
	return rc;
}

/* ---- documents: record.json, record.journal, record-remotes.json ------------------ */

/* One attachment object into a (cleared on failure); where: its label. */
static int parse_att_at(json_t *x, struct rec_att *a, const char *where, size_t i, char *err, size_t errlen)
{
	char why[200], lbl[140] = "";

	if (!rec_att_decode(x, a, why, sizeof(why)))
		return 0;
	rec_att_clear(a);
	if (rec_jstr(x, "vpc"))
		snprintf(lbl, sizeof(lbl), " (%.60s/%.60s)", rec_jstr(x, "vpc"), rec_jstr(x, "id") ? rec_jstr(x, "id") : "?");
	snprintf(err, errlen, "%s[%zu]%s: %s", where, i, lbl, why);
	return -EINVAL;
}

/*
 * The attachments of a rec_data by VPC and id (agent/record_index.h): the
 * tag is the entry's place in d->atts. A journal's replay finds each "del"
 * and "put" by it, and the checks find a key used twice, in O(1) each, not
 * by a search of every attachment (a restart at 1,000 attachments and a
 * long journal was a search per line).
 */
static uint64_t data_key(const struct rec_att *a)
{
	return rec_index_hash(1, (const char *const[]){ a->m.vpc, a->m.id }, 2);
}

static uint64_t data_hash(const char *vpc, const char *id)
{
	return rec_index_hash(1, (const char *const[]){ vpc, id }, 2);
}

/* d->atts index of vpc/id by x, or -1. */
static ssize_t data_find(const struct rec_data *d, const struct rec_index *x, const char *vpc, const char *id)
{
	uint64_t h = data_hash(vpc, id);

	for (size_t s = rec_index_first(x, h); s != REC_INDEX_END; s = rec_index_next(x, h, s)) {
		const struct rec_att *a = &d->atts[x->s[s].tag];

		if (!strcmp(a->m.vpc, vpc) && !strcmp(a->m.id, id))
			return (ssize_t)x->s[s].tag;
	}
	return -1;
}

/* x indexes d->atts[0, n) (the pointer stored is d: only the tag is used). 0 or -ENOMEM. */
static int data_index(struct rec_data *d, struct rec_index *x)
{
	for (size_t i = 0; i < d->natts; i++)
		if (rec_index_put(x, data_key(&d->atts[i]), d, (uint32_t)i))
			return -ENOMEM;
	return 0;
}

/* Every attachment's VPC is listed; no attachment or number is used twice. */
static int check_data(struct rec_data *d, char *err, size_t errlen)
{
	struct rec_index x = { 0 };
	uint32_t *by_arg = calloc(GDP_ARG_MAX + 1, sizeof(*by_arg)); /* attachment index + 1 holding each number */
	int rc = 0;

	if (!by_arg)
		return snprintf(err, errlen, "out of memory"), -ENOMEM;
	for (size_t i = 0; i < d->natts && !rc; i++) {
		const struct rec_att *a = &d->atts[i];
		bool vpc_known = false;
		ssize_t k;

		for (size_t v = 0; v < d->nvpcs; v++)
			vpc_known |= !strcmp(d->vpcs[v].m.id, a->m.vpc);
		if (!vpc_known) {
			snprintf(err, errlen, "attachments[%zu] (%s/%s): vpc %s is not in \"vpcs\"", i, a->m.vpc, a->m.id,
				 a->m.vpc);
			rc = -EINVAL;
			break;
		}
		k = data_find(d, &x, a->m.vpc, a->m.id);
		if (k < 0 && a->m.arg <= GDP_ARG_MAX && by_arg[a->m.arg])
			k = (ssize_t)by_arg[a->m.arg] - 1;
		if (k >= 0) {
			snprintf(err, errlen, "attachments[%zu] (%s/%s): attachment or number already used by %s/%s", i,
				 a->m.vpc, a->m.id, d->atts[k].m.vpc, d->atts[k].m.id);
			rc = -EINVAL;
			break;
		}
		if (a->m.arg <= GDP_ARG_MAX)
			by_arg[a->m.arg] = (uint32_t)i + 1;
		if (rec_index_put(&x, data_key(a), d, (uint32_t)i)) {
			snprintf(err, errlen, "out of memory");
			rc = -ENOMEM;
		}
	}
	rec_index_free(&x);
	free(by_arg);
	return rc;
}

int record_parse(const char *text, size_t len, struct rec_data *d, char *err, size_t errlen)
{
	json_error_t je;
	json_t *o, *x, *arr;
	size_t i;
	long long ver, jn;

	memset(d, 0, sizeof(*d));
	o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return snprintf(err, errlen, "not JSON (line %d: %s)", je.line, je.text), -EINVAL;
	if (!json_is_object(o))
		BAD("not a JSON object");
	/* version 1 (no journal) is read as it is: the next commit writes 2 */
	if (rec_jint(o, "version", 1, RECORD_VERSION, -1, &ver))
		BAD("\"version\" must be 1-%d (a newer agent wrote this record?)", RECORD_VERSION);
	if (rec_jint(o, "journal", 0, ver >= 2 ? 0x7FFFFFFFFFFFLL : 0, 0, &jn))
		BAD("\"journal\" must be an epoch number (version 2)");
	d->journal = (unsigned long)jn;
	if ((x = json_object_get(o, "node"))) {
		if (rec_node_decode(x, &d->node, &d->uplink_mtu, err, errlen))
			goto bad;
		d->have_node = true;
	}
	if ((x = json_object_get(o, "egressShard")) && rec_egress_decode(x, &d->egress, err, errlen))
		goto bad;
	arr = json_object_get(o, "attachments");
	if (!json_is_array(arr))
		BAD("\"vpcs\" and \"attachments\" must be arrays");
	if (rec_vpcs_decode(json_object_get(o, "vpcs"), &d->vpcs, &d->nvpcs, err, errlen))
		goto bad;
	d->atts = calloc(json_array_size(arr) + 1, sizeof(*d->atts));
	if (!d->atts)
		BAD("out of memory");
	json_array_foreach(arr, i, x) {
		if (parse_att_at(x, &d->atts[d->natts], "attachments", i, err, errlen))
			goto bad;
		d->natts++;
	}
	if (check_data(d, err, errlen))
		goto bad;
	json_decref(o);
	return 0;
bad:
	json_decref(o);
	record_data_free(d);
	return -EINVAL;
}

/* One journal line (a commit) applied to d: "vpcs" replaces the list, "del"
 * removes by key, "put" adds or replaces by key; x (d's index) follows. */
static int journal_apply(json_t *o, struct rec_data *d, struct rec_index *ix, size_t line, char *err, size_t errlen)
{
	json_t *vs = json_object_get(o, "vpcs"), *del = json_object_get(o, "del"), *put = json_object_get(o, "put"), *x;
	const char *k;
	char why[400];
	size_t i;

	if (!json_is_object(o))
		return snprintf(err, errlen, "line %zu: not a JSON object", line), -EINVAL;
	json_object_foreach(o, k, x)
		if (strcmp(k, "vpcs") && strcmp(k, "del") && strcmp(k, "put"))
			return snprintf(err, errlen, "line %zu: unknown field \"%.40s\"", line, k), -EINVAL;
	if ((del && !json_is_array(del)) || (put && !json_is_array(put)))
		return snprintf(err, errlen, "line %zu: \"del\" and \"put\" must be arrays", line), -EINVAL;
	if (vs) {
		struct rec_vpc *nv;
		size_t n;

		if (rec_vpcs_decode(vs, &nv, &n, why, sizeof(why)))
			return snprintf(err, errlen, "line %zu: %s", line, why), -EINVAL;
		free(d->vpcs);
		d->vpcs = nv;
		d->nvpcs = n;
	}
	json_array_foreach(del, i, x) {
		char vpc[GDP_ID_MAX + 1], id[GDP_ID_MAX + 1];
		ssize_t at;

		if (rec_key_decode(x, vpc, id))
			return snprintf(err, errlen, "line %zu: del[%zu] needs \"vpc\" and \"id\"", line, i), -EINVAL;
		if ((at = data_find(d, ix, vpc, id)) >= 0) {
			size_t last = d->natts - 1;

			rec_index_del(ix, data_key(&d->atts[at]), d, (uint32_t)at);
			rec_att_clear(&d->atts[at]);
			if ((size_t)at != last) { /* the last one takes its place */
				rec_index_del(ix, data_key(&d->atts[last]), d, (uint32_t)last);
				d->atts[at] = d->atts[last];
				if (rec_index_put(ix, data_key(&d->atts[at]), d, (uint32_t)at))
					return snprintf(err, errlen, "out of memory"), -ENOMEM;
			}
			d->natts--;
		}
	}
	if (put && json_array_size(put)) {
		struct rec_att *na = realloc(d->atts, (d->natts + json_array_size(put) + 1) * sizeof(*na));

		if (!na)
			return snprintf(err, errlen, "out of memory"), -ENOMEM;
		d->atts = na;
	}
	json_array_foreach(put, i, x) {
		struct rec_att a;
		ssize_t at;

		if (parse_att_at(x, &a, "put", i, why, sizeof(why)))
			return snprintf(err, errlen, "line %zu: %s", line, why), -EINVAL;
		if ((at = data_find(d, ix, a.m.vpc, a.m.id)) >= 0) {
			rec_att_clear(&d->atts[at]);
			d->atts[at] = a;
		} else {
			if (rec_index_put(ix, data_key(&a), d, (uint32_t)d->natts)) {
				rec_att_clear(&a);
				return snprintf(err, errlen, "out of memory"), -ENOMEM;
			}
			d->atts[d->natts++] = a;
		}
	}
	return 0;
}

int record_parse_journal(const char *text, size_t len, struct rec_data *d, size_t *lines, bool *torn,
			 char *err, size_t errlen)
{
	const char *p = text, *end = len ? memchr(text, 0, len) : NULL, *nl;
	struct rec_index x = { 0 };
	json_error_t je;
	json_t *o;
	unsigned long ep;
	size_t line = 1;

	/* The journal ends at its first NUL: the zeroed tail commits are
	 * written over (agent/record.c), or a commit whose write only partly
	 * reached the disk and was never acknowledged. JSON text has none. */
	end = end ? end : text + len;
	*lines = 0;
	*torn = false;
	nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl) {
		/* the header itself was never completed: a compaction that did not finish */
		*torn = true;
		return 1;
	}
	if (rec_journal_header_decode(p, (size_t)(nl - p), &ep))
		return snprintf(err, errlen, "line 1: must be {\"version\": %d, \"journal\": N}", RECORD_VERSION),
		       -EINVAL;
	if (ep != d->journal)
		return 1; /* a journal of another epoch: record.json already holds it */
	if (data_index(d, &x)) {
		rec_index_free(&x);
		return snprintf(err, errlen, "out of memory"), -EINVAL;
	}
	for (p = nl + 1; p < end; p = nl + 1) {
		line++;
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl) {
			/* a commit whose append never completed (a crash while
			 * writing it): it was never acknowledged, so it is dropped */
			*torn = true;
			break;
		}
		o = json_loadb(p, (size_t)(nl - p), JSON_REJECT_DUPLICATES, &je);
		if (!o) {
			rec_index_free(&x);
			return snprintf(err, errlen, "line %zu: not JSON (%s)", line, je.text), -EINVAL;
		}
		if (journal_apply(o, d, &x, line, err, errlen)) {
			json_decref(o);
			rec_index_free(&x);
			return -EINVAL;
		}
		json_decref(o);
		(*lines)++;
	}
	rec_index_free(&x);
	if (check_data(d, err, errlen))
		return -EINVAL;
	return 0;
}

struct remotes_parse {
	struct gdp_state *st;
	json_int_t version;
	bool have_version;
	char *err;
	size_t errlen;
};


static int remotes_member(const char *name, json_t *v, void *ctx)
{
	struct remotes_parse *p = ctx;

	if (strcmp(name, "version"))
		return 0; /* other members: ignored, as a whole-tree reader would */
	if (!json_is_integer(v))
		return snprintf(p->err, p->errlen, "\"version\" must be an integer"), -EINVAL;
	p->version = json_integer_value(v);
	p->have_version = true;
	return 0;
}

static int remotes_elem(json_t *x, size_t i, void *ctx)
{
	struct remotes_parse *p = ctx;
	struct gdp_remote m;
	int rc;

	if ((rc = rec_remote_decode(x, i, &m, p->err, p->errlen)))
		return rc;
	if (gdp_state_add_remote(p->st, &m))
		return snprintf(p->err, p->errlen, "out of memory"), -ENOMEM;
	return 0;
}

/*
 * One element's tree at a time (gj_stream_array): a whole-file tree of
 * 100,000 remotes was ~50 MiB at every start.
 */
int record_parse_remotes(const char *text, size_t len, struct gdp_state *st, char *err, size_t errlen)
{
	struct remotes_parse p = { .st = st, .err = err, .errlen = errlen };
	size_t n0 = st->n_remotes;
	char why[300];
	bool found;
	int rc;

	err[0] = 0;
	rc = gj_stream_array(text, len, "remotes", remotes_member, remotes_elem, &p, &found, why, sizeof(why));
	if (rc && !err[0])
		snprintf(err, errlen, "not the remotes file (%s)", why);
	if (!rc && (!found || !p.have_version || p.version != RECORD_REMOTES_VERSION))
		rc = -EINVAL, snprintf(err, errlen, "must be {\"version\": %d, \"remotes\": [...]}", RECORD_REMOTES_VERSION);
	if (rc) {
		st->n_remotes = n0; /* nothing of a refused file is kept */
		return -EINVAL;
	}
	return 0;
}

#undef BAD
