/*
 * libFuzzer target: watch-stream framing + event decoding + cache updates,
 * the path every byte from the API server takes inside an informer.
 * The first input byte picks the chunk sizes (curl splits arbitrarily); the
 * rest is the stream. Also feeds the same bytes to the error-body decoder.
 * Invariants: no crash, no leak, decoder errors leave nothing buffered
 * after reset, the store's size matches the adds minus deletes it accepted.
 */
#include "common/json.h"
#include "common/kube_client.h"
#include "common/kube_store.h"
#include "common/kube_watch.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ctx {
	struct kube_store *store;
	long live;
};

static int on_event(const struct kube_event *ev, void *ud)
{
	struct ctx *c = ud;
	char key[600];
	json_t *old = NULL;

	switch (ev->type) {
	case KUBE_EVENT_ADDED:
	case KUBE_EVENT_MODIFIED:
		if (kube_store_upsert(c->store, ev->object, &old) == 0 && !old)
			c->live++;
		json_decref(old);
		break;
	case KUBE_EVENT_DELETED:
		if (gj_object_key(ev->object, key, sizeof(key)) == 0 &&
		    (old = kube_store_del(c->store, key))) {
			c->live--;
			json_decref(old);
		}
		break;
	case KUBE_EVENT_BOOKMARK:
		if (!ev->resource_version)
			abort();
		break;
	case KUBE_EVENT_ERROR:
		return ev->error_code == 410 ? 1 : 0;
	}
	return 0;
}

static void by_label(const json_t *obj, struct kube_index_values *out, void *ud)
{
	kube_index_by_label(obj, out, ud);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = { 0 };
	struct kube_watch_decoder *d;
	struct kube_error e;
	char err[256];
	size_t chunk, off = 1;

	if (size < 1)
		return 0;
	chunk = (size_t)(data[0] % 64) + 1;
	c.store = kube_store_new();
	kube_store_add_index(c.store, "l", by_label, (void *)"app");
	d = kube_watch_decoder_new(4096);
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		int r = kube_watch_decoder_feed(d, (const char *)data + off, n, on_event, &c, err, sizeof(err));
		off += n;
		if (r < 0) {
			if (!err[0])
				abort(); /* every error carries a message */
			kube_watch_decoder_reset(d);
			if (kube_watch_decoder_pending(d))
				abort();
		}
	}
	if ((long)kube_store_len(c.store) != c.live)
		abort();
	json_t *all = kube_store_list(c.store);
	if (json_array_size(all) != kube_store_len(c.store))
		abort();
	json_decref(all);
	json_t *idx = kube_store_by_index(c.store, "l", "x");
	json_decref(idx);
	kube_watch_decoder_free(d);
	kube_store_free(c.store);

	kube_error_from_response(&e, "fuzz", 409, (const char *)data, size, 0);
	if (e.code != KUBE_ERR_CONFLICT && e.code != KUBE_ERR_APPLY_CONFLICT &&
	    e.code != KUBE_ERR_ALREADY_EXISTS)
		abort();
	return 0;
}
