/* Pure parts of the reports: names, spec/status intent, routes read back. */
#include "agent/report/report.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cni/base62.h"

static bool dns_subdomain(const char *s)
{
	size_t n = strlen(s), i;

	if (!n || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!(islower(c) || isdigit(c) || c == '-' || c == '.'))
			return false;
	}
	return true;
}

int rpt_name(const char *node, const char *vpc, const char *att, char *buf, size_t n,
	     char *why, size_t whylen)
{
	uint64_t v, a;
	const char *e = NULL;

	if (!node || !dns_subdomain(node)) {
		snprintf(why, whylen, "node name '%s' is not a lowercase DNS name", node ? node : "");
		return -EINVAL;
	}
	if (!vpc || b62_decode(vpc, &v, &e)) {
		snprintf(why, whylen, "vpc id '%s': %s", vpc ? vpc : "", e ? e : "missing");
		return -EINVAL;
	}
	e = NULL;
	if (!att || b62_decode(att, &a, &e)) {
		snprintf(why, whylen, "attachment id '%s': %s", att ? att : "", e ? e : "missing");
		return -EINVAL;
	}
	if ((size_t)snprintf(buf, n, "%s-%" PRIx64 "-%" PRIx64, node, v, a) >= n ||
	    strlen(buf) > 253) {
		snprintf(why, whylen, "report name for node '%s' longer than 253 characters", node);
		return -EINVAL;
	}
	return 0;
}

static json_t *sid_json(const struct gdp_node *node, unsigned fn, uint16_t arg)
{
	struct in6_addr sid;
	char s[INET6_ADDRSTRLEN];

	gdp_sid(node, fn, arg, &sid);
	return json_string(inet_ntop(AF_INET6, &sid, s, sizeof(s)));
}

json_t *rpt_spec(const char *node, const struct gdp_state *st, const struct gdp_attachment *a,
		 const struct rpt_pod *pod)
{
	const struct gdp_vpc *v = gdp_state_find_vpc(st, a->vpc);
	json_t *spec, *subnets, *routes;
	char pb[64];
	size_t i;

	if (!v)
		return NULL;
	spec = json_object();
	subnets = json_array();
	routes = json_array();
	json_object_set_new(spec, "node", json_string(node));
	json_object_set_new(spec, "vpc", json_string(a->vpc));
	json_object_set_new(spec, "vpcAttachment", json_string(a->id));
	if (a->container_id[0])
		json_object_set_new(spec, "containerID", json_string(a->container_id));
	if (pod && (pod->ns[0] || pod->name[0]))
		json_object_set_new(spec, "pod", json_pack("{s:s, s:s}", "namespace", pod->ns,
							   "name", pod->name));
	json_object_set_new(spec, "hostInterface", json_string(a->host_ifname));
	if (pod && pod->guest_ifname[0])
		json_object_set_new(spec, "guestInterface", json_string(pod->guest_ifname));
	json_object_set_new(spec, "table", json_integer((json_int_t)v->table));
	for (i = 0; i < a->n_addrs && i < GDP_ADDRS_MAX; i++) {
		const struct gdp_prefix *p = &a->addrs[i];

		gdp_prefix_str(p, pb, sizeof(pb));
		json_array_append_new(subnets, json_string(pb));
		/* What other nodes program: IPv6 to the VPC's decap SID (End.DT6
		 * into its table), IPv4 to this attachment's End.DX4 SID (needs no
		 * VRF; only when the backend programs one, i.e. nh4 is set). */
		if (p->family == AF_INET6)
			json_array_append_new(routes, json_pack("{s:s, s:o}", "prefix", pb, "sid",
								sid_json(&st->node, GDP_FN_DECAP, v->arg)));
		else if (p->family == AF_INET && a->nh4.s_addr)
			json_array_append_new(routes, json_pack("{s:s, s:o}", "prefix", pb, "sid",
								sid_json(&st->node, GDP_FN_DX4, a->arg)));
	}
	json_object_set_new(spec, "podSubnets", subnets);
	json_object_set_new(spec, "localSID", sid_json(&st->node, GDP_FN_DECAP, v->arg));
	json_object_set_new(spec, "routes", routes);
	return spec;
}

