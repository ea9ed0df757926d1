/* The record's hash index of attachments (agent/record_index.h). */
#include "agent/record_index.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint64_t rec_index_hash(uint64_t seed, const char *const *parts, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ seed;

	for (size_t i = 0; i < n; i++) {
		for (const char *c = parts[i]; *c; c++)
			h = (h ^ (uint8_t)*c) * 0x100000001b3ull;
		h = (h ^ 0x1f) * 0x100000001b3ull;
	}
	return h ^ (h >> 31);
}

static void place(struct rec_index_slot *s, size_t cap, const struct rec_index_slot *e)
{
	size_t m = cap - 1, i = (size_t)e->h & m;

	while (s[i].p)
		i = (i + 1) & m;
	s[i] = *e;
}

int rec_index_put(struct rec_index *x, uint64_t h, void *p, uint32_t tag)
{
	struct rec_index_slot e = { .h = h, .p = p, .tag = tag };

	if (!p)
		return -EINVAL;
	if ((x->n + 1) * 2 > x->cap) {
		size_t nc = x->cap ? x->cap * 2 : 64;
		struct rec_index_slot *ns = calloc(nc, sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		for (size_t i = 0; i < x->cap; i++)
			if (x->s[i].p)
				place(ns, nc, &x->s[i]);
		free(x->s);
		x->s = ns;
		x->cap = nc;
	}
	place(x->s, x->cap, &e);
	x->n++;
	return 0;
}

bool rec_index_del(struct rec_index *x, uint64_t h, const void *p, uint32_t tag)
{
	size_t m, i, j;

	if (!x->cap)
		return false;
	m = x->cap - 1;
	for (i = (size_t)h & m; x->s[i].p; i = (i + 1) & m)
		if (x->s[i].h == h && x->s[i].p == p && x->s[i].tag == tag)
			break;
	if (!x->s[i].p)
		return false;
	/* Backward shift: an entry after the hole moves into it unless its
	 * home slot lies (cyclically) after the hole, up to the entry. */
	for (j = (i + 1) & m; x->s[j].p; j = (j + 1) & m) {
		size_t home = (size_t)x->s[j].h & m;

		if (((j - home) & m) >= ((j - i) & m)) {
			x->s[i] = x->s[j];
			i = j;
		}
	}
	memset(&x->s[i], 0, sizeof(x->s[i]));
	x->n--;
	return true;
}

size_t rec_index_next(const struct rec_index *x, uint64_t h, size_t s)
{
	size_t m;

	if (!x->cap)
		return REC_INDEX_END;
	m = x->cap - 1;
	for (s = (s + 1) & m; x->s[s].p; s = (s + 1) & m)
		if (x->s[s].h == h)
			return s;
	return REC_INDEX_END;
}

size_t rec_index_first(const struct rec_index *x, uint64_t h)
{
	size_t s;

	if (!x->cap)
		return REC_INDEX_END;
	s = (size_t)h & (x->cap - 1);
	if (!x->s[s].p)
		return REC_INDEX_END;
	return x->s[s].h == h ? s : rec_index_next(x, h, s);
}

void rec_index_clear(struct rec_index *x)
{
	if (x->s)
		memset(x->s, 0, x->cap * sizeof(*x->s));
	x->n = 0;
}

void rec_index_free(struct rec_index *x)
{
	free(x->s);
	memset(x, 0, sizeof(*x));
}
