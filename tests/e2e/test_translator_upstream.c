/*
 * galactic-translator against the faithful upstream schemas (tests/crds/):
 *  - schema-aware writes: a 64-hex container id (the upstream VPCAttachment
 *    declares status.containerID as exactly 46 characters) is withheld and
 *    reported once per object (log, fields_withheld_total; the Event
 *    FieldWithheld once per resource and field) while
 *    node, podName, the interfaces, podSubnet and Programmed are written;
 *    a CRD change is re-read at once (relaxing the constraint writes the id,
 *    restoring it withdraws it); 0 writes refused (422/500) in the whole suite;
 *  - the uid guard on every write: the object is deleted and re-created
 *    between the translator's cache read and its write (test write gate),
 *    and nothing lands on the new incarnation (an attachment's apply, a
 *    claim's and an interface's condition writes: guarded JSON Patch on the
 *    atomic variant, apply on the maplist variant); the new one converges;
 *  - staged takeover: with vpcattachment.status.hostInterface and
 *    vpcattachment.conditions.Programmed left to a stand-in of the cloud
 *    BGPAdvertisementReconciler (Status().Update: a whole-status PUT with
 *    resourceVersion), managedFields show neither writer owning the other's
 *    fields, across report flips;
 *  - a value only a CEL rule refuses (podSubnet isCIDR): the write is
 *    refused 422, logged once and not retried hot; a new intent goes through.
 * Stand-ins write as upstream does: the VPC operator's Status().Update of
 * vpc/vpcAttachment/networkAttachmentDefinition/Ready (PUT of /status).
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/daemon.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"
#include "tests/lib/translator_e2e.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GT_CRD_VARIANT
#define GT_CRD_VARIANT "atomic"
#endif

#define BIN "build/san/bin/galactic-translator"
#define RNS "galactic-system"
#define TNS "tenant-u"
#define ATT_PATH "/apis/cloud.datumapis.com/v1alpha1/namespaces/" TNS "/vpcattachments"
#define NIC_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" TNS "/networkinterfaceclaims"
#define NI_PATH "/apis/networking.datumapis.com/v1alpha/namespaces/" TNS "/networkinterfaces"
#define REP_PATH "/apis/network.datumapis.com/v1alpha1/namespaces/" RNS "/nodeattachments"
#define CRD_VA "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/vpcattachments.cloud.datumapis.com"
#define AGENT_MGR "galactic-agent/node-a"
#define TR_MGR "galactic-translator"
#define BGP_MGR "cloud-bgp"
#define HEX64 "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define CID46 "c0ffee010123456789abcdef0123456789abcdef012345"

static struct cp cp;
static int port;
static pid_t pid;
static char gate_dir[300];
static int standin_409s;
static const char *report_subnet = "fd00:1::/64"; /* the report's primary pod subnet */

static void start(const char *leave)
{
	char p[32], log[400];
	char *argv[] = { BIN, "--kubeconfig", cp.kubeconfig, "--namespace", RNS, "--id", "tr-u",
			 "--lease-namespace", RNS, "--lease-duration", "4", "--renew-deadline", "3",
			 "--retry-period", "0.5", "--metrics-addr", p, "--log-level", "info",
			 leave ? "--leave-to-incumbent" : NULL, (char *)leave, NULL };
	double t0 = gt_now();

	port = gt_free_port();
	snprintf(p, sizeof(p), "127.0.0.1:%d", port);
	snprintf(log, sizeof(log), "%s/translator-u.log", cp.dir);
	setenv("GALACTIC_TRANSLATOR_TEST_WRITE_GATE", gate_dir, 1);
	pid = gt_spawn(log, argv);
	ck_assert_int_gt(pid, 0);
	while (gt_now() - t0 < 30 && gt_metric(port, "galactic_translator_leader") != 1)
		usleep(50 * 1000);
	ck_assert_msg(gt_metric(port, "galactic_translator_leader") == 1, "translator did not lead");
}

static void stop(void)
{
	int st = 0;
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
	pid = 0;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "translator exit status 0x%x", st);
}

static double metric(const char *s) { return gt_metric(port, s); }
static void check_no_write_refused(void);

/* ---- writers ---- */

static void create_att(const char *name)
{
	char body[1024];
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"%s\"},\"spec\":{\"vpc\":{\"name\":\"vpc-u\"},"
		 "\"interface\":{\"name\":\"eth0\",\"mode\":\"Netns\"},\"interfaceRef\":{\"name\":\"%s\"}}}",
		 name, name);
	ck_assert_int_eq(kreq(&cp, "POST", ATT_PATH, "application/json", body, NULL, NULL), 201);
}

