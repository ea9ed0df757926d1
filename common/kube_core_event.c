/* Kubernetes Events about an object (kube_core_event.h). */
#include "common/kube_core_event.h"

#include "common/json.h"

#include <stdio.h>

const struct kube_resource KUBE_CORE_EVENTS = { "", "v1", "events", true };

json_t *kube_core_event_new(const json_t *obj, const struct kube_core_event *ev, const char *now)
{
	const char *ns = gj_str(obj, "metadata.namespace"), *name = gj_str(obj, "metadata.name");
	char gen[300];

	if (!ns || !name)
		return NULL;
	snprintf(gen, sizeof(gen), "%.200s.", name);
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s,"
			 " s:{s:s}, s:s, s:s, s:i, s:s, s:s}",
			 "apiVersion", "v1", "kind", "Event", "metadata", "generateName", gen,
			 "namespace", ns, "involvedObject", "apiVersion", ev->api_version, "kind",
			 ev->kind, "name", name, "namespace", ns, "uid",
			 gj_str(obj, "metadata.uid") ?: "", "reason", ev->reason, "message",
			 ev->message, "type", ev->type, "source", "component", ev->component,
			 "firstTimestamp", now, "lastTimestamp", now, "count", 1,
			 "reportingComponent", ev->component, "reportingInstance", ev->instance);
}

int kube_core_event_post(struct kube_client *kc, const json_t *obj, const struct kube_core_event *ev,
		    struct kube_error *err)
{
	char now[32];
	json_t *e, *out = NULL;
	int rc;

	gj_time_now(now, sizeof(now));
	if (!(e = kube_core_event_new(obj, ev, now)))
		return 1;
	rc = kube_create(kc, &KUBE_CORE_EVENTS, gj_str(obj, "metadata.namespace"), e, &out, err) ? -1 : 0;
	json_decref(out);
	json_decref(e);
	return rc;
}
