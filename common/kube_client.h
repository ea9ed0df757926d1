/*
 * REST client for the Kubernetes API on libcurl + jansson.
 *
 * Threading: a kube_client may be used from any number of threads at once.
 * Each request borrows an easy handle from a small pool (so TCP/TLS
 * connections are reused across requests) and the handles share DNS and TLS
 * sessions. HTTP/2 is negotiated when libcurl has it (kube_client_http2()).
 *
 * Errors: every call returns 0 or -1 and fills struct kube_error with a typed
 * code and a message naming the operation and object, e.g.
 *   "apply networkinterfaces/ns/x status: 409 Conflict: Apply failed with 1 conflict: ..."
 * Nothing here logs or retries on its own (except one token re-read on 401
 * when the token comes from a file): callers requeue with backoff.
 *
 * Objects passed in are borrowed; objects returned through json_t **out are
 * new references the caller json_decref()s.
 */
#ifndef GALACTIC_COMMON_KUBE_CLIENT_H
#define GALACTIC_COMMON_KUBE_CLIENT_H

#include "common/kube_config.h"

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct kube_resource {
	const char *group;    /* "" for the core group */
	const char *version;  /* "v1", "v1alpha1" */
	const char *resource; /* plural: "configmaps", "leases" */
	bool namespaced;
};

enum kube_errc {
	KUBE_OK = 0,
	KUBE_ERR_TRANSPORT,       /* connect/TLS/timeout/reset */
	KUBE_ERR_DECODE,          /* the server sent something we cannot read */
	KUBE_ERR_BAD_REQUEST,     /* 400 */
	KUBE_ERR_UNAUTHORIZED,    /* 401 */
	KUBE_ERR_FORBIDDEN,       /* 403 */
	KUBE_ERR_NOT_FOUND,       /* 404 */
	KUBE_ERR_ALREADY_EXISTS,  /* 409 AlreadyExists (create) */
	KUBE_ERR_CONFLICT,        /* 409 optimistic lock / precondition failed */
	KUBE_ERR_APPLY_CONFLICT,  /* 409 server-side apply: field owned by another manager */
	KUBE_ERR_GONE,            /* 410: resourceVersion or continue token expired */
	KUBE_ERR_INVALID,         /* 422: validation, failed JSON Patch test */
	KUBE_ERR_TOO_MANY,        /* 429: see retry_after_s */
	KUBE_ERR_SERVER,          /* 5xx */
	KUBE_ERR_OTHER,           /* any other status */
	KUBE_ERR_ARG,             /* bad argument, before any request */
};

struct kube_error {
	enum kube_errc code;
	long http_status;      /* 0 when no response */
	double retry_after_s;  /* Retry-After header or details.retryAfterSeconds; 0 if none */
	char reason[64];       /* Status.reason, e.g. "Conflict", "Expired" */
	char message[1024];    /* full context message */
};

const char *kube_errc_name(enum kube_errc c);
/* Transport errors, 429, 5xx: worth retrying as is. */
bool kube_error_retryable(const struct kube_error *e);

/*
 * Builds *err from an HTTP status and a (possibly non-JSON) body.
 * Exposed for tests; the client uses it for every non-2xx response.
 */
void kube_error_from_response(struct kube_error *err, const char *what, long status,
			      const char *body, size_t len, double retry_after_s);

struct kube_client;

/* cfg is borrowed and must outlive the client. */
struct kube_client *kube_client_new(struct kube_config *cfg, char *errbuf, size_t errlen);
void kube_client_free(struct kube_client *kc);
bool kube_client_http2(const struct kube_client *kc);
struct kube_config *kube_client_config(struct kube_client *kc);
/* HTTP version of the last response: 11, 20, or 0 before any. */
int kube_client_last_http_version(struct kube_client *kc);
/* Requests issued and new connections opened so far (connection reuse check). */
void kube_client_counters(struct kube_client *kc, unsigned long *requests, unsigned long *connects);
/*
 * How many times the API server answered again after it had not: a
 * transfer ended in a 2xx after the one before it through this client had
 * failed to reach it (a transport error, a stream cut, an idle timeout) or
 * was turned away (429, 5xx). An informer waiting out its reconnect backoff
 * reads it to try again at once when the server is back (common/informer.c).
 */
unsigned long kube_client_recoveries(struct kube_client *kc);
/*
 * Bytes received so far: body = response bodies as handed to us (after
 * gzip decoding; streams counted as they arrive), wire = bodies as sent
 * (before decoding) plus headers, counted when a transfer ends (a watch
 * still open is not in it yet). Either pointer may be NULL.
 */
void kube_client_rx_bytes(struct kube_client *kc, unsigned long *body, unsigned long *wire);
struct metrics;
/*
 * Counts every response in `reg` (borrowed, must outlive the client):
 *   galactic_kube_requests_total{verb,code}  code is the HTTP status or "error"
 *   galactic_kube_request_seconds_total{verb}
 * verb is the HTTP method (WATCH for streams). Call before the first request.
 * Clients given the same registry count into the same series.
 */
