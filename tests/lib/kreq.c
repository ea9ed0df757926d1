/* Plain-libcurl requests to the test control plane (see kreq.h). */
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	char *p;
	size_t n;
};

static size_t sink(char *d, size_t sz, size_t nm, void *u)
{
	struct buf *b = u;
	char *np = realloc(b->p, b->n + sz * nm + 1);

	if (!np)
		return 0;
	b->p = np;
	memcpy(b->p + b->n, d, sz * nm);
	b->n += sz * nm;
	b->p[b->n] = 0;
	return sz * nm;
}

long kreq(const struct cp *cpp, const char *method, const char *path, const char *ctype,
		const char *body, const char *token, json_t **out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct buf b = { 0 };
	char url[512], auth[4200], ct[128];
	long code = 0;

	snprintf(url, sizeof(url), "%s%s", cpp->apiserver, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token ? token : cpp->token);
	h = curl_slist_append(h, auth);
	if (ctype) {
		snprintf(ct, sizeof(ct), "Content-Type: %s", ctype);
		h = curl_slist_append(h, ct);
	}
	h = curl_slist_append(h, "Accept: application/json");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_CAINFO, cpp->ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	if (body)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (out)
		*out = b.p ? json_loads(b.p, 0, NULL) : NULL;
	if (code >= 300)
		fprintf(stderr, "%s %s -> %ld %s\n", method, path, code, b.p ? b.p : "");
	free(b.p);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return code;
}

