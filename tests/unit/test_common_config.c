/* kubeconfig / in-cluster configuration, YAML reading, token rotation. */
#include "common/kube_config.h"
#include "common/yaml.h"
#include "common/json.h"
#include "tests/lib/gtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void mkdir_tmp(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gtest-cfg-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void write_file(const char *name, const char *text)
{
	char p[256];
	FILE *f;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void rm_tmp(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The shape kubectl/kind write: sequences at the parent key's indentation. */
static const char *KIND_STYLE =
	"apiVersion: v1\n"
	"clusters:\n"
	"- cluster:\n"
	"    certificate-authority-data: aGVsbG8=   # base64 'hello'\n"
	"    server: https://127.0.0.1:6443/\n"
	"  name: kind-kind\n"
	"- cluster: {server: 'https://other:1', insecure-skip-tls-verify: true}\n"
	"  name: other\n"
	"contexts:\n"
	"- context:\n"
	"    cluster: kind-kind\n"
	"    user: kind-kind\n"
	"    namespace: \"team-a\"\n"
	"  name: kind-kind\n"
	"- context:\n"
	"    cluster: other\n"
	"    user: tok\n"
	"  name: other\n"
	"current-context: kind-kind\n"
	"kind: Config\n"
	"preferences: {}\n"
	"users:\n"
	"- name: kind-kind\n"
	"  user:\n"
	"    client-certificate-data: Y2VydA==\n"
	"    client-key-data: a2V5\n"
	"- name: tok\n"
	"  user:\n"
	"    tokenFile: tok.txt\n";

START_TEST(yaml_subset)
{
	char err[256];
	json_t *v = yaml_parse(KIND_STYLE, strlen(KIND_STYLE), err, sizeof(err));
	ck_assert_msg(v != NULL, "%s", err);
	ck_assert_str_eq(gj_str(v, "current-context"), "kind-kind");
	ck_assert_int_eq(json_array_size(json_object_get(v, "clusters")), 2);
	json_t *c1 = json_array_get(json_object_get(v, "clusters"), 1);
	ck_assert_str_eq(gj_str(c1, "cluster.server"), "https://other:1");
	ck_assert(json_is_true(gj_get(c1, "cluster.insecure-skip-tls-verify")));
	ck_assert_str_eq(gj_str(json_array_get(json_object_get(v, "contexts"), 0), "context.namespace"), "team-a");
	ck_assert(json_is_object(json_object_get(v, "preferences")));
	json_decref(v);

	const char *blk = "a:\n  b: |\n    line1\n      line2\n  c: 'it''s'\n  d: \"x\\ty\"\n  e: [1, two, \"3\"]\n  f: ~\n";
	v = yaml_parse(blk, strlen(blk), err, sizeof(err));
	ck_assert_msg(v != NULL, "%s", err);
	ck_assert_str_eq(gj_str(v, "a.b"), "line1\n  line2\n");
	ck_assert_str_eq(gj_str(v, "a.c"), "it's");
	ck_assert_str_eq(gj_str(v, "a.d"), "x\ty");
	ck_assert_str_eq(json_string_value(json_array_get(gj_get(v, "a.e"), 1)), "two");
	ck_assert(json_is_null(gj_get(v, "a.f")));
	json_decref(v);

	static const char *bad[] = { "a: [1, 2\n", "a: 'x\n", "a:\n\tb: 1\n", "a: &x 1\n", "a: 1\n  b: 2\n",
				     "a: b: c\n", "a: &x [1]\nb: *x\n", "[1, {a: }\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		v = yaml_parse(bad[i], strlen(bad[i]), err, sizeof(err));
		ck_assert_msg(v == NULL, "bad[%zu] parsed", i);
		ck_assert_msg(strstr(err, "line"), "bad[%zu] error '%s' has no line", i, err);
	}
	/* Valid YAML that is no kubeconfig: a scalar document. */
	v = yaml_parse("just text\nmore: 1\n", 18, err, sizeof(err));
	ck_assert(json_is_string(v));
	json_decref(v);
	/* JSON kubeconfigs are YAML too. */
	const char *js = "{\"a\": {\"b\": 1}}";
	v = yaml_parse(js, strlen(js), err, sizeof(err));
	ck_assert_int_eq(gj_int(v, "a.b", 0), 1);
	json_decref(v);
}
END_TEST

START_TEST(kubeconfig_contexts)
{
	char err[256], tok[128], p[256];
	struct kube_config *c;

	mkdir_tmp();
	write_file("config", KIND_STYLE);
	write_file("tok.txt", "first-token\n");
	snprintf(p, sizeof(p), "%s/config", dir);

	c = kube_config_from_kubeconfig(p, NULL, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_str_eq(c->server, "https://127.0.0.1:6443");
	ck_assert_uint_eq(c->ca_data.len, 5);
	ck_assert(!memcmp(c->ca_data.data, "hello", 5));
	ck_assert_uint_eq(c->cert_data.len, 4);
	ck_assert_uint_eq(c->key_data.len, 3);
	ck_assert_str_eq(c->namespace, "team-a");
	ck_assert_int_eq(kube_config_token(c, tok, sizeof(tok), false), 0);
	ck_assert_str_eq(tok, "");
	kube_config_free(c);

	c = kube_config_from_kubeconfig(p, "other", err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert(c->insecure);
	snprintf(p, sizeof(p), "%s/tok.txt", dir);
	ck_assert_str_eq(c->token_file, p); /* relative to the kubeconfig's directory */
	ck_assert_int_eq(kube_config_token(c, tok, sizeof(tok), false), 0);
	ck_assert_str_eq(tok, "first-token");
	kube_config_free(c);

	snprintf(p, sizeof(p), "%s/config", dir);
	c = kube_config_from_kubeconfig(p, "nope", err, sizeof(err));
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err, "context nope not found"));
	c = kube_config_from_kubeconfig("/nonexistent/kubeconfig", NULL, err, sizeof(err));
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/kubeconfig"));
	/* YAML, but not a mapping; YAML that does not parse: both named. */
	write_file("scalar", "just text\nmore: 1\n");
	snprintf(p, sizeof(p), "%s/scalar", dir);
	c = kube_config_from_kubeconfig(p, NULL, err, sizeof(err));
	ck_assert_ptr_null(c);
	ck_assert_ptr_nonnull(strstr(err, "not a mapping"));
	write_file("broken", "clusters: [\n");
	snprintf(p, sizeof(p), "%s/broken", dir);
	c = kube_config_from_kubeconfig(p, NULL, err, sizeof(err));
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, "yaml line"), "%s", err);
	rm_tmp();
}
END_TEST

