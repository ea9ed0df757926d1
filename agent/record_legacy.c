/*
 * The files of agents before the record (state.json, remotes.json), read for
 * the migration into agent/record.h and written by tests in that format.
 */
#include "agent/record_legacy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/json.h"
#include "common/mac.h"

static const char *jstr(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

static int jcopy(json_t *o, const char *k, char *dst, size_t n, bool required)
{
	const char *s = jstr(o, k);

	if (!s)
		return required ? -EINVAL : 0;
	if (strlen(s) >= n)
		return -ENAMETOOLONG;
	strcpy(dst, s);
	return 0;
}

static void bad_obj(struct gdp_results *bad, enum gdp_obj_kind k, const char *vpc, const char *key,
		    const char *what)
{
	struct gdp_result *r;

	if (!bad)
		return;
	r = gdp_results_get(bad, k, vpc, key);
	if (r)
		gdp_result_fail(r, -EINVAL, "%s %s%s%s: %s", gdp_obj_kind_str(k), vpc ? vpc : "",
				key && *key ? "/" : "", key ? key : "", what);
}

static int load_node(json_t *n, struct gdp_node *node, char *err, size_t errlen)
{
	struct gdp_prefix blk;
	const char *b = jstr(n, "block");
	json_int_t id;

	if (!json_is_object(n) || !b || gdp_prefix_parse(b, &blk) || blk.family != AF_INET6 ||
	    blk.len != 48) {
		snprintf(err, errlen, "node: \"block\" must be an IPv6 /48 (e.g. \"fcbb:bb00:1::/48\")");
		return -EINVAL;
	}
	memcpy(node->block, blk.addr.raw, 6);
	id = json_integer_value(json_object_get(n, "node_id"));
	if (!json_is_integer(json_object_get(n, "node_id")) || id <= 0 || id > 0xDFFF) {
		snprintf(err, errlen, "node: \"node_id\" must be 1-0xDFFF");
		return -EINVAL;
	}
	node->node_id = (uint16_t)id;
	if (jcopy(n, "uplink", node->uplink, sizeof(node->uplink), false)) {
		snprintf(err, errlen, "node: \"uplink\" too long");
		return -EINVAL;
	}
	return 0;
}

static int load_vpc(json_t *o, struct gdp_vpc *v, char *why, size_t n)
{
	json_t *pf, *x;
	size_t i;

	memset(v, 0, sizeof(*v));
	if (jcopy(o, "id", v->id, sizeof(v->id), true))
		return snprintf(why, n, "missing or too long \"id\""), -EINVAL;
	if (!json_is_integer(json_object_get(o, "arg")) || !json_is_integer(json_object_get(o, "table")))
		return snprintf(why, n, "\"arg\" and \"table\" must be integers"), -EINVAL;
	json_int_t a = json_integer_value(json_object_get(o, "arg"));
	json_int_t t = json_integer_value(json_object_get(o, "table"));
	if (a < 0 || a > 0xFFFF || t < 0 || t > 0xFFFFFFFFLL)
		return snprintf(why, n, "\"arg\" or \"table\" out of range"), -EINVAL;
	v->arg = (uint16_t)a;
	v->table = (uint32_t)t;
	pf = json_object_get(o, "prefixes");
	if (pf && !json_is_array(pf))
		return snprintf(why, n, "\"prefixes\" must be an array"), -EINVAL;
	json_array_foreach(pf, i, x) {
		if (v->n_prefixes == GDP_VPC_PREFIXES_MAX)
			return snprintf(why, n, "more than %d prefixes", GDP_VPC_PREFIXES_MAX), -EINVAL;
		if (!json_is_string(x) || gdp_prefix_parse(json_string_value(x), &v->prefixes[v->n_prefixes]))
			return snprintf(why, n, "invalid prefix"), -EINVAL;
		v->n_prefixes++;
	}
	return 0;
}

static int load_att(json_t *o, struct gdp_attachment *a, char *why, size_t n)
{
	json_t *ad, *x;
	const char *s;
	size_t i;

	memset(a, 0, sizeof(*a));
	if (jcopy(o, "vpc", a->vpc, sizeof(a->vpc), true) || jcopy(o, "id", a->id, sizeof(a->id), true))
		return snprintf(why, n, "missing or too long \"vpc\"/\"id\""), -EINVAL;
	if (jcopy(o, "container_id", a->container_id, sizeof(a->container_id), false) ||
	    jcopy(o, "host_ifname", a->host_ifname, sizeof(a->host_ifname), true))
		return snprintf(why, n, "missing or too long \"host_ifname\" / \"container_id\""), -EINVAL;
	x = json_object_get(o, "arg");
	if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > 0xFFFF)
		return snprintf(why, n, "\"arg\" must be an integer"), -EINVAL;
	a->arg = (uint16_t)json_integer_value(x);
	ad = json_object_get(o, "addrs");
	if (!json_is_array(ad))
		return snprintf(why, n, "\"addrs\" must be an array"), -EINVAL;
	json_array_foreach(ad, i, x) {
		if (a->n_addrs == GDP_ADDRS_MAX)
			return snprintf(why, n, "more than %d addresses", GDP_ADDRS_MAX), -EINVAL;
		if (!json_is_string(x) || gdp_prefix_parse(json_string_value(x), &a->addrs[a->n_addrs]))
			return snprintf(why, n, "invalid address"), -EINVAL;
		a->n_addrs++;
	}
	if ((s = jstr(o, "nh4")) && inet_pton(AF_INET, s, &a->nh4) != 1)
		return snprintf(why, n, "invalid \"nh4\" %s", s), -EINVAL;
	if ((s = jstr(o, "pod_mac")) && gmac_parse(s, a->pod_mac))
		return snprintf(why, n, "invalid \"pod_mac\" %s", s), -EINVAL;
	x = json_object_get(o, "mtu");
	if (x && (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > 65535))
		return snprintf(why, n, "invalid \"mtu\""), -EINVAL;
	a->mtu = x ? (uint32_t)json_integer_value(x) : 0;
	return 0;
}

