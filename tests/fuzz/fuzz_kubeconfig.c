/*
 * libFuzzer target: kubeconfig files (common/kube_config.c) and the YAML
 * reader under them (common/yaml.c). The input is written to a kubeconfig
 * in a private directory (relative paths in it resolve there) and loaded
 * with its current context and with a named one; the same bytes go to
 * yaml_parse. Invariants: a refused kubeconfig says why; a loaded one has a
 * server without a trailing slash and a certificate only with its key; YAML
 * that parses dumps as JSON, and that JSON (JSON is YAML) parses back to
 * an equal value. The JSON is ASCII (YAML refuses raw C1 control
 * characters, which JSON allows); strings outside the BMP are left out of
 * that check, as YAML's \u escapes cannot write UTF-16 surrogates.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/kube_config.h"
#include "common/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], path[96];

static void cleanup(void)
{
	unlink(path);
	rmdir(dir);
}

static void load(const char *ctx)
{
	struct kube_config *c;
	char err[512] = "";
	size_t n;

	c = kube_config_from_kubeconfig(path, ctx, err, sizeof(err));
	if (!c) {
		if (!err[0])
			abort();
		return;
	}
	n = strlen(c->server);
	if (n && c->server[n - 1] == '/' && n > 1)
		abort();
	if ((c->cert_file || c->cert_data.data) != (c->key_file || c->key_data.data))
		abort();
	kube_config_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	json_t *y, *back;
	FILE *f;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz-kubeconfig-XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof(path), "%s/config", dir);
		atexit(cleanup);
	}
	f = fopen(path, "wb");
	if (!f)
		abort();
	fwrite(data, 1, size, f);
	fclose(f);
	load(NULL);
	load("ctx-b");
	unlink(path);

	y = yaml_parse((const char *)data, size, err, sizeof(err));
	if (!y) {
		if (!err[0])
			abort();
		return 0;
	}
	{
		char *s = json_dumps(y, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII);

		if (!s)
			abort();
		if (strstr(s, "\\ud8") || strstr(s, "\\ud9") || strstr(s, "\\uda") || strstr(s, "\\udb")) {
			free(s);
			json_decref(y);
			return 0;
		}
		back = yaml_parse(s, strlen(s), err, sizeof(err));
		if (!back || !json_equal(y, back)) {
			fprintf(stderr, "JSON of the YAML does not read back: %s (%s)\n", s, back ? "differs" : err);
			abort();
		}
		json_decref(back);
		free(s);
	}
	json_decref(y);
	return 0;
}
