#include "common/kube_store.h"

#include "common/gmap.h"
#include "common/json.h"
#include "common/grow.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_INDEXES 8

struct index {
	char name[64];
	kube_index_fn fn;
	void *ud;
	struct gmap *vals; /* value -> gmap of keys (set) */
};

struct kube_store {
	pthread_rwlock_t lock;
	/* key -> json_t* (one reference), or in compact mode a struct packed */
	struct gmap *objs;
	bool compact;
	/* compact mode: the first object stored, serialized, is the deflate
	 * dictionary of every later one (objects of one kind share most of their
	 * bytes); one deflate stream, used under the write lock */
	char *dict;
	uInt dictlen;
	z_stream zd;
	bool zd_ok;
	struct index idx[MAX_INDEXES];
	int nidx;
};

void kube_index_values_add(struct kube_index_values *iv, const char *value)
{
	if (!value || iv->n >= KUBE_INDEX_MAX_VALUES || strlen(value) >= sizeof(iv->v[0]))
		return;
	for (int i = 0; i < iv->n; i++)
		if (!strcmp(iv->v[i], value))
			return;
	strcpy(iv->v[iv->n++], value);
}

void kube_index_by_namespace(const json_t *obj, struct kube_index_values *out, void *ud)
{
	(void)ud;
	kube_index_values_add(out, gj_str(obj, "metadata.namespace"));
}

void kube_index_by_label(const json_t *obj, struct kube_index_values *out, void *ud)
{
	json_t *labels = gj_get(obj, "metadata.labels");
	kube_index_values_add(out, json_string_value(json_object_get(labels, (const char *)ud)));
}

struct kube_store *kube_store_new(void)
{
	struct kube_store *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	if (!(s->objs = gmap_new())) {
		free(s);
		return NULL;
	}
	pthread_rwlock_init(&s->lock, NULL);
	return s;
}

/*
 * A compact value: the object's JSON (no whitespace), raw-deflated against
 * the store's dictionary, after its resourceVersion (read without inflating).
 */
struct packed {
	uint32_t jlen, clen; /* JSON and deflated lengths */
	char rv[];           /* "resourceVersion\0" then clen bytes */
};

static void decref_val(void *v) { json_decref(v); }
static void free_set(void *v) { gmap_free(v, NULL); }

/* Under the write lock (the deflate stream and the dictionary are the store's). */
static struct packed *pack(struct kube_store *s, const json_t *obj)
{
	const char *rv = gj_str(obj, "metadata.resourceVersion") ?: "";
	size_t rl = strlen(rv), jl, cap;
	char *js = json_dumps(obj, JSON_COMPACT);
	struct packed *p = NULL, *q;

