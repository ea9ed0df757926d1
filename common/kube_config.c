#include "common/kube_config.h"

#include "common/json.h"
#include "common/yaml.h"
#include "common/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

static struct kube_config *cfg_alloc(void)
{
	struct kube_config *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	pthread_mutex_init(&c->mu, NULL);
	c->token_reload_s = 60;
	return c;
}

void kube_config_free(struct kube_config *c)
{
	if (!c)
		return;
	free(c->server);
	free(c->ca_file);
	free(c->ca_data.data);
	free(c->cert_file);
	free(c->key_file);
	free(c->cert_data.data);
	if (c->key_data.data)
		memset(c->key_data.data, 0, c->key_data.len);
	free(c->key_data.data);
	free(c->tls_server_name);
	free(c->namespace);
	if (c->token)
		memset(c->token, 0, strlen(c->token));
	free(c->token);
	free(c->token_file);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

static char *dup_trim_slash(const char *s)
{
	char *d = strdup(s);
	size_t n;
	if (!d)
		return NULL;
	n = strlen(d);
	while (n && d[n - 1] == '/')
		d[--n] = 0;
	return d;
}

int kube_config_set_server(struct kube_config *c, const char *server)
{
	char *s = dup_trim_slash(server);
	if (!s)
		return -1;
	free(c->server);
	c->server = s;
	return 0;
}

struct kube_config *kube_config_new(const char *server, const char *token, const char *ca_file)
{
	struct kube_config *c = cfg_alloc();
	if (!c)
		return NULL;
	c->server = dup_trim_slash(server);
	c->token = token ? strdup(token) : NULL;
	c->ca_file = ca_file ? strdup(ca_file) : NULL;
	if (!c->server || (token && !c->token) || (ca_file && !c->ca_file)) {
		kube_config_free(c);
		return NULL;
	}
	return c;
}

/* Reads a regular file whole: a FIFO or device named by a kubeconfig
 * (tokenFile: /dev/stdin) would block or never end. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	FILE *f;

	if (fd < 0) {
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "open %s: not a regular file", path);
		close(fd);
		return NULL;
	}
	if (!(f = fdopen(fd, "rb"))) {
		snprintf(err, errlen, "open %s: %s", path, strerror(errno));
		close(fd);
		return NULL;
	}
	for (;;) {
		if (G_RESERVE(buf, cap, n + 4096 + 1, 8192)) {
			snprintf(err, errlen, "read %s: out of memory", path);
			free(buf);
			fclose(f);
			return NULL;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
		if (n > (64u << 20)) {
			snprintf(err, errlen, "read %s: file too large", path);
			free(buf);
			fclose(f);
			return NULL;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "read %s: %s", path, strerror(errno));
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

int kube_base64_decode(const char *in, struct kube_blob *out)
{
	size_t n = strlen(in), o = 0;
	unsigned char *d = malloc(n / 4 * 3 + 4);
	unsigned v = 0;
	int bits = 0;

	if (!d)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)in[i];
		int x;
		if (ch >= 'A' && ch <= 'Z') x = ch - 'A';
		else if (ch >= 'a' && ch <= 'z') x = ch - 'a' + 26;
		else if (ch >= '0' && ch <= '9') x = ch - '0' + 52;
		else if (ch == '+') x = 62;
		else if (ch == '/') x = 63;
		else if (ch == '=') break;
		else if (ch == '\n' || ch == '\r' || ch == ' ') continue;
		else {
			free(d);
			return -1;
		}
		v = (v << 6) | (unsigned)x;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			d[o++] = (unsigned char)(v >> bits);
			v &= (1u << bits) - 1;
		}
	}
	out->data = d;
	out->len = o;
	return 0;
}

/* Paths in a kubeconfig are relative to the file's directory. */
static char *resolve(const char *base_dir, const char *p)
{
	char *r;
	if (p[0] == '/' || !base_dir)
		return strdup(p);
	if (asprintf(&r, "%s/%s", base_dir, p) < 0)
		return NULL;
	return r;
}

/* Finds the entry named name in a kubeconfig list ("clusters", ...). */
static json_t *named(json_t *root, const char *list, const char *field, const char *name)
{
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(root, list), i, e) {
		const char *n = gj_str(e, "name");
		if (n && !strcmp(n, name))
			return json_object_get(e, field);
	}
	return NULL;
}

