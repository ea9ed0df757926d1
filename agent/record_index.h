/*
 * A hash index of the record's attachments (agent/record.c): entries of
 * (hash, pointer, small tag) found by hash in O(1), so the CNI verbs'
 * lookups (by attachment, by the runtime's key, by host interface, by
 * address) cost the same at 1,000 attachments as at one. Several entries
 * may share a hash, and one pointer may be in it several times under
 * different tags (an attachment's addresses): the caller compares what the
 * hash stands for. Open addressing with linear probing; a removal shifts
 * the run back (no tombstones), so the table stays as short as its entries.
 */
#ifndef GALACTIC_AGENT_RECORD_INDEX_H
#define GALACTIC_AGENT_RECORD_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rec_index_slot {
	uint64_t h;
	void *p;     /* NULL: an empty slot */
	uint32_t tag;
};

struct rec_index {
	struct rec_index_slot *s;
	size_t cap, n; /* cap: 0 or a power of two, at most half full */
};

/* FNV-1a of the strings, each followed by a separator, after a seed (the kind of key). */
uint64_t rec_index_hash(uint64_t seed, const char *const *parts, size_t n);
/* Adds (h, p, tag): 0, or -ENOMEM (the index is unchanged). */
int rec_index_put(struct rec_index *x, uint64_t h, void *p, uint32_t tag);
/* Removes the entry (h, p, tag) if it is there; true if it was. */
bool rec_index_del(struct rec_index *x, uint64_t h, const void *p, uint32_t tag);
/*
 * The entries of hash h, one after another:
 *   for (size_t s = rec_index_first(x, h); s != REC_INDEX_END; s = rec_index_next(x, h, s))
 *           ... x->s[s].p, x->s[s].tag ...
 * The index must not change meanwhile.
 */
#define REC_INDEX_END ((size_t)-1)
size_t rec_index_first(const struct rec_index *x, uint64_t h);
size_t rec_index_next(const struct rec_index *x, uint64_t h, size_t s);
/* Empties it (keeps its memory) / frees it. */
void rec_index_clear(struct rec_index *x);
void rec_index_free(struct rec_index *x);

#endif
