#include "common/kube_client.h"

#include "common/json.h"
#include "common/metrics.h"
#include "common/grow.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_MAX 8
#define ERR_BODY_MAX (64 * 1024)
#define BODY_MAX (512u << 20) /* a 10k-object list is tens of MB */

struct kube_client {
	struct kube_config *cfg;
	pthread_mutex_t mu;
	CURL *idle[POOL_MAX];
	int nidle;
	CURLSH *share;
	pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];
	bool h2;
	long timeout_s;
	atomic_ulong requests, connects;
	atomic_ulong rx_body, rx_wire; /* response bodies decoded; bodies + headers as sent */
	atomic_long http_version; /* CURL_HTTP_VERSION_* of the last response */
	atomic_bool unreachable;  /* the last transfer that ended did not reach a working server */
	atomic_ulong recoveries;  /* kube_client_recoveries */
	struct metric *m_requests, *m_seconds;
};

int kube_client_set_metrics(struct kube_client *kc, struct metrics *reg)
{
	/* Several clients of one process (the agent's modules) share the series. */
	kc->m_requests = metric_lookup(reg, "galactic_kube_requests_total");
	if (!kc->m_requests)
		kc->m_requests = metrics_counter(reg, "galactic_kube_requests_total",
						 "API requests by HTTP method and status.", "verb,code");
	kc->m_seconds = metric_lookup(reg, "galactic_kube_request_seconds_total");
	if (!kc->m_seconds)
		kc->m_seconds = metrics_counter(reg, "galactic_kube_request_seconds_total",
						"Time spent in API requests.", "verb");
	return kc->m_requests && kc->m_seconds ? 0 : -1;
}

static double mono_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static void global_init(void) { curl_global_init(CURL_GLOBAL_ALL); }

const char *kube_errc_name(enum kube_errc c)
{
	static const char *const n[] = {
		"OK", "Transport", "Decode", "BadRequest", "Unauthorized", "Forbidden",
		"NotFound", "AlreadyExists", "Conflict", "ApplyConflict", "Gone",
		"Invalid", "TooManyRequests", "ServerError", "Other", "BadArgument",
	};
	return (unsigned)c < sizeof(n) / sizeof(n[0]) ? n[c] : "?";
}

bool kube_error_retryable(const struct kube_error *e)
{
	return e->code == KUBE_ERR_TRANSPORT || e->code == KUBE_ERR_TOO_MANY ||
	       e->code == KUBE_ERR_SERVER;
}

static const char *status_text(long s)
{
	switch (s) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 415: return "Unsupported Media Type";
	case 422: return "Unprocessable Entity";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return s >= 500 ? "Server Error" : "Error";
	}
}

void kube_error_from_response(struct kube_error *err, const char *what, long status,
			      const char *body, size_t len, double retry_after_s)
{
	json_t *st = NULL, *causes;
	const char *reason = NULL, *msg = NULL;
	bool field_conflict = false;
	size_t i;
	json_t *c;

	memset(err, 0, sizeof(*err));
	err->http_status = status;
	err->retry_after_s = retry_after_s;
	if (body && len)
		st = json_loadb(body, len, 0, NULL);
	if (json_is_object(st) && json_is_string(json_object_get(st, "kind")) &&
	    !strcmp(gj_str(st, "kind"), "Status")) {
		reason = gj_str(st, "reason");
		msg = gj_str(st, "message");
		if (!retry_after_s && gj_int(st, "details.retryAfterSeconds", 0) > 0)
			err->retry_after_s = (double)gj_int(st, "details.retryAfterSeconds", 0);
		causes = gj_get(st, "details.causes");
		json_array_foreach(causes, i, c) {
			const char *t = gj_str(c, "type");
			if (t && !strcmp(t, "FieldManagerConflict"))
				field_conflict = true;
		}
	}
	if (reason)
		snprintf(err->reason, sizeof(err->reason), "%s", reason);
	if (status == 409) {
		if (field_conflict || (msg && !strncmp(msg, "Apply failed with", 17)))
			err->code = KUBE_ERR_APPLY_CONFLICT;
		else if (reason && !strcmp(reason, "AlreadyExists"))
			err->code = KUBE_ERR_ALREADY_EXISTS;
		else
			err->code = KUBE_ERR_CONFLICT;
	} else {
		switch (status) {
		case 400: err->code = KUBE_ERR_BAD_REQUEST; break;
		case 401: err->code = KUBE_ERR_UNAUTHORIZED; break;
		case 403: err->code = KUBE_ERR_FORBIDDEN; break;
		case 404: err->code = KUBE_ERR_NOT_FOUND; break;
		case 410: err->code = KUBE_ERR_GONE; break;
		case 422: err->code = KUBE_ERR_INVALID; break;
		case 429: err->code = KUBE_ERR_TOO_MANY; break;
		default: err->code = status >= 500 ? KUBE_ERR_SERVER : KUBE_ERR_OTHER; break;
		}
	}
	if (msg)
		snprintf(err->message, sizeof(err->message), "%s: %ld %s: %s", what, status,
			 status_text(status), msg);
	else
		/* Not a Status: quote the start of the body, printable bytes only. */
		snprintf(err->message, sizeof(err->message), "%s: %ld %s%s%.*s", what, status,
			 status_text(status), len ? ": " : "",
			 (int)(len > 200 ? 200 : len), body ? body : "");
	for (char *p = err->message; *p; p++)
		if ((unsigned char)*p < ' ')
			*p = ' ';
	json_decref(st);
}

