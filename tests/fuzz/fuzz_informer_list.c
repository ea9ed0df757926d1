/*
 * libFuzzer target: an informer's list, page by page, as the API server's
 * bodies arrive (common/kube_client.c kube_list_merge_page/finish, then the
 * informer's relist into its cache: resourceVersion, kube_store_replace with
 * a label index). Input: JSON pages one after the other; the list follows
 * continue tokens while pages carry them (at most 64 pages).
 * Invariants: a page without an items array is refused with a message; the
 * merged list has no paging fields; after the relist the cache holds one
 * object per distinct namespace/name and reported one add for each; a
 * second relist with the first page alone deletes exactly the others.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/json.h"
#include "common/kube_client.h"
#include "common/kube_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct diffs {
	long a, u, d;
};

static void on_diff(char kind, json_t *old, json_t *nw, void *ud)
{
	struct diffs *c = ud;

	if (kind == 'a' && !old && nw)
		c->a++;
	else if (kind == 'u' && old && nw)
		c->u++;
	else if (kind == 'd' && old && !nw)
		c->d++;
	else
		abort();
}

/* What the informer does to each item (drop_managed_fields). */
static void drop_managed(json_t *item, void *ud)
{
	(void)ud;
	json_object_del(json_object_get(item, "metadata"), "managedFields");
}

static void by_label(const json_t *obj, struct kube_index_values *out, void *ud)
{
	kube_index_by_label(obj, out, ud);
}

static size_t distinct(const json_t *items)
{
	json_t *set = json_object(), *it;
	char key[600];
	size_t i, n;

	json_array_foreach(items, i, it)
		if (gj_object_key(it, key, sizeof(key)) == 0)
			json_object_set_new(set, key, json_true());
	n = json_object_size(set);
	json_decref(set);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kube_list_opts o = { .item_fn = drop_managed };
	struct kube_error err;
	struct kube_store *st;
	struct diffs c = { 0 };
	json_t *all = NULL, *first = NULL, *page, *items, *it;
	size_t off = 0, i, n, nfirst;
	char *cont = NULL;
	int pages = 0;

	while (off < size && pages < 64) {
		json_error_t je;

		page = json_loadb((const char *)data + off, size - off,
				  JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &je);
		if (!page)
			break;
		off += je.position ? (size_t)je.position : 1;
		pages++;
		free(cont);
		err.message[0] = 0;
		if (kube_list_merge_page(&all, page, &o, &cont, &err)) {
			if (!err.message[0] || err.code != KUBE_ERR_DECODE || cont)
				abort();
			json_decref(page);
			break;
		}
		if (!first)
			first = json_incref(json_object_get(page, "items"));
		json_decref(page);
		if (!cont)
			break;
	}
	free(cont);
	if (!all) {
		json_decref(first);
		return 0;
	}
	kube_list_finish(all);
	if (gj_get(all, "metadata.continue") || gj_get(all, "metadata.remainingItemCount"))
		abort();
	items = json_object_get(all, "items");
	json_array_foreach(items, i, it)
		if (gj_get(it, "metadata.managedFields"))
			abort();
	/* The informer's relist; it refuses a list without a resourceVersion
	 * before touching its cache, and so does this. */
	if (!gj_str(all, "metadata.resourceVersion") || !*gj_str(all, "metadata.resourceVersion"))
		goto out;
	st = kube_store_new();
	kube_store_add_index(st, "l", by_label, (void *)"app");
	n = distinct(items);
	if (kube_store_replace(st, items, on_diff, &c) || kube_store_len(st) != n ||
	    c.a != (long)n || c.d)
		abort();
	nfirst = distinct(first);
	c = (struct diffs){ 0 };
	if (kube_store_replace(st, first, on_diff, &c) || kube_store_len(st) != nfirst ||
	    c.a || c.d != (long)(n - nfirst))
		abort();
	json_decref(kube_store_by_index(st, "l", "x"));
	kube_store_free(st);
out:
	json_decref(first);
	json_decref(all);
	return 0;
}