int kube_client_set_metrics(struct kube_client *kc, struct metrics *reg);
/* Per-request timeout in seconds for non-streaming calls (default 60). */
void kube_client_set_timeout(struct kube_client *kc, long seconds);

/* /api/v1/namespaces/NS/RES/NAME/SUB or /apis/G/V/...; NULL parts omitted. */
int kube_path(const struct kube_resource *r, const char *ns, const char *name,
	      const char *sub, char *buf, size_t n);

/* Raw request; path includes the query. body may be NULL. */
int kube_request(struct kube_client *kc, const char *method, const char *path,
		 const char *content_type, const char *body, size_t body_len,
		 const char *what, json_t **out, struct kube_error *err);

int kube_get(struct kube_client *kc, const struct kube_resource *r, const char *ns,
	     const char *name, json_t **out, struct kube_error *err);

struct kube_list_opts {
	const char *label_selector;
	const char *field_selector;
	long limit;                  /* page size; 0 = no paging */
	const char *continue_token;  /* kube_list_page only */
	const char *resource_version;
	const char *resource_version_match; /* "Exact" | "NotOlderThan" */
	/* kube_list_all: called on each item as its page arrives, before it is
	 * kept (e.g. to drop fields and keep peak memory low). */
	void (*item_fn)(json_t *item, void *ud);
	void *item_ud;
};
/* One page: the List object as the server sent it (metadata.continue if more). */
int kube_list_page(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		   const struct kube_list_opts *o, json_t **out, struct kube_error *err);
/*
 * All pages, following continue tokens: {"items":[...], "metadata":{"resourceVersion": "..."}}
 * with the resourceVersion of the first page (the snapshot all pages come from).
 * If a continue token expires (410) the list restarts once without paging.
 */
int kube_list_all(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		  const struct kube_list_opts *o, json_t **out, struct kube_error *err);
/*
 * kube_list_all's steps on pages already received (pure): merge_page adds
 * page to *all (made from the first page: kind, apiVersion, metadata),
 * calling o->item_fn (o may be NULL) on each item first, and sets *cont to
 * the page's continue token (malloc'd) or NULL on the last page; -1
 * (KUBE_ERR_DECODE) when page has no items array. finish drops the paging
 * fields (continue, remainingItemCount) from the merged metadata.
 */
int kube_list_merge_page(json_t **all, json_t *page, const struct kube_list_opts *o, char **cont,
			 struct kube_error *err);
void kube_list_finish(json_t *all);

int kube_create(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		const json_t *obj, json_t **out, struct kube_error *err);
/* PUT; obj's metadata.resourceVersion makes it an optimistic-lock update. */
int kube_update(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		const char *name, const char *subresource, const json_t *obj,
		json_t **out, struct kube_error *err);

struct kube_delete_opts {
	const char *uid;              /* precondition: delete only this incarnation */
	const char *resource_version; /* precondition: delete only this version */
	const char *propagation;      /* "Foreground" | "Background" | "Orphan" */
};
int kube_delete(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		const char *name, const struct kube_delete_opts *o, struct kube_error *err);

/*
 * Server-side apply (application/apply-patch+yaml; JSON is YAML) to the
 * object or a subresource ("status"). obj is the full intent of this manager.
 */
int kube_apply(struct kube_client *kc, const struct kube_resource *r, const char *ns,
	       const char *name, const char *subresource, const json_t *obj,
	       const char *field_manager, bool force, json_t **out, struct kube_error *err);
/* RFC 6902 JSON Patch (an array of ops; "test" ops guard the change). */
int kube_json_patch(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		    const char *name, const char *subresource, const json_t *ops,
		    const char *field_manager, json_t **out, struct kube_error *err);
/* RFC 7386 merge patch. */
int kube_merge_patch(struct kube_client *kc, const struct kube_resource *r, const char *ns,
		     const char *name, const char *subresource, const json_t *patch,
		     const char *field_manager, json_t **out, struct kube_error *err);

/*
 * Streaming GET (watch). Response bytes go to fn as they arrive; fn returns
 * non-zero to stop. Returns 0 when the server ends the stream, -1 on error
 * (non-2xx status, transport error, idle timeout: no byte for idle_timeout_s,
 * or *stop set). A stop requested through fn or *stop gives code
 * KUBE_ERR_ARG with message "stopped".
 */
typedef int (*kube_stream_fn)(const char *data, size_t len, void *ud);
struct kube_stream_opts {
	int idle_timeout_s;         /* 0: none */
	const atomic_bool *stop;    /* checked about once a second; may be NULL */
};
int kube_stream(struct kube_client *kc, const char *path, const char *what,
		kube_stream_fn fn, void *ud, const struct kube_stream_opts *o,
		struct kube_error *err);

#endif