static void err_set(struct kube_error *err, enum kube_errc code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void err_set(struct kube_error *err, enum kube_errc code, const char *fmt, ...)
{
	va_list ap;
	memset(err, 0, sizeof(*err));
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
}

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *ud)
{
	struct kube_client *kc = ud;
	(void)h;
	(void)a;
	pthread_mutex_lock(&kc->share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *ud)
{
	struct kube_client *kc = ud;
	(void)h;
	pthread_mutex_unlock(&kc->share_mu[d]);
}

struct kube_client *kube_client_new(struct kube_config *cfg, char *errbuf, size_t errlen)
{
	struct kube_client *kc;
	curl_version_info_data *vi;

	pthread_once(&global_once, global_init);
	if (!cfg || !cfg->server) {
		snprintf(errbuf, errlen, "kube client: no server configured");
		return NULL;
	}
	if (!(kc = calloc(1, sizeof(*kc)))) {
		snprintf(errbuf, errlen, "kube client: out of memory");
		return NULL;
	}
	kc->cfg = cfg;
	kc->timeout_s = 60;
	pthread_mutex_init(&kc->mu, NULL);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&kc->share_mu[i], NULL);
	vi = curl_version_info(CURLVERSION_NOW);
	kc->h2 = vi && (vi->features & CURL_VERSION_HTTP2);
	kc->share = curl_share_init();
	if (!kc->share) {
		snprintf(errbuf, errlen, "kube client: curl_share_init failed");
		kube_client_free(kc);
		return NULL;
	}
	curl_share_setopt(kc->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(kc->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(kc->share, CURLSHOPT_USERDATA, kc);
	curl_share_setopt(kc->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(kc->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	return kc;
}

void kube_client_free(struct kube_client *kc)
{
	if (!kc)
		return;
	for (int i = 0; i < kc->nidle; i++)
		curl_easy_cleanup(kc->idle[i]);
	if (kc->share)
		curl_share_cleanup(kc->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&kc->share_mu[i]);
	pthread_mutex_destroy(&kc->mu);
	free(kc);
}

bool kube_client_http2(const struct kube_client *kc) { return kc->h2; }

int kube_client_last_http_version(struct kube_client *kc)
{
	switch (atomic_load(&kc->http_version)) {
	case CURL_HTTP_VERSION_1_0: return 10;
	case CURL_HTTP_VERSION_1_1: return 11;
	case CURL_HTTP_VERSION_2_0: return 20;
	default: return 0;
	}
}
struct kube_config *kube_client_config(struct kube_client *kc) { return kc->cfg; }
void kube_client_set_timeout(struct kube_client *kc, long s) { kc->timeout_s = s; }

void kube_client_counters(struct kube_client *kc, unsigned long *req, unsigned long *conn)
{
	if (req)
		*req = atomic_load(&kc->requests);
	if (conn)
		*conn = atomic_load(&kc->connects);
}

unsigned long kube_client_recoveries(struct kube_client *kc) { return atomic_load(&kc->recoveries); }

void kube_client_rx_bytes(struct kube_client *kc, unsigned long *body, unsigned long *wire)
{
	if (body)
		*body = atomic_load(&kc->rx_body);
	if (wire)
		*wire = atomic_load(&kc->rx_wire);
}

static CURL *handle_take(struct kube_client *kc)
{
	CURL *h = NULL;
	pthread_mutex_lock(&kc->mu);
	if (kc->nidle)
		h = kc->idle[--kc->nidle];
	pthread_mutex_unlock(&kc->mu);
	if (h)
		curl_easy_reset(h); /* keeps its connection cache */
	else
		h = curl_easy_init();
	return h;
}

static void handle_give(struct kube_client *kc, CURL *h)
{
	pthread_mutex_lock(&kc->mu);
	if (kc->nidle < POOL_MAX) {
		kc->idle[kc->nidle++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&kc->mu);
	if (h)
		curl_easy_cleanup(h);
}

struct buf {
	char *p;
	size_t len, cap, max;
	bool overflow;
};

static int buf_append(struct buf *b, const char *d, size_t n)
{
	if (b->len + n + 1 > b->max) {
		b->overflow = true;
		return -1;
	}
	if (G_RESERVE(b->p, b->cap, b->len + n + 1, 16384))
		return -1;
	memcpy(b->p + b->len, d, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

struct xfer {
	struct kube_client *kc;
	CURL *h;
	struct buf body;
	double retry_after;
	/* streaming */
	kube_stream_fn fn;
	void *ud;
	bool stopped_by_fn;
	long status;
	int idle_timeout_s;
	const atomic_bool *stop;
	struct timespec last_data;
	bool idle_expired, stop_requested;
};

static size_t on_header(char *d, size_t sz, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = sz * n;
	if (len > 12 && !strncasecmp(d, "Retry-After:", 12)) {
		char tmp[32];
		snprintf(tmp, sizeof(tmp), "%.*s", (int)(len - 12 < 31 ? len - 12 : 31), d + 12);
		x->retry_after = atof(tmp); /* delta-seconds form; an HTTP date reads as 0 */
		if (x->retry_after < 0)
			x->retry_after = 0;
	}
	return len;
}

static size_t on_body(char *d, size_t sz, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = sz * n;

	clock_gettime(CLOCK_MONOTONIC, &x->last_data);
	atomic_fetch_add(&x->kc->rx_body, (unsigned long)len);
	if (x->fn) {
		if (!x->status)
			curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
		if (x->status >= 200 && x->status < 300) {
			if (x->fn(d, len, x->ud)) {
				x->stopped_by_fn = true;
				return 0; /* aborts the transfer */
			}
			/* Slow handlers are not a silent server. */
			clock_gettime(CLOCK_MONOTONIC, &x->last_data);
			return len;
		}
		/* Error body of a failed stream: keep the start for the message. */
		if (x->body.len < ERR_BODY_MAX)
			buf_append(&x->body, d, len > ERR_BODY_MAX ? ERR_BODY_MAX : len);
		return len;
	}
	return buf_append(&x->body, d, len) < 0 ? 0 : len;
}

static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct xfer *x = ud;
	struct timespec now;
	(void)dt; (void)dn; (void)ut; (void)un;

	if (x->stop && atomic_load(x->stop)) {
		x->stop_requested = true;
		return 1;
	}
	if (x->idle_timeout_s > 0) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - x->last_data.tv_sec > x->idle_timeout_s) {
			x->idle_expired = true;
			return 1;
		}
	}
	return 0;
}

static int setup(struct kube_client *kc, CURL *h, const char *method, const char *path,
		 struct curl_slist **hdrs, const char *content_type, bool force_token,
		 struct kube_error *err, const char *what)
{
	struct kube_config *c = kc->cfg;
	char url[4096], tok[8192], line[8300];

	if (snprintf(url, sizeof(url), "%s%s", c->server, path) >= (int)sizeof(url)) {
		err_set(err, KUBE_ERR_ARG, "%s: URL too long", what);
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	if (!strcmp(method, "GET"))
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_SHARE, kc->share);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPIDLE, 30L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPINTVL, 10L);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	if (kc->h2)
		curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	if (c->insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (c->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->ca_data.data) {
		struct curl_blob b = { c->ca_data.data, c->ca_data.len, CURL_BLOB_NOCOPY };
		curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
	}
	if (c->cert_file) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, c->cert_file);
		curl_easy_setopt(h, CURLOPT_SSLKEY, c->key_file);
	}
	if (c->cert_data.data) {
		struct curl_blob cb = { c->cert_data.data, c->cert_data.len, CURL_BLOB_NOCOPY };
		struct curl_blob kb = { c->key_data.data, c->key_data.len, CURL_BLOB_NOCOPY };
		curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cb);
		curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
		curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &kb);
		curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	*hdrs = curl_slist_append(*hdrs, "Accept: application/json");
	*hdrs = curl_slist_append(*hdrs, "User-Agent: galactic/0.1 (libcurl)");
	if (content_type) {
		snprintf(line, sizeof(line), "Content-Type: %s", content_type);
		*hdrs = curl_slist_append(*hdrs, line);
	}
	if (kube_config_token(c, tok, sizeof(tok), force_token) == 0 && tok[0]) {
		snprintf(line, sizeof(line), "Authorization: Bearer %s", tok);
		*hdrs = curl_slist_append(*hdrs, line);
		memset(line, 0, sizeof(line));
		memset(tok, 0, sizeof(tok));
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, *hdrs);
	return 0;
}

/* After each transfer: did it reach a working API server (kube_client_recoveries)? */
static void note_reach(struct kube_client *kc, const struct xfer *x, CURLcode rc)
{
	bool stopped = x->stopped_by_fn || x->stop_requested;

	if (x->idle_expired || (rc != CURLE_OK && !stopped) || x->status == 429 || x->status >= 500)
		atomic_store(&kc->unreachable, true);
	else if (x->status >= 200 && x->status < 300 && atomic_exchange(&kc->unreachable, false))
		atomic_fetch_add(&kc->recoveries, 1);
}

/* One transfer; retries once with a freshly read token on 401. */
static int perform(struct kube_client *kc, struct xfer *x, const char *method,
		   const char *path, const char *ctype, const char *body, size_t blen,
		   const char *what, long timeout_s, struct kube_error *err)
{
	for (int attempt = 0;; attempt++) {
		struct curl_slist *hdrs = NULL;
		char ebuf[CURL_ERROR_SIZE] = "";
		CURLcode rc;
		long nconn = 0;

		x->h = handle_take(kc);
		if (!x->h) {
			err_set(err, KUBE_ERR_TRANSPORT, "%s: curl_easy_init failed", what);
			return -1;
		}
		x->status = 0;
		x->body.len = 0;
		x->retry_after = 0;
		clock_gettime(CLOCK_MONOTONIC, &x->last_data);
		if (setup(kc, x->h, method, path, &hdrs, ctype, attempt > 0, err, what) < 0) {
			curl_slist_free_all(hdrs);
			handle_give(kc, x->h);
			return -1;
		}
		if (body) {
			curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, body);
			curl_easy_setopt(x->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
		}
		curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, ebuf);
		curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
		curl_easy_setopt(x->h, CURLOPT_HEADERFUNCTION, on_header);
		curl_easy_setopt(x->h, CURLOPT_HEADERDATA, x);
		curl_easy_setopt(x->h, CURLOPT_TIMEOUT, timeout_s);
		if (x->fn) {
			curl_easy_setopt(x->h, CURLOPT_NOPROGRESS, 0L);
			curl_easy_setopt(x->h, CURLOPT_XFERINFOFUNCTION, on_progress);
			curl_easy_setopt(x->h, CURLOPT_XFERINFODATA, x);
		}
		atomic_fetch_add(&kc->requests, 1);
		double t0 = mono_s();
		rc = curl_easy_perform(x->h);
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
		if (kc->m_requests) {
			char lv[64];
			const char *verb = x->fn ? "WATCH" : method;
			if (x->status)
				snprintf(lv, sizeof(lv), "%s,%ld", verb, x->status);
			else
				snprintf(lv, sizeof(lv), "%s,error", verb);
			metric_add(kc->m_requests, lv, 1);
			metric_add(kc->m_seconds, verb, mono_s() - t0);
		}
		curl_easy_getinfo(x->h, CURLINFO_NUM_CONNECTS, &nconn);
		{
			curl_off_t dl = 0;
			long hs = 0;
			curl_easy_getinfo(x->h, CURLINFO_SIZE_DOWNLOAD_T, &dl);
			curl_easy_getinfo(x->h, CURLINFO_HEADER_SIZE, &hs);
			atomic_fetch_add(&kc->rx_wire, (unsigned long)dl + (unsigned long)hs);
		}
		{
			long hv = 0;
			curl_easy_getinfo(x->h, CURLINFO_HTTP_VERSION, &hv);
			if (hv)
				atomic_store(&kc->http_version, hv);
		}
		atomic_fetch_add(&kc->connects, (unsigned long)nconn);
		note_reach(kc, x, rc);
		curl_slist_free_all(hdrs);
		curl_easy_setopt(x->h, CURLOPT_ERRORBUFFER, NULL);
		if (x->idle_expired || (rc != CURLE_OK && !x->stopped_by_fn && !x->stop_requested))
			/* The connection may be dead but open (a black hole): a handle
			 * returned to the pool would multiplex the next request onto it. */
			curl_easy_cleanup(x->h);
		else
			handle_give(kc, x->h);
		x->h = NULL;

		if (x->stopped_by_fn || x->stop_requested) {
			err_set(err, KUBE_ERR_ARG, "%s: stopped", what);
			return -1;
		}
		if (x->idle_expired) {
			err_set(err, KUBE_ERR_TRANSPORT, "%s: no data for %ds (idle timeout)", what,
				x->idle_timeout_s);
			return -1;
		}
		if (rc != CURLE_OK) {
			if (x->body.overflow)
				err_set(err, KUBE_ERR_DECODE, "%s: response larger than %u bytes", what,
					BODY_MAX);
			else
				err_set(err, KUBE_ERR_TRANSPORT, "%s: %s", what,
					ebuf[0] ? ebuf : curl_easy_strerror(rc));
			return -1;
		}
		if (x->status == 401 && attempt == 0 && kc->cfg->token_file)
			continue;
		if (x->status < 200 || x->status >= 300) {
			kube_error_from_response(err, what, x->status, x->body.p, x->body.len,
						 x->retry_after);
			return -1;
		}
		return 0;
	}
}

