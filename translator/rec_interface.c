/* NetworkInterface <- its attachment (docs/translator.md "How NetworkInterfaces ... are reconciled"). */
#include "translator/reconcile.h"

#include "common/json.h"
#include "common/log.h"
#include "translator/nic.h"

int rec_interface(const struct rec_ctx *c, const struct qkey *k)
{
	char key[600], nskey[520], now[32], ebuf[512];
	json_t *iface, *att, *full, *conds;
	int ret = 0;

	qkey_format(k->kind, k->ns, k->name, key, sizeof(key));
	qkey_nskey(k, nskey, sizeof(nskey));
	iface = kube_store_get(c->ni, nskey);
	if (!iface) {
		writes_forget(c->w, key);
		return 0;
	}
	att = rec_iface_attachment(c, iface);
	gj_time_now(now, sizeof(now));
	full = nic_fields_intent(iface, att, ebuf, sizeof(ebuf));
	conds = nic_conditions(iface, att, NULL, now);
	if (!full || !conds ||
	    json_object_set(json_object_get(full, "status"), "conditions", conds)) {
		glog_kv(GLOG_WARN, "translator", "cannot compute intent", "object", key, "error",
			full ? "out of memory" : ebuf, NULL);
		goto out;
	}
	ret = rec_write(c, TK_NI, key, iface, full);
out:
	json_decref(conds);
	json_decref(full);
	json_decref(att);
	json_decref(iface);
	return ret;
}
