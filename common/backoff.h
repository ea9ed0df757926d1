/* Jittered exponential backoff for reconnect loops (informer, leader). */
#ifndef GALACTIC_COMMON_BACKOFF_H
#define GALACTIC_COMMON_BACKOFF_H

struct backoff {
	double initial, max, cur;
	unsigned seed;
};

void backoff_init(struct backoff *b, double initial_s, double max_s);
/* Next delay: the current step times a jitter in [1, 1.5), capped at max; then doubles. */
double backoff_next(struct backoff *b);
void backoff_reset(struct backoff *b);

#endif