int kube_request(struct kube_client *kc, const char *method, const char *path,
		 const char *content_type, const char *body, size_t body_len,
		 const char *what, json_t **out, struct kube_error *err)
{
	struct xfer x = { .kc = kc, .body.max = BODY_MAX };
	json_error_t je;
	int rc;

	if (out)
		*out = NULL;
	rc = perform(kc, &x, method, path, content_type, body, body_len, what, kc->timeout_s, err);
	if (rc == 0 && out) {
		*out = x.body.len ? json_loadb(x.body.p, x.body.len, 0, &je) : json_object();
		if (!*out) {
			err_set(err, KUBE_ERR_DECODE, "%s: bad JSON from server: %s", what, je.text);
			rc = -1;
		}
	}
	if (rc == 0)
		memset(err, 0, sizeof(*err));
	free(x.body.p);
	return rc;
}

int kube_stream(struct kube_client *kc, const char *path, const char *what,
		kube_stream_fn fn, void *ud, const struct kube_stream_opts *o,
		struct kube_error *err)
{
	struct xfer x = { .kc = kc, .fn = fn, .ud = ud, .body.max = ERR_BODY_MAX + 1 };
	int rc;

	if (o) {
		x.idle_timeout_s = o->idle_timeout_s;
		x.stop = o->stop;
	}
	rc = perform(kc, &x, "GET", path, NULL, NULL, 0, what, 0, err);
	if (rc == 0)
		memset(err, 0, sizeof(*err));
	free(x.body.p);
	return rc;
}

