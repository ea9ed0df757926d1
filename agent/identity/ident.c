/* Node identity: the pure parts (ident.h). */
#include "agent/identity/ident.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"

static int bad(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Linux's dev_valid_name(): 1-15 bytes, not "." or "..", no '/', ':' or space. */
static bool ifname_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (!n || n > GID_IFNAME_MAX || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || isspace((unsigned char)s[i]) || !isprint((unsigned char)s[i]))
			return false;
	return true;
}

static void block_str(const uint8_t block[6], char *buf, size_t n)
{
	struct in6_addr a;
	char t[INET6_ADDRSTRLEN];

	memset(&a, 0, sizeof(a));
	memcpy(a.s6_addr, block, 6);
	inet_ntop(AF_INET6, &a, t, sizeof(t));
	snprintf(buf, n, "%s/48", t);
}

/* "addr/48" with host bits zero -> 6 bytes. */
static int parse_block(const char *s, uint8_t block[6], char *why, size_t whylen)
{
	char addr[INET6_ADDRSTRLEN + 1];
	const char *slash = strchr(s, '/');
	struct in6_addr a;
	size_t i;

	if (!slash || (size_t)(slash - s) >= sizeof(addr) || strcmp(slash + 1, "48"))
		return bad(why, whylen, "spec.sidBlock %s: not an IPv6 /48", s);
	memcpy(addr, s, (size_t)(slash - s));
	addr[slash - s] = 0;
	if (inet_pton(AF_INET6, addr, &a) != 1)
		return bad(why, whylen, "spec.sidBlock %s: not an IPv6 /48", s);
	for (i = 6; i < 16; i++)
		if (a.s6_addr[i])
			return bad(why, whylen, "spec.sidBlock %s: host bits set (a /48 block ends at byte 6)", s);
	memcpy(block, a.s6_addr, 6);
	return 0;
}

int gid_spec_parse(const json_t *ndp, const char *node, struct gid_spec *out, char *why, size_t whylen)
{
	const char *name = gj_str(ndp, "metadata.name"), *blk = gj_str(ndp, "spec.sidBlock");
	const char *uid = gj_str(ndp, "metadata.uid");
	json_t *pin = gj_get(ndp, "spec.nodeID"), *ups = gj_get(ndp, "spec.uplinks"), *u;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(ndp))
		return bad(why, whylen, "NodeDataplane is not an object");
	if (!name || !node || strcmp(name, node))
		return bad(why, whylen, "NodeDataplane %s is not node %s's", name ? name : "(no name)", node ? node : "");
	if (!uid || !*uid || strlen(uid) >= sizeof(out->uid))
		return bad(why, whylen, "NodeDataplane %s: no metadata.uid", name);
	snprintf(out->uid, sizeof(out->uid), "%s", uid);
	out->generation = gj_int(ndp, "metadata.generation", 0);
	if (!blk)
		return bad(why, whylen, "NodeDataplane %s: spec.sidBlock missing", name);
	if (strlen(blk) > 43)
		return bad(why, whylen, "NodeDataplane %s: spec.sidBlock longer than 43 characters", name);
	if ((rc = parse_block(blk, out->block, why, whylen)))
		return rc;
	block_str(out->block, out->block_str, sizeof(out->block_str));
	if (pin && !json_is_null(pin)) {
		json_int_t v = json_is_integer(pin) ? json_integer_value(pin) : -1;
		char vs[32];

		if (v < GID_ID_MIN || v > GID_ID_MAX) {
			snprintf(vs, sizeof(vs), "%lld", (long long)v);
			return bad(why, whylen, "NodeDataplane %s: spec.nodeID %s outside 1-57343 (0x1-0xDFFF)", name,
				   json_is_integer(pin) ? vs : "(not an integer)");
		}
		out->pin = (uint16_t)v;
	}
	if (ups && !json_is_null(ups)) {
		if (!json_is_array(ups))
			return bad(why, whylen, "NodeDataplane %s: spec.uplinks is not a list", name);
		if (json_array_size(ups) > GID_UPLINKS_MAX)
			return bad(why, whylen, "NodeDataplane %s: more than 8 spec.uplinks", name);
		json_array_foreach(ups, i, u) {
			const char *s = json_string_value(u);

			if (!s || !ifname_ok(s))
				return bad(why, whylen, "NodeDataplane %s: spec.uplinks[] %s is not an interface name",
					   name, s ? s : "(not a string)");
			snprintf(out->uplinks[out->n_uplinks++], GID_IFNAME_MAX + 1, "%s", s);
		}
	}
	return 0;
}

