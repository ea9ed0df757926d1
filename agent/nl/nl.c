/* Socket, batched requests with per-message acks, dumps. */
#include "agent/nl/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <netlink/netlink.h>
#include <netlink/socket.h>

#include "agent/nl/objects.h"
#include "common/grow.h"

#define RECV_BUF (256 * 1024)

/* NLMSG_OK without the signed/unsigned comparison clang warns about. */
static inline bool msg_ok(const struct nlmsghdr *h, int left)
{
	return left >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) && h->nlmsg_len <= (unsigned)left;
}

struct gnl_sock {
	struct nl_sock *sk;
	uint32_t seq;
	uint8_t *rbuf;
};

int gnl_fd(const struct gnl_sock *s)
{
	return nl_socket_get_fd(s->sk);
}

static int open_netns_fd(const char *netns)
{
	char path[512];

	if (strchr(netns, '/'))
		snprintf(path, sizeof(path), "%s", netns);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", netns);
	return open(path, O_RDONLY | O_CLOEXEC);
}

static int open_proto(struct gnl_sock **out, const char *netns, int protocol, char *err, size_t errlen)
{
	struct gnl_sock *s;
	int orig = -1, nsfd = -1, rc = 0, one = 1, fd;
	int bufsz = 16 * 1024 * 1024;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->rbuf = malloc(RECV_BUF))) {
		free(s);
		snprintf(err, errlen, "netlink socket: out of memory");
		return -ENOMEM;
	}
	s->seq = (uint32_t)time(NULL);
	if (netns) {
		/* The socket stays bound to the namespace it was created in. */
		orig = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
		nsfd = open_netns_fd(netns);
		if (orig < 0 || nsfd < 0) {
			rc = -errno;
			snprintf(err, errlen, "open netns %s: %s", netns, strerror(errno));
			goto fail;
		}
		if (setns(nsfd, CLONE_NEWNET) < 0) {
			rc = -errno;
			snprintf(err, errlen, "enter netns %s: %s", netns, strerror(errno));
			goto fail;
		}
	}
	s->sk = nl_socket_alloc();
	if (!s->sk) {
		rc = -ENOMEM;
		snprintf(err, errlen, "netlink socket: out of memory");
	} else if ((rc = nl_connect(s->sk, protocol)) < 0) {
		snprintf(err, errlen, "netlink connect: %s", nl_geterror(rc));
		rc = -EIO;
	}
	if (netns && setns(orig, CLONE_NEWNET) < 0 && !rc) {
		rc = -errno;
		snprintf(err, errlen, "return from netns %s: %s", netns, strerror(errno));
	}
	if (rc)
		goto fail;
	fd = nl_socket_get_fd(s->sk);
	/* Acks for a whole trip queue up before we read them: room for many. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz, sizeof(bufsz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz, sizeof(bufsz));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz, sizeof(bufsz)) < 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz, sizeof(bufsz));
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	if (orig >= 0)
		close(orig);
	if (nsfd >= 0)
		close(nsfd);
	*out = s;
	return 0;
fail:
	if (orig >= 0)
		close(orig);
	if (nsfd >= 0)
		close(nsfd);
	if (s->sk)
		nl_socket_free(s->sk);
	free(s->rbuf);
	free(s);
	return rc;
}

int gnl_open(struct gnl_sock **out, const char *netns, char *err, size_t errlen)
{
	return open_proto(out, netns, NETLINK_ROUTE, err, errlen);
}

void gnl_close(struct gnl_sock *s)
{
	if (!s)
		return;
	nl_socket_free(s->sk);
	free(s->rbuf);
	free(s);
}

/* ---------------------------------------------------------------- batches */

void gnl_batch_init(struct gnl_batch *b)
{
	memset(b, 0, sizeof(*b));
	b->per_trip = 256;
	b->max_retries = 1000;
	b->backoff_us = 1000;
}

void gnl_batch_free(struct gnl_batch *b)
{
	free(b->buf);
	free(b->v);
	free(b->sbuf);
	free(b->pend);
	free(b->retry);
	memset(b, 0, sizeof(*b));
}

void gnl_batch_clear(struct gnl_batch *b)
{
	b->len = 0;
	b->n = 0;
	b->retries = 0;
	b->trips = 0;
}