	if (!js)
		return NULL;
	jl = strlen(js);
	if (!s->dict && jl < UINT32_MAX) {
		s->dict = js; /* kept: every later object inflates against it */
		s->dictlen = (uInt)jl;
		if (!(js = strdup(js)))
			return NULL;
	}
	if (!s->zd_ok && deflateInit2(&s->zd, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK)
		s->zd_ok = true;
	if (!s->zd_ok || jl >= UINT32_MAX)
		goto out;
	cap = deflateBound(&s->zd, (uLong)jl);
	if (!(p = malloc(sizeof(*p) + rl + 1 + cap)))
		goto out;
	memcpy(p->rv, rv, rl + 1);
	if (deflateReset(&s->zd) != Z_OK ||
	    deflateSetDictionary(&s->zd, (const Bytef *)s->dict, s->dictlen) != Z_OK)
		goto fail;
	s->zd.next_in = (Bytef *)js;
	s->zd.avail_in = (uInt)jl;
	s->zd.next_out = (Bytef *)p->rv + rl + 1;
	s->zd.avail_out = (uInt)cap;
	if (deflate(&s->zd, Z_FINISH) != Z_STREAM_END)
		goto fail;
	p->jlen = (uint32_t)jl;
	p->clen = (uint32_t)(cap - s->zd.avail_out);
	if ((q = realloc(p, sizeof(*p) + rl + 1 + p->clen)))
		p = q;
	goto out;
fail:
	free(p);
	p = NULL;
out:
	free(js);
	return p;
}

static json_t *unpack(const struct kube_store *s, const struct packed *p)
{
	size_t rl = strlen(p->rv);
	z_stream z = { 0 };
	char *js = malloc((size_t)p->jlen + 1);
	json_t *o = NULL;

	if (!js || inflateInit2(&z, -15) != Z_OK) {
		free(js);
		return NULL;
	}
	z.next_in = (Bytef *)p->rv + rl + 1;
	z.avail_in = p->clen;
	z.next_out = (Bytef *)js;
	z.avail_out = p->jlen;
	if (inflateSetDictionary(&z, (const Bytef *)s->dict, s->dictlen) == Z_OK &&
	    inflate(&z, Z_FINISH) == Z_STREAM_END && z.avail_out == 0)
		o = json_loadb(js, p->jlen, 0, NULL);
	inflateEnd(&z);
	free(js);
	return o;
}

/* The stored value as an object: a new reference (decoded in compact mode). */
static json_t *val_obj(const struct kube_store *s, void *v)
{
	if (!v)
		return NULL;
	if (!s->compact)
		return json_incref(v);
	return unpack(s, v);
}

static const char *val_rv(const struct kube_store *s, void *v)
{
	if (!v)
		return NULL;
	return s->compact ? ((const struct packed *)v)->rv : gj_str(v, "metadata.resourceVersion");
}

static void val_free(const struct kube_store *s, void *v)
{
	if (s->compact)
		free(v);
	else
		json_decref(v);
}

int kube_store_set_compact(struct kube_store *s)
{
	int rc = -1;
	pthread_rwlock_wrlock(&s->lock);
	if (!gmap_len(s->objs)) {
		s->compact = true;
		rc = 0;
	}
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

void kube_store_free(struct kube_store *s)
{
	if (!s)
		return;
	gmap_free(s->objs, s->compact ? free : decref_val);
	if (s->zd_ok)
		deflateEnd(&s->zd);
	free(s->dict);
	for (int i = 0; i < s->nidx; i++)
		gmap_free(s->idx[i].vals, free_set);
	pthread_rwlock_destroy(&s->lock);
	free(s);
}

int kube_store_add_index(struct kube_store *s, const char *name, kube_index_fn fn, void *ud)
{
	int rc = -1;
	pthread_rwlock_wrlock(&s->lock);
	if (s->nidx < MAX_INDEXES && gmap_len(s->objs) == 0 && strlen(name) < 64) {
		struct index *ix = &s->idx[s->nidx];
		if ((ix->vals = gmap_new())) {
			strcpy(ix->name, name);
			ix->fn = fn;
			ix->ud = ud;
			s->nidx++;
			rc = 0;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

static void index_remove(struct kube_store *s, const char *key, const json_t *obj)
{
	for (int i = 0; i < s->nidx; i++) {
		struct kube_index_values iv = { 0 };
		s->idx[i].fn(obj, &iv, s->idx[i].ud);
		for (int k = 0; k < iv.n; k++) {
			struct gmap *set = gmap_get(s->idx[i].vals, iv.v[k]);
			if (!set)
				continue;
			gmap_del(set, key, NULL);
			if (!gmap_len(set)) {
				gmap_del(s->idx[i].vals, iv.v[k], NULL);
				gmap_free(set, NULL);
			}
		}
	}
}

static int index_add(struct kube_store *s, const char *key, const json_t *obj)
{
	int err = 0;
	for (int i = 0; i < s->nidx; i++) {
		struct kube_index_values iv = { 0 };
		s->idx[i].fn(obj, &iv, s->idx[i].ud);
		for (int k = 0; k < iv.n; k++) {
			struct gmap *set = gmap_get(s->idx[i].vals, iv.v[k]);
			int e = 0;
			if (!set) {
				if (!(set = gmap_new_small())) /* most values name one object */
					return -1;
				gmap_put(s->idx[i].vals, iv.v[k], set, &e);
				if (e) {
					gmap_free(set, NULL);
					return -1;
				}
			}
			gmap_put(set, key, (void *)1, &e);
			err |= e;
		}
	}
	return err ? -1 : 0;
}

size_t kube_store_len(struct kube_store *s)
{
	size_t n;
	pthread_rwlock_rdlock(&s->lock);
	n = gmap_len(s->objs);
	pthread_rwlock_unlock(&s->lock);
	return n;
}

json_t *kube_store_get(struct kube_store *s, const char *key)
{
	json_t *o;
	pthread_rwlock_rdlock(&s->lock);
	o = val_obj(s, gmap_get(s->objs, key));
	pthread_rwlock_unlock(&s->lock);
	return o;
}

json_t *kube_store_get_nn(struct kube_store *s, const char *ns, const char *name)
{
	char key[600];
	if (ns && *ns)
		snprintf(key, sizeof(key), "%s/%s", ns, name);
	else
		snprintf(key, sizeof(key), "%s", name);
	return kube_store_get(s, key);
}

json_t *kube_store_list(struct kube_store *s)
{
	json_t *a = json_array();
	struct gmap_iter it;
	void *v;

	pthread_rwlock_rdlock(&s->lock);
	gmap_iter_init(&it, s->objs);
	while (gmap_next(&it, NULL, &v))
		json_array_append_new(a, val_obj(s, v));
	pthread_rwlock_unlock(&s->lock);
	return a;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *kube_store_keys(struct kube_store *s)
{
	json_t *a = json_array(), *sorted;
	struct gmap_iter it;
	const char *k;
	size_t n;

	pthread_rwlock_rdlock(&s->lock);
	gmap_iter_init(&it, s->objs);
	while (gmap_next(&it, &k, NULL))
		json_array_append_new(a, json_string(k));
	pthread_rwlock_unlock(&s->lock);
	n = json_array_size(a);
	json_t **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return a;
	for (size_t i = 0; i < n; i++)
		v[i] = json_array_get(a, i);
	qsort(v, n, sizeof(*v), cmp_str);
	sorted = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(a);
	return sorted;
}

json_t *kube_store_by_index(struct kube_store *s, const char *index, const char *value)
{
	json_t *a = NULL;
	pthread_rwlock_rdlock(&s->lock);
	for (int i = 0; i < s->nidx; i++) {
		if (strcmp(s->idx[i].name, index))
			continue;
		struct gmap *set = gmap_get(s->idx[i].vals, value);
		struct gmap_iter it;
		const char *k;
		a = json_array();
		if (set) {
			gmap_iter_init(&it, set);
			while (gmap_next(&it, &k, NULL))
				json_array_append_new(a, val_obj(s, gmap_get(s->objs, k)));
		}
		break;
	}
	pthread_rwlock_unlock(&s->lock);
	return a;
}

static int upsert_locked(struct kube_store *s, json_t *obj, json_t **old)
{
	char key[600];
	void *prev, *val;
	json_t *prevo = NULL;
	int e = 0;

	*old = NULL;
	if (gj_object_key(obj, key, sizeof(key)) < 0)
		return -1;
	if (!(val = s->compact ? (void *)pack(s, obj) : (void *)json_incref(obj)))
		return -1;
	prev = gmap_get(s->objs, key);
	if (prev) {
		prevo = val_obj(s, prev);
		index_remove(s, key, prevo);
	}
	prev = gmap_put(s->objs, key, val, &e);
	if (e) {
		val_free(s, val);
		json_decref(prevo);
		return -1;
	}
	if (s->compact) {
		free(prev);
		*old = prevo; /* decoded: a new reference for the caller */
	} else {
		json_decref(prevo);
		*old = prev; /* the store's reference passes to the caller */
	}
	return index_add(s, key, obj);
}

int kube_store_upsert(struct kube_store *s, json_t *obj, json_t **old)
{
	json_t *prev = NULL;
	int rc;
	pthread_rwlock_wrlock(&s->lock);
	rc = upsert_locked(s, obj, &prev);
	pthread_rwlock_unlock(&s->lock);
	if (old)
		*old = prev;
	else
		json_decref(prev);
	return rc;
}

static json_t *del_locked(struct kube_store *s, const char *key)
{
	bool found;
	void *v = gmap_del(s->objs, key, &found);
	/* not compact: the store's reference passes to the caller */
	json_t *o = s->compact ? val_obj(s, v) : v;
	if (o)
		index_remove(s, key, o);
	if (s->compact)
		free(v);
	return o;
}

json_t *kube_store_del(struct kube_store *s, const char *key)
{
	json_t *o;
	pthread_rwlock_wrlock(&s->lock);
	o = del_locked(s, key);
	pthread_rwlock_unlock(&s->lock);
	return o;
}

struct change {
	char kind;
	json_t *old, *new;
};

struct kube_store_replace {
	struct kube_store *s;
	struct gmap *seen;
	int rc;
};

struct kube_store_replace *kube_store_replace_begin(struct kube_store *s)
{
	struct kube_store_replace *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->s = s;
	if (!(r->seen = gmap_new())) {
		free(r);
		return NULL;
	}
	return r;
}

static bool change_add(struct change **ch, size_t *nch, size_t *cap, char kind, json_t *old,
		       json_t *nw)
{
	if (G_GROW(*ch, *cap, *nch, 64))
		return false;
	(*ch)[(*nch)++] = (struct change){ kind, old, nw };
	return true;
}

static void changes_emit(struct change *ch, size_t nch, kube_store_diff_fn fn, void *ud)
{
	for (size_t i = 0; i < nch; i++) {
		if (fn)
			fn(ch[i].kind, ch[i].old, ch[i].new, ud);
		json_decref(ch[i].old);
		json_decref(ch[i].new);
	}
	free(ch);
}

int kube_store_replace_page(struct kube_store_replace *r, json_t *items, kube_store_diff_fn fn,
			    void *ud)
{
	struct kube_store *s = r->s;
	struct change *ch = NULL;
	size_t nch = 0, cap = 0, i;
	json_t *it;
	int rc = 0;

	if (!json_is_array(items))
		return r->rc = -1;
	pthread_rwlock_wrlock(&s->lock);
	json_array_foreach(items, i, it) {
		char key[600];
		json_t *old = NULL;
		const char *rv_old, *rv_new;
		if (gj_object_key(it, key, sizeof(key)) < 0)
			continue; /* an item without a name cannot be cached */
		gmap_put(r->seen, key, (void *)1, NULL);
		rv_old = val_rv(s, gmap_get(s->objs, key));
		rv_new = gj_str(it, "metadata.resourceVersion");
		if (rv_old && rv_new && !strcmp(rv_old, rv_new))
			continue;
		if (upsert_locked(s, it, &old) < 0)
			rc = -1;
		if (!change_add(&ch, &nch, &cap, old ? 'u' : 'a', old, json_incref(it))) {
			json_decref(old);
			json_decref(it);
			rc = -1;
			break;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	changes_emit(ch, nch, fn, ud);
	if (rc)
		r->rc = rc;
	return rc;
}

void kube_store_replace_abort(struct kube_store_replace *r)
{
	if (!r)
		return;
	gmap_free(r->seen, NULL);
	free(r);
}

int kube_store_replace_end(struct kube_store_replace *r, kube_store_diff_fn fn, void *ud)
{
	struct kube_store *s = r->s;
	struct change *ch = NULL;
	size_t nch = 0, cap = 0, i;
	struct gmap_iter gi;
	const char *k;
	json_t *gone = json_array(), *it;
	int rc = r->rc;

	/* Whatever was not listed is gone. */
	pthread_rwlock_wrlock(&s->lock);
	gmap_iter_init(&gi, s->objs);
	while (gmap_next(&gi, &k, NULL))
		if (!gmap_has(r->seen, k))
			json_array_append_new(gone, json_string(k));
	json_array_foreach(gone, i, it) {
		json_t *o = del_locked(s, json_string_value(it));
		if (!change_add(&ch, &nch, &cap, 'd', o, NULL)) {
			json_decref(o);
			rc = -1;
			break;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	json_decref(gone);
	kube_store_replace_abort(r);
	changes_emit(ch, nch, fn, ud);
	return rc;
}

int kube_store_replace(struct kube_store *s, json_t *items, kube_store_diff_fn fn, void *ud)
{
	struct kube_store_replace *r;

	if (!json_is_array(items) || !(r = kube_store_replace_begin(s)))
		return -1;
	/* One page: adds and updates in list order, then deletes. */
	kube_store_replace_page(r, items, fn, ud);
	return kube_store_replace_end(r, fn, ud);
}