/* By the results' own index (gdp_results_find): the publisher asks for every
 * attachment of the node, a search of every result each was quadratic. */
static const struct gdp_result *find_res(struct gdp_results *res, enum gdp_obj_kind k, const char *vpc,
					 const char *key)
{
	return res ? gdp_results_find(res, k, vpc, key) : NULL;
}

void rpt_programmed(struct gdp_results *res, const struct gdp_attachment *a, struct rpt_cond *c)
{
	const struct gdp_result *n = find_res(res, GDP_OBJ_NODE, "", "");
	const struct gdp_result *v = find_res(res, GDP_OBJ_VPC, a->vpc, "");
	const struct gdp_result *r = find_res(res, GDP_OBJ_ATTACHMENT, a->vpc, a->id);

	memset(c, 0, sizeof(*c));
	if (!r) {
		snprintf(c->reason, sizeof(c->reason), "NotReconciled");
		snprintf(c->message, sizeof(c->message),
			 "no reconcile of the data plane has covered attachment %s/%s yet", a->vpc, a->id);
	} else if (n && n->err) {
		snprintf(c->reason, sizeof(c->reason), "NodeNotProgrammed");
		snprintf(c->message, sizeof(c->message), "%s", n->msg);
	} else if (v && v->err) {
		snprintf(c->reason, sizeof(c->reason), "VPCNotProgrammed");
		snprintf(c->message, sizeof(c->message), "%s", v->msg);
	} else if (r->err) {
		snprintf(c->reason, sizeof(c->reason), "ProgrammingFailed");
		snprintf(c->message, sizeof(c->message), "%s", r->msg);
	} else if (!r->programmed || (v && !v->programmed)) {
		snprintf(c->reason, sizeof(c->reason), "NotVerified");
		snprintf(c->message, sizeof(c->message),
			 "kernel objects of attachment %s/%s were not found as desired on read-back",
			 a->vpc, a->id);
	} else {
		c->programmed = true;
		snprintf(c->reason, sizeof(c->reason), "Programmed");
		snprintf(c->message, sizeof(c->message),
			 "kernel objects of attachment %s/%s (host interface %s, rules, routes, SIDs) verified in the datapath",
			 a->vpc, a->id, a->host_ifname);
	}
}

static const json_t *find_cond(const json_t *obj, const char *type)
{
	json_t *conds = json_object_get(json_object_get(obj, "status"), "conditions"), *c;
	size_t i;

	json_array_foreach(conds, i, c) {
		const char *t = json_string_value(json_object_get(c, "type"));

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

json_t *rpt_status(const struct rpt_cond *c, int64_t generation, const json_t *cur,
		   const struct rpt_reporter *r, const char *now)
{
	const json_t *prev = cur ? find_cond(cur, "Programmed") : NULL;
	const char *st = c->programmed ? "True" : "False";
	const char *pst = json_string_value(json_object_get(prev, "status"));
	const char *pltt = json_string_value(json_object_get(prev, "lastTransitionTime"));
	/* The transition time moves only when the status does. */
	const char *ltt = pst && pltt && !strcmp(pst, st) ? pltt : now;
	json_t *cond;

	cond = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s}", "type", "Programmed", "status", st,
			 "reason", c->reason, "message", c->message, "observedGeneration",
			 (json_int_t)generation, "lastTransitionTime", ltt);
	return json_pack("{s:I, s:[o], s:{s:s, s:s, s:s}}", "observedGeneration",
			 (json_int_t)generation, "conditions", cond, "reporter", "node", r->node,
			 "version", r->version, "datapath", r->datapath);
}

bool rpt_status_equal(const json_t *cur, const json_t *intent)
{
	json_t *s = json_object_get(cur, "status");

	return s && json_equal(s, (json_t *)intent);
}

json_t *rpt_owner_refs(const char *node, const char *uid)
{
	return json_pack("[{s:s, s:s, s:s, s:s}]", "apiVersion", "v1", "kind", "Node", "name", node, "uid", uid);
}