/* A tokenFile that is a FIFO (or a device) is refused at once: reading it
 * would block the daemon's start forever (found while writing fuzz_kubeconfig:
 * the file names in a kubeconfig are outside input too). */
START_TEST(kubeconfig_token_file_not_regular)
{
	char p[256], err[512];
	struct kube_config *c;

	mkdir_tmp();
	snprintf(p, sizeof(p), "%s/fifo", dir);
	ck_assert_int_eq(mkfifo(p, 0600), 0);
	write_file("config", "current-context: x\n"
		   "clusters: [{name: c, cluster: {server: \"https://h:1/\"}}]\n"
		   "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
		   "users: [{name: u, user: {tokenFile: fifo}}]\n");
	snprintf(p, sizeof(p), "%s/config", dir);
	c = kube_config_from_kubeconfig(p, NULL, err, sizeof(err));
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, "cannot read tokenFile"), "%s", err);
	/* The kubeconfig itself must be a file too. */
	snprintf(p, sizeof(p), "%s/fifo", dir);
	c = kube_config_from_kubeconfig(p, NULL, err, sizeof(err));
	ck_assert_ptr_null(c);
	ck_assert_msg(strstr(err, "not a regular file"), "%s", err);
	rm_tmp();
}
END_TEST

/* Projected tokens rotate: the file is re-read once older than token_reload_s. */
START_TEST(in_cluster_token_rotation)
{
	char err[256], tok[128];
	struct kube_config *c;

	mkdir_tmp();
	write_file("token", "tok-1");
	write_file("ca.crt", "-----BEGIN CERTIFICATE-----\n");
	write_file("namespace", "galactic-system\n");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	c = kube_config_in_cluster(dir, err, sizeof(err));
	ck_assert_msg(c != NULL, "%s", err);
	ck_assert_str_eq(c->server, "https://[fd00::1]:443");
	ck_assert_str_eq(c->namespace, "galactic-system");
	c->token_reload_s = 1;
	ck_assert_int_eq(kube_config_token(c, tok, sizeof(tok), false), 0);
	ck_assert_str_eq(tok, "tok-1");
	write_file("token", "tok-2\n");
	ck_assert_int_eq(kube_config_token(c, tok, sizeof(tok), false), 0);
	ck_assert_str_eq(tok, "tok-1"); /* not stale yet */
	usleep(1100 * 1000);
	ck_assert_int_eq(kube_config_token(c, tok, sizeof(tok), false), 0);
	ck_assert_str_eq(tok, "tok-2");
	/* A failed read keeps the last good token. */
	char p[256];
	snprintf(p, sizeof(p), "%s/token", dir);
	unlink(p);
	ck_assert_int_eq(kube_config_token(c, tok, sizeof(tok), true), 0);
	ck_assert_str_eq(tok, "tok-2");
	ck_assert_int_eq(kube_config_token(c, tok, 3, false), -1);
	kube_config_free(c);

	unsetenv("KUBERNETES_SERVICE_HOST");
	ck_assert_ptr_null(kube_config_in_cluster(dir, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "KUBERNETES_SERVICE_HOST"));
	rm_tmp();
}
END_TEST

START_TEST(base64)
{
	struct kube_blob b;
	ck_assert_int_eq(kube_base64_decode("aGVsbG8gd29ybGQ=", &b), 0);
	ck_assert_uint_eq(b.len, 11);
	ck_assert(!memcmp(b.data, "hello world", 11));
	free(b.data);
	ck_assert_int_eq(kube_base64_decode("aGV\nsbG8", &b), 0);
	ck_assert_uint_eq(b.len, 5);
	free(b.data);
	ck_assert_int_eq(kube_base64_decode("a*b", &b), -1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common_config");
	TCase *tc = tcase_create("config");
	tcase_add_test(tc, yaml_subset);
	tcase_add_test(tc, kubeconfig_contexts);
	tcase_add_test(tc, kubeconfig_token_file_not_regular);
	tcase_add_test(tc, in_cluster_token_rotation);
	tcase_add_test(tc, base64);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