static json_t *load_file(const char *dir, const char *name, char *err, size_t errlen, int *rc)
{
	char path[4096];
	json_error_t je;
	json_t *j;

	*rc = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (access(path, F_OK) < 0)
		return NULL;
	j = json_load_file(path, 0, &je);
	if (!j || !json_is_object(j)) {
		snprintf(err, errlen, "%s: %s (line %d)", path, j ? "not a JSON object" : je.text, je.line);
		json_decref(j);
		*rc = -EINVAL;
		return NULL;
	}
	return j;
}

struct remotes_load {
	struct gdp_state *st;
	struct gdp_results *bad;
};

static int remote_elem(json_t *o, size_t i, void *ctx)
{
	struct remotes_load *l = ctx;
	const char *pf = jstr(o, "prefix"), *sid = jstr(o, "sid");
	struct gdp_remote r;
	char why[200], vpc[GDP_ID_MAX + 1];
	int rc;

	(void)i;
	memset(&r, 0, sizeof(r));
	if (jcopy(o, "vpc", vpc, sizeof(vpc), true) || !pf || gdp_prefix_parse(pf, &r.prefix)) {
		bad_obj(l->bad, GDP_OBJ_REMOTE, jstr(o, "vpc"), pf, "missing vpc or invalid prefix");
		return 0;
	}
	if (!sid || inet_pton(AF_INET6, sid, &r.sid) != 1) {
		snprintf(why, sizeof(why), "invalid SID '%s'", sid ? sid : "(none)");
		bad_obj(l->bad, GDP_OBJ_REMOTE, vpc, pf, why);
		return 0;
	}
	if ((rc = gdp_remote_set_vpc(&r, vpc))) {
		snprintf(why, sizeof(why), "vpc: %s", strerror(-rc));
		bad_obj(l->bad, GDP_OBJ_REMOTE, vpc, pf, why);
		return 0;
	}
	return gdp_state_add_remote(l->st, &r) ? -ENOMEM : 0;
}

/* remotes.json, one element's tree at a time (100,000 of them were a ~50 MiB tree). */
static int load_remotes(const char *dir, struct gdp_state *st, struct gdp_results *bad, char *err, size_t errlen)
{
	struct remotes_load l = { st, bad };
	char path[4096], why[300], *text;
	size_t len;
	bool found;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, LEGACY_REMOTES);
	rc = gfile_read(path, 256u << 20, &text, &len);
	if (rc == -ENOENT)
		return 0;
	if (rc)
		return snprintf(err, errlen, "%s: %s", path, strerror(-rc)), rc;
	/* room for as many as the file can hold (each is more than 32 bytes):
	 * pages never written stay unresident, no growth through copies; not
	 * reserved (ENOMEM), it grows as before */
	(void)gdp_state_reserve_remotes(st, st->n_remotes + len / 32 + 1);
	rc = gj_stream_array(text, len, "remotes", NULL, remote_elem, &l, &found, why, sizeof(why));
	free(text);
	if (rc == -ENOMEM)
		return snprintf(err, errlen, "load state: out of memory"), rc;
	if (rc)
		return snprintf(err, errlen, "%s: %s", path, why), -EINVAL;
	return 0;
}

