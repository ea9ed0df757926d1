/* libFuzzer: the parsers of the agent's record (record.json,
 * record.journal applied to a record.json, with and without its zeroed
 * tail, record-remotes.json,
 * agent/record.h). What is accepted must be consistent: every attachment's
 * VPC is listed, numbers are in range and unique; record-remotes.json,
 * parsed one element at a time, agrees with a whole-tree parse of the same
 * text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/record.h"

static void consistent(const struct rec_data *d)
{
	for (size_t i = 0; i < d->natts; i++) {
		bool known = false;

		for (size_t k = 0; k < d->nvpcs; k++)
			known |= !strcmp(d->vpcs[k].m.id, d->atts[i].m.vpc);
		if (!known || !d->atts[i].m.arg || d->atts[i].m.arg > GDP_ARG_MAX)
			abort();
		for (size_t k = 0; k < i; k++)
			if (d->atts[k].m.arg == d->atts[i].m.arg)
				abort();
	}
}

/* The record.json a journal is applied to (epoch 1). */
static const char base[] =
	"{\"version\":2,\"journal\":1,\"vpcs\":[{\"id\":\"v\",\"arg\":1,\"table\":16385}],"
	"\"attachments\":[{\"vpc\":\"v\",\"id\":\"a\",\"source\":\"declared\",\"hostIfname\":\"h\",\"arg\":1}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rec_data d;
	struct gdp_state st;
	char err[512];

	if (!size)
		return 0;
	if (data[0] % 3 == 2) {
		size_t lines, lines2;
		bool torn, torn2;
		int rc, rc2;
		char *z;

		if (record_parse(base, sizeof(base) - 1, &d, err, sizeof(err)))
			abort();
		err[0] = 0;
		rc = record_parse_journal((const char *)data + 1, size - 1, &d, &lines, &torn, err, sizeof(err));
		if (rc == 0)
			consistent(&d);
		else if (rc < 0 && !err[0])
			abort();
		record_data_free(&d);
		/* The journal is written over a zeroed tail: the same text with
		 * zeros after it, and then anything (a write that never became
		 * a commit), reads the same. */
		z = calloc(1, size - 1 + 64 + size);
		if (!z)
			return 0;
		memcpy(z, data + 1, size - 1);
		memcpy(z + size - 1 + 64, data, size);
		if (record_parse(base, sizeof(base) - 1, &d, err, sizeof(err)))
			abort();
		rc2 = record_parse_journal(z, size - 1 + 64 + size, &d, &lines2, &torn2, err, sizeof(err));
		if (rc2 == 0)
			consistent(&d);
		if (rc2 != rc || (rc >= 0 && (lines2 != lines || torn2 != torn)))
			abort();
		record_data_free(&d);
		free(z);
	} else if (data[0] % 3 == 1) {
		if (record_parse((const char *)data + 1, size - 1, &d, err, sizeof(err)) == 0) {
			consistent(&d);
			record_data_free(&d);
		} else if (!err[0]) {
			abort(); /* a refusal always says why */
		}
	} else {
		gdp_state_init(&st);
		if (record_parse_remotes((const char *)data + 1, size - 1, &st, err, sizeof(err))) {
			if (!err[0] || st.n_remotes)
				abort(); /* says why, keeps nothing */
		} else {
			/* Parsed a piece at a time: what it accepts, a whole-tree
			 * parse accepts too, with the same number of remotes. */
			json_t *o = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);

			if (!o || json_integer_value(json_object_get(o, "version")) != RECORD_REMOTES_VERSION ||
			    json_array_size(json_object_get(o, "remotes")) != st.n_remotes)
				abort();
			json_decref(o);
		}
		gdp_state_free(&st);
	}
	return 0;
}
