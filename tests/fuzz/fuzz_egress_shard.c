/* libFuzzer: the EgressShard objects the agent reads (written by the operator
 * and by others). A shard read for the node, in a list or alone, yields a
 * status intent that names it, keeps upstream's shape (two conditions with
 * all five fields) and says it is equal to itself once applied. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/egress/shard.h"
#include "common/json.h"

static void check_intent(const struct ges_spec *s, const char *bad, const json_t *cur)
{
	struct ges_observed o = { .passed = true, .programmed = true };
	json_t *in, *c;
	size_t i;

	ges_spec_egress(s, "up0", &o.running);
	in = ges_status_intent(s, bad, &o, cur, "2026-01-01T00:00:00Z");
	if (!in || strcmp(gj_str(in, "metadata.name"), s->name))
		abort();
	if (json_array_size(gj_get(in, "status.conditions")) != 2)
		abort();
	json_array_foreach(gj_get(in, "status.conditions"), i, c)
		if (!gj_str(c, "type") || !gj_str(c, "status") || !gj_str(c, "reason") || !gj_str(c, "message") ||
		    !gj_str(c, "lastTransitionTime"))
			abort();
	if (!ges_status_equal(in, in))
		abort();
	json_decref(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	struct ges_spec s;
	char err[256];
	int rc, bad;

	if (!j)
		return 0;
	rc = ges_parse(j, "node-a", &s, err, sizeof(err));
	if (rc != 0)
		check_intent(&s, rc < 0 ? err : NULL, j);
	if (json_is_array(j) && ges_pick(j, "node-a", &s, &bad, err, sizeof(err)))
		check_intent(&s, bad ? err : NULL, NULL);
	json_decref(j);
	return 0;
}
