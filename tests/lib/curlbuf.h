/* A growing, NUL-terminated buffer for libcurl response bodies (test helpers). */
#ifndef GALACTIC_TESTS_CURLBUF_H
#define GALACTIC_TESTS_CURLBUF_H

#include <stdlib.h>
#include <string.h>

struct gt_buf {
	char *p; /* malloc'd, NUL-terminated; NULL until the first byte */
	size_t n;
};

/* CURLOPT_WRITEFUNCTION with CURLOPT_WRITEDATA = struct gt_buf *. */
static inline size_t gt_buf_sink(char *d, size_t sz, size_t nm, void *u)
{
	struct gt_buf *b = u;
	char *np = realloc(b->p, b->n + sz * nm + 1);

	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = 0;
	return sz * nm;
}

#endif
