/* Node ID allocation through the API server (alloc.h). */
#include "agent/identity/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/kube_client.h"

const struct kube_resource GID_NODEIDS = { GID_GROUP, GID_VERSION, "nodeids", false };
const struct kube_resource GID_NODEDATAPLANES = { GID_GROUP, GID_VERSION, "nodedataplanes", false };

static int api_fail(struct gid_result *out, const struct kube_error *e)
{
	snprintf(out->message, sizeof(out->message), "%s", e->message);
	snprintf(out->reason, sizeof(out->reason), "APIError");
	return -1;
}

static void decided(struct gid_result *out, bool ok, const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void decided(struct gid_result *out, bool ok, const char *reason, const char *fmt, ...)
{
	va_list ap;

	out->assigned = ok;
	snprintf(out->reason, sizeof(out->reason), "%s", reason);
	va_start(ap, fmt);
	vsnprintf(out->message, sizeof(out->message), fmt, ap);
	va_end(ap);
}

/* Lists with a field selector; items parsed as holds into own (when node) or taken. */
static int list_holds(struct kube_client *kc, const char *selector, struct gid_held *own, size_t *n_own,
		      struct gid_taken *taken, struct kube_error *e)
{
	struct kube_list_opts lo = { .field_selector = selector, .limit = 500 };
	json_t *l = NULL, *it;
	size_t i;

	if (kube_list_all(kc, &GID_NODEIDS, NULL, &lo, &l, e))
		return -1;
	json_array_foreach(json_object_get(l, "items"), i, it) {
		struct gid_held h;
		char why[200];
		uint8_t b[6];
		uint16_t id;

		if (taken && gid_name_parse(gj_str(it, "metadata.name"), b, &id) == 0)
			gid_taken_set(taken, id);
		if (own && *n_own < GID_OWN_MAX && gid_held_parse(it, &h, why, sizeof(why)) == 0)
			own[(*n_own)++] = h;
	}
	json_decref(l);
	return 0;
}

/* Creates the hold of id. 1 created, 0 taken (409), -1 other error. *holder gets the GET on 409. */
static int try_create(struct kube_client *kc, const char *node, const struct gid_spec *s, uint16_t id,
		      struct gid_result *out, struct kube_error *e)
{
	json_t *obj = gid_nodeid_new(node, s, id);
	int rc;

	out->creates++;
	rc = kube_create(kc, &GID_NODEIDS, NULL, obj, NULL, e);
	json_decref(obj);
	if (rc == 0)
		return 1;
	if (e->code == KUBE_ERR_ALREADY_EXISTS) {
		out->conflicts++;
		return 0;
	}
	return -1;
}

static void release_others(struct kube_client *kc, const struct gid_held *own, size_t n,
			   const struct gid_choice *ch, const char *keep_name, struct gid_result *out)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct kube_delete_opts d = { .uid = own[i].uid[0] ? own[i].uid : NULL };
		struct kube_error e;

		if (!ch->release[i] || !strcmp(own[i].name, keep_name))
			continue;
		if (kube_delete(kc, &GID_NODEIDS, NULL, own[i].name, &d, &e) == 0 || e.code == KUBE_ERR_NOT_FOUND)
			out->released++;
		/* other failures: the hold is listed again at the next pass */
	}
}

static void assigned(struct gid_result *out, uint16_t id, const char *reason, const char *how)
{
	char loc[64];

	out->id = id;
	gid_object_name(out->spec.block, id, out->name, sizeof(out->name));
	gid_locator(out->spec.block, id, loc, sizeof(loc));
	decided(out, true, reason, "node ID %u (0x%04x) %s: NodeID %s, locator %s", id, id, how, out->name, loc);
}

