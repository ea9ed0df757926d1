/*
 * Kubernetes Events (core/v1 "events") about an object: one builder and one
 * poster, for every component that records what it did to an object it
 * does not own (docs/common.md).
 */
#ifndef GALACTIC_COMMON_KUBE_CORE_EVENT_H
#define GALACTIC_COMMON_KUBE_CORE_EVENT_H

#include "common/kube_client.h"

#include <jansson.h>

/* What an Event says; every string is borrowed and must be non-NULL. */
struct kube_core_event {
	const char *api_version; /* the involved object's: "network.datumapis.com/v1alpha1" */
	const char *kind;        /* the involved object's: "EgressShardClaim" */
	const char *type;        /* "Normal" or "Warning" */
	const char *reason;      /* CamelCase, a fact: "FieldWithheld" */
	const char *message;     /* for people */
	const char *component;   /* source.component and reportingComponent */
	const char *instance;    /* reportingInstance */
};

/* The core/v1 "events" resource. */
extern const struct kube_resource KUBE_CORE_EVENTS;

/*
 * A new core/v1 Event about obj (its metadata.namespace, .name and .uid),
 * first and last seen at now (a metav1.Time, gj_time_now), count 1, named
 * by the server from generateName "<name>.". NULL when obj has no
 * namespace or name (core/v1 Events are namespaced), a string of ev is
 * NULL, or on ENOMEM.
 */
json_t *kube_core_event_new(const json_t *obj, const struct kube_core_event *ev, const char *now);

/*
 * Creates the Event of kube_core_event_new(obj, ev, now) in obj's namespace.
 * Returns 0 posted, 1 nothing to post (kube_core_event_new gave NULL), -1 the
 * create failed (err says why). Never retries: Events are best effort.
 */
int kube_core_event_post(struct kube_client *kc, const json_t *obj, const struct kube_core_event *ev,
		    struct kube_error *err);

#endif