bool rpt_owner_is(const json_t *obj, const char *node, const char *uid)
{
	json_t *refs = json_object_get(json_object_get(obj, "metadata"), "ownerReferences"), *r;
	size_t i, nodes = 0;
	bool hit = false;

	json_array_foreach(refs, i, r) {
		const char *k = json_string_value(json_object_get(r, "kind"));
		const char *v = json_string_value(json_object_get(r, "apiVersion"));

		if (!k || !v || strcmp(k, "Node") || strcmp(v, "v1"))
			continue;
		nodes++;
		hit = hit || (uid && json_string_value(json_object_get(r, "uid")) &&
			      !strcmp(json_string_value(json_object_get(r, "uid")), uid) &&
			      json_string_value(json_object_get(r, "name")) &&
			      !strcmp(json_string_value(json_object_get(r, "name")), node));
	}
	if (!uid || !*uid)
		return nodes == 0;
	return hit && nodes == 1;
}

/* Host bits beyond the length must be zero. */
static bool canonical(const struct gdp_prefix *p)
{
	unsigned bytes = p->family == AF_INET ? 4 : 16, i;

	for (i = p->len; i < bytes * 8; i++)
		if (p->addr.raw[i / 8] & (0x80 >> (i % 8)))
			return false;
	return true;
}

bool rpt_label_value_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0, i;

	if (!n || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '.' || s[i] == '_'))
			return false;
	return true;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char *rpt_scope_selector(const struct gdp_state *st)
{
	const char **ids = calloc(st->n_vpcs + 1, sizeof(*ids));
	size_t n = 0, len = strlen(RPT_VPC_LABEL) + 8, i;
	char *s, *p;

	if (!ids)
		return NULL;
	for (i = 0; i < st->n_vpcs; i++)
		if (rpt_label_value_ok(st->vpcs[i].id)) {
			ids[n++] = st->vpcs[i].id;
			len += strlen(st->vpcs[i].id) + 1;
		}
	if (!n || n > RPT_SCOPE_MAX_VPCS) {
		free(ids);
		return strdup(n ? RPT_VPC_LABEL : "");
	}
	qsort(ids, n, sizeof(*ids), cmp_id);
	s = malloc(len);
	if (s) {
		p = s + sprintf(s, "%s in (", RPT_VPC_LABEL);
		for (i = 0; i < n; i++)
			if (!i || strcmp(ids[i], ids[i - 1]))
				p += sprintf(p, "%s%s", i ? "," : "", ids[i]);
		strcpy(p, ")");
	}
	free(ids);
	return s;
}

#define BAD(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

int rpt_routes_from_report(const json_t *obj, const char *my_node, const struct gdp_state *local,
			   struct gdp_state *out, char *why, size_t whylen)
{
	const char *name = json_string_value(json_object_get(json_object_get(obj, "metadata"), "name"));
	json_t *spec = json_object_get(obj, "spec"), *routes, *rt;
	const char *node, *vpc, *att, *pst;
	const json_t *cond, *gen, *og, *lbl;
	char want[300], w2[200];
	size_t i, base = out->n_remotes;

