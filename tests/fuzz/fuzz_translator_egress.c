/* libFuzzer: the egress binder's decisions over objects others write
 * (translator/egress.c): a VPCAttachment, a NetworkContext, an
 * EgressShardClaim and a list of EgressShards, each any JSON. Input: a JSON
 * array [attachment, networkcontext, claim, shards]. Invariants: a claim the
 * binder builds for an attachment fits that attachment; a refusal has a
 * reason and a message; the attachment's condition, when there is one, is
 * a complete entry. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "translator/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL), *c, *cond, *st;
	const json_t *att, *nc, *claim, *shards, *shard;
	struct egress_want w;
	char msg[400];
	const char *r;

	if (!in)
		return 0;
	att = json_array_get(in, 0);
	nc = json_array_get(in, 1);
	claim = json_array_get(in, 2);
	shards = json_array_get(in, 3);
	egress_want(att, nc, &w);
	if (w.decl == ED_OK && (c = egress_claim_new(att, &w))) {
		if (!egress_claim_matches(c, att, &w, msg, sizeof(msg)))
			abort();
		json_decref(c);
	}
	shard = egress_pick_shard(shards, w.decl == ED_OK ? w.node : NULL);
	r = egress_refusal(shard, w.node, w.families, w.nfam, msg, sizeof(msg));
	if (r && !*msg)
		abort();
	egress_shard_held(shard);
	cond = egress_att_condition(att, &w, claim, shard, "2026-01-01T00:00:00Z");
	if (cond) {
		if (!json_is_string(json_object_get(cond, "status")) || !json_is_string(json_object_get(cond, "reason")) ||
		    !json_is_string(json_object_get(cond, "message")))
			abort();
		json_decref(cond);
	}
	st = egress_claim_status(claim, "galactic-system", egress_claim_shard(claim, "galactic-system"), "False",
				 r ? r : ER_BOUND, msg, "2026-01-01T00:00:00Z");
	json_decref(st);
	json_decref(in);
	return 0;
}
