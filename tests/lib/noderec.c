/* A topology node's agent record (noderec.h). */
#include "tests/lib/noderec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record.h"

json_t *noderec(const struct topo *t, int node)
{
	char p[600], err[512], *text;
	json_t *o;

	snprintf(p, sizeof(p), "%s/n%d", t->dir, node);
	text = record_dump(p, err, sizeof(err));
	if (!text)
		return NULL;
	o = json_loads(text, 0, NULL);
	free(text);
	return o;
}

json_t *noderec_att(const struct topo *t, int node, const char *att)
{
	json_t *r = noderec(t, node), *a, *hit = NULL;
	size_t i;

	json_array_foreach(json_object_get(r, "attachments"), i, a) {
		const char *v = json_string_value(json_object_get(json_object_get(a, "config"), "vpcattachment"));

		if (!strcmp(v ? v : "", att))
			hit = json_incref(a);
	}
	json_decref(r);
	return hit;
}
