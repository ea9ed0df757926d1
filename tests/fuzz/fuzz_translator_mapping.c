/* libFuzzer: the translator's report mapping (translator/mapping.c): a
 * mapping config document (what an operator's config file holds) and a
 * report (what a data plane writes), read through every entry of the set.
 * Input: a JSON array [config, report]; when it is not an array the whole
 * document is tried as both. Invariants: a refused config leaves the set as
 * it was and says why; a report that reads has its required ids; a refused
 * report says why; every view clears without a leak. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "translator/intent.h"
#include "translator/mapping.h"

static void read_through(const struct report_mapping *m, const json_t *rep)
{
	struct report_candidate c[2];
	const struct report_candidate *pick;
	char key[600];

	memset(c, 0, sizeof(c));
	c[0].valid = report_extract(m, rep, &c[0].v, c[0].err, sizeof(c[0].err)) == 0;
	if (c[0].valid) {
		if (!c[0].v.v[MF_NODE] || !c[0].v.v[MF_VPC] || !c[0].v.v[MF_ATTACHMENT])
			abort(); /* a report that reads names node, vpc and attachment */
		(void)mapping_ids_key(c[0].v.v[MF_VPC], c[0].v.v[MF_ATTACHMENT], key, sizeof(key));
	} else if (!c[0].err[0]) {
		abort(); /* a refusal says why */
	}
	/* The same report twice: the pick is one of them, whatever they hold. */
	c[1].valid = report_extract(m, rep, &c[1].v, c[1].err, sizeof(c[1].err)) == 0;
	pick = report_pick(c, 2);
	if (pick != &c[0] && pick != &c[1])
		abort();
	report_view_clear(&c[0].v);
	report_view_clear(&c[1].v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	const json_t *cfg, *rep;
	struct mapping_set s;
	char err[512];
	size_t i, before;

	if (!in)
		return 0;
	cfg = json_is_array(in) ? json_array_get(in, 0) : in;
	rep = json_is_array(in) ? json_array_get(in, 1) : in;
	if (mapping_set_init(&s)) {
		json_decref(in);
		return 0;
	}
	before = s.n;
	err[0] = 0;
	if (mapping_set_load_json(&s, cfg, err, sizeof(err))) {
		if (!err[0] || s.n != before || strcmp(s.e[0].name, "galactic"))
			abort(); /* refused: unchanged, with the reason */
	}
	for (i = 0; i < s.n; i++) {
		if (!s.e[i].path[MF_NODE][0] || !s.e[i].path[MF_VPC][0] ||
		    !s.e[i].path[MF_ATTACHMENT][0])
			abort(); /* an accepted entry has the required paths */
		read_through(&s.e[i], rep);
	}
	mapping_set_free(&s);
	json_decref(in);
	return 0;
}