	if (!json_is_object(obj) || !name)
		return BAD("object without metadata.name");
	if (!json_is_object(spec))
		return BAD("no spec");
	node = json_string_value(json_object_get(spec, "node"));
	vpc = json_string_value(json_object_get(spec, "vpc"));
	att = json_string_value(json_object_get(spec, "vpcAttachment"));
	if (!node || !vpc || !att)
		return BAD("spec.node, spec.vpc and spec.vpcAttachment must be strings");
	if (strlen(vpc) > GDP_ID_MAX)
		return BAD("spec.vpc longer than %d characters", GDP_ID_MAX);
	if (rpt_name(node, vpc, att, want, sizeof(want), w2, sizeof(w2)))
		return BAD("%s", w2);
	/* The name binds node and ids: a report cannot speak for another one. */
	if (strcmp(want, name))
		return BAD("name does not match spec (want %s)", want);
	/* Learners select on the VPC label: one that names another VPC would
	 * show the report to the wrong learners (and hide it from the right ones). */
	lbl = json_object_get(json_object_get(json_object_get(obj, "metadata"), "labels"), RPT_VPC_LABEL);
	if (lbl && (!json_is_string(lbl) || strcmp(json_string_value(lbl), vpc)))
		return BAD("label %s '%s' does not match spec.vpc '%s'", RPT_VPC_LABEL,
			   json_is_string(lbl) ? json_string_value(lbl) : "(not a string)", vpc);
	if (!strcmp(node, my_node) || !gdp_state_find_vpc(local, vpc))
		return 1;
	cond = find_cond(obj, "Programmed");
	pst = json_string_value(json_object_get(cond, "status"));
	if (!pst || strcmp(pst, "True"))
		return 1;
	/* A status older than the spec does not vouch for the spec's routes. */
	gen = json_object_get(json_object_get(obj, "metadata"), "generation");
	og = json_object_get(cond, "observedGeneration");
	if (json_is_integer(gen) && (!json_is_integer(og) ||
				     json_integer_value(og) != json_integer_value(gen)))
		return 1;
	routes = json_object_get(spec, "routes");
	if (!routes)
		return 0;
	if (!json_is_array(routes))
		return BAD("spec.routes is not an array");
	if (json_array_size(routes) > RPT_ROUTES_MAX)
		return BAD("spec.routes has %zu entries (max %d)", json_array_size(routes), RPT_ROUTES_MAX);
	json_array_foreach(routes, i, rt) {
		const char *pf = json_string_value(json_object_get(rt, "prefix"));
		const char *sid = json_string_value(json_object_get(rt, "sid"));
		struct gdp_remote r;
		uint16_t nid;
		unsigned fn;

		memset(&r, 0, sizeof(r));
		if (gdp_remote_set_vpc(&r, vpc)) { /* checked above: not longer than an id */
			out->n_remotes = base;
			return BAD("spec.vpc '%s': no room for another VPC id", vpc);
		}
		if (!pf || gdp_prefix_parse(pf, &r.prefix) || !canonical(&r.prefix))
			goto bad_route;
		if (!sid || inet_pton(AF_INET6, sid, &r.sid) != 1 ||
		    gdp_sid_parse(&r.sid, NULL, &nid, &fn, NULL)) {
			out->n_remotes = base;
			return BAD("spec.routes[%zu]: invalid SID '%s'", i, sid ? sid : "(none)");
		}
		/* IPv6 goes to a VPC decap SID, IPv4 to an End.DX4 SID. */
		if ((r.prefix.family == AF_INET6 && fn != GDP_FN_DECAP) ||
		    (r.prefix.family == AF_INET && fn != GDP_FN_DX4)) {
			out->n_remotes = base;
			return BAD("spec.routes[%zu]: SID %s has function 0x%X, wrong for %s", i, sid, fn, pf);
		}
		/* Another node's report must not steer traffic to our own SIDs. */
		if (nid == local->node.node_id && !memcmp(r.sid.s6_addr, local->node.block, 6)) {
			out->n_remotes = base;
			return BAD("spec.routes[%zu]: SID %s belongs to this node", i, sid);
		}
		if (gdp_state_add_remote(out, &r)) {
			out->n_remotes = base;
			return BAD("out of memory");
		}
		continue;
bad_route:
		out->n_remotes = base;
		return BAD("spec.routes[%zu]: invalid prefix '%s'", i, pf ? pf : "(none)");
	}
	return 0;
}

int rpt_results_copy(struct gdp_results *dst, const struct gdp_results *src)
{
	size_t i, n = 0;

	gdp_results_init(dst);
	dst->added = src->added;
	dst->removed = src->removed;
	dst->unchanged = src->unchanged;
	dst->retries = src->retries;
	dst->failed = src->failed;
	for (i = 0; i < src->n; i++)
		n += src->v[i].kind != GDP_OBJ_REMOTE;
	if (!n)
		return 0;
	dst->v = malloc(n * sizeof(*src->v));
	if (!dst->v)
		return -ENOMEM;
	/* Remotes can be 100k results: reports never look at them. */
	for (i = 0; i < src->n; i++)
		if (src->v[i].kind != GDP_OBJ_REMOTE)
			dst->v[dst->n++] = src->v[i];
	dst->cap = n;
	return 0;
}

