/* The node's EgressShard: reading, picking, status (shard.h). */
#include "agent/egress/shard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/json.h"
#include "common/kube_client.h"

const struct kube_resource GES_EGRESSSHARDS = { GES_GROUP, GES_VERSION, "egressshards", true };

/* "" and absent: not assigned; anything else must parse. */
static int addr_field(const json_t *spec, const char *k, int af, void *dst, bool *has, char *err, size_t errlen)
{
	json_t *v = json_object_get(spec, k);
	const char *s;

	*has = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v)) {
		snprintf(err, errlen, "spec.%s must be a string", k);
		return -EINVAL;
	}
	s = json_string_value(v);
	if (!*s)
		return 0;
	if (strlen(s) >= INET6_ADDRSTRLEN || inet_pton(af, s, dst) != 1) {
		snprintf(err, errlen, "spec.%s %.64s is not an IPv%d address", k, s, af == AF_INET ? 4 : 6);
		return -EINVAL;
	}
	*has = true;
	return 0;
}

int ges_parse(const json_t *obj, const char *node, struct ges_spec *out, char *err, size_t errlen)
{
	const json_t *spec;
	const char *target, *name, *ns;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(obj) || !node)
		return 0;
	spec = json_object_get(obj, "spec");
	target = gj_str(obj, "spec.targetRef.name");
	if (!json_is_object(spec) || !target || strcmp(target, node))
		return 0;
	name = gj_str(obj, "metadata.name");
	ns = gj_str(obj, "metadata.namespace");
	if (!name || !*name || strlen(name) >= sizeof(out->name) || (ns && strlen(ns) >= sizeof(out->ns)))
		return 0; /* not an object the API server would hold */
	snprintf(out->name, sizeof(out->name), "%s", name);
	snprintf(out->ns, sizeof(out->ns), "%s", ns ? ns : "");
	out->generation = gj_int(obj, "metadata.generation", 0);
	out->deleting = gj_get(obj, "metadata.deletionTimestamp") != NULL;
	if ((rc = addr_field(spec, "shardSID", AF_INET6, &out->sid, &out->has_sid, err, errlen)) ||
	    (rc = addr_field(spec, "shardAddressIPv6", AF_INET6, &out->addr6, &out->has_v6, err, errlen)) ||
	    (rc = addr_field(spec, "shardAddressIPv4", AF_INET, &out->addr4, &out->has_v4, err, errlen))) {
		out->has_sid = out->has_v6 = out->has_v4 = false;
		return rc;
	}
	return 1;
}

int ges_pick(const json_t *objs, const char *node, struct ges_spec *out, int *bad, char *err, size_t errlen)
{
	struct ges_spec s;
	char e[256];
	json_t *o;
	size_t i;
	int found = 0;

	*bad = 0;
	memset(out, 0, sizeof(*out));
	json_array_foreach(objs, i, o) {
		int rc = ges_parse(o, node, &s, e, sizeof(e));

		if (rc == 0)
			continue;
		if (found && strcmp(s.name, out->name) >= 0)
			continue;
		*out = s;
		*bad = rc < 0 ? rc : 0;
		if (rc < 0)
			snprintf(err, errlen, "%s", e);
		found = 1;
	}
	return found;
}

void ges_spec_egress(const struct ges_spec *s, const char *oif, struct gdp_egress *out)
{
	memset(out, 0, sizeof(*out));
	if (!s->has_sid || !s->has_v6 || s->deleting)
		return;
	out->have = true;
	out->sid = s->sid;
	out->addr6 = s->addr6;
	out->have_v4 = s->has_v4;
	out->addr4 = s->addr4;
	snprintf(out->oif, sizeof(out->oif), "%s", oif ? oif : "");
}

static const json_t *cur_cond(const json_t *cur, const char *type)
{
	json_t *c;
	size_t i;

	json_array_foreach(gj_get(cur, "status.conditions"), i, c) {
		const char *t = gj_str(c, "type");

		if (t && !strcmp(t, type))
			return c;
	}
	return NULL;
}

