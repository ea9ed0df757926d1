/* The agent's CNI socket (agent/cni/listener.h): framing, threads, dispatch. */
#include "agent/cni/listener.h"

#include <errno.h>
#include <linux/nsfs.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent/cni/proto.h"
#include "common/fileio.h"
#include "common/log.h"

#define COMP "cni"
#define REQ_IO_MS 10000

struct gcni_listener {
	struct gcni_listener_opts o;
	char sock_path[CNI_SOCKET_MAX + 1];
	int lfd;
	pthread_t listener;
	int stopping;
	pthread_mutex_t mu;
	pthread_cond_t cv;         /* connection count */
	unsigned nconns;
	char *hello;               /* the greeting, encoded once */
};

/* ---- connections ---------------------------------------------------------- */

struct conn {
	struct gcni_listener *s;
	int fd;
	int64_t t_acc;             /* accepted (the greeting is sent) */
};

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void reply(int fd, const char *text, int64_t deadline)
{
	struct cni_err e;

	if (text)
		cni_frame_send(fd, text, strlen(text), -1, deadline, &e);
}

static void *conn_main(void *arg)
{
	struct conn *cn = arg;
	struct gcni_listener *s = cn->s;
	struct cni_err e = { 0 };
	struct cni_req q;
	json_t *result = NULL;
	char *buf = NULL, *text;
	size_t len;
	int nsfd = -1, ok = 0;
	struct gcni_spans sp = { 0 };
	double t_req = 0;
	int64_t t0 = cn->t_acc, deadline = t0 + REQ_IO_MS;
	char lnet[CNI_NAME_MAX + 1] = "-", lvpc[12] = "-", latt[12] = "-";

	memset(&q, 0, sizeof(q));
	/* the listener greeted already (listener_main) */
	if (cni_frame_recv(cn->fd, &buf, &len, &nsfd, deadline, &e))
		goto out;
	t_req = mono_ms(); /* the request is in: the agent's part starts */
	if (cni_req_decode(buf, len, &q, &e))
		goto respond;
	/* For the log line: ADD moves the configuration into its record. */
	snprintf(lnet, sizeof(lnet), "%s", q.conf.name);
	snprintf(lvpc, sizeof(lvpc), "%s", q.conf.vpc_s);
	snprintf(latt, sizeof(latt), "%s", q.conf.att_s);
	if (q.has_netns_fd != (nsfd >= 0)) {
		cni_err_set(&e, CNI_ERR_INVALID_ENV, "invalid environment",
			    "the request %s a network namespace fd but %s", q.has_netns_fd ? "announces" : "does not announce",
			    nsfd >= 0 ? "one was passed" : "none was passed");
		goto respond;
	}
	if (nsfd >= 0 && ioctl(nsfd, NS_GET_NSTYPE) != CLONE_NEWNET) {
		cni_err_set(&e, CNI_ERR_INVALID_ENV, "CNI_NETNS is not a network namespace",
			    "CNI_NETNS %s", q.env.netns);
		goto respond;
	}
	switch (q.env.cmd) {
	case CNI_CMD_ADD:
	case CNI_CMD_CHECK:
		if (nsfd < 0) {
			cni_err_set(&e, CNI_ERR_INVALID_ENV, "invalid environment",
				    "%s needs the container's network namespace (CNI_NETNS)",
				    cni_cmd_str(q.env.cmd));
			goto respond;
		}
		if (q.env.cmd == CNI_CMD_ADD)
			ok = (result = gcni_verb_add(s->o.verbs, &q, nsfd, &e, &sp)) != NULL;
		else
			ok = !gcni_verb_check(s->o.verbs, &q, nsfd, &e);
		break;
	case CNI_CMD_DEL:
		ok = !gcni_verb_del(s->o.verbs, &q, &e, &sp);
		break;
	case CNI_CMD_GC:
		ok = !gcni_verb_gc(s->o.verbs, &q, &e);
		break;
	case CNI_CMD_STATUS:
		ok = 1;
		break;
	default:
		cni_err_set(&e, CNI_ERR_DECODE, "malformed agent request", "unsupported op");
	}
respond:
	if (ok && q.env.cmd == CNI_CMD_ADD)
		/* where the time went: the pod side and the pass's backend are the
		 * kernel's work (veth, addresses, rules, routes), the rest ours */
		glogf(GLOG_INFO, COMP,
		      "%s container %s if %s network %s vpc %s attachment %s: ok (%lld ms; %.2f in the agent: pod setup %.2f, applied %.2f, backend %.2f, journal %.2f: fdatasync %.2f, cpu %.2f)",
		      cni_cmd_str(q.env.cmd), q.env.container_id, q.env.ifname, lnet, lvpc, latt,
		      (long long)(cni_now_ms() - t0), mono_ms() - t_req, sp.setup_ms, sp.apply_ms, sp.backend_ms,
		      sp.commit_ms, sp.commit_sync_ms, sp.commit_cpu_ms);
	else if (ok && q.env.cmd == CNI_CMD_DEL)
		/* the same for a DEL: the pass's backend span removes the node
		 * side, the pod teardown deletes the veth (both the kernel's) */
		glogf(GLOG_INFO, COMP,
		      "%s container %s if %s network %s vpc %s attachment %s: ok (%lld ms; %.2f in the agent: pod teardown %.2f, applied %.2f, backend %.2f, journal %.2f)",
		      cni_cmd_str(q.env.cmd), q.env.container_id, q.env.ifname, lnet, lvpc, latt,
		      (long long)(cni_now_ms() - t0), mono_ms() - t_req, sp.setup_ms, sp.apply_ms, sp.backend_ms,
		      sp.commit_ms);
	else if (ok)
		glogf(GLOG_INFO, COMP, "%s container %s if %s network %s vpc %s attachment %s: ok (%lld ms)",
			cni_cmd_str(q.env.cmd), q.env.container_id, q.env.ifname,
			lnet, lvpc, latt, (long long)(cni_now_ms() - t0));
	else
		glogf(GLOG_WARN, COMP, "%s container %s if %s: error %d: %s: %s (%lld ms)", cni_cmd_str(q.env.cmd),
			q.env.container_id[0] ? q.env.container_id : "-", q.env.ifname[0] ? q.env.ifname : "-",
			e.code, e.msg, e.details, (long long)(cni_now_ms() - t0));
	text = ok ? cni_resp_encode_ok(result) : cni_resp_encode_err(&e);
	/* Answering gets its own deadline: the work may have taken long. */
	reply(cn->fd, text, cni_now_ms() + REQ_IO_MS);
	free(text);
out:
	json_decref(result);
	cni_req_free(&q);
	free(buf);
	if (nsfd >= 0)
		close(nsfd);
	close(cn->fd);
	pthread_mutex_lock(&s->mu);
	s->nconns--;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	free(cn);
	return NULL;
}