/* ---- overlapping prefixes of one VPC (rpt_remotes_resolve) ---------------- */

static size_t addr_bytes(const struct gdp_prefix *p) { return p->family == AF_INET ? 4 : 16; }

/* VPC, family, length, address, SID: equal prefixes end up side by side,
 * lowest SID first; each (VPC, family) run holds its lengths in order. */
static int cmp_route(const void *a, const void *b)
{
	const struct gdp_remote *x = a, *y = b;
	int c = x->vpc_ix == y->vpc_ix ? 0 : strcmp(gdp_remote_vpc(x), gdp_remote_vpc(y));

	if (c)
		return c;
	if (x->prefix.family != y->prefix.family)
		return x->prefix.family - y->prefix.family;
	if (x->prefix.len != y->prefix.len)
		return x->prefix.len - y->prefix.len;
	c = memcmp(x->prefix.addr.raw, y->prefix.addr.raw, addr_bytes(&x->prefix));
	if (c)
		return c;
	return memcmp(&x->sid, &y->sid, sizeof(x->sid));
}

static bool same_prefix(const struct gdp_remote *x, const struct gdp_remote *y)
{
	return x->vpc_ix == y->vpc_ix && x->prefix.family == y->prefix.family &&
	       x->prefix.len == y->prefix.len &&
	       !memcmp(x->prefix.addr.raw, y->prefix.addr.raw, addr_bytes(&x->prefix));
}

/* p's address cut to len bits (the rest zero) into out (16 bytes). */
static void masked(const struct gdp_prefix *p, unsigned len, uint8_t *out)
{
	memset(out, 0, 16);
	memcpy(out, p->addr.raw, len / 8);
	if (len % 8)
		out[len / 8] = (uint8_t)(p->addr.raw[len / 8] & (0xff00u >> (len % 8)));
}

/* The routes of one length in a (VPC, family) run: v[lo, hi). */
struct lenseg {
	unsigned len;
	size_t lo, hi;
};

/* The route of [lo, hi) (one length, addresses sorted) whose address is a, or NULL. */
static const struct gdp_remote *find_addr(const struct gdp_remote *v, size_t lo, size_t hi,
					  const uint8_t *a, size_t nb)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(v[mid].prefix.addr.raw, a, nb);

		if (!c)
			return &v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

size_t rpt_remotes_resolve(struct gdp_remote *v, size_t n, struct rpt_overlaps *ov,
			   rpt_overlap_fn on_overlap, void *ud)
{
	size_t i, m = 0, run;

	memset(ov, 0, sizeof(*ov));
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_route);
	/* Equal prefixes: the lowest SID stays. */
	for (i = 0; i < n; i++) {
		if (m && same_prefix(&v[m - 1], &v[i])) {
			ov->duplicates++;
			if (on_overlap)
				on_overlap(&v[m - 1], &v[i], false, ud);
			continue;
		}
		if (m != i)
			v[m] = v[i];
		m++;
	}
	/* Nested prefixes: all stay (longest prefix match); each inner one is
	 * counted once, against the nearest (longest) prefix that holds it. */
	for (run = 0; run < m;) {
		struct lenseg seg[129]; /* lengths 0-128 */
		size_t nseg = 0, end = run, nb = addr_bytes(&v[run].prefix);

		while (end < m && v[end].vpc_ix == v[run].vpc_ix &&
		       v[end].prefix.family == v[run].prefix.family) {
			if (!nseg || seg[nseg - 1].len != v[end].prefix.len)
				seg[nseg++] = (struct lenseg){ v[end].prefix.len, end, end };
			seg[nseg - 1].hi = ++end;
		}
		for (size_t s = 1; s < nseg; s++)
			for (i = seg[s].lo; i < seg[s].hi; i++)
				for (size_t t = s; t-- > 0;) {
					uint8_t a[16];
					const struct gdp_remote *outer;

					masked(&v[i].prefix, seg[t].len, a);
					outer = find_addr(v, seg[t].lo, seg[t].hi, a, nb);
					if (outer) {
						ov->nested++;
						if (on_overlap)
							on_overlap(outer, &v[i], true, ud);
						break;
					}
				}
		run = end;
	}
	return m;
}