static json_t *cond(const char *type, const char *status, const char *reason, const char *msg, int64_t gen,
		    const json_t *cur, const char *now)
{
	const json_t *old = cur_cond(cur, type);
	const char *os = old ? gj_str(old, "status") : NULL, *ot = old ? gj_str(old, "lastTransitionTime") : NULL;
	const char *ltt = os && ot && !strcmp(os, status) ? ot : now;

	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "type", type, "status", status, "reason", reason,
			 "message", msg, "lastTransitionTime", ltt, "observedGeneration", (json_int_t)gen);
}

json_t *ges_status_intent(const struct ges_spec *s, const char *bad_err, const struct ges_observed *o,
			  const json_t *cur, const char *now)
{
	json_t *st = json_object(), *conds = json_array();
	struct gdp_egress want;
	char a[INET6_ADDRSTRLEN], msg[400];
	const char *ps, *pr, *rs, *rr;
	bool runs_spec;

	ges_spec_egress(s, NULL, &want);
	/* the pass ran this spec's identity (the device is the node's choice, not the spec's) */
	runs_spec = o->passed && o->running.have && want.have &&
		    !memcmp(&o->running.sid, &want.sid, sizeof(want.sid)) &&
		    !memcmp(&o->running.addr6, &want.addr6, sizeof(want.addr6)) &&
		    o->running.have_v4 == want.have_v4 &&
		    (!want.have_v4 || o->running.addr4.s_addr == want.addr4.s_addr);
	if (bad_err) {
		ps = "False", pr = "ProgrammingFailed";
		snprintf(msg, sizeof(msg), "spec not usable: %s", bad_err);
	} else if (!s->has_sid || !s->has_v6) {
		ps = "False", pr = "AddressUnassigned";
		snprintf(msg, sizeof(msg), "%s not assigned yet: nothing is programmed",
			 !s->has_sid && !s->has_v6 ? "spec.shardSID and spec.shardAddressIPv6"
			 : !s->has_sid ? "spec.shardSID" : "spec.shardAddressIPv6");
	} else if (!runs_spec) {
		ps = "Unknown", pr = "Pending";
		snprintf(msg, sizeof(msg), "the datapath has not run this shard's identity yet");
	} else if (o->programmed) {
		ps = "True", pr = "AddressesProgrammed";
		snprintf(msg, sizeof(msg), "decap of the shard SID and source translation to the shard's address%s are programmed",
			 want.have_v4 ? "es" : "");
	} else {
		ps = "False", pr = "ProgrammingFailed";
		snprintf(msg, sizeof(msg), "%s", o->message[0] ? o->message : "the datapath did not read back as programmed");
	}
	if (!strcmp(ps, "True"))
		rs = "True", rr = "DatapathAttached";
	else
		rs = !strcmp(ps, "Unknown") ? "Unknown" : "False", rr = "DatapathNotAttached";
	if (runs_spec && o->programmed && !bad_err) {
		json_object_set_new(st, "shardSID", json_string(inet_ntop(AF_INET6, &o->running.sid, a, sizeof(a))));
		json_object_set_new(st, "shardAddressIPv6",
				    json_string(inet_ntop(AF_INET6, &o->running.addr6, a, sizeof(a))));
		if (o->running.have_v4)
			json_object_set_new(st, "shardAddressIPv4",
					    json_string(inet_ntop(AF_INET, &o->running.addr4, a, sizeof(a))));
	}
	json_object_set_new(st, "observedGeneration", json_integer(s->generation));
	json_array_append_new(conds, cond(GES_COND_PROGRAMMED, ps, pr, msg, s->generation, cur, now));
	json_array_append_new(conds, cond(GES_COND_READY, rs, rr,
					  !strcmp(rs, "True") ? "the shard's datapath is attached on its node" : msg,
					  s->generation, cur, now));
	json_object_set_new(st, "conditions", conds);
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", GES_API_VERSION, "kind", "EgressShard",
			 "metadata", "name", s->name, "namespace", s->ns, "status", st);
}

bool ges_status_equal(const json_t *cur, const json_t *intent)
{
	static const char *const own[] = { "shardSID", "shardAddressIPv6", "shardAddressIPv4" };
	const json_t *cs = json_object_get(cur, "status"), *is = json_object_get(intent, "status");

	if (!cur || !gj_subset(is, cs, GJ_ARRAYS_CONTAIN))
		return false;
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!json_object_get(is, own[i]) != !json_object_get(cs, own[i]))
			return false;
	return true;
}