static void delete_obj(const char *list, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", list, name);
	ck_assert_int_eq(kreq(&cp, "DELETE", p, NULL, NULL, NULL, NULL), 200);
	for (int i = 0; i < 200; i++) {
		long code = 0;
		json_decref(kget(&cp, p, &code));
		if (code == 404)
			return;
		usleep(20 * 1000);
	}
	ck_abort_msg("%s not deleted", p);
}

/* Read-modify-write PUT of /status, as controller-runtime's Status().Update (409: read again). */
static void put_status(const char *list, const char *name, const char *mgr,
		       void (*edit)(json_t *status, void *ud), void *ud)
{
	char p[300], q[340];
	snprintf(p, sizeof(p), "%s/%s", list, name);
	snprintf(q, sizeof(q), "%s/status?fieldManager=%s", p, mgr);
	for (int i = 0; i < 50; i++) {
		json_t *o = kget(&cp, p, NULL), *st;
		char *body;
		long code;
		ck_assert_ptr_nonnull(o);
		st = json_object_get(o, "status");
		if (!st) {
			json_object_set_new(o, "status", json_object());
			st = json_object_get(o, "status");
		}
		edit(st, ud);
		body = json_dumps(o, JSON_COMPACT);
		code = kreq(&cp, "PUT", q, "application/json", body, NULL, NULL);
		free(body);
		json_decref(o);
		if (code == 200)
			return;
		ck_assert_int_eq(code, 409);
		standin_409s++;
	}
	ck_abort_msg("PUT %s never landed", q);
}

static void set_cond(json_t *st, const char *type, const char *status, const char *reason)
{
	json_t *l = json_object_get(st, "conditions"), *c;
	size_t i;
	if (!json_is_array(l)) {
		json_object_set_new(st, "conditions", json_array());
		l = json_object_get(st, "conditions");
	}
	json_array_foreach(l, i, c)
		if (!strcmp(kstr(c, "type", NULL) ?: "", type)) {
			if (strcmp(kstr(c, "status", NULL) ?: "", status))
				json_object_set_new(c, "lastTransitionTime", json_string("2026-01-01T00:00:01Z"));
			json_object_set_new(c, "status", json_string(status));
			json_object_set_new(c, "reason", json_string(reason));
			return;
		}
	json_array_append_new(l, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", type, "status", status,
					   "reason", reason, "message", "", "lastTransitionTime",
					   "2026-01-01T00:00:00Z"));
}

/* The VPC operator (cloud NetworkInterfaceReconciler): ids, attachment definition, Ready. */
struct ids { const char *vpc, *att; };
static void vpcop_edit(json_t *st, void *ud)
{
	struct ids *i = ud;
	char nad[64];
	snprintf(nad, sizeof(nad), "nad-%s", i->att);
	json_object_set_new(st, "vpc", json_string(i->vpc));
	json_object_set_new(st, "vpcAttachment", json_string(i->att));
	json_object_set_new(st, "networkAttachmentDefinition", json_string(nad));
	json_object_set_new(st, "observedGeneration", json_integer(1));
	set_cond(st, "Ready", "True", "Ready");
}

/* The VPC operator renames the attachment definition (a change that matters to nobody here). */
static void nad_edit(json_t *st, void *ud)
{
	json_object_set_new(st, "networkAttachmentDefinition", json_string((const char *)ud));
}

/* The cloud BGPAdvertisementReconciler: hostInterface and Programmed (from Advertised). */
struct bgp { const char *host, *programmed; };
static void bgp_edit(json_t *st, void *ud)
{
	struct bgp *b = ud;
	json_object_set_new(st, "hostInterface", json_string(b->host));
	set_cond(st, "Programmed", b->programmed, !strcmp(b->programmed, "True") ? "Advertised" : "AwaitingDataPlane");
}

static void report(const char *rname, const char *vpc, const char *vatt, const char *cid,
		   const char *programmed)
{
	char body[1600], p[256];
	snprintf(p, sizeof(p), "%s/%s", REP_PATH, rname);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" RNS "\"},"
		 "\"spec\":{\"node\":\"node-a\",\"vpc\":\"%s\",\"vpcAttachment\":\"%s\",\"containerID\":\"%s\","
		 "\"pod\":{\"namespace\":\"" TNS "\",\"name\":\"pod-%s\"},\"hostInterface\":\"G%sH\","
		 "\"guestInterface\":\"eth0\",\"vrfInterface\":\"G%sV\",\"table\":100,"
		 "\"podSubnets\":[\"%s\"],\"localSID\":\"fc00:0:1:1:e001::\"}}",
		 rname, vpc, vatt, cid, vatt, vatt, vatt, report_subnet);
	ck_assert_int_ge(kapply(&cp, p, AGENT_MGR, body, &standin_409s), 200);
	/* The agent reports on the generation it programmed. */
	json_t *ro = kget(&cp, p, NULL);
	long long gen = json_integer_value(json_object_get(json_object_get(ro, "metadata"), "generation"));
	json_decref(ro);
	snprintf(p, sizeof(p), "%s/%s/status", REP_PATH, rname);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"network.datumapis.com/v1alpha1\",\"kind\":\"NodeAttachment\","
		 "\"metadata\":{\"name\":\"%s\",\"namespace\":\"" RNS "\"},"
		 "\"status\":{\"observedGeneration\":%lld,\"reporter\":{\"node\":\"node-a\",\"datapath\":\"kernel\","
		 "\"agentInstance\":\"a1\"},\"conditions\":[{\"type\":\"Programmed\",\"status\":\"%s\","
		 "\"reason\":\"%s\",\"message\":\"checked\",\"observedGeneration\":%lld,"
		 "\"lastTransitionTime\":\"2026-01-01T00:00:00Z\"}]}}",
		 rname, gen, programmed, !strcmp(programmed, "True") ? "Programmed" : "RouteMissing", gen);
	ck_assert_int_eq(kapply(&cp, p, AGENT_MGR, body, &standin_409s), 200);
}

