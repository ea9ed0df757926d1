/*
 * Growing an array by doubling, one helper for the whole tree. An array is
 * three things the caller keeps: the pointer, its capacity (in elements,
 * a size_t) and how many it holds. Header-only, so that every binary can use
 * it whatever it links (galactic-cni links no common library).
 *
 *   if ((rc = G_GROW(v->items, v->cap, v->n, 16)))
 *           return rc;
 *   v->items[v->n++] = x;
 *
 * G_GROW makes room for n + 1 elements; G_RESERVE for `need`. The capacity
 * doubles (starting at `min`, at least 1) until it holds what is asked, so
 * n pushes cost O(n) copies in all. On failure (-ENOMEM, or -EOVERFLOW when
 * the size in bytes does not fit a size_t) the array and its capacity are
 * left as they were: the caller still owns and frees them.
 */
#ifndef GALACTIC_COMMON_GROW_H
#define GALACTIC_COMMON_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The new capacity for `need` elements of `elem` bytes, from `cap` and
 * `min`: cap when it already holds need, else the first doubling of
 * max(cap, min, 1) that does (need itself where doubling would overflow).
 * 0 when need * elem does not fit a size_t.
 */
static inline size_t g_grow_cap(size_t cap, size_t need, size_t elem, size_t min)
{
	size_t nc;

	if (!elem || need > SIZE_MAX / elem)
		return 0;
	if (need <= cap)
		return cap;
	nc = cap > min ? cap : min;
	if (!nc)
		nc = 1;
	while (nc < need)
		nc = nc > SIZE_MAX / 2 ? need : nc * 2;
	if (nc > SIZE_MAX / elem)
		nc = need;
	return nc;
}

/*
 * Room for n + more elements. *arrp is a pointer to the array's first element (any object type), read
 * and written through memcpy so that no T ** is accessed as void **.
 */
static inline int g_grow_(void *arrp, size_t elem, size_t *cap, size_t n, size_t more, size_t min)
{
	size_t need = n + more, nc;
	void *p, *np;

	if (need < n)
		return -EOVERFLOW;
	if (need <= *cap)
		return 0;
	nc = g_grow_cap(*cap, need, elem, min);
	if (!nc)
		return -EOVERFLOW;
	memcpy(&p, arrp, sizeof(p));
	np = realloc(p, nc * elem);
	if (!np)
		return -ENOMEM;
	memcpy(arrp, &np, sizeof(np));
	*cap = nc;
	/* np is the caller's now, stored through arrp (cppcheck cannot see through memcpy) */
	// cppcheck-suppress memleak
	return 0;
}

/* arr must be an lvalue pointer (not void *), cap an lvalue size_t. */
#define G_RESERVE(arr, cap, need, min)                                                      \
	g_grow_(&(arr) + 0 * sizeof(char[sizeof(arr) == sizeof(void *) ? 1 : -1]),        \
		sizeof(*(arr)), &(cap), (need), 0, (min))
#define G_GROW(arr, cap, n, min)                                                            \
	g_grow_(&(arr) + 0 * sizeof(char[sizeof(arr) == sizeof(void *) ? 1 : -1]),        \
		sizeof(*(arr)), &(cap), (n), 1, (min))

#endif
