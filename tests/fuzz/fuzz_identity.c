/* libFuzzer: what the identity module reads from the API (objects written by
 * others): a NodeDataplane spec and a listed NodeID. Accepted objects must
 * be self-consistent: a parsed spec's block re-parses as itself, a parsed
 * hold's name is the name of its block and ID. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/identity/ident.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
	struct gid_spec s;
	struct gid_held h;
	char why[256], name[GID_NAME_LEN + 1];

	if (!j)
		return 0;
	if (gid_spec_parse(j, "node-a", &s, why, sizeof(why)) == 0) {
		json_t *n = gid_nodeid_new("node-a", &s, s.pin ? s.pin : 1);
		struct gid_held back;

		if (gid_held_parse(n, &back, why, sizeof(why)) || memcmp(back.block, s.block, 6))
			abort();
		json_decref(n);
	}
	if (gid_held_parse(j, &h, why, sizeof(why)) == 0) {
		gid_object_name(h.block, h.id, name, sizeof(name));
		if (strcmp(name, h.name) || h.id < GID_ID_MIN || h.id > GID_ID_MAX)
			abort();
	}
	json_decref(j);
	return 0;
}