void gid_object_name(const uint8_t block[6], uint16_t id, char *buf, size_t n)
{
	snprintf(buf, n, "%02x%02x%02x%02x%02x%02x-%04x", block[0], block[1], block[2], block[3], block[4],
		 block[5], id);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int gid_name_parse(const char *name, uint8_t block[6], uint16_t *id)
{
	unsigned v = 0;
	int i;

	if (!name || strlen(name) != GID_NAME_LEN || name[12] != '-')
		return -EINVAL;
	for (i = 0; i < 6; i++) {
		int h = hexval(name[2 * i]), l = hexval(name[2 * i + 1]);

		if (h < 0 || l < 0)
			return -EINVAL;
		block[i] = (uint8_t)(h << 4 | l);
	}
	for (i = 13; i < GID_NAME_LEN; i++) {
		int h = hexval(name[i]);

		if (h < 0)
			return -EINVAL;
		v = v << 4 | (unsigned)h;
	}
	if (v < GID_ID_MIN || v > GID_ID_MAX)
		return -EINVAL;
	*id = (uint16_t)v;
	return 0;
}

void gid_locator(const uint8_t block[6], uint16_t id, char *buf, size_t n)
{
	struct in6_addr a;
	char t[INET6_ADDRSTRLEN];

	memset(&a, 0, sizeof(a));
	memcpy(a.s6_addr, block, 6);
	a.s6_addr[6] = (uint8_t)(id >> 8);
	a.s6_addr[7] = (uint8_t)id;
	inet_ntop(AF_INET6, &a, t, sizeof(t));
	snprintf(buf, n, "%s/64", t);
}

uint16_t gid_hash_start(const char *node)
{
	uint32_t h = 2166136261u;

	for (; node && *node; node++)
		h = (h ^ (uint8_t)*node) * 16777619u;
	return (uint16_t)(GID_ID_MIN + h % GID_ID_MAX);
}

uint16_t gid_next(uint16_t id)
{
	return id >= GID_ID_MAX ? GID_ID_MIN : (uint16_t)(id + 1);
}

json_t *gid_nodeid_new(const char *node, const struct gid_spec *s, uint16_t id)
{
	char name[GID_NAME_LEN + 1];

	gid_object_name(s->block, id, name, sizeof(name));
	return json_pack("{s:s, s:s, s:{s:s, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b}]}, s:{s:s, s:s, s:i}}",
			 "apiVersion", GID_API_VERSION, "kind", "NodeID",
			 "metadata", "name", name, "labels", "network.datumapis.com/node", node,
			 "ownerReferences", "apiVersion", GID_API_VERSION, "kind", "NodeDataplane",
			 "name", node, "uid", s->uid, "controller", 1,
			 "spec", "node", node, "block", s->block_str, "nodeID", (int)id);
}

int gid_held_parse(const json_t *obj, struct gid_held *out, char *why, size_t whylen)
{
	const char *name = gj_str(obj, "metadata.name"), *node = gj_str(obj, "spec.node");
	const char *blk = gj_str(obj, "spec.block"), *uid = gj_str(obj, "metadata.uid");
	json_int_t id = gj_int(obj, "spec.nodeID", -1);
	json_t *refs = gj_get(obj, "metadata.ownerReferences"), *r;
	uint8_t nb[6], sb[6];
	uint16_t nid;
	size_t i;
	char w[160];

	memset(out, 0, sizeof(*out));
	if (!name || gid_name_parse(name, nb, &nid))
		return bad(why, whylen, "NodeID %s: name is not <block hex>-<id hex>", name ? name : "(no name)");
	snprintf(out->name, sizeof(out->name), "%s", name);
	if (!node || !*node || strlen(node) > GID_NODE_MAX)
		return bad(why, whylen, "NodeID %s: spec.node missing or too long", name);
	if (!blk || parse_block(blk, sb, w, sizeof(w)) || memcmp(sb, nb, 6))
		return bad(why, whylen, "NodeID %s: spec.block %s does not match the name", name, blk ? blk : "(none)");
	if (id != nid)
		return bad(why, whylen, "NodeID %s: spec.nodeID does not match the name", name);
	snprintf(out->node, sizeof(out->node), "%s", node);
	memcpy(out->block, nb, 6);
	out->id = nid;
	snprintf(out->uid, sizeof(out->uid), "%s", uid ? uid : "");
	json_array_foreach(refs, i, r) {
		const char *ru = gj_str(r, "uid"), *k = gj_str(r, "kind");

		if (json_is_true(json_object_get(r, "controller")) && ru && k && !strcmp(k, "NodeDataplane"))
			snprintf(out->owner_uid, sizeof(out->owner_uid), "%s", ru);
	}
	return 0;
}

void gid_choose(const struct gid_spec *s, const struct gid_held *own, size_t n, uint16_t prefer,
		struct gid_choice *out)
{
	size_t i;
	int keep = -1;

	memset(out, 0, sizeof(*out));
	if (n > GID_OWN_MAX)
		n = GID_OWN_MAX;
	for (i = 0; i < n; i++) {
		bool usable = !memcmp(own[i].block, s->block, 6) && !strcmp(own[i].owner_uid, s->uid);

		out->release[i] = true;
		if (!usable)
			continue;
		if (s->pin) {
			if (own[i].id == s->pin)
				keep = (int)i;
		} else if (keep < 0 || own[i].id == prefer ||
			   (own[keep].id != prefer && own[i].id < own[keep].id)) {
			keep = (int)i;
		}
	}
	out->keep = keep;
	if (keep >= 0)
		out->release[keep] = false;
	else
		out->want = s->pin ? s->pin : prefer;
}

void gid_taken_set(struct gid_taken *t, uint16_t id)
{
	t->bits[id >> 3] |= (uint8_t)(1u << (id & 7));
}

bool gid_taken_has(const struct gid_taken *t, uint16_t id)
{
	return t->bits[id >> 3] & (1u << (id & 7));
}

uint16_t gid_next_free(const struct gid_taken *t, uint16_t from)
{
	uint16_t id = from < GID_ID_MIN || from > GID_ID_MAX ? GID_ID_MIN : from;
	unsigned i;

	for (i = 0; i < GID_ID_MAX; i++, id = gid_next(id))
		if (!gid_taken_has(t, id))
			return id;
	return 0;
}

/* ---- status --------------------------------------------------------------- */

static const json_t *cur_cond(const json_t *cur, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(gj_get(cur, "status.conditions"), i, c) {
		const char *t = gj_str(c, "type");

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

static json_t *cond(const char *type, const struct gid_cond *c, int64_t gen, const json_t *cur, const char *now)
{
	const json_t *old = cur_cond(cur, type);
	const char *os = old ? gj_str(old, "status") : NULL, *ot = old ? gj_str(old, "lastTransitionTime") : NULL;
	const char *ltt = os && ot && !strcmp(os, c->status) ? ot : now;

	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", type, "status", c->status, "reason", c->reason,
			 "message", c->message ? c->message : "", "lastTransitionTime", ltt,
			 "observedGeneration", (json_int_t)gen);
}

json_t *gid_status_intent(const struct gid_status_in *in, const json_t *cur, const char *now)
{
	json_t *st = json_object(), *caps = json_array(), *conds = json_array();
	bool ok_id = !strcmp(in->identity.status, "True"), ok_dp = !strcmp(in->datapath_cond.status, "True");
	struct gid_cond ready;
	char msg[600];
	size_t i;

	if (in->node_id && in->block) {
		char name[GID_NAME_LEN + 1], loc[64];

		gid_object_name(in->block, in->node_id, name, sizeof(name));
		gid_locator(in->block, in->node_id, loc, sizeof(loc));
		json_object_set_new(st, "nodeID", json_integer(in->node_id));
		json_object_set_new(st, "nodeIDRef", json_pack("{s:s}", "name", name));
		json_object_set_new(st, "locator", json_string(loc));
	}
	if (in->datapath)
		json_object_set_new(st, "datapath", json_string(in->datapath));
	for (i = 0; i < in->n_caps; i++)
		json_array_append_new(caps, json_string(in->caps[i]));
	json_object_set_new(st, "capabilities", caps);
	json_object_set_new(st, "reporter", json_pack("{s:s, s:s, s:s}", "node", in->node, "agentInstance",
						      in->instance ? in->instance : "", "version",
						      in->version ? in->version : ""));
	{
		json_t *dr = json_array();

		for (i = 0; i < in->n_drift; i++)
			if (in->drift_counts[i])
				json_array_append_new(dr, json_pack("{s:s, s:I}", "kind", in->drift_kinds[i], "count",
								    (json_int_t)in->drift_counts[i]));
		if (json_array_size(dr))
			json_object_set_new(st, "driftRepaired", dr);
		else
			json_decref(dr);
	}
	if (ok_id && ok_dp) {
		ready = (struct gid_cond){ "True", "Ready", "identity assigned and datapath verified" };
	} else {
		snprintf(msg, sizeof(msg), "%s%s%s", ok_id ? "" : in->identity.reason,
			 !ok_id && !ok_dp ? ", " : "", ok_dp ? "" : in->datapath_cond.reason);
		ready = (struct gid_cond){ !strcmp(in->identity.status, "False") ||
						   !strcmp(in->datapath_cond.status, "False") ? "False" : "Unknown",
					   "NotReady", msg };
	}
	json_array_append_new(conds, cond(GID_COND_IDENTITY, &in->identity, in->generation, cur, now));
	json_array_append_new(conds, cond(GID_COND_DATAPATH, &in->datapath_cond, in->generation, cur, now));
	json_array_append_new(conds, cond(GID_COND_READY, &ready, in->generation, cur, now));
	json_object_set_new(st, "conditions", conds);
	return json_pack("{s:s, s:s, s:{s:s}, s:o}", "apiVersion", GID_API_VERSION, "kind", "NodeDataplane",
			 "metadata", "name", in->node, "status", st);
}

bool gid_status_equal(const json_t *cur, const json_t *intent)
{
	return cur && gj_subset(json_object_get(intent, "status"), json_object_get(cur, "status"),
				 GJ_ARRAYS_SAME_LENGTH);
}