static int set_str(char **dst, const char *base, json_t *v, bool path)
{
	if (!json_is_string(v) || !*json_string_value(v))
		return 0;
	*dst = path ? resolve(base, json_string_value(v)) : strdup(json_string_value(v));
	return *dst ? 0 : -1;
}

static int set_blob(struct kube_blob *dst, json_t *v, const char *what, char *err, size_t errlen)
{
	if (!json_is_string(v) || !*json_string_value(v))
		return 0;
	if (kube_base64_decode(json_string_value(v), dst) < 0) {
		snprintf(err, errlen, "%s: invalid base64", what);
		return -1;
	}
	return 0;
}

struct kube_config *kube_config_from_kubeconfig(const char *path, const char *context,
						char *err, size_t errlen)
{
	struct kube_config *c = NULL;
	char *text, *base = NULL, perr[256];
	size_t len;
	json_t *root, *ctx, *cluster, *user;
	const char *cname, *cl, *us;

	text = read_file(path, &len, err, errlen);
	if (!text)
		return NULL;
	root = yaml_parse(text, len, perr, sizeof(perr));
	free(text);
	if (!json_is_object(root)) {
		snprintf(err, errlen, "kubeconfig %s: %s", path, root ? "not a mapping" : perr);
		json_decref(root);
		return NULL;
	}
	cname = context ? context : gj_str(root, "current-context");
	if (!cname) {
		snprintf(err, errlen, "kubeconfig %s: no current-context", path);
		goto fail;
	}
	ctx = named(root, "contexts", "context", cname);
	cl = gj_str(ctx, "cluster");
	us = gj_str(ctx, "user");
	if (!ctx || !cl) {
		snprintf(err, errlen, "kubeconfig %s: context %s not found or has no cluster", path, cname);
		goto fail;
	}
	cluster = named(root, "clusters", "cluster", cl);
	user = us ? named(root, "users", "user", us) : NULL;
	if (!cluster || !gj_str(cluster, "server")) {
		snprintf(err, errlen, "kubeconfig %s: cluster %s not found or has no server", path, cl);
		goto fail;
	}
	if (us && !user) {
		snprintf(err, errlen, "kubeconfig %s: user %s not found", path, us);
		goto fail;
	}
	base = strdup(path);
	if (!base || !(c = cfg_alloc()))
		goto nomem;
	{
		char *slash = strrchr(base, '/');
		if (slash)
			*slash = 0;
		else
			strcpy(base, ".");
	}
	if (!(c->server = dup_trim_slash(gj_str(cluster, "server"))))
		goto nomem;
	if (set_str(&c->ca_file, base, json_object_get(cluster, "certificate-authority"), true) ||
	    set_str(&c->tls_server_name, base, json_object_get(cluster, "tls-server-name"), false) ||
	    set_str(&c->namespace, base, json_object_get(ctx, "namespace"), false) ||
	    set_str(&c->cert_file, base, json_object_get(user, "client-certificate"), true) ||
	    set_str(&c->key_file, base, json_object_get(user, "client-key"), true) ||
	    set_str(&c->token, base, json_object_get(user, "token"), false) ||
	    set_str(&c->token_file, base, json_object_get(user, "tokenFile"), true))
		goto nomem;
	if (set_blob(&c->ca_data, json_object_get(cluster, "certificate-authority-data"),
		     "certificate-authority-data", err, errlen) ||
	    set_blob(&c->cert_data, json_object_get(user, "client-certificate-data"),
		     "client-certificate-data", err, errlen) ||
	    set_blob(&c->key_data, json_object_get(user, "client-key-data"),
		     "client-key-data", err, errlen))
		goto fail;
	c->insecure = json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
	if (json_object_get(user, "exec") || json_object_get(user, "auth-provider")) {
		snprintf(err, errlen, "kubeconfig %s: user %s uses exec/auth-provider, not supported",
			 path, us);
		goto fail;
	}
	if ((c->cert_file || c->cert_data.data) != (c->key_file || c->key_data.data)) {
		snprintf(err, errlen, "kubeconfig %s: user %s has a client certificate without key or the reverse",
			 path, us);
		goto fail;
	}
	if (c->token_file && !c->token) {
		char tok[8192];
		if (kube_config_token(c, tok, sizeof(tok), true) < 0 || !c->token) {
			snprintf(err, errlen, "kubeconfig %s: cannot read tokenFile %s", path, c->token_file);
			goto fail;
		}
	}
	free(base);
	json_decref(root);
	return c;
nomem:
	snprintf(err, errlen, "kubeconfig %s: out of memory", path);
fail:
	free(base);
	kube_config_free(c);
	json_decref(root);
	return NULL;
}