static json_t *obj(const char *list, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", list, name);
	return kget(&cp, p, NULL);
}

/* Polls until condition type of list/name has status (and reason, when given). */
static json_t *wait_cond(const char *list, const char *name, const char *type, const char *status,
			 const char *reason)
{
	for (double t0 = gt_now(); gt_now() - t0 < 20; usleep(10 * 1000)) {
		json_t *o = obj(list, name);
		const json_t *c = kcond(o, type);
		if (c && !strcmp(kstr(c, "status", NULL) ?: "", status) &&
		    (!reason || !strcmp(kstr(c, "reason", NULL) ?: "", reason)))
			return o;
		json_decref(o);
	}
	ck_abort_msg("%s %s: %s did not become %s/%s", list, name, type, status, reason ? reason : "*");
	return NULL;
}

/* Fields under f:status of manager's entry with operation op (NULL if none). */
static const json_t *owned(const json_t *o, const char *mgr, const char *op)
{
	const json_t *e;
	size_t i;
	json_array_foreach(json_object_get(json_object_get(o, "metadata"), "managedFields"), i, e)
		if (!strcmp(kstr(e, "manager", NULL) ?: "", mgr) && !strcmp(kstr(e, "operation", NULL) ?: "", op))
			return json_object_get(json_object_get(e, "fieldsV1"), "f:status");
	return NULL;
}

/* ---- fixture ---- */

static void setup(void)
{
	te_up(&cp, GT_CRD_VARIANT, true, (const char *const[]){ RNS, TNS, NULL });
	snprintf(gate_dir, sizeof(gate_dir), "%s/gate", cp.dir);
	ck_assert_int_eq(mkdir(gate_dir, 0700), 0);
	start(NULL);
}

static void teardown(void)
{
	te_kill(&pid);
	te_down(&cp, "translator-u.log");
}

#define WITHHELD_CID "galactic_translator_fields_withheld_total{resource=\"vpcattachments\",field=\"status.containerID\"}"

/* Events about obj named name with reason FieldWithheld whose message contains needle. */
static int withheld_events(const char *name, const char *needle)
{
	json_t *l = NULL, *e;
	size_t i;
	int n = 0;
	ck_assert_int_eq(kreq(&cp, "GET", "/api/v1/namespaces/" TNS "/events", NULL, NULL, NULL, &l), 200);
	json_array_foreach(json_object_get(l, "items"), i, e)
		if (!strcmp(kstr(e, "reason", NULL) ?: "", "FieldWithheld") &&
		    !strcmp(kstr(json_object_get(e, "involvedObject"), "name", NULL) ?: "", name) &&
		    !strcmp(kstr(json_object_get(e, "involvedObject"), "kind", NULL) ?: "", "VPCAttachment") &&
		    strstr(kstr(e, "message", NULL) ?: "", needle))
			n++;
	json_decref(l);
	return n;
}

/* withheld_events once it reaches want (the Event is posted by the translator's
 * sender thread, after the write), or what it is after 10 s. */
static int withheld_events_wait(const char *name, const char *needle, int want)
{
	int n = 0;
	for (int i = 0; i < 100 && (n = withheld_events(name, needle)) < want; i++)
		usleep(100 * 1000);
	return n;
}

