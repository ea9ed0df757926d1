#include "translator/ownership.h"

#include <stdio.h>
#include <string.h>

const char *const OWNERSHIP_ROWS[] = {
	"vpcattachment.status.node",
	"vpcattachment.status.containerID",
	"vpcattachment.status.podName",
	"vpcattachment.status.hostInterface",
	"vpcattachment.status.vrfInterface",
	"vpcattachment.status.guestInterface",
	"vpcattachment.status.podSubnet",
	"vpcattachment.conditions.Programmed",
	"networkinterface.status.attachmentRef",
	"networkinterface.status.vpc",
	"networkinterface.conditions.Prepared",
	"networkinterface.conditions.Programmed",
	"networkinterfaceclaim.conditions.Prepared",
	"networkinterfaceclaim.conditions.Programmed",
};
const size_t OWNERSHIP_NROWS = sizeof(OWNERSHIP_ROWS) / sizeof(OWNERSHIP_ROWS[0]);

void ownership_init(struct ownership *o) { memset(o, 0, sizeof(*o)); }

int ownership_leave(struct ownership *o, const char *row, char *err, size_t errlen)
{
	for (size_t i = 0; i < OWNERSHIP_NROWS; i++)
		if (!strcmp(OWNERSHIP_ROWS[i], row)) {
			o->left[i] = true;
			return 0;
		}
	snprintf(err, errlen, "no contract row %s (rows: %s, ...)", row, OWNERSHIP_ROWS[0]);
	return -1;
}

int ownership_leave_list(struct ownership *o, const char *csv, char *err, size_t errlen)
{
	char buf[128];
	const char *p = csv;

	while (p && *p) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);
		if (len >= sizeof(buf)) {
			snprintf(err, errlen, "row name too long");
			return -1;
		}
		memcpy(buf, p, len);
		buf[len] = 0;
		if (len && ownership_leave(o, buf, err, errlen))
			return -1;
		p = c ? c + 1 : NULL;
	}
	return 0;
}

int ownership_load_file(struct ownership *o, const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *f = json_load_file(path, JSON_REJECT_DUPLICATES, &je), *rows, *r;
	const char *k;
	json_t *v;
	size_t i;
	int rc = -1;

	if (!f) {
		snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
		return -1;
	}
	if (!json_is_object(f)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		goto out;
	}
	json_object_foreach(f, k, v)
		if (strcmp(k, "leaveToIncumbent")) {
			snprintf(err, errlen, "%s: unknown key %s", path, k);
			goto out;
		}
	rows = json_object_get(f, "leaveToIncumbent");
	if (rows && !json_is_array(rows)) {
		snprintf(err, errlen, "%s: leaveToIncumbent: not a list", path);
		goto out;
	}
	json_array_foreach(rows, i, r) {
		char e2[256];
		if (!json_is_string(r)) {
			snprintf(err, errlen, "%s: leaveToIncumbent[%zu]: not a string", path, i);
			goto out;
		}
		if (ownership_leave(o, json_string_value(r), e2, sizeof(e2))) {
			snprintf(err, errlen, "%s: leaveToIncumbent[%zu]: %s", path, i, e2);
			goto out;
		}
	}
	rc = 0;
out:
	json_decref(f);
	return rc;
}

static bool row_ours(const struct ownership *o, enum tkind k, const char *mid, const char *name)
{
	char row[160];
	if ((unsigned)k >= TK_N)
		return true;
	snprintf(row, sizeof(row), "%s.%s.%s", TKINDS[k].lower, mid, name);
	for (size_t i = 0; i < OWNERSHIP_NROWS; i++)
		if (!strcmp(OWNERSHIP_ROWS[i], row))
			return !o->left[i];
	return true; /* not a contract row: not configurable */
}

bool ownership_field_ours(const struct ownership *o, enum tkind k, const char *field)
{
	return row_ours(o, k, "status", field);
}

bool ownership_condition_ours(const struct ownership *o, enum tkind k, const char *type)
{
	return row_ours(o, k, "conditions", type);
}

size_t ownership_strip_conditions(const struct ownership *o, enum tkind k, json_t *conds)
{
	size_t n = 0;
	for (size_t i = json_array_size(conds); i-- > 0;) {
		const char *t = json_string_value(json_object_get(json_array_get(conds, i), "type"));
		if (t && !ownership_condition_ours(o, k, t)) {
			json_array_remove(conds, i);
			n++;
		}
	}
	return n;
}

size_t ownership_strip(const struct ownership *o, enum tkind k, json_t *intent)
{
	json_t *st = json_object_get(intent, "status"), *v;
	const char *key;
	void *tmp;
	size_t n = 0;

	json_object_foreach_safe(st, tmp, key, v) {
		if (!strcmp(key, "conditions"))
			n += ownership_strip_conditions(o, k, v);
		else if (!ownership_field_ours(o, k, key)) {
			json_object_del(st, key);
			n++;
		}
	}
	return n;
}

void ownership_describe(const struct ownership *o, char *buf, size_t n)
{
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < OWNERSHIP_NROWS && used < n; i++)
		if (o->left[i])
			used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? "," : "",
						 OWNERSHIP_ROWS[i]);
}
