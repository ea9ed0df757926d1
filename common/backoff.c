#include "common/backoff.h"

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void backoff_init(struct backoff *b, double initial_s, double max_s)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	b->initial = initial_s;
	b->max = max_s;
	b->cur = initial_s;
	b->seed = (unsigned)(ts.tv_nsec ^ (long)getpid() ^ (long)(size_t)b);
}

double backoff_next(struct backoff *b)
{
	/* Jitter spreads reconnects of many clients after a server restart. */
	double d = b->cur * (1.0 + 0.5 * ((double)rand_r(&b->seed) / ((double)RAND_MAX + 1.0)));
	if (d > b->max)
		d = b->max;
	if (d < b->initial)
		d = b->initial;
	b->cur *= 2;
	if (b->cur > b->max)
		b->cur = b->max;
	return d;
}

void backoff_reset(struct backoff *b) { b->cur = b->initial; }
