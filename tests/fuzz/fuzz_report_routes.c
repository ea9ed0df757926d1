/* libFuzzer: other nodes' NodeAttachment reports as the route learner reads
 * them (agent/report/build.c): each report (the input, or each element of an
 * input array) through rpt_routes_from_report against a fixed node hosting
 * two VPCs, then the whole learned set through rpt_remotes_resolve. Checks:
 * a refused report adds nothing, every accepted route is of a hosted VPC
 * with a SID of the right function that is not this node's; after the
 * overlap resolution no (VPC, prefix) is left twice, each kept route has
 * the lowest SID of its prefix's claims, and kept + dropped = learned. */
#include <arpa/inet.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/report/report.h"

static struct gdp_state local;
static int ready;

static void init(void)
{
	struct gdp_vpc v = { .id = "Red7", .arg = 1, .table = 16385 };

	gdp_state_init(&local);
	local.node.block[0] = 0xfc;
	local.node.block[1] = 0xbb;
	local.node.block[2] = 0xbb;
	local.node.block[5] = 0x01;
	local.node.node_id = 1;
	gdp_state_add_vpc(&local, &v);
	snprintf(v.id, sizeof(v.id), "Blu9");
	v.arg = 2;
	v.table = 16386;
	gdp_state_add_vpc(&local, &v);
	ready = 1;
}

static void one(const json_t *o, struct gdp_state *out)
{
	size_t before = out->n_remotes;
	char why[300];
	int rc = rpt_routes_from_report(o, "n1", &local, out, why, sizeof(why));

	if (rc != 0 && out->n_remotes != before)
		abort(); /* skipped or refused: nothing of it is used */
	if (rc < 0 && !why[0])
		abort(); /* refused without a reason */
	for (size_t i = before; i < out->n_remotes; i++) {
		const struct gdp_remote *r = &out->remotes[i];
		uint16_t nid;
		unsigned fn;

		if (!gdp_state_find_vpc(&local, gdp_remote_vpc(r)))
			abort();
		/* our own SID: our node id under our block (the same id under
		 * another block is another node's) */
		if (gdp_sid_parse(&r->sid, NULL, &nid, &fn, NULL) ||
		    (nid == local.node.node_id && !memcmp(r->sid.s6_addr, local.node.block, 6)))
			abort();
		if (fn != (r->prefix.family == AF_INET6 ? GDP_FN_DECAP : GDP_FN_DX4))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL), *o;
	struct gdp_state out;
	struct gdp_remote *in;
	struct rpt_overlaps ov;
	size_t i, n;

	if (!j)
		return 0;
	if (!ready)
		init();
	gdp_state_init(&out);
	if (json_is_array(j))
		json_array_foreach(j, i, o)
			one(o, &out);
	else
		one(j, &out);
	in = out.n_remotes ? malloc(out.n_remotes * sizeof(*in)) : NULL;
	if (out.n_remotes && !in)
		abort();
	if (in)
		memcpy(in, out.remotes, out.n_remotes * sizeof(*in));
	n = rpt_remotes_resolve(out.remotes, out.n_remotes, &ov, NULL, NULL);
	if (n + ov.duplicates != out.n_remotes || ov.nested > n)
		abort();
	for (i = 0; i < n; i++) {
		if (i && out.remotes[i - 1].vpc_ix == out.remotes[i].vpc_ix &&
		    gdp_prefix_equal(&out.remotes[i - 1].prefix, &out.remotes[i].prefix))
			abort();
		for (size_t k = 0; k < out.n_remotes; k++)
			if (in[k].vpc_ix == out.remotes[i].vpc_ix &&
			    gdp_prefix_equal(&in[k].prefix, &out.remotes[i].prefix) &&
			    memcmp(&in[k].sid, &out.remotes[i].sid, sizeof(in[k].sid)) < 0)
				abort();
	}
	free(in);
	gdp_state_free(&out);
	json_decref(j);
	return 0;
}