int gid_acquire(struct kube_client *kc, const char *node, const json_t *ndp, uint16_t prefer,
		const uint8_t *prefer_block, struct gid_result *out)
{
	struct gid_held own[GID_OWN_MAX];
	struct gid_choice ch;
	struct kube_error e;
	struct gid_taken *taken = NULL;
	const struct gid_spec *s = &out->spec;
	char sel[GID_NODE_MAX + 64], why[256];
	size_t n_own = 0;
	uint16_t id, want;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (gid_spec_parse(ndp, node, &out->spec, why, sizeof(why))) {
		decided(out, false, "InvalidSpec", "%s", why);
		return 0;
	}
	out->spec_ok = true;
	snprintf(sel, sizeof(sel), "spec.node=%s", node);
	if (list_holds(kc, sel, own, &n_own, NULL, &e))
		return api_fail(out, &e);
	if (!(prefer_block && !memcmp(prefer_block, s->block, 6)))
		prefer = 0;
	gid_choose(s, own, n_own, prefer, &ch);
	if (ch.keep >= 0) {
		assigned(out, own[ch.keep].id, s->pin ? "Pinned" : "Reused",
			 s->pin ? "pinned by spec.nodeID, held" : "already held");
		release_others(kc, own, n_own, &ch, out->name, out);
		return 0;
	}
	if (s->pin) {
		char name[GID_NAME_LEN + 1];
		json_t *cur = NULL;
		struct gid_held h;

		switch (try_create(kc, node, s, s->pin, out, &e)) {
		case 1:
			assigned(out, s->pin, "Pinned", "pinned by spec.nodeID");
			release_others(kc, own, n_own, &ch, out->name, out);
			return 0;
		case -1:
			return api_fail(out, &e);
		}
		gid_object_name(s->block, s->pin, name, sizeof(name));
		if (kube_get(kc, &GID_NODEIDS, NULL, name, &cur, &e))
			return e.code == KUBE_ERR_NOT_FOUND ? (snprintf(out->message, sizeof(out->message),
									"NodeID %s went away: retry", name), -1)
							    : api_fail(out, &e);
		if (gid_held_parse(cur, &h, why, sizeof(why))) {
			decided(out, false, "PinnedIDTaken", "node ID %u pinned by spec.nodeID is held by NodeID %s, "
				"which is malformed (%s): not taken over", s->pin, name, why);
		} else if (strcmp(h.node, node)) {
			decided(out, false, "PinnedIDTaken", "node ID %u (0x%04x) pinned by spec.nodeID is held by node %s "
				"(NodeID %s): not taken over; unpin, or free it on that node", s->pin, s->pin, h.node, name);
		} else {
			/* ours, created meanwhile by another process of this node */
			assigned(out, s->pin, "Pinned", "pinned by spec.nodeID, held");
			release_others(kc, own, n_own, &ch, out->name, out);
		}
		json_decref(cur);
		return 0;
	}
	/* Allocate: the preferred ID, then from the hash of the name upward. */
	if (!(taken = calloc(1, sizeof(*taken)))) {
		snprintf(out->message, sizeof(out->message), "out of memory");
		return -1;
	}
	snprintf(sel, sizeof(sel), "spec.block=%s", s->block_str);
	if (list_holds(kc, sel, NULL, NULL, taken, &e)) {
		rc = api_fail(out, &e);
		goto done;
	}
	want = ch.want;
	for (id = 1; id <= GID_ID_MAX; id++)
		out->listed += gid_taken_has(taken, id);
	id = want && !gid_taken_has(taken, want) ? want : gid_next_free(taken, gid_hash_start(node));
	while (id) {
		int r = try_create(kc, node, s, id, out, &e);

		if (r == 1) {
			assigned(out, id, "Allocated", id == want ? "allocated (the one of the node's record)" : "allocated");
			release_others(kc, own, n_own, &ch, out->name, out);
			rc = 0;
			goto done;
		}
		if (r < 0) {
			rc = api_fail(out, &e);
			goto done;
		}
		gid_taken_set(taken, id);
		id = gid_next_free(taken, id == want ? gid_hash_start(node) : gid_next(id));
	}
	decided(out, false, "NodeIDsExhausted", "every node ID 1-57343 of block %s is held by some node",
		s->block_str);
	rc = 0;
done:
	free(taken);
	return rc;
}