/* A 64-hex container id is withheld and reported once; everything else is written. */
START_TEST(test_container_id_withheld)
{
	struct ids ids = { "Vu1", "Au1" };
	json_t *o;
	const json_t *st, *tr;

	create_att("att-w");
	put_status(ATT_PATH, "att-w", "vpc-operator", vpcop_edit, &ids);
	report("node-a-vu1-au1", "Vu1", "Au1", HEX64, "True");
	o = wait_cond(ATT_PATH, "att-w", "Programmed", "True", NULL);
	st = json_object_get(o, "status");
	ck_assert_str_eq(kstr(st, "node", NULL), "node-a");
	ck_assert_str_eq(kstr(st, "podName", NULL), "pod-Au1");
	ck_assert_str_eq(kstr(st, "hostInterface", NULL), "GAu1H");
	ck_assert_str_eq(kstr(st, "vrfInterface", NULL), "GAu1V");
	ck_assert_str_eq(kstr(st, "guestInterface", NULL), "eth0");
	ck_assert_str_eq(kstr(st, "podSubnet", NULL), "fd00:1::/64");
	ck_assert_ptr_null(json_object_get(st, "containerID"));
	tr = owned(o, TR_MGR, "Apply");
	ck_assert_ptr_null(json_object_get(tr, "f:containerID"));
	json_decref(o);
	ck_assert_double_eq(metric(WITHHELD_CID), 1);
	ck_assert_int_eq(withheld_events_wait("att-w", "status.containerID", 1), 1);
	ck_assert_int_ge(withheld_events("att-w", "maxLength 46"), 1);
	/* Another transition: still withheld, not reported again. */
	report("node-a-vu1-au1", "Vu1", "Au1", HEX64, "False");
	json_decref(wait_cond(ATT_PATH, "att-w", "Programmed", "False", NULL));
	ck_assert_double_eq(metric(WITHHELD_CID), 1);
	ck_assert_int_eq(withheld_events("att-w", "status.containerID"), 1);
	/* A second attachment with a 64-hex id: withheld and counted, but the
	 * Event went on the first object only (one per resource and field: an
	 * Event per object was one API write per workload start). */
	{
		struct ids ids2 = { "Vu1", "Au2" };
		create_att("att-w2");
		put_status(ATT_PATH, "att-w2", "vpc-operator", vpcop_edit, &ids2);
		report("node-a-vu1-au2", "Vu1", "Au2", HEX64, "True");
		o = wait_cond(ATT_PATH, "att-w2", "Programmed", "True", NULL);
		ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "containerID"));
		ck_assert_str_eq(kstr(json_object_get(o, "status"), "podName", NULL), "pod-Au2");
		json_decref(o);
		ck_assert_double_eq(metric(WITHHELD_CID), 2);
		usleep(1500 * 1000); /* the sender thread posts a moment after the write */
		ck_assert_int_eq(withheld_events("att-w2", "status.containerID"), 0);
		ck_assert_int_eq(withheld_events("att-w", "status.containerID"), 1);
		delete_obj(REP_PATH, "node-a-vu1-au2");
		delete_obj(ATT_PATH, "att-w2");
	}
	/* A 46-character id the schema can hold is written. */
	report("node-a-vu1-au1", "Vu1", "Au1", CID46, "True");
	o = wait_cond(ATT_PATH, "att-w", "Programmed", "True", NULL);
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "containerID", NULL), CID46);
	json_decref(o);
	report("node-a-vu1-au1", "Vu1", "Au1", HEX64, "True");
	for (double t0 = gt_now(); gt_now() - t0 < 20; usleep(10 * 1000)) {
		o = obj(ATT_PATH, "att-w");
		bool gone = !json_object_get(json_object_get(o, "status"), "containerID");
		json_decref(o);
		if (gone)
			break;
	}
	o = obj(ATT_PATH, "att-w");
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "containerID"));
	json_decref(o);
}
END_TEST

/* The schema is re-read when the CRD changes: relaxed, the id is written; restored, withdrawn. */
START_TEST(test_crd_change_reread)
{
	const char *cid_path = "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/containerID";
	char ops[600];
	json_t *o;
	double t0;
	bool seen = false;

	snprintf(ops, sizeof(ops), "[{\"op\":\"replace\",\"path\":\"%s\",\"value\":{\"type\":\"string\",\"minLength\":1}}]",
		 cid_path);
	ck_assert_int_eq(kreq(&cp, "PATCH", CRD_VA, "application/json-patch+json", ops, NULL, NULL), 200);
	for (t0 = gt_now(); !seen && gt_now() - t0 < 20; usleep(20 * 1000)) {
		o = obj(ATT_PATH, "att-w");
		seen = !strcmp(kstr(json_object_get(o, "status"), "containerID", NULL) ?: "", HEX64);
		json_decref(o);
	}
	ck_assert_msg(seen, "relaxed schema not re-read: 64-hex id not written");
	printf("MEASURE: CRD relaxed -> 64-hex containerID written in %.0f ms\n", (gt_now() - t0) * 1e3);
	snprintf(ops, sizeof(ops),
		 "[{\"op\":\"replace\",\"path\":\"%s\",\"value\":{\"type\":\"string\",\"minLength\":46,\"maxLength\":46}}]",
		 cid_path);
	ck_assert_int_eq(kreq(&cp, "PATCH", CRD_VA, "application/json-patch+json", ops, NULL, NULL), 200);
	for (t0 = gt_now(); seen && gt_now() - t0 < 20; usleep(20 * 1000)) {
		o = obj(ATT_PATH, "att-w");
		seen = json_object_get(json_object_get(o, "status"), "containerID") != NULL;
		json_decref(o);
	}
	ck_assert_msg(!seen, "restored schema not re-read: containerID still there");
	/* Once per object and field (att-w, and att-w2 of the test before), across schema changes too. */
	ck_assert_double_eq(metric(WITHHELD_CID), 2);
}
END_TEST