int legacy_load(const char *dir, struct gdp_state *st, struct gdp_results *bad, char *err, size_t errlen)
{
	json_t *j, *arr, *o;
	char why[200];
	size_t i;
	int rc;

	gdp_state_init(st);
	j = load_file(dir, LEGACY_STATE, err, errlen, &rc);
	if (rc)
		return rc;
	if (j) {
		if ((rc = load_node(json_object_get(j, "node"), &st->node, err, errlen))) {
			json_decref(j);
			return rc;
		}
		arr = json_object_get(j, "vpcs");
		json_array_foreach(arr, i, o) {
			struct gdp_vpc v;

			if (load_vpc(o, &v, why, sizeof(why)))
				bad_obj(bad, GDP_OBJ_VPC, jstr(o, "id"), "", why);
			else if (gdp_state_add_vpc(st, &v))
				goto nomem;
		}
		arr = json_object_get(j, "attachments");
		json_array_foreach(arr, i, o) {
			struct gdp_attachment a;

			if (load_att(o, &a, why, sizeof(why)))
				bad_obj(bad, GDP_OBJ_ATTACHMENT, jstr(o, "vpc"), jstr(o, "id"), why);
			else if (gdp_state_add_attachment(st, &a))
				goto nomem;
		}
		json_decref(j);
	}
	return load_remotes(dir, st, bad, err, errlen);
nomem:
	json_decref(j);
	snprintf(err, errlen, "load state: out of memory");
	return -ENOMEM;
}

static json_t *prefix_json(const struct gdp_prefix *p, bool host)
{
	char b[64], a[INET6_ADDRSTRLEN];

	if (host && p->len == (p->family == AF_INET ? 32 : 128))
		return json_string(inet_ntop(p->family, p->addr.raw, a, sizeof(a)));
	return json_string(gdp_prefix_str(p, b, sizeof(b)));
}

static int dump_save(const char *dir, const char *name, json_t *j, char *err, size_t errlen)
{
	char path[4096], *s;
	int rc;

	s = json_dumps(j, JSON_INDENT(1) | JSON_SORT_KEYS);
	json_decref(j);
	if (!s) {
		snprintf(err, errlen, "save %s: out of memory", name);
		return -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	rc = gfile_write_atomic(path, s, strlen(s), err, errlen);
	free(s);
	return rc;
}

int legacy_save_state(const char *dir, const struct gdp_state *st, char *err, size_t errlen)
{
	json_t *j = json_object(), *vpcs = json_array(), *atts = json_array(), *node;
	char a[INET6_ADDRSTRLEN + 4], mac[GMAC_STRLEN];
	struct gdp_prefix blk = { .family = AF_INET6, .len = 48 };
	size_t i, k;

	memcpy(blk.addr.raw, st->node.block, 6);
	node = json_pack("{s:o, s:i, s:s}", "block", prefix_json(&blk, false), "node_id",
			 (int)st->node.node_id, "uplink", st->node.uplink);
	json_object_set_new(j, "node", node);
	for (i = 0; i < st->n_vpcs; i++) {
		const struct gdp_vpc *v = &st->vpcs[i];
		json_t *pf = json_array();

		for (k = 0; k < v->n_prefixes; k++)
			json_array_append_new(pf, prefix_json(&v->prefixes[k], false));
		json_array_append_new(vpcs, json_pack("{s:s, s:i, s:I, s:o}", "id", v->id, "arg",
						      (int)v->arg, "table", (json_int_t)v->table,
						      "prefixes", pf));
	}
	for (i = 0; i < st->n_atts; i++) {
		const struct gdp_attachment *at = &st->atts[i];
		json_t *ad = json_array(), *o;

		for (k = 0; k < at->n_addrs; k++)
			json_array_append_new(ad, prefix_json(&at->addrs[k], true));
		o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, s:i}", "vpc", at->vpc, "id", at->id,
			      "container_id", at->container_id, "host_ifname", at->host_ifname, "arg",
			      (int)at->arg, "addrs", ad, "mtu", (int)at->mtu);
		if (at->nh4.s_addr)
			json_object_set_new(o, "nh4", json_string(inet_ntop(AF_INET, &at->nh4, a, sizeof(a))));
		json_object_set_new(o, "pod_mac", json_string(gmac_str(at->pod_mac, mac)));
		json_array_append_new(atts, o);
	}
	json_object_set_new(j, "vpcs", vpcs);
	json_object_set_new(j, "attachments", atts);
	return dump_save(dir, LEGACY_STATE, j, err, errlen);
}

int legacy_save_remotes(const char *dir, const struct gdp_state *st, char *err, size_t errlen)
{
	json_t *j = json_object(), *arr = json_array();
	char s[INET6_ADDRSTRLEN];
	size_t i;

	for (i = 0; i < st->n_remotes; i++) {
		const struct gdp_remote *r = &st->remotes[i];

		json_array_append_new(arr, json_pack("{s:s, s:o, s:s}", "vpc", gdp_remote_vpc(r), "prefix",
						     prefix_json(&r->prefix, false), "sid",
						     inet_ntop(AF_INET6, &r->sid, s, sizeof(s))));
	}
	json_object_set_new(j, "remotes", arr);
	return dump_save(dir, LEGACY_REMOTES, j, err, errlen);
}
