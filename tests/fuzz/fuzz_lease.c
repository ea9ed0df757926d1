/*
 * libFuzzer target: the Lease JSON every leader candidate reads and writes
 * (common/leader.c leader_lease_read, leader_next_transitions,
 * leader_lease_body), as try_acquire_or_renew uses them: read what the API
 * server returned, take it over, write the next body. Input: a Lease as
 * JSON (any JSON).
 * Invariants: the duration is positive and at most INT32_MAX, the
 * transition count stays in 0..INT32_MAX through a takeover (no overflow:
 * UBSan would report one), and the body written carries the holder and a
 * valid spec.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/leader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL), *body;
	struct lease_view v;
	char now[64];
	long next;

	if (!in)
		return 0;
	leader_lease_read(in, 15, &v);
	if (!v.rv || !v.holder || !(v.duration_s > 0 && v.duration_s <= INT32_MAX) ||
	    v.transitions < 0 || v.transitions > INT32_MAX)
		abort();
	next = leader_next_transitions(v.transitions);
	if (next < 0 || next > INT32_MAX)
		abort();
	leader_format_microtime(1767225600.25, now, sizeof(now));
	body = leader_lease_body("ns", "lease", v.rv, "me", (int)v.duration_s,
				 v.acquire ? v.acquire : now, now, next);
	if (!body || strcmp(gj_str(body, "spec.holderIdentity") ?: "", "me") ||
	    gj_int(body, "spec.leaseTransitions", -1) != next ||
	    gj_int(body, "spec.leaseDurationSeconds", 0) <= 0)
		abort();
	if (*v.rv && strcmp(gj_str(body, "metadata.resourceVersion") ?: "", v.rv))
		abort();
	json_decref(body);
	/* Handing it back as it was (same holder: no takeover). */
	body = leader_lease_body("ns", "lease", v.rv, v.holder, (int)v.duration_s,
				 v.acquire ? v.acquire : now, now, v.transitions);
	json_decref(body);
	json_decref(in);
	return 0;
}