static void gate_wait_held(const char *file)
{
	char held[600];
	struct stat sb;
	snprintf(held, sizeof(held), "%s/%s.held", gate_dir, file);
	for (double t0 = gt_now(); gt_now() - t0 < 20; usleep(5 * 1000))
		if (!stat(held, &sb))
			return;
	ck_abort_msg("the translator never reached the gate for %s", file);
}

static void gate_set(const char *file)
{
	char f[600];
	FILE *h;
	snprintf(f, sizeof(f), "%s/%s", gate_dir, file);
	ck_assert_ptr_nonnull(h = fopen(f, "w"));
	fclose(h);
}

static void gate_open(const char *file)
{
	char f[600];
	snprintf(f, sizeof(f), "%s/%s", gate_dir, file);
	ck_assert_int_eq(unlink(f), 0);
}

/* Re-created between the cache read and the apply: nothing lands on the new incarnation. */
START_TEST(test_apply_refused_on_new_incarnation)
{
	struct ids ids = { "Vu2", "Au2" };
	const char *g = "VPCAttachment." TNS ".att-g";
	double stale0 = metric("galactic_translator_stale_apply_refusals_total{kind=\"VPCAttachment\"}");
	json_t *o;
	char uid1[64];

	create_att("att-g");
	put_status(ATT_PATH, "att-g", "vpc-operator", vpcop_edit, &ids);
	report("node-a-vu2-au2", "Vu2", "Au2", CID46, "False");
	o = wait_cond(ATT_PATH, "att-g", "Programmed", "False", NULL);
	snprintf(uid1, sizeof(uid1), "%s", kstr(json_object_get(o, "metadata"), "uid", NULL));
	json_decref(o);
	/* Hold the next write, flip the report, re-create the attachment meanwhile (no ids yet). */
	gate_set(g);
	report("node-a-vu2-au2", "Vu2", "Au2", CID46, "True");
	gate_wait_held(g);
	delete_obj(ATT_PATH, "att-g");
	create_att("att-g");
	gate_open(g);
	/* The new incarnation shows only what is true of it: ids pending, no report fields. */
	o = wait_cond(ATT_PATH, "att-g", "Programmed", "Unknown", "AttachmentIDsPending");
	ck_assert_str_ne(kstr(json_object_get(o, "metadata"), "uid", NULL), uid1);
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "node"));
	ck_assert_ptr_null(json_object_get(owned(o, TR_MGR, "Apply"), "f:node"));
	json_decref(o);
	usleep(500 * 1000);
	o = obj(ATT_PATH, "att-g");
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "node"));
	ck_assert_str_eq(kstr(kcond(o, "Programmed"), "reason", NULL), "AttachmentIDsPending");
	json_decref(o);
	ck_assert_double_ge(metric("galactic_translator_stale_apply_refusals_total{kind=\"VPCAttachment\"}"),
			    stale0 + 1);
}
END_TEST

static void nso_ref(json_t *st, void *ud)
{
	json_object_set_new(st, "networkInterfaceRef", json_pack("{s:s}", "name", (const char *)ud));
}

/* The same for a claim's conditions (guarded patch on atomic lists, apply on map lists). */
START_TEST(test_condition_write_refused_on_new_incarnation)
{
	const char *g = "NetworkInterfaceClaim." TNS ".claim-g";
	const char *body = "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterfaceClaim\","
			   "\"metadata\":{\"name\":\"claim-g\"},\"spec\":{\"network\":{\"name\":\"net-1\"}}}";
	bool map = !strcmp(GT_CRD_VARIANT, "maplist");
	const char *m = map ? "galactic_translator_stale_apply_refusals_total{kind=\"NetworkInterfaceClaim\"}"
			    : "galactic_translator_guarded_patch_rejections_total{kind=\"NetworkInterfaceClaim\"}";
	double r0 = metric(m);
	json_t *o;

	ck_assert_int_eq(kreq(&cp, "POST", NIC_PATH, "application/json", body, NULL, NULL), 201);
	json_decref(wait_cond(NIC_PATH, "claim-g", "Prepared", "Unknown", "InterfacePending"));
	gate_set(g);
	put_status(NIC_PATH, "claim-g", "nso", nso_ref, "no-such-iface");
	gate_wait_held(g);
	delete_obj(NIC_PATH, "claim-g");
	ck_assert_int_eq(kreq(&cp, "POST", NIC_PATH, "application/json", body, NULL, NULL), 201);
	gate_open(g);
	o = wait_cond(NIC_PATH, "claim-g", "Prepared", "Unknown", "InterfacePending");
	json_decref(o);
	usleep(500 * 1000);
	o = obj(NIC_PATH, "claim-g");
	ck_assert_str_eq(kstr(kcond(o, "Prepared"), "reason", NULL), "InterfacePending");
	ck_assert_str_eq(kstr(kcond(o, "Programmed"), "reason", NULL), "InterfacePending");
	/* The schema's seeded NSO conditions are still there. */
	ck_assert_ptr_nonnull(kcond(o, "Bound"));
	json_decref(o);
	ck_assert_double_ge(metric(m), r0 + 1);
	delete_obj(NIC_PATH, "claim-g");
}
END_TEST