int gnl_batch_add(struct gnl_batch *b, struct nl_msg *msg, void *tag)
{
	struct nlmsghdr *h = nlmsg_hdr(msg);
	size_t need = NLMSG_ALIGN(h->nlmsg_len);

	/* small first (one request of gnl_talk from each CNI thread), doubling after */
	if (G_RESERVE(b->buf, b->cap, b->len + need, 4096) || G_GROW(b->v, b->capn, b->n, 8))
		return -ENOMEM;
	memcpy(b->buf + b->len, h, h->nlmsg_len);
	memset(b->buf + b->len + h->nlmsg_len, 0, need - h->nlmsg_len);
	((struct nlmsghdr *)(b->buf + b->len))->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	b->v[b->n] = (struct gnl_req){ .off = b->len, .len = need, .tag = tag };
	b->len += need;
	b->n++;
	return 0;
}

int gnl_msg_error(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);

	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
		return -EBADMSG; /* too short to say which error */
	if (e->error > 0)
		return -EPROTO; /* errors are negative; a positive one would read as a result */
	return e->error;
}

void gnl_extack(const struct nlmsghdr *h, char *ext, size_t extlen)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const uint8_t *p = NLMSG_DATA(h);
	size_t room, off = sizeof(*e);

	if (!ext || !extlen)
		return;
	ext[0] = 0;
	if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)) || !(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	room = h->nlmsg_len - NLMSG_HDRLEN;
	if (!(h->nlmsg_flags & NLM_F_CAPPED)) {
		/* The request is echoed whole: its length must fit in what is left. */
		if (e->msg.nlmsg_len < sizeof(struct nlmsghdr) ||
		    e->msg.nlmsg_len - sizeof(struct nlmsghdr) > room - off)
			return;
		off += e->msg.nlmsg_len - sizeof(struct nlmsghdr);
	}
	off = NLMSG_ALIGN(off);
	while (off <= room && room - off >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)(p + off);

		if (a->nla_len < NLA_HDRLEN || a->nla_len > room - off)
			return;
		if ((a->nla_type & NLA_TYPE_MASK) == NLMSGERR_ATTR_MSG) {
			size_t l = a->nla_len - NLA_HDRLEN;

			if (l >= extlen)
				l = extlen - 1;
			memcpy(ext, (const uint8_t *)a + NLA_HDRLEN, l);
			ext[l] = 0;
			l = strnlen(ext, l);
			ext[l] = 0;
			return;
		}
		off += NLA_ALIGN(a->nla_len);
	}
}

/* The datagram's bytes as msg_ok counts them (a datagram is at most RECV_BUF). */
static int dgram_len(size_t len)
{
	return len > INT_MAX ? INT_MAX : (int)len;
}

size_t gnl_acks_scan(struct gnl_batch *b, const size_t *idx, size_t n, uint32_t seq0,
		     const void *buf, size_t len)
{
	const struct nlmsghdr *h;
	int left = dgram_len(len);
	size_t acked = 0;

	for (h = buf; msg_ok(h, left); h = NLMSG_NEXT(h, left)) {
		uint32_t k;
		struct gnl_req *r;

		if (h->nlmsg_type != NLMSG_ERROR)
			continue;
		k = h->nlmsg_seq - seq0;
		if (h->nlmsg_seq < seq0 || k >= n)
			continue; /* stale ack of an earlier exchange */
		r = &b->v[idx[k]];
		if (r->err != 1)
			continue;
		r->err = gnl_msg_error(h);
		if (r->err)
			gnl_extack(h, r->ext, sizeof(r->ext));
		else
			r->ext[0] = 0;
		acked++;
	}
	return acked;
}

int gnl_dump_scan(const void *buf, size_t len, uint32_t seq, gnl_dump_cb cb, void *arg,
		  int *stop, bool *intr, int *rc)
{
	const struct nlmsghdr *h;
	int left = dgram_len(len);

	for (h = buf; msg_ok(h, left); h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_seq != seq)
			continue;
		if (h->nlmsg_flags & NLM_F_DUMP_INTR)
			*intr = true;
		if (h->nlmsg_type == NLMSG_DONE) {
			*rc = *stop ? *stop : *intr ? -EAGAIN : 0;
			return 1;
		}
		if (h->nlmsg_type == NLMSG_ERROR) {
			int e = gnl_msg_error(h);

			if (e) {
				*rc = e;
				return 1;
			}
			continue;
		}
		/* Keep reading to the end after a stop so the socket stays in sync. */
		if (!*stop)
			*stop = cb(h, arg);
	}
	return 0;
}

