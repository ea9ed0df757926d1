/*
 * The agent's CNI socket: listens on a unix socket (mode 0600, peers checked
 * with SO_PEERCRED), greets, reads one framed request per connection (with
 * the container's namespace fd), hands it to the verbs (agent/cni/verbs.h)
 * and answers. One thread per request, capped; docs/cni.md "Protocol".
 */
#ifndef GALACTIC_CNI_LISTENER_H
#define GALACTIC_CNI_LISTENER_H

#include <stddef.h>

#include "agent/cni/verbs.h"

struct gcni_listener;

struct gcni_listener_opts {
	const char *socket_path;  /* NULL: /run/galactic/cni.sock */
	struct gcni_verbs *verbs;
	unsigned max_conns;       /* concurrent requests; 0: 512 */
};

int gcni_listener_start(struct gcni_listener **out, const struct gcni_listener_opts *o, char *err,
			size_t errlen);
/* Stops accepting and waits for the requests in progress. */
void gcni_listener_stop(struct gcni_listener *l);

#endif
