#include "translator/ssa.h"

#include "common/json.h"

#include <stdio.h>
#include <string.h>

const json_t *ssa_owned_status(const json_t *obj, const char *manager)
{
	const json_t *e;
	size_t i;

	json_array_foreach(gj_get(obj, "metadata.managedFields"), i, e)
		if (!strcmp(gj_str(e, "manager") ?: "", manager) &&
		    !strcmp(gj_str(e, "operation") ?: "", "Apply") &&
		    !strcmp(gj_str(e, "subresource") ?: "", "status"))
			return gj_get(e, "fieldsV1.f:status");
	return NULL;
}

static const json_t *find_cond(const json_t *obj, const char *type)
{
	const json_t *c;
	size_t i;
	json_array_foreach(gj_get(obj, "status.conditions"), i, c)
		if (!strcmp(gj_str(c, "type") ?: "", type))
			return c;
	return NULL;
}

static const char *show(const json_t *v)
{
	return json_is_string(v) ? json_string_value(v) : v ? "(a non-string value)" : "none";
}

static bool conds_satisfied(const json_t *obj, const json_t *want, const json_t *owned_c,
			    const char *manager, char *why, size_t whylen)
{
	static const char *const CK[] = { "status", "reason", "message", "observedGeneration",
					  "lastTransitionTime" };
	const json_t *w, *v;
	const char *k;
	char ckey[400];
	size_t i;

	json_array_foreach(want, i, w) {
		const char *t = gj_str(w, "type") ?: "";
		const json_t *h = find_cond(obj, t);
		if (!h) {
			snprintf(why, whylen, "condition %s: missing", t);
			return false;
		}
		for (size_t c = 0; c < sizeof(CK) / sizeof(CK[0]); c++)
			if (!json_equal(json_object_get(w, CK[c]), json_object_get(h, CK[c])) &&
			    (json_object_get(w, CK[c]) || json_object_get(h, CK[c]))) {
				snprintf(why, whylen, "condition %s: %s differs", t, CK[c]);
				return false;
			}
		snprintf(ckey, sizeof(ckey), "k:{\"type\":\"%s\"}", t);
		if (!json_object_get(owned_c, ckey)) {
			snprintf(why, whylen, "condition %s: not owned by %s", t, manager);
			return false;
		}
	}
	json_object_foreach((json_t *)owned_c, k, v) {
		bool intended = false;
		if (!strcmp(k, "."))
			continue;
		json_array_foreach(want, i, w) {
			snprintf(ckey, sizeof(ckey), "k:{\"type\":\"%s\"}", gj_str(w, "type") ?: "");
			intended = intended || !strcmp(k, ckey);
		}
		if (!intended) {
			snprintf(why, whylen, "condition %s: owned by %s but not intended", k, manager);
			return false;
		}
	}
	return true;
}

bool ssa_status_satisfied(const json_t *obj, const json_t *intent, const char *manager, char *why,
			  size_t whylen)
{
	const json_t *owned = ssa_owned_status(obj, manager);
	const json_t *want = json_object_get(intent, "status"), *have = json_object_get(obj, "status");
	const json_t *w, *v;
	const char *k;
	char fk[300];

	json_object_foreach((json_t *)want, k, w) {
		if (!strcmp(k, "conditions"))
			continue;
		if (!json_equal(w, json_object_get(have, k))) {
			snprintf(why, whylen, "status.%s: want %s, have %s", k, show(w),
				 show(json_object_get(have, k)));
			return false;
		}
		snprintf(fk, sizeof(fk), "f:%s", k);
		if (!json_object_get(owned, fk)) {
			snprintf(why, whylen, "status.%s: not owned by %s", k, manager);
			return false;
		}
	}
	json_object_foreach((json_t *)owned, k, v) {
		if (!strcmp(k, ".") || !strcmp(k, "f:conditions"))
			continue;
		if (strncmp(k, "f:", 2) || !json_object_get(want, k + 2)) {
			snprintf(why, whylen, "status %s: owned by %s but not intended", k, manager);
			return false;
		}
	}
	if (json_object_get(owned, "f:conditions") && !json_object_get(want, "conditions") &&
	    json_object_size(json_object_get(owned, "f:conditions")) >
		    (json_object_get(json_object_get(owned, "f:conditions"), ".") ? 1u : 0u)) {
		snprintf(why, whylen, "status f:conditions: owned by %s but not intended", manager);
		return false;
	}
	return conds_satisfied(obj, json_object_get(want, "conditions"),
			       json_object_get(owned, "f:conditions"), manager, why, whylen);
}