struct kube_config *kube_config_in_cluster(const char *root, char *err, size_t errlen)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct kube_config *c;
	char path[512], tok[16384], *ns;
	struct stat st;

	if (!root)
		root = SA_DIR;
	if (!host || !*host || !port || !*port) {
		snprintf(err, errlen, "in-cluster: KUBERNETES_SERVICE_HOST/PORT not set");
		return NULL;
	}
	if (!(c = cfg_alloc()))
		goto nomem;
	/* IPv6 service addresses need brackets in a URL. */
	if (asprintf(&c->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
		     host, port) < 0) {
		c->server = NULL;
		goto nomem;
	}
	snprintf(path, sizeof(path), "%s/token", root);
	if (!(c->token_file = strdup(path)))
		goto nomem;
	if (kube_config_token(c, tok, sizeof(tok), true) < 0 || !c->token) {
		snprintf(err, errlen, "in-cluster: cannot read token file %s", path);
		kube_config_free(c);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/ca.crt", root);
	if (stat(path, &st) < 0) {
		snprintf(err, errlen, "in-cluster: CA %s: %s", path, strerror(errno));
		kube_config_free(c);
		return NULL;
	}
	if (!(c->ca_file = strdup(path)))
		goto nomem;
	snprintf(path, sizeof(path), "%s/namespace", root);
	if ((ns = read_file(path, NULL, tok, sizeof(tok)))) {
		ns[strcspn(ns, "\r\n")] = 0;
		c->namespace = ns;
	}
	return c;
nomem:
	snprintf(err, errlen, "in-cluster: out of memory");
	kube_config_free(c);
	return NULL;
}

struct kube_config *kube_config_load(char *err, size_t errlen)
{
	const char *kc = getenv("KUBECONFIG"), *home = getenv("HOME");
	char path[512];

	if (kc && *kc) {
		/* Only the first file of a KUBECONFIG list is read. */
		snprintf(path, sizeof(path), "%.*s", (int)strcspn(kc, ":"), kc);
		return kube_config_from_kubeconfig(path, NULL, err, errlen);
	}
	if (getenv("KUBERNETES_SERVICE_HOST"))
		return kube_config_in_cluster(NULL, err, errlen);
	if (!home) {
		snprintf(err, errlen, "no KUBECONFIG, not in a cluster, no HOME");
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/.kube/config", home);
	return kube_config_from_kubeconfig(path, NULL, err, errlen);
}

static double since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

int kube_config_token(struct kube_config *c, char *buf, size_t n, bool force)
{
	int rc = 0;

	pthread_mutex_lock(&c->mu);
	if (c->token_file && (force || !c->token || since(&c->token_read) >= c->token_reload_s)) {
		char e[256], *t = read_file(c->token_file, NULL, e, sizeof(e));
		if (t) {
			t[strcspn(t, "\r\n")] = 0;
			if (*t) {
				if (c->token)
					memset(c->token, 0, strlen(c->token));
				free(c->token);
				c->token = t;
			} else {
				free(t);
			}
			c->token_reads++;
		}
		/* Failed reads keep the last token and retry at the next call. */
		if (t)
			clock_gettime(CLOCK_MONOTONIC, &c->token_read);
	}
	if (!c->token)
		buf[0] = 0;
	else if (strlen(c->token) >= n)
		rc = -1;
	else
		strcpy(buf, c->token);
	pthread_mutex_unlock(&c->mu);
	return rc;
}
