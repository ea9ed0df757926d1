/* Plain-libcurl requests to the test control plane (see kreq.h). */
#include "tests/lib/kreq.h"

#include <curl/curl.h>

#include "tests/lib/curlbuf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long kreq(const struct cp *cpp, const char *method, const char *path, const char *ctype,
		const char *body, const char *token, json_t **out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct gt_buf b = { 0 };
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
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gt_buf_sink);
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


long kapply(const struct cp *cpp, const char *path, const char *mgr, const char *body, int *conflicts)
{
	char p[512];
	long code;

	snprintf(p, sizeof(p), "%s?fieldManager=%s", path, mgr);
	code = kreq(cpp, "PATCH", p, "application/apply-patch+yaml", body, NULL, NULL);
	if (code == 409 && conflicts)
		(*conflicts)++;
	return code;
}

json_t *kget(const struct cp *cpp, const char *path, long *code)
{
	json_t *o = NULL;
	long c = kreq(cpp, "GET", path, NULL, NULL, NULL, &o);

	if (code)
		*code = c;
	if (c != 200) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *klist_find(const struct cp *cpp, const char *list_path, const char *name)
{
	json_t *list = kget(cpp, list_path, NULL), *it, *found = NULL;
	size_t i;

	json_array_foreach(json_object_get(list, "items"), i, it)
		if (!strcmp(kstr(json_object_get(it, "metadata"), "name", NULL) ?: "", name))
			found = json_incref(it);
	json_decref(list);
	return found;
}

const json_t *kcond(const json_t *o, const char *type)
{
	const json_t *c;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, c)
		if (!strcmp(json_string_value(json_object_get(c, "type")) ?: "", type))
			return c;
	return NULL;
}

const char *kstr(const json_t *o, const char *a, const char *b)
{
	json_t *x = json_object_get(o, a);

	return json_string_value(b ? json_object_get(x, b) : x);
}
