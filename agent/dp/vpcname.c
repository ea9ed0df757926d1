/*
 * The remotes' interned VPC ids (model.h, gdp_vpc_intern): ids in chunks
 * that never move (a reader needs no lock), a hash of them for interning
 * under a mutex, and each thread's last id first (a set of remotes names
 * the same VPC run after run: no lock for those).
 */
#include "agent/dp/model.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK      64 /* ids a chunk (4 KiB) */
#define NCHUNKS    (GDP_VPC_NAMES_MAX / CHUNK)

typedef char name_t[GDP_ID_MAX + 1];

static name_t *_Atomic chunks[NCHUNKS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t n_names = 1;   /* under mu; 0 is "" */
static uint32_t *hash;         /* under mu: indexes (0 = empty), at most half full */
static size_t hash_mask;
static _Thread_local uint32_t last_ix;

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return h;
}

const char *gdp_vpc_name(uint32_t ix)
{
	name_t *c;

	if (!ix || ix >= GDP_VPC_NAMES_MAX)
		return "";
	c = atomic_load_explicit(&chunks[ix / CHUNK], memory_order_acquire);
	return c ? c[ix % CHUNK] : "";
}

/* Under mu: the slot of id in hash (empty when absent). */
static size_t slot_of(const char *id)
{
	size_t s = (size_t)str_hash(id) & hash_mask;

	while (hash[s] && strcmp(gdp_vpc_name(hash[s]), id))
		s = (s + 1) & hash_mask;
	return s;
}

static int grow_hash(void)
{
	size_t sz = hash ? (hash_mask + 1) * 2 : 64, om = hash_mask;
	uint32_t *old = hash, *nh = calloc(sz, sizeof(*nh));

	if (!nh)
		return -ENOMEM;
	hash = nh;
	hash_mask = sz - 1;
	for (size_t i = 0; old && i <= om; i++)
		if (old[i])
			hash[slot_of(gdp_vpc_name(old[i]))] = old[i];
	free(old);
	return 0;
}

static int lookup(const char *id, uint32_t *ix, bool add)
{
	size_t s;
	int rc = 0;

	if (!id[0])
		return *ix = 0, 0;
	if (strlen(id) > GDP_ID_MAX)
		return -EINVAL;
	if (last_ix && !strcmp(gdp_vpc_name(last_ix), id))
		return *ix = last_ix, 0;
	pthread_mutex_lock(&mu);
	if (!hash && (rc = grow_hash()))
		goto out;
	s = slot_of(id);
	if (hash[s]) {
		*ix = last_ix = hash[s];
		goto out;
	}
	if (!add) {
		rc = -ENOENT;
		goto out;
	}
	if (n_names >= GDP_VPC_NAMES_MAX) {
		rc = -ENOSPC;
		goto out;
	}
	if (!chunks[n_names / CHUNK]) {
		name_t *c = calloc(CHUNK, sizeof(name_t));

		if (!c) {
			rc = -ENOMEM;
			goto out;
		}
		atomic_store_explicit(&chunks[n_names / CHUNK], c, memory_order_release);
	}
	/* the id is written before its index is given out */
	strcpy(chunks[n_names / CHUNK][n_names % CHUNK], id);
	if ((size_t)n_names * 2 >= hash_mask + 1) {
		if ((rc = grow_hash()))
			goto out;
		s = slot_of(id);
	}
	hash[s] = n_names;
	*ix = last_ix = n_names++;
out:
	pthread_mutex_unlock(&mu);
	return rc;
}

int gdp_vpc_intern(const char *id, uint32_t *ix)
{
	return lookup(id, ix, true);
}

int gdp_vpc_find(const char *id, uint32_t *ix)
{
	return lookup(id, ix, false);
}

uint32_t gdp_vpc_ix(const char *id)
{
	uint32_t ix;

	return gdp_vpc_intern(id, &ix) ? 0 : ix;
}

const char *gdp_remote_vpc(const struct gdp_remote *r)
{
	return gdp_vpc_name(r->vpc_ix);
}

int gdp_remote_set_vpc(struct gdp_remote *r, const char *vpc_id)
{
	return gdp_vpc_intern(vpc_id, &r->vpc_ix);
}
