#include "common/gmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *next;
	uint64_t hash;
	void *val;
	char key[];
};

struct gmap {
	struct node **b;
	size_t nb, len;
};

static uint64_t fnv(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct gmap *new_with(size_t nb)
{
	struct gmap *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->nb = nb;
	m->b = calloc(m->nb, sizeof(*m->b));
	if (!m->b) {
		free(m);
		return NULL;
	}
	return m;
}

struct gmap *gmap_new(void) { return new_with(16); }
struct gmap *gmap_new_small(void) { return new_with(1); }

void gmap_free(struct gmap *m, void (*free_val)(void *))
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nb; i++) {
		struct node *n = m->b[i], *nx;
		for (; n; n = nx) {
			nx = n->next;
			if (free_val)
				free_val(n->val);
			free(n);
		}
	}
	free(m->b);
	free(m);
}

size_t gmap_len(const struct gmap *m) { return m->len; }

static struct node *find(const struct gmap *m, const char *key, uint64_t h)
{
	for (struct node *n = m->b[h & (m->nb - 1)]; n; n = n->next)
		if (n->hash == h && !strcmp(n->key, key))
			return n;
	return NULL;
}

void *gmap_get(const struct gmap *m, const char *key)
{
	struct node *n = find(m, key, fnv(key));
	return n ? n->val : NULL;
}

bool gmap_has(const struct gmap *m, const char *key)
{
	return find(m, key, fnv(key)) != NULL;
}

static int grow(struct gmap *m)
{
	size_t nb = m->nb * 2;
	struct node **b = calloc(nb, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < m->nb; i++) {
		struct node *n = m->b[i], *nx;
		for (; n; n = nx) {
			nx = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
		}
	}
	free(m->b);
	m->b = b;
	m->nb = nb;
	return 0;
}

void *gmap_put(struct gmap *m, const char *key, void *val, int *err)
{
	uint64_t h = fnv(key);
	struct node *n = find(m, key, h);
	size_t kl;

	if (err)
		*err = 0;
	if (n) {
		void *old = n->val;
		n->val = val;
		return old;
	}
	if (m->len * 4 >= m->nb * 3 && grow(m) < 0) {
		if (err)
			*err = -1;
		return NULL;
	}
	kl = strlen(key);
	n = malloc(sizeof(*n) + kl + 1);
	if (!n) {
		if (err)
			*err = -1;
		return NULL;
	}
	memcpy(n->key, key, kl + 1);
	n->hash = h;
	n->val = val;
	n->next = m->b[h & (m->nb - 1)];
	m->b[h & (m->nb - 1)] = n;
	m->len++;
	return NULL;
}

void *gmap_del(struct gmap *m, const char *key, bool *found)
{
	uint64_t h = fnv(key);
	struct node **pp = &m->b[h & (m->nb - 1)];

	for (; *pp; pp = &(*pp)->next) {
		struct node *n = *pp;
		if (n->hash == h && !strcmp(n->key, key)) {
			void *v = n->val;
			*pp = n->next;
			free(n);
			m->len--;
			if (found)
				*found = true;
			return v;
		}
	}
	if (found)
		*found = false;
	return NULL;
}

void gmap_iter_init(struct gmap_iter *it, const struct gmap *m)
{
	it->m = m;
	it->bucket = 0;
	it->node = NULL;
}

bool gmap_next(struct gmap_iter *it, const char **key, void **val)
{
	struct node *n = it->node ? ((struct node *)it->node)->next : NULL;

	while (!n && it->bucket < it->m->nb)
		n = it->m->b[it->bucket++];
	it->node = n;
	if (!n)
		return false;
	if (key)
		*key = n->key;
	if (val)
		*val = n->val;
	return true;
}
