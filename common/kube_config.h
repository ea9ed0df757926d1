/*
 * Where the API server is and how to authenticate to it.
 *
 * Sources: a kubeconfig file (server, CA file or data, client certificate and
 * key files or data, token or tokenFile, insecure-skip-tls-verify), or the
 * in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, token file, CA).
 *
 * Token files are re-read when older than token_reload_s (default 60 s):
 * projected service-account tokens rotate under a running process.
 * kube_config_token() is thread-safe.
 */
#ifndef GALACTIC_COMMON_KUBE_CONFIG_H
#define GALACTIC_COMMON_KUBE_CONFIG_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

struct kube_blob {
	unsigned char *data;
	size_t len;
};

struct kube_config {
	char *server;           /* https://host:port, no trailing slash */
	char *ca_file;          /* or ca_data */
	struct kube_blob ca_data;
	char *cert_file, *key_file; /* or cert_data / key_data (PEM) */
	struct kube_blob cert_data, key_data;
	bool insecure;          /* insecure-skip-tls-verify */
	char *tls_server_name;
	char *namespace;        /* context namespace or in-cluster namespace file */
	int token_reload_s;     /* re-read token_file after this many seconds */

	/* token state: use kube_config_token() */
	pthread_mutex_t mu;
	char *token;
	char *token_file;
	struct timespec token_read; /* CLOCK_MONOTONIC of the last read */
	unsigned long token_reads;  /* how many times the file was read */
};

/* Reads a kubeconfig; context NULL means current-context. */
struct kube_config *kube_config_from_kubeconfig(const char *path, const char *context,
						char *err, size_t errlen);
/*
 * In-cluster config. root is the service-account directory
 * (NULL: /var/run/secrets/kubernetes.io/serviceaccount); host and port come
 * from KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
 */
struct kube_config *kube_config_in_cluster(const char *root, char *err, size_t errlen);
/* $KUBECONFIG if set, else in-cluster, else ~/.kube/config. */
struct kube_config *kube_config_load(char *err, size_t errlen);
/* A config with only a server and bearer token (tests, tools). */
struct kube_config *kube_config_new(const char *server, const char *token, const char *ca_file);
void kube_config_free(struct kube_config *c);

/* Replaces the server URL (e.g. to go through a proxy). */
int kube_config_set_server(struct kube_config *c, const char *server);

/*
 * Copies the current bearer token into buf ("" if none). With force, or when
 * the file is older than token_reload_s, re-reads token_file first; on a
 * read error the last good token stays. Returns 0, or -1 if buf is too small.
 */
int kube_config_token(struct kube_config *c, char *buf, size_t n, bool force);

/* Standard base64 decode (padding optional); -1 on bad input. */
int kube_base64_decode(const char *in, struct kube_blob *out);

#endif