/* The same for a NetworkInterface: the held write was computed while an
 * attachment controlled by the old incarnation linked to it; the new one
 * (another uid) is linked by nothing and must say so, never the old data. */
START_TEST(test_interface_write_refused_on_new_incarnation)
{
	const char *g = "NetworkInterface." TNS ".nif-g";
	const char *ms = "galactic_translator_stale_apply_refusals_total{kind=\"NetworkInterface\"}";
	const char *mg = "galactic_translator_guarded_patch_rejections_total{kind=\"NetworkInterface\"}";
	const char *nif = "{\"apiVersion\":\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\","
			  "\"metadata\":{\"name\":\"nif-g\"},\"spec\":{\"network\":{\"name\":\"net-1\"},"
			  "\"claimRef\":{\"name\":\"nif-g\"},\"interfaceName\":\"eth0\",\"mtu\":1500}}";
	struct ids ids = { "Vu3", "Au3" };
	double r0 = metric(ms) + metric(mg);
	char uid1[64], body[1024];
	json_t *o = NULL;

	ck_assert_int_eq(kreq(&cp, "POST", NI_PATH, "application/json", nif, NULL, &o), 201);
	snprintf(uid1, sizeof(uid1), "%s", kstr(json_object_get(o, "metadata"), "uid", NULL));
	json_decref(o);
	json_decref(wait_cond(NI_PATH, "nif-g", "Prepared", "False", "AttachmentMissing"));
	/* Hold the next write; an attachment controlled by this incarnation appears. */
	gate_set(g);
	snprintf(body, sizeof(body),
		 "{\"apiVersion\":\"cloud.datumapis.com/v1alpha1\",\"kind\":\"VPCAttachment\","
		 "\"metadata\":{\"name\":\"nif-g\",\"ownerReferences\":[{\"apiVersion\":"
		 "\"networking.datumapis.com/v1alpha\",\"kind\":\"NetworkInterface\",\"name\":\"nif-g\","
		 "\"uid\":\"%s\",\"controller\":true,\"blockOwnerDeletion\":true}]},"
		 "\"spec\":{\"vpc\":{\"name\":\"vpc-u\"},\"interface\":{\"name\":\"eth0\",\"mode\":\"Netns\"},"
		 "\"interfaceRef\":{\"name\":\"nif-g\"}}}", uid1);
	ck_assert_int_eq(kreq(&cp, "POST", ATT_PATH, "application/json", body, NULL, NULL), 201);
	put_status(ATT_PATH, "nif-g", "vpc-operator", vpcop_edit, &ids);
	gate_wait_held(g);
	delete_obj(NI_PATH, "nif-g");
	ck_assert_int_eq(kreq(&cp, "POST", NI_PATH, "application/json", nif, NULL, NULL), 201);
	gate_open(g);
	/* The new incarnation converges to what is true of it: no attachment of its own. */
	o = wait_cond(NI_PATH, "nif-g", "Prepared", "False", "AttachmentMissing");
	ck_assert_str_ne(kstr(json_object_get(o, "metadata"), "uid", NULL), uid1);
	json_decref(o);
	usleep(500 * 1000);
	o = obj(NI_PATH, "nif-g");
	ck_assert_str_eq(kstr(kcond(o, "Prepared"), "reason", NULL), "AttachmentMissing");
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "attachmentRef"));
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "vpc"));
	json_decref(o);
	ck_assert_double_ge(metric(ms) + metric(mg), r0 + 1);
	delete_obj(NI_PATH, "nif-g");
	delete_obj(ATT_PATH, "nif-g");
}
END_TEST

