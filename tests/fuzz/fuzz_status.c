/* libFuzzer: the parser of the agent's status.json as a restart reads it
 * to adopt the last pass (agent/pipeline.h, pipeline_status_parse). A
 * refusal says why and keeps nothing; what is accepted has errors of
 * known kinds, with errno 1-4095 and ids within their bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pipeline.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pipeline_status st;
	char why[256] = "";

	if (pipeline_status_parse((const char *)data, size, &st, why, sizeof(why))) {
		if (!why[0] || st.errors.n)
			abort();
		return 0;
	}
	for (size_t i = 0; i < st.errors.n; i++)
		if (st.errors.v[i].err >= 0 || st.errors.v[i].err < -4095 || st.errors.v[i].programmed ||
		    st.errors.v[i].kind > GDP_OBJ_EGRESS || strlen(st.errors.v[i].vpc) > GDP_ID_MAX)
			abort();
	pipeline_status_free(&st);
	return 0;
}