/* ---- paths and verbs ---- */

static int append(char *buf, size_t n, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int append(char *buf, size_t n, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int r;
	va_start(ap, fmt);
	r = vsnprintf(buf + *off, n - *off, fmt, ap);
	va_end(ap);
	if (r < 0 || (size_t)r >= n - *off)
		return -1;
	*off += (size_t)r;
	return 0;
}

/* Names, namespaces and subresources are DNS-ish; refuse what would change the path. */
static bool seg_ok(const char *s)
{
	if (!s || !*s || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == '?' || *s == '#' || *s == '%' || (unsigned char)*s <= ' ')
			return false;
	return true;
}

int kube_path(const struct kube_resource *r, const char *ns, const char *name,
	      const char *sub, char *buf, size_t n)
{
	size_t off = 0;
	if (!r || !r->version || !seg_ok(r->resource) || (ns && !seg_ok(ns)) ||
	    (name && !seg_ok(name)) || (sub && !seg_ok(sub)) || (sub && !name))
		return -1;
	if (r->group && *r->group) {
		if (append(buf, n, &off, "/apis/%s/%s", r->group, r->version))
			return -1;
	} else if (append(buf, n, &off, "/api/%s", r->version)) {
		return -1;
	}
	if (r->namespaced && ns && append(buf, n, &off, "/namespaces/%s", ns))
		return -1;
	if (append(buf, n, &off, "/%s", r->resource))
		return -1;
	if (name && append(buf, n, &off, "/%s", name))
		return -1;
	if (sub && append(buf, n, &off, "/%s", sub))
		return -1;
	return 0;
}

/* "verb resource/ns/name sub" for messages. */
static void describe(char *w, size_t n, const char *verb, const struct kube_resource *r,
		     const char *ns, const char *name, const char *sub)
{
	snprintf(w, n, "%s %s%s%s%s%s%s%s", verb, r && r->resource ? r->resource : "?",
		 ns ? "/" : "", ns ? ns : "", name ? "/" : "", name ? name : "",
		 sub ? " " : "", sub ? sub : "");
}

static int build_path(const struct kube_resource *r, const char *ns, const char *name,
		      const char *sub, char *path, size_t n, const char *what,
		      struct kube_error *err)
{
	if (r && r->namespaced && !ns && name) {
		err_set(err, KUBE_ERR_ARG, "%s: namespaced resource needs a namespace", what);
		return -1;
	}
	if (kube_path(r, ns, name, sub, path, n) < 0) {
		err_set(err, KUBE_ERR_ARG, "%s: invalid resource, namespace or name", what);
		return -1;
	}
	return 0;
}

/* Appends ?k=v / &k=v with v URL-escaped. */
static int q_add(char *path, size_t n, const char *k, const char *v)
{
	size_t off = strlen(path);
	char *e = curl_easy_escape(NULL, v, 0);
	int r;
	if (!e)
		return -1;
	r = append(path, n, &off, "%c%s=%s", strchr(path, '?') ? '&' : '?', k, e);
	curl_free(e);
	return r;
}

int kube_get(struct kube_client *kc, const struct kube_resource *r, const char *ns,
	     const char *name, json_t **out, struct kube_error *err)
{
	char path[2048], what[512];
	describe(what, sizeof(what), "get", r, ns, name, NULL);
	if (!name) {
		err_set(err, KUBE_ERR_ARG, "%s: no name", what);
		return -1;
	}
	if (build_path(r, ns, name, NULL, path, sizeof(path), what, err))
		return -1;
	return kube_request(kc, "GET", path, NULL, NULL, 0, what, out, err);
}

int kube_list_page(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		   const struct kube_list_opts *o, json_t **out, struct kube_error *err)
{
	char path[4096], what[512], num[32];
	describe(what, sizeof(what), "list", r, ns, NULL, NULL);
	if (build_path(r, ns, NULL, NULL, path, sizeof(path), what, err))
		return -1;
	if (o) {
		snprintf(num, sizeof(num), "%ld", o->limit);
		if ((o->label_selector && q_add(path, sizeof(path), "labelSelector", o->label_selector)) ||
		    (o->field_selector && q_add(path, sizeof(path), "fieldSelector", o->field_selector)) ||
		    (o->limit > 0 && q_add(path, sizeof(path), "limit", num)) ||
		    (o->continue_token && q_add(path, sizeof(path), "continue", o->continue_token)) ||
		    (o->resource_version && q_add(path, sizeof(path), "resourceVersion", o->resource_version)) ||
		    (o->resource_version_match &&
		     q_add(path, sizeof(path), "resourceVersionMatch", o->resource_version_match))) {
			err_set(err, KUBE_ERR_ARG, "%s: query too long", what);
			return -1;
		}
	}
	if (kube_request(kc, "GET", path, NULL, NULL, 0, what, out, err))
		return -1;
	if (!json_is_array(json_object_get(*out, "items"))) {
		json_decref(*out);
		*out = NULL;
		err_set(err, KUBE_ERR_DECODE, "%s: response has no items array", what);
		return -1;
	}
	return 0;
}

int kube_list_merge_page(json_t **all, json_t *page, const struct kube_list_opts *o, char **cont,
			 struct kube_error *err)
{
	json_t *items = json_object_get(page, "items"), *it;
	const char *c;
	size_t i;

	*cont = NULL;
	if (!json_is_array(items)) {
		err_set(err, KUBE_ERR_DECODE, "list page has no items array");
		return -1;
	}
	if (!*all) {
		json_t *md = json_object_get(page, "metadata");

		if (!(*all = json_object()) || json_object_set_new(*all, "items", json_array()) ||
		    json_object_set_new(*all, "metadata", json_is_object(md) ? json_incref(md) : json_object())) {
			err_set(err, KUBE_ERR_DECODE, "list: out of memory");
			return -1;
		}
		if (json_object_get(page, "kind"))
			json_object_set(*all, "kind", json_object_get(page, "kind"));
		if (json_object_get(page, "apiVersion"))
			json_object_set(*all, "apiVersion", json_object_get(page, "apiVersion"));
	}
	if (o && o->item_fn)
		json_array_foreach(items, i, it)
			o->item_fn(it, o->item_ud);
	json_array_extend(json_object_get(*all, "items"), items);
	c = gj_str(page, "metadata.continue");
	if (c && *c && !(*cont = strdup(c))) {
		err_set(err, KUBE_ERR_DECODE, "list: out of memory");
		return -1;
	}
	return 0;
}

void kube_list_finish(json_t *all)
{
	/* The merged list speaks for the whole snapshot: drop the paging fields. */
	json_t *md = json_deep_copy(json_object_get(all, "metadata"));

	json_object_del(md, "continue");
	json_object_del(md, "remainingItemCount");
	json_object_set_new(all, "metadata", md ? md : json_object());
}

int kube_list_all(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		  const struct kube_list_opts *o, json_t **out, struct kube_error *err)
{
	struct kube_list_opts po = o ? *o : (struct kube_list_opts){ 0 };
	json_t *all = NULL, *page = NULL;
	char *cont = NULL;
	bool restarted = false;

	*out = NULL;
	po.continue_token = NULL;
	for (;;) {
		if (kube_list_page(kc, r, ns, &po, &page, err)) {
			if (err->code == KUBE_ERR_GONE && po.continue_token && !restarted) {
				/* Continue token expired (compaction): one unpaged list. */
				restarted = true;
				json_decref(all);
				all = NULL;
				free(cont);
				cont = NULL;
				po.continue_token = NULL;
				po.limit = 0;
				continue;
			}
			json_decref(all);
			free(cont);
			return -1;
		}
		free(cont);
		if (kube_list_merge_page(&all, page, &po, &cont, err)) {
			json_decref(page);
			json_decref(all);
			free(cont);
			return -1;
		}
		json_decref(page);
		if (!cont)
			break;
		po.continue_token = cont;
	}
	kube_list_finish(all);
	*out = all;
	return 0;
}

int kube_create(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		const json_t *obj, json_t **out, struct kube_error *err)
{
	char path[2048], what[512], *body;
	int rc;
	describe(what, sizeof(what), "create", r, ns, gj_str(obj, "metadata.name"), NULL);
	if (build_path(r, ns, NULL, NULL, path, sizeof(path), what, err))
		return -1;
	if (!(body = gj_dumps(obj))) {
		err_set(err, KUBE_ERR_ARG, "%s: cannot encode object", what);
		return -1;
	}
	rc = kube_request(kc, "POST", path, "application/json", body, strlen(body), what, out, err);
	free(body);
	return rc;
}

int kube_update(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		const char *name, const char *sub, const json_t *obj, json_t **out,
		struct kube_error *err)
{
	char path[2048], what[512], *body;
	int rc;
	describe(what, sizeof(what), "update", r, ns, name, sub);
	if (build_path(r, ns, name, sub, path, sizeof(path), what, err))
		return -1;
	if (!(body = gj_dumps(obj))) {
		err_set(err, KUBE_ERR_ARG, "%s: cannot encode object", what);
		return -1;
	}
	rc = kube_request(kc, "PUT", path, "application/json", body, strlen(body), what, out, err);
	free(body);
	return rc;
}

int kube_delete(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		const char *name, const struct kube_delete_opts *o, struct kube_error *err)
{
	char path[2048], what[512], *body = NULL;
	json_t *opts = json_pack("{s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1");
	int rc;

	describe(what, sizeof(what), "delete", r, ns, name, NULL);
	if (build_path(r, ns, name, NULL, path, sizeof(path), what, err)) {
		json_decref(opts);
		return -1;
	}
	if (o && o->uid)
		gj_set(opts, "preconditions.uid", json_string(o->uid));
	if (o && o->resource_version)
		gj_set(opts, "preconditions.resourceVersion", json_string(o->resource_version));
	if (o && o->propagation)
		json_object_set_new(opts, "propagationPolicy", json_string(o->propagation));
	body = gj_dumps(opts);
	json_decref(opts);
	if (!body) {
		err_set(err, KUBE_ERR_ARG, "%s: out of memory", what);
		return -1;
	}
	rc = kube_request(kc, "DELETE", path, "application/json", body, strlen(body), what, NULL, err);
	free(body);
	return rc;
}

static int patch(struct kube_client *kc, const char *verb, const char *ctype,
		 const struct kube_resource *r, const char *ns, const char *name,
		 const char *sub, const json_t *doc, const char *mgr, bool force,
		 json_t **out, struct kube_error *err)
{
	char path[2048], what[512], *body;
	int rc;

	describe(what, sizeof(what), verb, r, ns, name, sub);
	if (build_path(r, ns, name, sub, path, sizeof(path), what, err))
		return -1;
	if (!name) {
		err_set(err, KUBE_ERR_ARG, "%s: no name", what);
		return -1;
	}
	if ((mgr && q_add(path, sizeof(path), "fieldManager", mgr)) ||
	    (force && q_add(path, sizeof(path), "force", "true"))) {
		err_set(err, KUBE_ERR_ARG, "%s: query too long", what);
		return -1;
	}
	if (!(body = gj_dumps(doc))) {
		err_set(err, KUBE_ERR_ARG, "%s: cannot encode patch", what);
		return -1;
	}
	rc = kube_request(kc, "PATCH", path, ctype, body, strlen(body), what, out, err);
	free(body);
	return rc;
}

int kube_apply(struct kube_client *kc, const struct kube_resource *r, const char *ns,
	       const char *name, const char *sub, const json_t *obj, const char *mgr,
	       bool force, json_t **out, struct kube_error *err)
{
	if (!mgr || !*mgr) {
		err_set(err, KUBE_ERR_ARG, "apply %s/%s: fieldManager is required",
			r ? r->resource : "?", name ? name : "?");
		return -1;
	}
	return patch(kc, "apply", "application/apply-patch+yaml", r, ns, name, sub, obj, mgr,
		     force, out, err);
}

int kube_json_patch(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		    const char *name, const char *sub, const json_t *ops, const char *mgr,
		    json_t **out, struct kube_error *err)
{
	if (!json_is_array(ops)) {
		err_set(err, KUBE_ERR_ARG, "json-patch %s/%s: ops must be an array",
			r ? r->resource : "?", name ? name : "?");
		return -1;
	}
	return patch(kc, "json-patch", "application/json-patch+json", r, ns, name, sub, ops,
		     mgr, false, out, err);
}

int kube_merge_patch(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		     const char *name, const char *sub, const json_t *p, const char *mgr,
		     json_t **out, struct kube_error *err)
{
	return patch(kc, "merge-patch", "application/merge-patch+json", r, ns, name, sub, p,
		     mgr, false, out, err);
}