/* Staged takeover: two rows left to a stand-in of the BGPAdvertisementReconciler. */
START_TEST(test_staged_takeover)
{
	struct ids ids = { "Vu3", "Au3" };
	struct bgp b = { "bgp-host-1", "False" };
	json_t *o;
	const json_t *tr, *bg;

	check_no_write_refused(); /* the first process, before it goes */
	printf("MEASURE: first process: writes %g (VPCAttachment) %g (claims), stale applies refused %g, guarded patches refused %g\n",
	       metric("galactic_translator_status_writes_total{kind=\"VPCAttachment\"}"),
	       metric("galactic_translator_status_writes_total{kind=\"NetworkInterfaceClaim\"}"),
	       metric("galactic_translator_stale_apply_refusals_total{kind=\"VPCAttachment\"}"),
	       metric("galactic_translator_guarded_patch_rejections_total{kind=\"NetworkInterfaceClaim\"}"));
	stop();
	start("vpcattachment.status.hostInterface,vpcattachment.conditions.Programmed");
	create_att("att-s");
	put_status(ATT_PATH, "att-s", "vpc-operator", vpcop_edit, &ids);
	report("node-a-vu3-au3", "Vu3", "Au3", CID46, "True");
	for (int flip = 0; flip < 4; flip++) {
		b.programmed = flip % 2 ? "False" : "True";
		put_status(ATT_PATH, "att-s", BGP_MGR, bgp_edit, &b);
		report("node-a-vu3-au3", "Vu3", "Au3", CID46, flip % 2 ? "True" : "False");
		for (double t0 = gt_now(); gt_now() - t0 < 20; usleep(10 * 1000)) {
			o = obj(ATT_PATH, "att-s");
			bool ok = !strcmp(kstr(json_object_get(o, "status"), "node", NULL) ?: "", "node-a");
			json_decref(o);
			if (ok)
				break;
		}
		usleep(400 * 1000);
	}
	o = obj(ATT_PATH, "att-s");
	/* The incumbent's values stand as it wrote them; the translator's too. */
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "hostInterface", NULL), "bgp-host-1");
	ck_assert_str_eq(kstr(kcond(o, "Programmed"), "reason", NULL), "AwaitingDataPlane");
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "node", NULL), "node-a");
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "containerID", NULL), CID46);
	tr = owned(o, TR_MGR, "Apply");
	bg = owned(o, BGP_MGR, "Update");
	ck_assert_ptr_nonnull(tr);
	ck_assert_ptr_nonnull(bg);
	/* managedFields: neither touches the other's fields. */
	ck_assert_ptr_null(json_object_get(tr, "f:hostInterface"));
	ck_assert_ptr_null(json_object_get(tr, "f:conditions"));
	ck_assert_ptr_nonnull(json_object_get(bg, "f:hostInterface"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(bg, "f:conditions"), "k:{\"type\":\"Programmed\"}"));
	static const char *const mine[] = { "node", "containerID", "podName", "vrfInterface",
					    "guestInterface", "podSubnet" };
	for (size_t i = 0; i < sizeof(mine) / sizeof(mine[0]); i++) {
		char fk[64];
		snprintf(fk, sizeof(fk), "f:%s", mine[i]);
		ck_assert_msg(json_object_get(tr, fk), "translator does not own %s", mine[i]);
		ck_assert_msg(!json_object_get(bg, fk), "the incumbent owns %s", mine[i]);
	}
	json_decref(o);
	/* att-g's status holds only the translator's Programmed, now left to the incumbent:
	 * withdrawing it must not leave status null (422 on this schema). */
	for (double t0 = gt_now(); gt_now() - t0 < 20; usleep(20 * 1000)) {
		o = obj(ATT_PATH, "att-g");
		bool gone = !kcond(o, "Programmed");
		json_decref(o);
		if (gone)
			break;
	}
	o = obj(ATT_PATH, "att-g");
	ck_assert_ptr_null(kcond(o, "Programmed"));
	ck_assert_ptr_null(json_object_get(owned(o, TR_MGR, "Apply"), "f:conditions"));
	json_decref(o);
	check_no_write_refused();
	ck_assert_double_eq(metric("galactic_translator_leader"), 1); /* reachable: absent below means 0 */
	ck_assert_double_eq(metric("galactic_translator_field_takeovers_total{field=\"hostInterface\"}"), -1);
	ck_assert_double_eq(metric("galactic_translator_field_takeovers_total{field=\"Programmed\"}"), -1);
}
END_TEST

/* Every status write of this translator process was accepted by the faithful schemas. */
static void check_no_write_refused(void)
{
	ck_assert_double_eq(metric("galactic_translator_leader"), 1); /* reachable */
	static const char *const kinds[] = { "VPCAttachment", "NetworkInterface", "NetworkInterfaceClaim" };
	char s[200];
	for (size_t i = 0; i < 3; i++)
		for (int c = 0; c < 2; c++) {
			snprintf(s, sizeof(s), "galactic_translator_writes_refused_total{kind=\"%s\",code=\"%s\"}",
				 kinds[i], c ? "500" : "422");
			ck_assert_msg(metric(s) == 0, "%s = %g", s, metric(s));
		}
	ck_assert_double_eq(metric("galactic_translator_status_write_errors_total{code=\"422\"}"), -1);
	ck_assert_double_eq(metric("galactic_translator_status_write_errors_total{code=\"500\"}"), -1);
}

