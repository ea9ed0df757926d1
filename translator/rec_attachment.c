/* VPCAttachment <- the node's report (docs/translator.md "How a VPCAttachment is reconciled"). */
#include "translator/reconcile.h"

#include "common/json.h"
#include "common/log.h"
#include "translator/intent.h"
#include "translator/rec_egress.h"
#include "common/grow.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The agent writes a new report's status right after its spec (two requests one after the
 * other); under load that second request took up to 2.8 s (bench_burst at load 100), and a
 * 2 s grace let a few attachments be written twice (1.04 writes per transition). */
#define NEW_REPORT_GRACE_S 10.0

/* Reports of every mapped kind whose ids equal the attachment's. */
static size_t collect_reports(const struct rec_ctx *c, const char *ids,
			      struct report_candidate **out)
{
	struct report_candidate *v = NULL;
	size_t n = 0, cap = 0, i;
	json_t *objs, *o;

	*out = NULL;
	for (size_t k = 0; k < c->maps->n; k++) {
		objs = kube_store_by_index(c->rep[k], "ids", ids);
		json_array_foreach(objs, i, o) {
			if (G_GROW(v, cap, n, 4))
				break;
			v[n].valid = report_extract(&c->maps->e[k], o, &v[n].v, v[n].err,
						    sizeof(v[n].err)) == 0;
			n++;
		}
		json_decref(objs);
	}
	*out = v;
	return n;
}

/* Seconds since an RFC 3339 UTC timestamp (second precision); -1 if unreadable. */
static double report_age_s(const char *ts)
{
	struct tm tm = { 0 };
	const char *end;

	if (!ts || !(end = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm)) || (*end != 'Z' && *end != '.'))
		return -1;
	return difftime(time(NULL), timegm(&tm));
}

int rec_attachment(const struct rec_ctx *c, const struct qkey *k, double *retry_after)
{
	struct report_candidate *cands = NULL;
	const struct report_candidate *pick;
	char key[600], nskey[520], ids[512], now[32], ebuf[512];
	json_t *att, *intent = NULL;
	size_t n = 0;
	int ret = 0;

	qkey_format(k->kind, k->ns, k->name, key, sizeof(key));
	qkey_nskey(k, nskey, sizeof(nskey));
	att = kube_store_get(c->att, nskey);
	if (!att) {
		writes_forget(c->w, key);
		return 0;
	}
	if (!mapping_ids_key(gj_str(att, "status.vpc"), gj_str(att, "status.vpcAttachment"), ids,
			     sizeof(ids)))
		n = collect_reports(c, ids, &cands);
	pick = report_pick(cands, n);
	/* A new report is written in two steps (spec, then status through its
	 * subresource). Writing "not reported yet" in between would cost one
	 * write per workload start for a state that lasts milliseconds: give the
	 * agent a moment; its status write re-queues the key at once. */
	if (pick && pick->valid && pick->v.programmed == PS_ABSENT) {
		double age = report_age_s(pick->v.created);
		if (age >= 0 && age < NEW_REPORT_GRACE_S) {
			metric_add(c->m_deferred, NULL, 1);
			*retry_after = NEW_REPORT_GRACE_S - age + 0.1;
			goto out;
		}
	}
	gj_time_now(now, sizeof(now));
	intent = vpcatt_intent(att, pick, now, ebuf, sizeof(ebuf));
	if (!intent) {
		glog_kv(GLOG_WARN, "translator", "cannot compute intent", "object", key, "error", ebuf,
			NULL);
		goto out;
	}
	rec_egress_att_condition(c, att, intent, now);
	ret = rec_write(c, TK_VPCATT, key, att, intent);
out:
	json_decref(intent);
	for (size_t i = 0; i < n; i++)
		report_view_clear(&cands[i].v);
	free(cands);
	json_decref(att);
	return ret;
}