/* One accepted connection: greeted here, then its own thread. */
static void serve(struct gcni_listener *s, int fd)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	struct cni_err e;
	struct conn *cn;
	pthread_attr_t at;
	pthread_t t;
	int64_t t_acc = cni_now_ms();
	int busy;

	/* Only root (the runtime) and our own user may drive the agent. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0 || (cr.uid != 0 && cr.uid != getuid())) {
		close(fd);
		return;
	}
	/* The greeting goes out now, from this thread (a fresh socket's buffer
	 * takes it without blocking): the plugin writes its request while the
	 * connection's thread is being started, one wake-up less per request
	 * (200 at once queue for the CPU) than when that thread greeted. */
	if (cni_frame_send(fd, s->hello, strlen(s->hello), -1, t_acc + 1000, &e)) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&s->mu);
	busy = s->nconns >= s->o.max_conns;
	if (!busy)
		s->nconns++;
	pthread_mutex_unlock(&s->mu);
	if (busy) {
		char *text;

		cni_err_set(&e, CNI_ERR_TRY_AGAIN_LATER, "galactic-agent is busy", "%u requests in progress; retry",
			    s->o.max_conns);
		text = cni_resp_encode_err(&e);
		reply(fd, text, cni_now_ms() + 1000);
		free(text);
		close(fd);
		return;
	}
	cn = malloc(sizeof(*cn));
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	if (!cn || (cn->s = s, cn->fd = fd, cn->t_acc = t_acc, pthread_create(&t, &at, conn_main, cn))) {
		free(cn);
		close(fd);
		pthread_mutex_lock(&s->mu);
		s->nconns--;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_attr_destroy(&at);
}

static void *listener_main(void *arg)
{
	struct gcni_listener *s = arg;

	for (;;) {
		struct pollfd p = { .fd = s->lfd, .events = POLLIN };
		int fd;

		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			break;
		pthread_mutex_lock(&s->mu);
		if (s->stopping) {
			pthread_mutex_unlock(&s->mu);
			break;
		}
		pthread_mutex_unlock(&s->mu);
		if (!(p.revents & POLLIN))
			continue;
		/* every connection waiting (a burst queues many), then poll again */
		for (int k = 0; k < 256 && (fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0; k++)
			serve(s, fd);
	}
	return NULL;
}

/* ---- lifecycle -------------------------------------------------------------- */

int gcni_listener_start(struct gcni_listener **out, const struct gcni_listener_opts *o, char *err,
			size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct gcni_listener *s;
	char dir[sizeof(sa.sun_path)], *slash;
	int rc;

	*out = NULL;
	if (!o->verbs) {
		snprintf(err, errlen, "cni listener: needs the verbs");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "cni listener: out of memory");
		return -ENOMEM;
	}
	s->o = *o;
	s->lfd = -1;
	s->hello = cni_hello_encode();
	if (!s->hello) {
		free(s);
		snprintf(err, errlen, "cni listener: out of memory");
		return -ENOMEM;
	}
	if (!s->o.max_conns)
		s->o.max_conns = 512;
	snprintf(s->sock_path, sizeof(s->sock_path), "%s", o->socket_path ? o->socket_path : CNI_DEFAULT_SOCKET);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	snprintf(dir, sizeof(dir), "%s", s->sock_path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		gfile_mkdir_p(dir, 0700);
	}
	if (strlen(s->sock_path) >= sizeof(sa.sun_path)) {
		rc = -ENAMETOOLONG;
		snprintf(err, errlen, "cni listener: socket path %s is too long", s->sock_path);
		goto fail;
	}
	strcpy(sa.sun_path, s->sock_path);
	unlink(s->sock_path); /* a socket left by a previous run */
	s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(s->sock_path, 0600) < 0 || listen(s->lfd, 1024) < 0) {
		rc = -errno;
		snprintf(err, errlen, "cni listener: listen on %s: %s", s->sock_path, strerror(errno));
		goto fail;
	}
	if (pthread_create(&s->listener, NULL, listener_main, s)) {
		rc = -EAGAIN;
		snprintf(err, errlen, "cni listener: start listener thread failed");
		goto fail;
	}
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->hello);
	free(s);
	return rc;
}

void gcni_listener_stop(struct gcni_listener *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stopping = 1;
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->listener, NULL);
	close(s->lfd);
	unlink(s->sock_path);
	pthread_mutex_lock(&s->mu);
	while (s->nconns)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	free(s->hello);
	free(s);
}