START_TEST(test_no_write_refused)
{
	check_no_write_refused();
	printf("MEASURE: writes %g (VPCAttachment) %g (claims); refused 422/500: 0; 409s other than guards: %g; stand-in 409s %d\n",
	       metric("galactic_translator_status_writes_total{kind=\"VPCAttachment\"}"),
	       metric("galactic_translator_status_writes_total{kind=\"NetworkInterfaceClaim\"}"),
	       metric("galactic_translator_conflicts_total"), standin_409s);
	ck_assert_double_eq(metric("galactic_translator_conflicts_total"), 0);
}
END_TEST

/* Lines of the translator's log containing both needles. */
static int log_lines(const char *a, const char *b)
{
	char path[400], line[4096];
	FILE *f;
	int n = 0;
	snprintf(path, sizeof(path), "%s/translator-u.log", cp.dir);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f))
		n += strstr(line, a) && strstr(line, b);
	fclose(f);
	return n;
}

/*
 * A value only a CEL rule refuses (upstream's podSubnet isCIDR): the write is
 * refused 422 whole; logged once, counted once, not retried hot; a new intent
 * goes through. (Run after test_no_write_refused: this one is meant to refuse.)
 */
START_TEST(test_cel_refusal_logged_once)
{
	struct ids ids = { "Vu4", "Au4" };
	const char *m = "galactic_translator_writes_refused_total{kind=\"VPCAttachment\",code=\"422\"}";
	double r0 = metric(m), sk;
	json_t *o;

	create_att("att-c");
	put_status(ATT_PATH, "att-c", "vpc-operator", vpcop_edit, &ids);
	report_subnet = "not-a-cidr";
	report("node-a-vu4-au4", "Vu4", "Au4", CID46, "True");
	for (double t0 = gt_now(); gt_now() - t0 < 20 && metric(m) < r0 + 1; usleep(20 * 1000))
		;
	ck_assert_double_eq(metric(m), r0 + 1);
	sk = metric("galactic_translator_status_write_skips_total{kind=\"VPCAttachment\"}");
	/* Reconciled again (an unrelated VPC operator write): skipped, not sent again. */
	put_status(ATT_PATH, "att-c", "vpc-operator", nad_edit, "nad-Au4-b");
	sleep(2);
	ck_assert_double_eq(metric(m), r0 + 1);
	ck_assert_double_gt(metric("galactic_translator_status_write_skips_total{kind=\"VPCAttachment\"}"), sk);
	ck_assert_int_eq(log_lines("refused as invalid", "att-c"), 1);
	o = obj(ATT_PATH, "att-c");
	ck_assert_ptr_null(json_object_get(json_object_get(o, "status"), "node")); /* the whole write */
	json_decref(o);
	printf("MEASURE: CEL-refused write: 1 x 422, logged once, not retried over 2 s\n");
	/* A subnet the rule accepts: a new intent, written. */
	report_subnet = "fd00:4::/64";
	report("node-a-vu4-au4", "Vu4", "Au4", CID46, "True");
	/* (This process leaves Programmed to the incumbent: look at the fields.) */
	for (double t0 = gt_now(); gt_now() - t0 < 20; usleep(20 * 1000)) {
		o = obj(ATT_PATH, "att-c");
		bool ok = !strcmp(kstr(json_object_get(o, "status"), "podSubnet", NULL) ?: "", "fd00:4::/64");
		json_decref(o);
		if (ok)
			break;
	}
	o = obj(ATT_PATH, "att-c");
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "podSubnet", NULL) ?: "", "fd00:4::/64");
	ck_assert_str_eq(kstr(json_object_get(o, "status"), "node", NULL) ?: "", "node-a");
	json_decref(o);
	ck_assert_double_eq(metric(m), r0 + 1);
	stop();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("translator_upstream");
	/* One process: the translator is a child of the test process, shared by the tests. */
	setenv("CK_FORK", "no", 1);
	TCase *tc = tcase_create("upstream");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, test_container_id_withheld);
	tcase_add_test(tc, test_crd_change_reread);
	tcase_add_test(tc, test_apply_refused_on_new_incarnation);
	tcase_add_test(tc, test_condition_write_refused_on_new_incarnation);
	tcase_add_test(tc, test_interface_write_refused_on_new_incarnation);
	tcase_add_test(tc, test_staged_takeover);
	tcase_add_test(tc, test_no_write_refused);
	tcase_add_test(tc, test_cel_refusal_logged_once);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