int gnl_get_scan(const void *buf, size_t len, uint32_t seq, gnl_dump_cb cb, void *arg, int *stop,
		 int *rc)
{
	const struct nlmsghdr *h;
	int left = dgram_len(len);

	for (h = buf; msg_ok(h, left); h = NLMSG_NEXT(h, left)) {
		if (h->nlmsg_seq != seq)
			continue;
		/* The ack (or the error) comes last: the socket is in sync again. */
		if (h->nlmsg_type == NLMSG_ERROR) {
			int e = gnl_msg_error(h);

			*rc = e ? e : *stop;
			return 1;
		}
		if (!*stop)
			*stop = cb(h, arg);
	}
	return 0;
}

static int send_all(struct gnl_sock *s, void *buf, size_t len)
{
	int rc = nl_sendto(s->sk, buf, len);

	return rc < 0 ? -EIO : 0;
}

/* One trip: send the requests idx[0..n) and collect their acks. */
static int trip(struct gnl_sock *s, struct gnl_batch *b, const size_t *idx, size_t n,
		uint8_t *sendbuf)
{
	size_t off = 0, acked = 0, i;
	uint32_t seq0 = s->seq;

	for (i = 0; i < n; i++) {
		struct gnl_req *r = &b->v[idx[i]];
		struct nlmsghdr *h = (struct nlmsghdr *)(b->buf + r->off);

		r->seq = s->seq++;
		r->err = 1; /* pending */
		h->nlmsg_seq = r->seq;
		h->nlmsg_pid = 0;
		memcpy(sendbuf + off, h, r->len);
		off += r->len;
	}
	if (send_all(s, sendbuf, off) < 0)
		return -EIO;
	b->trips++;
	while (acked < n) {
		ssize_t got = recv(gnl_fd(s), s->rbuf, RECV_BUF, 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		acked += gnl_acks_scan(b, idx, n, seq0, s->rbuf, (size_t)got);
	}
	return 0;
}

int gnl_batch_run(struct gnl_sock *s, struct gnl_batch *b)
{
	size_t *pend = NULL, *retry = NULL, np = b->n, nr, i;
	uint8_t *sendbuf = NULL;
	unsigned backoff = b->backoff_us ? b->backoff_us : 1000;
	unsigned per = b->per_trip ? b->per_trip : 256;
	int rc = 0;

	b->retries = 0;
	b->trips = 0;
	if (!b->n)
		return 0;
	/* Buffers kept in the batch: a caller sending in chunks reuses them. */
	if (b->capi < b->n) {
		size_t *p1 = realloc(b->pend, b->n * sizeof(*p1)), *p2;

		if (p1)
			b->pend = p1;
		p2 = p1 ? realloc(b->retry, b->n * sizeof(*p2)) : NULL;
		if (p2)
			b->retry = p2;
		if (!p1 || !p2)
			return -ENOMEM;
		b->capi = b->n;
	}
	if (b->scap < b->len) {
		uint8_t *ns = realloc(b->sbuf, b->len);

		if (!ns)
			return -ENOMEM;
		b->sbuf = ns;
		b->scap = b->len;
	}
	pend = b->pend;
	retry = b->retry;
	sendbuf = b->sbuf;
	for (i = 0; i < b->n; i++) {
		pend[i] = i;
		b->v[i].retries = 0;
	}
	while (np) {
		nr = 0;
		for (i = 0; i < np; i += per) {
			size_t k, cnt = np - i < per ? np - i : per;

			rc = trip(s, b, pend + i, cnt, sendbuf);
			if (rc)
				goto out;
			for (k = 0; k < cnt; k++) {
				struct gnl_req *r = &b->v[pend[i + k]];

				/* The kernel's per-CPU allocations fail transiently under
				 * bulk seg6 insertion: try again later, never drop. */
				if (r->err == -ENOMEM && r->retries < b->max_retries) {
					r->retries++;
					b->retries++;
					retry[nr++] = pend[i + k];
				}
			}
		}
		if (nr) {
			struct timespec ts = { backoff / 1000000, (backoff % 1000000) * 1000L };

			nanosleep(&ts, NULL);
			/* Back off harder only while nothing gets through. */
			if (nr == np)
				backoff = backoff * 2 > 100000 ? 100000 : backoff * 2;
			else
				backoff = b->backoff_us ? b->backoff_us : 1000;
		}
		memcpy(pend, retry, nr * sizeof(*pend));
		np = nr;
	}
out:
	return rc;
}

int gnl_talk(struct gnl_sock *s, struct nl_msg *msg, char *ext, size_t extlen)
{
	struct gnl_batch b;
	int rc;

	gnl_batch_init(&b);
	b.max_retries = 50;
	rc = gnl_batch_add(&b, msg, NULL);
	if (!rc)
		rc = gnl_batch_run(s, &b);
	if (!rc)
		rc = b.v[0].err;
	if (ext && extlen) {
		ext[0] = 0;
		if (b.n)
			snprintf(ext, extlen, "%s", b.v[0].ext);
	}
	gnl_batch_free(&b);
	return rc;
}

int gnl_dump(struct gnl_sock *s, struct nl_msg *req, gnl_dump_cb cb, void *arg)
{
	struct nlmsghdr *rh = nlmsg_hdr(req);
	uint32_t seq = s->seq++;
	bool intr = false;
	int stop = 0, rc = 0;

	rh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_DUMP;
	rh->nlmsg_seq = seq;
	rh->nlmsg_pid = 0;
	if (send_all(s, rh, rh->nlmsg_len) < 0)
		return -EIO;
	for (;;) {
		ssize_t got = recv(gnl_fd(s), s->rbuf, RECV_BUF, 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (gnl_dump_scan(s->rbuf, (size_t)got, seq, cb, arg, &stop, &intr, &rc))
			return rc;
	}
}

int gnl_retry_intr(struct gnl_retry *p, int (*once)(void *ctx), void *ctx, void (*restart)(void *arg),
		   void *arg)
{
	unsigned backoff = p->first_us;
	int rc;

	p->interrupted = 0;
	p->slept_us = 0;
	for (unsigned t = 0;; t++) {
		if (t) {
			struct timespec ts = { backoff / 1000000, (backoff % 1000000) * 1000L };

			if (restart)
				restart(arg);
			while (nanosleep(&ts, &ts) && errno == EINTR)
				;
			p->slept_us += backoff;
			backoff = backoff * 2 > p->max_us ? p->max_us : backoff * 2;
		}
		rc = once(ctx);
		if (rc != -EAGAIN)
			return rc;
		p->interrupted++;
		if (t + 1 >= p->tries)
			return rc;
	}
}

struct dump_call {
	struct gnl_sock *s;
	struct nl_msg *req;
	gnl_dump_cb cb;
	void *arg;
};

static int dump_once(void *ctx)
{
	struct dump_call *c = ctx;

	return gnl_dump(c->s, c->req, c->cb, c->arg);
}

int gnl_dump_restarting(struct gnl_sock *s, struct nl_msg *req, gnl_dump_cb cb, void *arg,
			void (*restart)(void *rarg), void *rarg, unsigned *interrupted)
{
	struct gnl_retry p = { GNL_DUMP_TRIES, GNL_DUMP_BACKOFF_US, GNL_DUMP_BACKOFF_MAX_US, 0, 0 };
	struct dump_call c = { s, req, cb, arg };
	int rc = gnl_retry_intr(&p, dump_once, &c, restart, rarg);

	if (interrupted)
		*interrupted = p.interrupted;
	return rc;
}

int gnl_get(struct gnl_sock *s, struct nl_msg *req, gnl_dump_cb cb, void *arg)
{
	struct nlmsghdr *rh = nlmsg_hdr(req);
	uint32_t seq = s->seq++;
	int stop = 0, rc = 0;

	rh->nlmsg_flags = (uint16_t)((rh->nlmsg_flags & ~NLM_F_DUMP) | NLM_F_REQUEST | NLM_F_ACK);
	rh->nlmsg_seq = seq;
	rh->nlmsg_pid = 0;
	if (send_all(s, rh, rh->nlmsg_len) < 0)
		return -EIO;
	for (;;) {
		ssize_t got = recv(gnl_fd(s), s->rbuf, RECV_BUF, 0);

		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (gnl_get_scan(s->rbuf, (size_t)got, seq, cb, arg, &stop, &rc))
			return rc;
	}
}

/* ---------------------------------------------------------- notifications */

int gnl_open_monitor(struct gnl_sock **out, const char *netns, const unsigned *groups, size_t n,
		     char *err, size_t errlen)
{
	return gnl_open_monitor_proto(out, netns, NETLINK_ROUTE, groups, n, err, errlen);
}

int gnl_open_monitor_proto(struct gnl_sock **out, const char *netns, int protocol, const unsigned *groups,
			   size_t n, char *err, size_t errlen)
{
	size_t i;
	int rc = open_proto(out, netns, protocol, err, errlen);

	if (rc)
		return rc;
	for (i = 0; i < n; i++) {
		rc = nl_socket_add_membership((*out)->sk, (int)groups[i]);
		if (rc < 0) {
			snprintf(err, errlen, "netlink: join group %u: %s", groups[i], nl_geterror(rc));
			gnl_close(*out);
			*out = NULL;
			return -EIO;
		}
	}
	nl_socket_set_nonblocking((*out)->sk);
	return 0;
}

int gnl_read_notifications(struct gnl_sock *s, gnl_dump_cb cb, void *arg)
{
	int count = 0;

	for (;;) {
		ssize_t got = recv(gnl_fd(s), s->rbuf, RECV_BUF, MSG_DONTWAIT);
		struct nlmsghdr *h;
		int left;

		if (got < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return count;
			return -errno;
		}
		left = (int)got;
		for (h = (struct nlmsghdr *)s->rbuf; msg_ok(h, left); h = NLMSG_NEXT(h, left)) {
			count++;
			cb(h, arg);
		}
	}
}

/* ---------------------------------------------------------------- helpers */

int gnl_ifindex_rcu(struct gnl_sock *s, const char *name)
{
	struct ifreq ifr;
	size_t n = strlen(name);

	if (!n || n >= IFNAMSIZ)
		return -EINVAL;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, name, n);
	/* any socket's ioctl answers for its namespace (sock_do_ioctl -> dev_ioctl) */
	if (ioctl(gnl_fd(s), SIOCGIFINDEX, &ifr) < 0)
		return -errno;
	return ifr.ifr_ifindex > 0 ? ifr.ifr_ifindex : -ENODEV;
}

bool gnl_addr_eq(const struct gnl_addr *x, const struct gnl_addr *y)
{
	if (x->family != y->family || x->len != y->len)
		return false;
	return !memcmp(x->a.raw, y->a.raw, gnl_addr_bytes(x->family));
}

char *gnl_addr_str(const struct gnl_addr *a, bool with_len, char *buf, size_t n)
{
	char tmp[INET6_ADDRSTRLEN];

	if (!a->family) {
		snprintf(buf, n, "default");
		return buf;
	}
	inet_ntop(a->family, a->a.raw, tmp, sizeof(tmp));
	if (with_len)
		snprintf(buf, n, "%s/%u", tmp, a->len);
	else
		snprintf(buf, n, "%s", tmp);
	return buf;
}

int gnl_addr_parse(const char *s, struct gnl_addr *a)
{
	char tmp[INET6_ADDRSTRLEN + 8];
	char *slash, *end;
	long len = -1;

	memset(a, 0, sizeof(*a));
	if (!s || strlen(s) >= sizeof(tmp))
		return -EINVAL;
	strcpy(tmp, s);
	slash = strchr(tmp, '/');
	if (slash) {
		*slash = 0;
		errno = 0;
		len = strtol(slash + 1, &end, 10);
		/* "/-5" is an error, not "no length given" */
		if (errno || *end || end == slash + 1 || len < 0)
			return -EINVAL;
	}
	if (inet_pton(AF_INET6, tmp, &a->a.v6) == 1)
		a->family = AF_INET6;
	else if (inet_pton(AF_INET, tmp, &a->a.v4) == 1)
		a->family = AF_INET;
	else
		return -EINVAL;
	if (len < 0)
		len = a->family == AF_INET ? 32 : 128;
	if (len > (a->family == AF_INET ? 32 : 128))
		return -EINVAL;
	a->len = (uint8_t)len;
	return 0;
}

char *gnl_hex(const void *p, size_t n, char *buf, size_t buflen)
{
	const uint8_t *b = p;
	size_t i, o = 0;

	if (buflen)
		buf[0] = 0;
	for (i = 0; i < n && o + 4 < buflen; i++)
		o += (size_t)snprintf(buf + o, buflen - o, i ? " %02x" : "%02x", b[i]);
	return buf;
}
