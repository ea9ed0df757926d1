#include "tests/lib/common_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAXC 64

struct tproxy {
	int lfd, port, up_port;
	pthread_t thr;
	atomic_bool stop, cut;
	atomic_int accepted;
	int a[MAXC], b[MAXC]; /* client fd, upstream fd; -1 when free */
	bool frozen[MAXC];
	atomic_bool freeze_req;
	int wake[2];
};

static int connect_up(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void close_pair(struct tproxy *p, int i)
{
	if (p->a[i] >= 0)
		close(p->a[i]);
	if (p->b[i] >= 0)
		close(p->b[i]);
	p->a[i] = p->b[i] = -1;
	p->frozen[i] = false;
}

static bool pump(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n <= 0)
		return false;
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w <= 0)
			return false;
		off += w;
	}
	return true;
}

static void *loop(void *arg)
{
	struct tproxy *p = arg;
	struct pollfd pf[2 + 2 * MAXC];
	int idx[2 + 2 * MAXC];

	while (!atomic_load(&p->stop)) {
		int n = 0;
		pf[n++] = (struct pollfd){ .fd = p->lfd, .events = POLLIN };
		pf[n++] = (struct pollfd){ .fd = p->wake[0], .events = POLLIN };
		if (atomic_exchange(&p->freeze_req, false))
			for (int i = 0; i < MAXC; i++)
				p->frozen[i] = p->a[i] >= 0;
		for (int i = 0; i < MAXC; i++) {
			if (p->a[i] < 0 || p->frozen[i])
				continue;
			idx[n] = i;
			pf[n++] = (struct pollfd){ .fd = p->a[i], .events = POLLIN };
			idx[n] = i;
			pf[n++] = (struct pollfd){ .fd = p->b[i], .events = POLLIN };
		}
		if (poll(pf, (nfds_t)n, 200) < 0)
			continue;
		if (pf[1].revents) {
			char c[16];
			if (read(p->wake[0], c, sizeof(c)) < 0)
				continue;
		}
		if (atomic_load(&p->cut))
			for (int i = 0; i < MAXC; i++)
				if (p->a[i] >= 0)
					close_pair(p, i);
		if (pf[0].revents & POLLIN) {
			int c = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0) {
				int u = atomic_load(&p->cut) ? -1 : connect_up(p->up_port);
				int slot = -1;
				for (int i = 0; i < MAXC && slot < 0; i++)
					if (p->a[i] < 0)
						slot = i;
				if (u < 0 || slot < 0) {
					close(c);
					if (u >= 0)
						close(u);
				} else {
					p->a[slot] = c;
					p->b[slot] = u;
					atomic_fetch_add(&p->accepted, 1);
				}
			}
		}
		for (int k = 2; k < n; k++) {
			int i = idx[k];
			if (!pf[k].revents || p->a[i] < 0)
				continue;
			bool from_a = pf[k].fd == p->a[i];
			if (!pump(pf[k].fd, from_a ? p->b[i] : p->a[i]))
				close_pair(p, i);
		}
	}
	return NULL;
}

struct tproxy *tproxy_start(int upstream_port)
{
	struct tproxy *p = calloc(1, sizeof(*p));
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);

	if (!p)
		return NULL;
	for (int i = 0; i < MAXC; i++)
		p->a[i] = p->b[i] = -1;
	p->up_port = upstream_port;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(p->lfd, 64) < 0 || getsockname(p->lfd, (struct sockaddr *)&sa, &sl) < 0 ||
	    pipe2(p->wake, O_CLOEXEC) < 0) {
		if (p->lfd >= 0)
			close(p->lfd);
		free(p);
		return NULL;
	}
	p->port = ntohs(sa.sin_port);
	pthread_create(&p->thr, NULL, loop, p);
	return p;
}

int tproxy_port(const struct tproxy *p) { return p->port; }
int tproxy_accepted(struct tproxy *p) { return atomic_load(&p->accepted); }

static void poke(struct tproxy *p)
{
	if (write(p->wake[1], "x", 1) < 0)
		return;
}

void tproxy_cut(struct tproxy *p)
{
	atomic_store(&p->cut, true);
	poke(p);
	usleep(300 * 1000); /* let the loop close what is open */
}

void tproxy_freeze(struct tproxy *p)
{
	atomic_store(&p->freeze_req, true);
	poke(p);
	usleep(300 * 1000);
}

void tproxy_restore(struct tproxy *p)
{
	atomic_store(&p->cut, false);
	poke(p);
}

void tproxy_stop(struct tproxy *p)
{
	if (!p)
		return;
	atomic_store(&p->stop, true);
	poke(p);
	pthread_join(p->thr, NULL);
	for (int i = 0; i < MAXC; i++)
		close_pair(p, i);
	close(p->lfd);
	close(p->wake[0]);
	close(p->wake[1]);
	free(p);
}