/* Does any manager other than manager's Apply entry own status key fk? */
static bool co_owned(const json_t *obj, const char *manager, const char *fk)
{
	const json_t *e;
	size_t i;

	json_array_foreach(gj_get(obj, "metadata.managedFields"), i, e) {
		const json_t *st = gj_get(e, "fieldsV1.f:status");
		if (!strcmp(gj_str(e, "manager") ?: "", manager) &&
		    !strcmp(gj_str(e, "operation") ?: "", "Apply"))
			continue;
		if (json_object_get(st, fk))
			return true;
	}
	return false;
}

bool ssa_withdraw_empties_status(const json_t *obj, const char *manager)
{
	const json_t *owned = ssa_owned_status(obj, manager), *st = json_object_get(obj, "status"), *v;
	const char *k;
	char fk[300];

	if (!json_is_object(owned) || !json_object_size(st))
		return false;
	json_object_foreach((json_t *)st, k, v) {
		snprintf(fk, sizeof(fk), "f:%s", k);
		if (!strcmp(k, "conditions")) {
			/* every entry must be ours alone */
			const json_t *c;
			size_t i;
			json_array_foreach(v, i, c) {
				char ck[400];
				snprintf(ck, sizeof(ck), "k:{\"type\":\"%s\"}", gj_str(c, "type") ?: "");
				if (!json_object_get(json_object_get(owned, "f:conditions"), ck))
					return false;
			}
			if (co_owned(obj, manager, fk))
				return false;
			continue;
		}
		if (!json_object_get(owned, fk) || co_owned(obj, manager, fk))
			return false;
	}
	return true;
}

static int add_op(json_t *ops, const char *op, const char *path, const json_t *value)
{
	json_t *o = json_pack("{s:s, s:s}", "op", op, "path", path);
	if (!o || (value && json_object_set(o, "value", (json_t *)value)))
		return -1;
	return json_array_append_new(ops, o);
}

json_t *ssa_withdraw_ops(const json_t *obj, const char *manager)
{
	const json_t *owned = ssa_owned_status(obj, manager), *st = json_object_get(obj, "status"), *v;
	json_t *ops = json_array(), *rm = json_array();
	const char *k;
	char path[400];

	json_object_foreach((json_t *)owned, k, v) {
		const char *f = k + 2;
		if (strncmp(k, "f:", 2) || !json_object_get(st, f))
			continue;
		if (!strcmp(f, "conditions")) {
			const json_t *c;
			size_t i;
			json_array_foreach(json_object_get(st, "conditions"), i, c) {
				char ck[400];
				snprintf(ck, sizeof(ck), "k:{\"type\":\"%s\"}", gj_str(c, "type") ?: "");
				if (!json_object_get(v, ck))
					continue;
				snprintf(path, sizeof(path), "/status/conditions/%zu/type", i);
				add_op(ops, "test", path, json_object_get(c, "type"));
				json_array_append_new(rm, json_integer((json_int_t)i));
			}
			continue;
		}
		snprintf(path, sizeof(path), "/status/%s", f);
		add_op(ops, "test", path, json_object_get(st, f));
		add_op(ops, "remove", path, NULL);
	}
	/* List entries last, highest index first, so earlier indices stay valid. */
	for (size_t i = json_array_size(rm); i-- > 0;) {
		snprintf(path, sizeof(path), "/status/conditions/%lld",
			 (long long)json_integer_value(json_array_get(rm, i)));
		add_op(ops, "remove", path, NULL);
	}
	json_decref(rm);
	if (!json_array_size(ops)) {
		json_decref(ops);
		return NULL;
	}
	return ops;
}
