#include "translator/nic.h"

#include "common/json.h"
#include "translator/intent.h"
#include "translator/ssa.h"

#include <stdio.h>
#include <string.h>

static const char *str_at(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static const json_t *find_cond(const json_t *obj, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(gj_get(obj, "status.conditions"), i, c)
		if (!strcmp(str_at(c, "type") ?: "", type))
			return c;
	return NULL;
}

/* Printable ASCII, 1..max bytes: values copied from objects others write. */
static bool value_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;
	if (!n || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

/* The ownerReference of obj marked controller, or NULL. */
static const json_t *controller_owner(const json_t *obj)
{
	const json_t *r;
	size_t i;

	json_array_foreach(gj_get(obj, "metadata.ownerReferences"), i, r)
		if (json_is_true(json_object_get(r, "controller")))
			return r;
	return NULL;
}

bool nic_attachment_links(const json_t *iface, const json_t *att)
{
	const char *ns = gj_str(iface, "metadata.namespace"), *name = gj_str(iface, "metadata.name");
	const char *uid = gj_str(iface, "metadata.uid");
	const json_t *owner;

	if (!att || !ns || !name || !*name || !uid || !*uid)
		return false;
	owner = controller_owner(att);
	return !strcmp(gj_str(att, "metadata.namespace") ?: "", ns) &&
	       !strcmp(gj_str(att, "metadata.name") ?: "", name) &&
	       !strcmp(gj_str(att, "spec.interfaceRef.name") ?: "", name) && owner &&
	       !strcmp(str_at(owner, "kind") ?: "", "NetworkInterface") &&
	       !strcmp(str_at(owner, "name") ?: "", name) &&
	       !strcmp(str_at(owner, "uid") ?: "", uid);
}

/* One condition derived from the attachment's condition `from`. */
static void derive(const json_t *att, const char *from, const char *r_true, const char *r_false,
		   const char *r_unknown, const char **status, const char **reason, char *msg,
		   size_t msglen)
{
	const json_t *c = find_cond(att, from);
	const char *st = str_at(c, "status"), *ar = str_at(c, "reason"), *name = gj_str(att, "metadata.name");

	if (st && !strcmp(st, "True")) {
		*status = "True";
		*reason = r_true;
	} else if (st && !strcmp(st, "False")) {
		*status = "False";
		*reason = r_false;
	} else {
		*status = "Unknown";
		*reason = r_unknown;
	}
	if (!c)
		snprintf(msg, msglen, "VPCAttachment %s has no %s condition yet", name, from);
	else if (condition_reason_ok(ar) && strlen(ar) <= 128)
		snprintf(msg, msglen, "VPCAttachment %s: %s=%s (%s)", name, from, st ? st : "?", ar);
	else
		snprintf(msg, msglen, "VPCAttachment %s: %s=%s", name, from, st ? st : "?");
}

static json_t *make_cond(const json_t *obj, const char *type, const char *status,
			 const char *reason, const char *msg, const char *now)
{
	const json_t *cur = find_cond(obj, type);
	const char *ltt = now;
	json_t *c;

	if (cur && !strcmp(str_at(cur, "status") ?: "", status) &&
	    value_ok(str_at(cur, "lastTransitionTime"), 64))
		ltt = str_at(cur, "lastTransitionTime");
	c = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status, "reason", reason,
		      "message", msg, "lastTransitionTime", ltt);
	if (c && json_is_integer(gj_get(obj, "metadata.generation")))
		json_object_set(c, "observedGeneration", gj_get(obj, "metadata.generation"));
	return c;
}

json_t *nic_conditions(const json_t *obj, const json_t *att, const struct nic_missing *missing,
		       const char *now)
{
	const char *ps, *pr, *gs, *gr;
	char pm[512], gm[512];
	json_t *out;

	if (att) {
		derive(att, "Ready", R_ATT_READY, R_ATT_NOT_READY, R_ATT_READY_UNKNOWN, &ps, &pr, pm,
		       sizeof(pm));
		derive(att, "Programmed", R_ATT_PROGRAMMED, R_ATT_NOT_PROGRAMMED,
		       R_ATT_PROGRAMMED_UNKNOWN, &gs, &gr, gm, sizeof(gm));
	} else {
		const struct nic_missing dflt = { "False", R_ATT_MISSING,
						  "no VPCAttachment of this name is controlled by this interface" };
		const struct nic_missing *m = missing ? missing : &dflt;
		ps = gs = m->status;
		pr = gr = m->reason;
		snprintf(pm, sizeof(pm), "%s", m->message);
		snprintf(gm, sizeof(gm), "%s", m->message);
	}
	out = json_array();
	if (!out || json_array_append_new(out, make_cond(obj, C_PREPARED, ps, pr, pm, now)) ||
	    json_array_append_new(out, make_cond(obj, C_PROGRAMMED, gs, gr, gm, now))) {
		json_decref(out);
		return NULL;
	}
	return out;
}

json_t *nic_fields_intent(const json_t *iface, const json_t *att, char *err, size_t errlen)
{
	const char *name = gj_str(iface, "metadata.name"), *ns = gj_str(iface, "metadata.namespace");
	const char *uid = gj_str(iface, "metadata.uid"), *api = gj_str(iface, "apiVersion");
	json_t *o, *st = json_object();

	if (!name || !*name || !ns || !*ns || !uid || !*uid) {
		snprintf(err, errlen, "NetworkInterface %s/%s: metadata.name, namespace or uid missing",
			 ns ? ns : "?", name ? name : "?");
		json_decref(st);
		return NULL;
	}
	o = json_pack("{s:s, s:s, s:{s:s, s:s, s:s}, s:o}", "apiVersion",
		      api && *api ? api : NIC_GROUP "/v1alpha", "kind", "NetworkInterface", "metadata",
		      "name", name, "namespace", ns, "uid", uid, "status", st);
	if (!o) {
		snprintf(err, errlen, "NetworkInterface %s/%s: out of memory", ns, name);
		return NULL;
	}
	if (att && value_ok(gj_str(att, "metadata.name"), 253)) {
		/* The VPC operator's base62 VPC id (NIR: NI status.vpc = attachment status.vpc). */
		const char *vpc = gj_str(att, "status.vpc");
		json_object_set_new(st, "attachmentRef",
				    json_pack("{s:s, s:s, s:s}", "apiGroup", VPCATT_GROUP, "kind",
					      "VPCAttachment", "name", gj_str(att, "metadata.name")));
		if (value_ok(vpc, 253))
			json_object_set_new(st, "vpc", json_string(vpc));
	}
	return o;
}

bool nic_fields_satisfied(const json_t *iface, const json_t *intent, const char *manager,
			  char *why, size_t whylen)
{
	return ssa_status_satisfied(iface, intent, manager, why, whylen);
}

/* ---- guarded JSON Patch on an atomic conditions list ---- */

static int op_add(json_t *ops, const char *op, const char *path, json_t *value /* stolen, may be NULL */)
{
	json_t *o = json_pack("{s:s, s:s}", "op", op, "path", path);
	if (!o) {
		json_decref(value);
		return -1;
	}
	if (value && json_object_set_new(o, "value", value)) {
		json_decref(o);
		return -1;
	}
	if (!value && !strcmp(op, "test") && json_object_set_new(o, "value", json_null())) {
		json_decref(o);
		return -1;
	}
	return json_array_append_new(ops, o);
}

/* Equal as conditions: every key of want equals have's, and have has no other key. */
static bool cond_equal(const json_t *want, const json_t *have)
{
	return json_is_object(have) && json_equal(want, have);
}

json_t *cond_patch_build(const json_t *obj, const json_t *want, char *err, size_t errlen)
{
	const json_t *st = json_object_get(obj, "status");
	const json_t *list = json_object_get(st, "conditions"), *w, *c;
	json_t *ops = json_array(), *tests = json_array(), *changes = json_array();
	size_t n, i, j;
	char path[64];
	bool fail = false;

	if (!ops || !tests || !changes)
		goto oom;
	if (!json_is_array(want)) {
		snprintf(err, errlen, "wanted conditions are not a list");
		goto bad;
	}
	json_array_foreach(want, j, w) {
		if (!json_is_string(json_object_get(w, "type"))) {
			snprintf(err, errlen, "wanted condition %zu has no type", j);
			goto bad;
		}
	}
	if (st && !json_is_object(st) && !json_is_null(st)) {
		snprintf(err, errlen, "status is not an object");
		goto bad;
	}
	if (list && !json_is_array(list) && !json_is_null(list)) {
		snprintf(err, errlen, "status.conditions is not a list");
		goto bad;
	}
	if (!json_is_object(st) || !json_is_array(list)) {
		/* No list yet: add it whole, guarded by its (and status's) absence. */
		if (!json_array_size(want))
			goto done;
		if (!json_is_object(st)) {
			fail |= op_add(tests, "test", "/status", NULL) != 0;
			fail |= op_add(changes, "add", "/status",
				       json_pack("{s:O}", "conditions", want)) != 0;
		} else {
			fail |= op_add(tests, "test", "/status/conditions", NULL) != 0;
			fail |= op_add(changes, "add", "/status/conditions", json_deep_copy(want)) != 0;
		}
		if (fail)
			goto oom;
		goto join;
	}
	n = json_array_size(list);
	json_array_foreach(want, j, w) {
		const char *type = str_at(w, "type");
		bool found = false;
		/* The first entry of this type is ours to replace; later ones are removed below. */
		for (i = 0; i < n && !found; i++) {
			c = json_array_get(list, i);
			if (strcmp(str_at(c, "type") ?: "", type))
				continue;
			found = true;
			if (!cond_equal(w, c)) {
				snprintf(path, sizeof(path), "/status/conditions/%zu", i);
				fail |= op_add(changes, "replace", path, json_deep_copy(w)) != 0;
			}
		}
	}
	/* Duplicates of our types (someone appended one): remove, highest index first. */
	for (i = n; i-- > 0;) {
		const char *type = str_at(json_array_get(list, i), "type");
		bool earlier = false;
		if (!type)
			continue;
		json_array_foreach(want, j, w)
			if (!strcmp(str_at(w, "type"), type))
				break;
		if (j == json_array_size(want))
			continue;
		for (size_t k = 0; k < i && !earlier; k++)
			earlier = !strcmp(str_at(json_array_get(list, k), "type") ?: "", type);
		if (earlier) {
			snprintf(path, sizeof(path), "/status/conditions/%zu", i);
			fail |= op_add(changes, "remove", path, NULL) != 0;
		}
	}
	json_array_foreach(want, j, w) {
		if (!find_cond(obj, str_at(w, "type")))
			fail |= op_add(changes, "add", "/status/conditions/-", json_deep_copy(w)) != 0;
	}
	if (fail)
		goto oom;
	if (!json_array_size(changes))
		goto done;
	/* Guards: the list still has this layout (every index's type) and this length. */
	if (n == 0) {
		fail |= op_add(tests, "test", "/status/conditions", json_array()) != 0;
	} else {
		json_array_foreach(list, i, c) {
			if (json_is_string(json_object_get(c, "type"))) {
				snprintf(path, sizeof(path), "/status/conditions/%zu/type", i);
				fail |= op_add(tests, "test", path, json_incref(json_object_get(c, "type"))) != 0;
			} else {
				snprintf(path, sizeof(path), "/status/conditions/%zu", i);
				fail |= op_add(tests, "test", path, json_deep_copy(c)) != 0;
			}
		}
		c = json_array_get(list, 0);
		if (json_is_string(json_object_get(c, "type"))) {
			snprintf(path, sizeof(path), "/status/conditions/-%zu/type", n);
			fail |= op_add(tests, "test", path, json_incref(json_object_get(c, "type"))) != 0;
		} else {
			snprintf(path, sizeof(path), "/status/conditions/-%zu", n);
			fail |= op_add(tests, "test", path, json_deep_copy(c)) != 0;
		}
	}
	if (fail)
		goto oom;
join:
	if (json_array_extend(ops, tests) || json_array_extend(ops, changes))
		goto oom;
done:
	json_decref(tests);
	json_decref(changes);
	return ops;
oom:
	snprintf(err, errlen, "out of memory");
bad:
	json_decref(ops);
	json_decref(tests);
	json_decref(changes);
	return NULL;
}

json_t *cond_list_merged(const json_t *obj, const json_t *want, char *err, size_t errlen)
{
	const json_t *st = json_object_get(obj, "status"), *list, *c, *w;
	json_t *out;
	size_t i, j;

	list = json_object_get(st, "conditions");
	if (!json_is_array(want) || (st && !json_is_object(st) && !json_is_null(st)) ||
	    (list && !json_is_array(list) && !json_is_null(list))) {
		snprintf(err, errlen, "status, status.conditions or the wanted list has the wrong type");
		return NULL;
	}
	json_array_foreach(want, j, w)
		if (!json_is_string(json_object_get(w, "type"))) {
			snprintf(err, errlen, "wanted condition %zu has no type", j);
			return NULL;
		}
	if (!(out = json_array()))
		goto oom;
	json_array_foreach(list, i, c) {
		const char *t = str_at(c, "type");
		const json_t *mine = NULL;
		bool earlier = false;
		json_array_foreach(want, j, w)
			if (t && !strcmp(str_at(w, "type"), t))
				mine = w;
		if (!mine) {
			if (json_array_append_new(out, json_deep_copy(c)))
				goto oom;
			continue;
		}
		for (size_t k = 0; k < i && !earlier; k++)
			earlier = !strcmp(str_at(json_array_get(list, k), "type") ?: "", t);
		if (!earlier && json_array_append_new(out, json_deep_copy(mine)))
			goto oom;
	}
	json_array_foreach(want, j, w)
		if (!find_cond(obj, str_at(w, "type")) && json_array_append_new(out, json_deep_copy(w)))
			goto oom;
	return out;
oom:
	json_decref(out);
	snprintf(err, errlen, "out of memory");
	return NULL;
}
