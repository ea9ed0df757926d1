/* libFuzzer: the agent's request decoder, the plugin's greeting check and
 * response decoder, and the frame reader, fed through a socketpair. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/cni/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cni_req q;
	struct cni_err e;
	json_t *res = NULL;

	if (cni_req_decode((const char *)data, size, &q, &e) == 0) {
		char *again = cni_req_encode(&q.env, &q.conf, q.has_netns_fd);
		struct cni_req q2;

		if (!again || cni_req_decode(again, strlen(again), &q2, &e) != 0)
			abort();
		if (q2.env.cmd != q.env.cmd || strcmp(q2.env.container_id, q.env.container_id))
			abort();
		/* a GC naming no valid set must stay one across the socket */
		if (q2.conf.has_valid != q.conf.has_valid || q2.conf.nvalid != q.conf.nvalid ||
		    q2.conf.naddrs != q.conf.naddrs || q2.conf.ipam != q.conf.ipam)
			abort();
		cni_req_free(&q2);
		free(again);
		cni_req_free(&q);
	} else if (!e.code) {
		abort();
	}
	if (cni_resp_decode((const char *)data, size, &res, &e) == 0)
		json_decref(res);
	if (cni_hello_check((const char *)data, size, &e) != 0 && e.code != CNI_ERR_AGENT_PROTOCOL)
		abort(); /* a bad greeting is always "not the agent" or "other version" */

	/* Raw bytes as a stream: the framer must not over-read or over-allocate. */
	if (size <= 65536) {
		int sv[2];
		char *buf;
		size_t len;

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0) {
			if (write(sv[0], data, size) == (ssize_t)size) {
				close(sv[0]);
				while (cni_frame_recv(sv[1], &buf, &len, NULL, cni_now_ms() + 50, &e) == 0)
					free(buf);
			} else {
				close(sv[0]);
			}
			close(sv[1]);
		}
	}
	return 0;
}
