/* NetworkInterfaceClaim <- its interface's attachment. */
#include "translator/reconcile.h"

#include "common/json.h"
#include "common/log.h"
#include "translator/nic.h"

#include <stdio.h>
#include <string.h>

int rec_claim(const struct rec_ctx *c, const struct qkey *k)
{
	char key[600], nskey[520], ifkey[600], now[32], msg[600];
	json_t *claim, *iface = NULL, *att = NULL, *full = NULL, *conds = NULL;
	struct nic_missing miss = { 0 };
	const char *ns, *ifn;
	int ret = 0;

	qkey_format(k->kind, k->ns, k->name, key, sizeof(key));
	qkey_nskey(k, nskey, sizeof(nskey));
	claim = kube_store_get(c->nic, nskey);
	if (!claim) {
		writes_forget(c->w, key);
		return 0;
	}
	ns = gj_str(claim, "metadata.namespace");
	ifn = gj_str(claim, "status.networkInterfaceRef.name");
	if (!ifn || !*ifn) {
		miss = (struct nic_missing){ "Unknown", R_IF_PENDING,
					     "status.networkInterfaceRef is not set yet" };
	} else if (strchr(ifn, '/') || strlen(ifn) > 253) {
		miss = (struct nic_missing){ "False", R_IF_MISSING,
					     "status.networkInterfaceRef.name is not a valid name" };
	} else {
		snprintf(ifkey, sizeof(ifkey), "%s/%s", ns ? ns : "", ifn);
		iface = kube_store_get(c->ni, ifkey);
		if (!iface) {
			snprintf(msg, sizeof(msg), "NetworkInterface %s does not exist", ifn);
			miss = (struct nic_missing){ "False", R_IF_MISSING, msg };
		} else if (strcmp(gj_str(iface, "spec.claimRef.name") ?: "",
				  gj_str(claim, "metadata.name") ?: "")) {
			snprintf(msg, sizeof(msg),
				 "NetworkInterface %s does not name this claim in spec.claimRef", ifn);
			miss = (struct nic_missing){ "False", R_IF_MISMATCH, msg };
		} else if (!(att = rec_iface_attachment(c, iface))) {
			snprintf(msg, sizeof(msg),
				 "no VPCAttachment %s controlled by NetworkInterface %s", ifn, ifn);
			miss = (struct nic_missing){ "False", R_ATT_MISSING, msg };
		}
	}
	gj_time_now(now, sizeof(now));
	conds = nic_conditions(claim, att, att ? NULL : &miss, now);
	full = rec_body(TK_NIC, claim);
	if (!conds || !full || json_object_set(json_object_get(full, "status"), "conditions", conds)) {
		glog_kv(GLOG_WARN, "translator", "cannot compute intent", "object", key, "error",
			full ? "out of memory" : "metadata.name, namespace or uid missing", NULL);
		goto out;
	}
	ret = rec_write(c, TK_NIC, key, claim, full);
out:
	json_decref(full);
	json_decref(conds);
	json_decref(att);
	json_decref(iface);
	json_decref(claim);
	return ret;
}
