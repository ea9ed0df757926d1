#include "translator/project.h"

#include <string.h>

static const char *const KEEP_META[] = { "name", "namespace", "uid", "resourceVersion", "generation",
					 "creationTimestamp", "deletionTimestamp", "ownerReferences",
					 "finalizers" };

/* {key: true, ...} for the keys of o (true is a static singleton: no allocation). */
static json_t *keys_only(const json_t *o)
{
	json_t *r = json_object();
	const char *k;
	json_t *v;

	json_object_foreach((json_t *)o, k, v)
		json_object_set_new(r, k, json_true());
	return r;
}

/* managedFields reduced to the status owners: see project.h. */
static json_t *status_owners(const json_t *mf)
{
	json_t *out = json_array(), *e;
	size_t i;

	json_array_foreach(mf, i, e) {
		json_t *st = json_object_get(json_object_get(e, "fieldsV1"), "f:status"), *r, *v, *ne;
		const char *k;

		if (!json_is_object(st))
			continue;
		r = json_object();
		json_object_foreach(st, k, v)
			json_object_set_new(r, k, !strcmp(k, "f:conditions") && json_is_object(v)
							  ? keys_only(v) : json_true());
		ne = json_pack("{s:O*, s:O*, s:{s:o}}", "manager", json_object_get(e, "manager"),
			       "operation", json_object_get(e, "operation"), "fieldsV1", "f:status", r);
		if (ne && json_object_get(e, "subresource"))
			json_object_set(ne, "subresource", json_object_get(e, "subresource"));
		if (ne)
			json_array_append_new(out, ne);
	}
	return out;
}

void project_object(json_t *obj, void *ud)
{
	const struct project_opts *o = ud;
	json_t *md = json_object_get(obj, "metadata"), *keep;

	if (!json_is_object(md))
		return;
	keep = json_object();
	if (!keep)
		return;
	for (size_t i = 0; i < sizeof(KEEP_META) / sizeof(KEEP_META[0]); i++)
		if (json_object_get(md, KEEP_META[i]))
			json_object_set(keep, KEEP_META[i], json_object_get(md, KEEP_META[i]));
	if (o && o->keep_labels && json_object_get(md, "labels"))
		json_object_set(keep, "labels", json_object_get(md, "labels"));
	if (o && o->keep_status_owners && json_is_array(json_object_get(md, "managedFields")))
		json_object_set_new(keep, "managedFields",
				    status_owners(json_object_get(md, "managedFields")));
	json_object_set_new(obj, "metadata", keep);
}
