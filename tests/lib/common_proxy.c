#include "tests/lib/common_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
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
	/* TLS record framing of the server's bytes, from the connection's start */
	uint8_t hdr[MAXC][5];
	int hdr_have[MAXC];
	size_t rec_left[MAXC];
	/* a fault armed in the middle of the next message: records to pass, then act */
	int arm_left[MAXC];       /* -1: none */
	bool arm_stall[MAXC];
	atomic_int arm_req;       /* records; 0: no request */
	atomic_bool arm_req_stall;
	atomic_int faults;
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
	p->hdr_have[i] = 0;
	p->rec_left[i] = 0;
	p->arm_left[i] = -1;
}

/*
 * Server to client on slot i: passes buf along the TLS record framing; with
 * a fault armed, stops after the armed number of records that start from
 * now, then closes or freezes the pair. false: close the pair.
 */
static bool pump_records(struct tproxy *p, int i, const uint8_t *buf, size_t n)
{
	size_t off = 0, pass = n;

	while (off < n) {
		if (p->rec_left[i] == 0) {
			/* in a record header */
			while (p->hdr_have[i] < 5 && off < n)
				p->hdr[i][p->hdr_have[i]++] = buf[off++];
			if (p->hdr_have[i] == 5) {
				p->rec_left[i] = (size_t)p->hdr[i][3] << 8 | p->hdr[i][4];
				p->hdr_have[i] = 0;
				if (p->rec_left[i] == 0 && p->arm_left[i] > 0 && --p->arm_left[i] == 0) {
					pass = off;
					break;
				}
			}
			continue;
		}
		size_t take = n - off < p->rec_left[i] ? n - off : p->rec_left[i];
		off += take;
		p->rec_left[i] -= take;
		if (p->rec_left[i] == 0 && p->hdr_have[i] == 0 && p->arm_left[i] > 0 && --p->arm_left[i] == 0) {
			pass = off;
			break;
		}
	}
	for (size_t w = 0; w < pass;) {
		ssize_t k = write(p->a[i], buf + w, pass - w);
		if (k <= 0)
			return false;
		w += (size_t)k;
	}
	if (p->arm_left[i] == 0) {
		atomic_fetch_add(&p->faults, 1);
		/* one fault per arming: the first connection to carry a message takes it */
		for (int j = 0; j < MAXC; j++)
			p->arm_left[j] = -1;
		if (!p->arm_stall[i])
			return false;
		p->frozen[i] = true;
		return true;
	}
	return true;
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
		int arm = atomic_exchange(&p->arm_req, 0);
		if (arm > 0)
			for (int i = 0; i < MAXC; i++)
				if (p->a[i] >= 0 && !p->frozen[i]) {
					p->arm_left[i] = arm;
					p->arm_stall[i] = atomic_load(&p->arm_req_stall);
				}
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
			if (!pf[k].revents || p->a[i] < 0 || p->frozen[i])
				continue;
			bool from_a = pf[k].fd == p->a[i];
			if (from_a) {
				if (!pump(p->a[i], p->b[i]))
					close_pair(p, i);
				continue;
			}
			uint8_t buf[65536];
			ssize_t r = read(p->b[i], buf, sizeof(buf));
			if (r <= 0 || !pump_records(p, i, buf, (size_t)r))
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
	for (int i = 0; i < MAXC; i++) {
		p->a[i] = p->b[i] = -1;
		p->arm_left[i] = -1;
	}
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

static void arm(struct tproxy *p, int records, bool stall)
{
	atomic_store(&p->arm_req_stall, stall);
	atomic_store(&p->arm_req, records > 0 ? records : 1);
	poke(p);
	/* armed once the loop has woken (it polls 200 ms at most) */
	for (int i = 0; i < 100 && atomic_load(&p->arm_req); i++)
		usleep(10 * 1000);
}

void tproxy_cut_after_records(struct tproxy *p, int records) { arm(p, records, false); }
void tproxy_stall_after_records(struct tproxy *p, int records) { arm(p, records, true); }
int tproxy_faults(struct tproxy *p) { return atomic_load(&p->faults); }

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
