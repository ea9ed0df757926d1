/*
 * Our CRDs (crds/) and the faithful upstream stand-ins (tests/crds/, see
 * tests/crds/upstream.md) on a real kube-apiserver, one control plane for the
 * suite. Each case asserts the server's own answer to one upstream
 * constraint: what upstream refuses (422) is refused here, what it accepts
 * is accepted, what its schema seeds appears on create; and the condition
 * list shape decides whether a second manager can apply its own condition
 * entry (maplist variant) or takes the whole list (atomic, upstream today).
 */
#include "tests/lib/cp.h"
#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"
#include "tests/lib/kreq.h"

#include <curl/curl.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct cp cp;

#define NET "/apis/network.datumapis.com/v1alpha1"
#define NING "/apis/networking.datumapis.com/v1alpha"
#define CLOUD "/apis/cloud.datumapis.com/v1alpha1"
#define NS "/namespaces/default"

#define T0 "'lastTransitionTime':'2026-01-01T00:00:00Z'"
#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX46 "0123456789abcdef0123456789abcdef0123456789abcd"

static void setup(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(&cp) == 0, "control plane did not start");
	/* Upstream's shape today; the last case switches to the maplist variant. */
	ck_assert_msg(crds_install(&cp, "atomic") == 0, "CRDs not established");
}

static void teardown(void)
{
	cp_down(&cp);
	curl_global_cleanup();
}

/* JSON written with ' for " (none of the bodies here needs a quote). */
static char *js(const char *s)
{
	char *d = strdup(s);

	for (char *p = d; *p; p++)
		if (*p == '\'')
			*p = '"';
	return d;
}

/* One request with a '-quoted JSON body; *out (if given) gets the reply. */
static long call(const char *method, const char *path, const char *ctype, const char *body, json_t **out)
{
	char *b = body ? js(body) : NULL;
	long code = 0;

	/* Retry while a freshly established resource is not served yet. */
	for (int i = 0; i < 100; i++) {
		if (out) {
			json_decref(*out);
			*out = NULL;
		}
		code = kreq(&cp, method, path, ctype, b, NULL, out);
		if (code != 404 && code != 429 && code != 503)
			break;
		usleep(100 * 1000);
	}
	free(b);
	return code;
}

static long create(const char *coll, const char *body, json_t **out)
{
	return call("POST", coll, "application/json", body, out);
}

static long merge(const char *path, const char *body, json_t **out)
{
	return call("PATCH", path, "application/merge-patch+json", body, out);
}

/* Server-side apply by manager mgr, optionally forced. */
static long ssa(const char *path, const char *mgr, bool force, const char *body, json_t **out)
{
	char p[512];

	snprintf(p, sizeof(p), "%s?fieldManager=%s%s", path, mgr, force ? "&force=true" : "");
	return call("PATCH", p, "application/apply-patch+yaml", body, out);
}

/* The 422 reply's message contains needle. */
static bool says(json_t *st, const char *needle)
{
	const char *m = json_string_value(json_object_get(st, "message"));

	return m && strstr(m, needle);
}

#define REFUSED(code, st, needle)                                                          \
	do {                                                                               \
		long c_ = (code);                                                          \
		ck_assert_msg(c_ == 422, "expected 422 (%s), got %ld", needle, c_);        \
		ck_assert_msg(says(st, needle), "422 does not say '%s': %s", needle,       \
			      json_string_value(json_object_get(st, "message")));          \
		json_decref(st);                                                           \
		st = NULL;                                                                 \
	} while (0)

static json_t *get(const char *path)
{
	json_t *o = NULL;

	ck_assert_int_eq(call("GET", path, NULL, NULL, &o), 200);
	return o;
}

/* ---- what ships where ---- */

START_TEST(test_every_kind_served)
{
	static const char *lists[] = {
		NET "/nodedataplanes", NET NS "/nodeattachments", NET "/nodeids",
		NET NS "/egressshards", NET NS "/egressshardclaims",
		NING NS "/networkinterfaces", NING NS "/networkinterfaceclaims", NING NS "/networkcontexts",
		CLOUD NS "/vpcattachments",
	};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++)
		ck_assert_msg(call("GET", lists[i], NULL, NULL, NULL) == 200, "%s not served", lists[i]);
}
END_TEST

/* crds/ ships only our kinds; the chart ships and templates no CRD at all. */
START_TEST(test_crds_dir_ships_only_our_kinds)
{
	static const char *ours[] = { "nodeattachments.network.datumapis.com", "nodedataplanes.network.datumapis.com",
				      "nodeids.network.datumapis.com" };
	DIR *d = opendir("crds");
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char path[512], line[512];
		FILE *f;
		bool found = false;

		if (!strstr(e->d_name, ".yaml"))
			continue;
		snprintf(path, sizeof(path), "crds/%s", e->d_name);
		ck_assert_ptr_nonnull(f = fopen(path, "r"));
		while (fgets(line, sizeof(line), f)) {
			char name[256];

			if (sscanf(line, "  name: %255s", name) != 1)
				continue;
			for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
				found |= !strcmp(name, ours[i]);
			ck_assert_msg(found, "%s ships CRD %s, not one of ours", path, name);
			break;
		}
		fclose(f);
		ck_assert_msg(found, "%s: no CRD name found", path);
		n++;
	}
	closedir(d);
	ck_assert_int_eq(n, (int)(sizeof(ours) / sizeof(ours[0])));
	ck_assert_msg(system("! grep -rq CustomResourceDefinition charts/ && ! test -e charts/galactic/crds") == 0,
		      "charts/ ships or templates a CRD");
}
END_TEST

/* The maplist variant differs from the atomic one in the list type only. */
START_TEST(test_maplist_variant_differs_only_in_list_type)
{
	static const char *kinds[] = { "networkinterfaces", "networkinterfaceclaims" };

	for (size_t i = 0; i < 2; i++) {
		char cmd[1024];

		snprintf(cmd, sizeof(cmd),
			 "diff tests/crds/networking.datumapis.com_%s.yaml tests/crds/maplist/networking.datumapis.com_%s.yaml"
			 " | grep '^[<>]' | grep -v '^> *#' | sort > /tmp/galactic-crd-diff.$$ && "
			 "printf '> x-kubernetes-list-map-keys: [type]\\n> x-kubernetes-list-type: map\\n' > /tmp/galactic-crd-want.$$ && "
			 "sed 's/^> */> /' /tmp/galactic-crd-diff.$$ | diff - /tmp/galactic-crd-want.$$; r=$?; "
			 "rm -f /tmp/galactic-crd-diff.$$ /tmp/galactic-crd-want.$$; exit $r", kinds[i], kinds[i]);
		ck_assert_msg(system(cmd) == 0, "maplist %s differs from atomic in more than the list type", kinds[i]);
	}
	ck_assert_int_eq(system("tests/lib/crds.sh files maplist | grep -c /maplist/ | grep -qx 2"), 0);
	ck_assert_int_eq(system("tests/lib/crds.sh files atomic | grep -q /maplist/"), 256);
	ck_assert_int_ne(system("tests/lib/crds.sh files bogus 2>/dev/null"), 0);
}
END_TEST

/* ---- VPCAttachment (cloud.datumapis.com) ---- */

static void vpcatt(const char *name)
{
	char body[512];

	snprintf(body, sizeof(body),
		 "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'%s'},"
		 "'spec':{'vpc':{'name':'v1'},'interfaceRef':{'name':'%s'},'interface':{}}}", name, name);
	ck_assert_int_eq(create(CLOUD NS "/vpcattachments", body, NULL), 201);
}

START_TEST(test_va_container_id_exactly_46)
{
	json_t *st = NULL, *o;

	vpcatt("va-cid");
	/* A runtime's 64-hex id is refused, and so is everything sent with it. */
	REFUSED(merge(CLOUD NS "/vpcattachments/va-cid/status",
		      "{'status':{'node':'node-a','containerID':'" HEX64 "'}}", &st), st, "status.containerID");
	o = get(CLOUD NS "/vpcattachments/va-cid");
	ck_assert_ptr_null(kstr(o, "status", "node"));
	json_decref(o);
	REFUSED(merge(CLOUD NS "/vpcattachments/va-cid/status", "{'status':{'containerID':'abc'}}", &st),
		st, "status.containerID");
	ck_assert_int_eq(merge(CLOUD NS "/vpcattachments/va-cid/status",
			       "{'status':{'node':'node-a','containerID':'" HEX46 "'}}", NULL), 200);
	o = get(CLOUD NS "/vpcattachments/va-cid");
	ck_assert_str_eq(kstr(o, "status", "containerID"), HEX46);
	json_decref(o);
}
END_TEST

START_TEST(test_va_ids_1_to_16)
{
	json_t *st = NULL;

	vpcatt("va-ids");
	REFUSED(merge(CLOUD NS "/vpcattachments/va-ids/status", "{'status':{'vpcAttachment':''}}", &st),
		st, "status.vpcAttachment");
	REFUSED(merge(CLOUD NS "/vpcattachments/va-ids/status", "{'status':{'vpcAttachment':'12345678901234567'}}", &st),
		st, "status.vpcAttachment");
	REFUSED(merge(CLOUD NS "/vpcattachments/va-ids/status", "{'status':{'vpc':'12345678901234567'}}", &st),
		st, "status.vpc");
	ck_assert_int_eq(merge(CLOUD NS "/vpcattachments/va-ids/status",
			       "{'status':{'vpc':'1234567890123456','vpcAttachment':'a'}}", NULL), 200);
	/* The other strings only need one character. */
	REFUSED(merge(CLOUD NS "/vpcattachments/va-ids/status", "{'status':{'hostInterface':''}}", &st),
		st, "status.hostInterface");
}
END_TEST

START_TEST(test_va_pod_subnet_cel)
{
	json_t *st = NULL;

	vpcatt("va-sub");
	REFUSED(merge(CLOUD NS "/vpcattachments/va-sub/status", "{'status':{'podSubnet':'fd00::1'}}", &st),
		st, "podSubnet must be a valid IPv6 CIDR");
	ck_assert_int_eq(merge(CLOUD NS "/vpcattachments/va-sub/status",
			       "{'status':{'podSubnet':'fd00:10:ff01:0:1::/80'}}", NULL), 200);
	/* Quirk: isCIDR() takes IPv4 as well, whatever the message says. */
	ck_assert_int_eq(merge(CLOUD NS "/vpcattachments/va-sub/status", "{'status':{'podSubnet':'10.1.0.0/24'}}", NULL),
			 200);
}
END_TEST

START_TEST(test_va_interface_addresses_cidr)
{
	json_t *st = NULL, *o = NULL;
	long code;

	REFUSED(create(CLOUD NS "/vpcattachments",
		       "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-a1'},"
		       "'spec':{'vpc':{'name':'v1'},'interface':{'addresses':['fd00::1']}}}", &st),
		st, "each address must be a valid IPv4 or IPv6 CIDR");
	/* interface and vpc are required, an empty VPC name is not a name. */
	REFUSED(create(CLOUD NS "/vpcattachments",
		       "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-a2'},"
		       "'spec':{'vpc':{'name':'v1'}}}", &st), st, "spec.interface");
	REFUSED(create(CLOUD NS "/vpcattachments",
		       "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-a3'},"
		       "'spec':{'vpc':{'name':''},'interface':{}}}", &st), st, "spec.vpc.name");
	/* No uid in interfaceRef upstream, and no HypervisorDeclared mode at this version. */
	code = call("POST", CLOUD NS "/vpcattachments?fieldValidation=Strict", "application/json",
		    "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-a4'},"
		    "'spec':{'vpc':{'name':'v1'},'interfaceRef':{'name':'n','uid':'u'},'interface':{}}}", &st);
	ck_assert_msg((code == 400 || code == 422) && says(st, "spec.interfaceRef.uid"),
		      "interfaceRef.uid accepted (%ld)", code);
	json_decref(st);
	st = NULL;
	REFUSED(create(CLOUD NS "/vpcattachments",
		       "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-a5'},"
		       "'spec':{'vpc':{'name':'v1'},'interface':{'mode':'HypervisorDeclared'}}}", &st),
		st, "spec.interface.mode");
	ck_assert_int_eq(create(CLOUD NS "/vpcattachments",
				"{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-a6'},"
				"'spec':{'vpc':{'name':'v1'},'interface':{'addresses':['fd00::1/128','10.0.0.1/32']}}}", &o), 201);
	/* Defaults: interface name eth0, mode Netns; no status is seeded. */
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(o, "spec"), "interface"),
							   "name")), "eth0");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(o, "spec"), "interface"),
							   "mode")), "Netns");
	ck_assert_ptr_null(json_object_get(o, "status"));
	json_decref(o);
}
END_TEST

/* Upstream declares no status.egress: a server-side apply naming it is refused
 * outright, and the apiserver answers 500 (not 422) for it. */
START_TEST(test_va_no_status_egress)
{
	json_t *st = NULL;
	long code;

	vpcatt("va-egr");
	code = ssa(CLOUD NS "/vpcattachments/va-egr/status", "binder", true,
		   "{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'va-egr'},"
		   "'status':{'egress':{'internet':{'sourceAddresses':[{'family':'IPv6','address':'2001:db8::1',"
		   "'stability':'None'}]}}}}", &st);
	ck_assert_msg(code == 500 && says(st, ".status.egress: field not declared in schema"),
		      "status.egress: got %ld", code);
	json_decref(st);
}
END_TEST

/* ---- NetworkInterface ---- */

static long ni(const char *name, const char *spec_extra, json_t **out)
{
	char body[1024];

	snprintf(body, sizeof(body),
		 "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterface','metadata':{'name':'%s'},"
		 "'spec':{'network':{'name':'net1'}%s%s}}", name, *spec_extra ? "," : "", spec_extra);
	return create(NING NS "/networkinterfaces", body, out);
}

START_TEST(test_ni_addresses_cel)
{
	json_t *st = NULL;

	REFUSED(ni("ni-a1", "'addresses':[{'family':'IPv6','address':'fd00::1/128','primary':true},"
			    "{'family':'IPv4','address':'10.0.0.1/32','primary':true}]", &st),
		st, "Exactly one address must be primary");
	REFUSED(ni("ni-a2", "'addresses':[{'family':'IPv6','address':'fd00::1/128'}]", &st),
		st, "Exactly one address must be primary");
	REFUSED(ni("ni-a3", "'addresses':[{'family':'IPv6','address':'fd00::1/128','primary':true},"
			    "{'family':'IPv6','address':'fd00::2/128'}]", &st),
		st, "Only one address may be held per address family");
	REFUSED(ni("ni-a4", "'addresses':[{'family':'IPv6','address':'','primary':true}]", &st),
		st, "spec.addresses[0].address");
	ck_assert_int_eq(ni("ni-a5", "'addresses':[{'family':'IPv6','address':'2001:db8:a001::/96',"
				     "'gateway':'fd20:60:ff03::1','primary':true},{'family':'IPv4','address':'10.0.0.1/32'}]",
			    NULL), 201);
}
END_TEST

START_TEST(test_ni_mtu_range)
{
	json_t *st = NULL;

	REFUSED(ni("ni-m1", "'mtu':1299", &st), st, "spec.mtu");
	REFUSED(ni("ni-m2", "'mtu':8857", &st), st, "spec.mtu");
	ck_assert_int_eq(ni("ni-m3", "'mtu':1300", NULL), 201);
	ck_assert_int_eq(ni("ni-m4", "'mtu':8856", NULL), 201);
}
END_TEST

START_TEST(test_ni_interface_name_and_defaults)
{
	json_t *st = NULL, *o = NULL, *spec;

	REFUSED(ni("ni-n1", "'interfaceName':''", &st), st, "spec.interfaceName");
	REFUSED(ni("ni-n2", "'interfaceName':'abcdefghijklmnop'", &st), st, "spec.interfaceName");
	REFUSED(ni("ni-n3", "'attachmentMode':'Bogus'", &st), st, "spec.attachmentMode");
	REFUSED(create(NING NS "/networkinterfaces",
		       "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterface','metadata':{'name':'ni-n4'},"
		       "'spec':{}}", &st), st, "spec.network");
	ck_assert_int_eq(ni("ni-n5", "'interfaceName':'abcdefghijklmno'", NULL), 201);
	ck_assert_int_eq(ni("ni-n6", "", &o), 201);
	spec = json_object_get(o, "spec");
	ck_assert_str_eq(json_string_value(json_object_get(spec, "interfaceName")), "eth0");
	ck_assert_str_eq(json_string_value(json_object_get(spec, "attachmentMode")), "Netns");
	ck_assert_str_eq(json_string_value(json_object_get(spec, "reclaimPolicy")), "Delete");
	json_decref(o);
	REFUSED(merge(NING NS "/networkinterfaces/ni-n6", "{'spec':{'network':{'name':'net2'}}}", &st),
		st, "network is immutable");
	/* status.attachmentRef needs all three fields. */
	REFUSED(merge(NING NS "/networkinterfaces/ni-n6/status",
		      "{'status':{'attachmentRef':{'apiGroup':'cloud.datumapis.com','name':'ni-n6'}}}", &st),
		st, "status.attachmentRef.kind");
}
END_TEST

/* ---- NetworkInterfaceClaim ---- */

START_TEST(test_nic_spec_immutable)
{
	static const struct {
		const char *patch, *says;
	} edits[] = {
		{ "{'spec':{'network':{'name':'net2'}}}", "network is immutable" },
		{ "{'spec':{'interfaceName':'eth1'}}", "interfaceName is immutable" },
		{ "{'spec':{'ipFamilies':['IPv6','IPv4']}}", "ipFamilies is immutable" },
		{ "{'spec':{'attachmentMode':'Hypervisor'}}", "attachmentMode is immutable" },
		{ "{'spec':{'reclaimPolicy':'Retain'}}", "reclaimPolicy is immutable" },
		{ "{'spec':{'networkInterfaceName':'other'}}", "networkInterfaceName is immutable" },
		{ "{'spec':{'addresses':[{'class':'public-ipv4'}]}}", "addresses is immutable" },
	};
	json_t *st = NULL, *o = NULL, *spec;

	ck_assert_int_eq(create(NING NS "/networkinterfaceclaims",
				"{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterfaceClaim',"
				"'metadata':{'name':'nic-i'},'spec':{'network':{'name':'net1'}}}", &o), 201);
	spec = json_object_get(o, "spec");
	ck_assert_str_eq(json_string_value(json_array_get(json_object_get(spec, "ipFamilies"), 0)), "IPv6");
	ck_assert_int_eq(json_array_size(json_object_get(spec, "ipFamilies")), 1);
	ck_assert_str_eq(json_string_value(json_object_get(spec, "interfaceName")), "eth0");
	ck_assert_str_eq(json_string_value(json_object_get(spec, "attachmentMode")), "Netns");
	json_decref(o);
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++)
		REFUSED(merge(NING NS "/networkinterfaceclaims/nic-i", edits[i].patch, &st), st, edits[i].says);
	/* Creation rules: families unique, address classes unique. */
	REFUSED(create(NING NS "/networkinterfaceclaims",
		       "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterfaceClaim',"
		       "'metadata':{'name':'nic-j'},'spec':{'network':{'name':'net1'},'ipFamilies':['IPv6','IPv6']}}", &st),
		st, "Each address family may be requested at most once");
	/* status.addresses are objects (like the interface's), not strings. */
	REFUSED(merge(NING NS "/networkinterfaceclaims/nic-i/status", "{'status':{'addresses':['fd00::1/128']}}", &st),
		st, "status.addresses[0]");
	ck_assert_int_eq(merge(NING NS "/networkinterfaceclaims/nic-i/status",
			       "{'status':{'addresses':[{'family':'IPv6','address':'fd00::1/128','primary':true}],"
			       "'networkInterfaceRef':{'name':'nic-i'}}}", NULL), 200);
}
END_TEST

/* ---- conditions: the item schema of every upstream kind ---- */

START_TEST(test_conditions_item_schema)
{
	static const char *coll[] = {
		NING NS "/networkinterfaces", NING NS "/networkinterfaceclaims", NING NS "/networkcontexts",
		CLOUD NS "/vpcattachments", NET NS "/egressshardclaims", NET NS "/egressshards",
	};
	static const char *objs[] = {
		"{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterface','metadata':{'name':'c'},"
		"'spec':{'network':{'name':'n'}}}",
		"{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterfaceClaim','metadata':{'name':'c'},"
		"'spec':{'network':{'name':'n'}}}",
		"{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkContext','metadata':{'name':'c'},"
		"'spec':{'network':{'name':'n'},'location':{'name':'l'}}}",
		"{'apiVersion':'cloud.datumapis.com/v1alpha1','kind':'VPCAttachment','metadata':{'name':'c'},"
		"'spec':{'vpc':{'name':'v'},'interface':{}}}",
		"{'apiVersion':'network.datumapis.com/v1alpha1','kind':'EgressShardClaim','metadata':{'name':'c'},"
		"'spec':{'attachment':{'name':'c'},'vpc':{'name':'v'},'nodeName':'node-a','families':['IPv6']}}",
		"{'apiVersion':'network.datumapis.com/v1alpha1','kind':'EgressShard','metadata':{'name':'c'},"
		"'spec':{'targetRef':{'kind':'Node','name':'node-a'}}}",
	};
	static const struct {
		const char *cond, *says;
	} bad[] = {
		{ "{'type':'Programmed','status':'True','message':'m'," T0 "}", ".reason" },
		{ "{'type':'Programmed','status':'True','reason':'R'," T0 "}", ".message" },
		{ "{'type':'Programmed','status':'True','reason':'R','message':'m'}", ".lastTransitionTime" },
		{ "{'type':'Programmed','status':'True','reason':'Not ready','message':'m'," T0 "}", ".reason" },
		{ "{'type':'Programmed','status':'True','reason':'9Lives','message':'m'," T0 "}", ".reason" },
		{ "{'type':'Programmed','status':'True','reason':'','message':'m'," T0 "}", ".reason" },
		{ "{'type':'Programmed','status':'Maybe','reason':'R','message':'m'," T0 "}", ".status" },
		{ "{'type':'bad type!','status':'True','reason':'R','message':'m'," T0 "}", ".type" },
	};

	for (size_t k = 0; k < sizeof(coll) / sizeof(coll[0]); k++) {
		char path[256], body[512];
		json_t *st = NULL;

		ck_assert_int_eq(create(coll[k], objs[k], NULL), 201);
		snprintf(path, sizeof(path), "%s/c/status", coll[k]);
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			snprintf(body, sizeof(body), "{'status':{'conditions':[%s]}}", bad[i].cond);
			REFUSED(merge(path, body, &st), st, bad[i].says);
		}
		/* An empty message is present, and allowed. */
		ck_assert_msg(merge(path, "{'status':{'conditions':[{'type':'Programmed','status':'True',"
					  "'reason':'Up_To:date','message':''," T0 "}]}}", NULL) == 200, "%s", coll[k]);
	}
}
END_TEST

/* Interface, claim and context get their Unknown/Pending conditions from the schema. */
START_TEST(test_seeded_conditions_on_create)
{
	static const struct {
		const char *coll, *body, *types[5];
	} kinds[] = {
		{ NING NS "/networkinterfaces",
		  "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterface','metadata':{'name':'seed'},"
		  "'spec':{'network':{'name':'n'}}}", { "Allocated", "Prepared", "Programmed" } },
		{ NING NS "/networkinterfaceclaims",
		  "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkInterfaceClaim','metadata':{'name':'seed'},"
		  "'spec':{'network':{'name':'n'}}}", { "Bound", "Allocated", "Prepared", "Programmed", "Ready" } },
		{ NING NS "/networkcontexts",
		  "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkContext','metadata':{'name':'seed'},"
		  "'spec':{'network':{'name':'n'},'location':{'name':'l'}}}", { "Ready" } },
	};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char path[256];
		json_t *o, *conds;
		size_t n = 0;

		ck_assert_int_eq(create(kinds[k].coll, kinds[k].body, NULL), 201);
		snprintf(path, sizeof(path), "%s/seed", kinds[k].coll);
		o = get(path);
		conds = json_object_get(json_object_get(o, "status"), "conditions");
		while (n < 5 && kinds[k].types[n])
			n++;
		ck_assert_msg(json_array_size(conds) == n, "%s: %zu seeded conditions, want %zu",
			      kinds[k].coll, json_array_size(conds), n);
		for (size_t i = 0; i < n; i++) {
			json_t *c = json_array_get(conds, i);

			ck_assert_str_eq(json_string_value(json_object_get(c, "type")), kinds[k].types[i]);
			ck_assert_str_eq(json_string_value(json_object_get(c, "status")), "Unknown");
			ck_assert_str_eq(json_string_value(json_object_get(c, "reason")), "Pending");
			ck_assert_str_eq(json_string_value(json_object_get(c, "message")), "Waiting for controller");
			ck_assert_str_eq(json_string_value(json_object_get(c, "lastTransitionTime")), "1970-01-01T00:00:00Z");
		}
		json_decref(o);
	}
}
END_TEST

/* ---- NetworkContext egress ---- */

static long nc(const char *name, const char *internet, json_t **out)
{
	char body[1024];

	snprintf(body, sizeof(body),
		 "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'NetworkContext','metadata':{'name':'%s'},"
		 "'spec':{'network':{'name':'n'},'location':{'name':'l'},'egress':{'internet':%s}}}", name, internet);
	return create(NING NS "/networkcontexts", body, out);
}

START_TEST(test_nc_egress_reach)
{
	json_t *st = NULL, *o = NULL;

	REFUSED(nc("nc-1", "{'mode':'Enabled','reach':['IPv4']}", &st), st, "Only IPv6 is accepted");
	REFUSED(nc("nc-2", "{'mode':'Enabled','reach':['IPv6','IPv6']}", &st), st,
		"Each address family may be listed at most once");
	REFUSED(nc("nc-3", "{'mode':'Enabled','reach':[]}", &st), st, "spec.egress.internet.reach");
	REFUSED(nc("nc-4", "{'mode':'Enabled','reach':['IPv6','IPv6','IPv6']}", &st), st, "spec.egress.internet.reach");
	REFUSED(nc("nc-5", "{'mode':'Maybe','reach':['IPv6']}", &st), st, "spec.egress.internet.mode");
	REFUSED(nc("nc-6", "{'mode':'Enabled','parametersRef':{'kind':'K','name':'p'}}", &st), st,
		"spec.egress.internet.parametersRef.group");
	ck_assert_int_eq(nc("nc-7", "{'mode':'Enabled','reach':['IPv6'],'className':'default','sharing':'Shared'}", NULL),
			 201);
	/* No default mode: absent stays absent (never projected is not Disabled). */
	ck_assert_int_eq(nc("nc-8", "{}", &o), 201);
	ck_assert_ptr_null(json_object_get(json_object_get(json_object_get(json_object_get(o, "spec"), "egress"),
							   "internet"), "mode"));
	json_decref(o);
}
END_TEST

/* ---- EgressShardClaim ---- */

START_TEST(test_esc_spec_immutable_families_set)
{
	json_t *st = NULL;

#define ESC(name, spec) \
	"{'apiVersion':'network.datumapis.com/v1alpha1','kind':'EgressShardClaim','metadata':{'name':'" name "'}," \
	"'spec':" spec "}"
	ck_assert_int_eq(create(NET NS "/egressshardclaims",
				ESC("esc-1", "{'attachment':{'name':'a1'},'vpc':{'name':'v1'},'nodeName':'node-a',"
					     "'families':['IPv6','IPv4']}"), NULL), 201);
	REFUSED(merge(NET NS "/egressshardclaims/esc-1", "{'spec':{'nodeName':'node-b'}}", &st), st, "spec is immutable");
	REFUSED(merge(NET NS "/egressshardclaims/esc-1", "{'spec':{'families':['IPv6']}}", &st), st, "spec is immutable");
	REFUSED(create(NET NS "/egressshardclaims",
		       ESC("esc-2", "{'attachment':{'name':'a1'},'vpc':{'name':'v1'},'nodeName':'node-a',"
				    "'families':['IPv6','IPv6']}"), &st), st, "spec.families[1]");
	REFUSED(create(NET NS "/egressshardclaims",
		       ESC("esc-3", "{'attachment':{'name':'a1'},'vpc':{'name':'v1'},'nodeName':'node-a',"
				    "'families':['IPX']}"), &st), st, "spec.families[0]");
	REFUSED(create(NET NS "/egressshardclaims",
		       ESC("esc-4", "{'attachment':{'name':'a1'},'vpc':{'name':'v1'},'nodeName':'node-a',"
				    "'families':[]}"), &st), st, "spec.families");
	REFUSED(create(NET NS "/egressshardclaims",
		       ESC("esc-5", "{'attachment':{'name':'a1'},'vpc':{'name':'v1'},'families':['IPv6']}"), &st),
		st, "spec.nodeName");
	/* shardRef needs both namespace and name. */
	REFUSED(merge(NET NS "/egressshardclaims/esc-1/status", "{'status':{'shardRef':{'name':'s'}}}", &st),
		st, "status.shardRef.namespace");
	ck_assert_int_eq(merge(NET NS "/egressshardclaims/esc-1/status",
			       "{'status':{'shardRef':{'namespace':'galactic-system','name':'s'},'observedGeneration':1}}",
			       NULL), 200);
#undef ESC
}
END_TEST

/* ---- EgressShard ---- */

START_TEST(test_es_write_once_and_family)
{
	json_t *st = NULL, *o;
#define p NET NS "/egressshards/es-1"

#define ES(name, spec) \
	"{'apiVersion':'network.datumapis.com/v1alpha1','kind':'EgressShard','metadata':{'name':'" name "'}," \
	"'spec':" spec "}"
	REFUSED(create(NET NS "/egressshards", ES("es-0", "{'targetRef':{'name':'node-a'}}"), &st),
		st, "spec.targetRef.kind");
	ck_assert_int_eq(create(NET NS "/egressshards", ES("es-1", "{'targetRef':{'kind':'Node','name':'node-a'}}"), NULL),
			 201);
	REFUSED(merge(p, "{'spec':{'shardSID':'10.0.0.1'}}", &st), st, "shardSID must be a valid IPv6 address");
	/* Empty means unassigned; the first value sticks. */
	ck_assert_int_eq(merge(p, "{'spec':{'shardSID':''}}", NULL), 200);
	ck_assert_int_eq(merge(p, "{'spec':{'shardSID':'fc00:0:1:1::'}}", NULL), 200);
	REFUSED(merge(p, "{'spec':{'shardSID':'fc00:0:1:2::'}}", &st), st, "shardSID is immutable once assigned");
	REFUSED(merge(p, "{'spec':{'shardSID':null}}", &st), st, "shardSID cannot be unassigned once assigned");
	REFUSED(merge(p, "{'spec':{'shardAddressIPv4':'fd00::1','nat64Prefix':'64:ff9b:1::/96'}}", &st),
		st, "shardAddressIPv4 must be a valid IPv4 address");
	REFUSED(merge(p, "{'spec':{'shardAddressIPv4':'198.51.100.7'}}", &st),
		st, "shardAddressIPv4 and nat64Prefix must be set together");
	REFUSED(merge(p, "{'spec':{'translateWellKnownPrefix':true}}", &st),
		st, "translateWellKnownPrefix requires nat64Prefix");
	ck_assert_int_eq(merge(p, "{'spec':{'shardAddressIPv4':'198.51.100.7','nat64Prefix':'64:ff9b:1::/96',"
				  "'shardAddressIPv6':'2001:db8:f00d::100','translateWellKnownPrefix':true,"
				  "'shardAddressIPv6ClaimRef':{'project':'p','namespace':'egress','name':'c6'}}}", NULL), 200);
	REFUSED(merge(p, "{'spec':{'shardAddressIPv6':'2001:db8:f00d::101'}}", &st),
		st, "shardAddressIPv6 is immutable once assigned");
	REFUSED(merge(p, "{'spec':{'nat64Prefix':'64:ff9b:2::/96'}}", &st), st, "nat64Prefix is immutable once assigned");
	REFUSED(merge(p, "{'spec':{'shardAddressIPv6ClaimRef':{'name':'c7'}}}", &st),
		st, "shardAddressIPv6ClaimRef is immutable once assigned");
	REFUSED(merge(p, "{'spec':{'shardAddressIPv6ClaimRef':null}}", &st),
		st, "shardAddressIPv6ClaimRef cannot be unassigned once assigned");
	/* Mutable upstream: drain, the well-known prefix switch, and targetRef. */
	ck_assert_int_eq(merge(p, "{'spec':{'drain':true,'translateWellKnownPrefix':false,"
				  "'targetRef':{'kind':'Node','name':'node-b'}}}", NULL), 200);
	o = get(p);
	ck_assert_str_eq(kstr(o, "spec", "shardSID"), "fc00:0:1:1::");
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(o, "spec"),
									    "shardAddressIPv6ClaimRef"), "apiGroup")),
			 "ipam.miloapis.com");
	json_decref(o);
	/* Status is flat and family-checked too. */
	REFUSED(merge(p "/status", "{'status':{'shardAddressIPv6':'198.51.100.7'}}", &st),
		st, "shardAddressIPv6 must be a valid IPv6 address");
	ck_assert_int_eq(merge(p "/status", "{'status':{'shardSID':'fc00:0:1:1::','shardAddressIPv6':'2001:db8:f00d::100',"
					    "'translatesWellKnownPrefix':true,'observedGeneration':3}}", NULL), 200);
#undef p
#undef ES
}
END_TEST

/* ---- condition list shape: atomic (upstream today) vs maplist ---- */

/* The condition types present in o's status, and the manager owning each entry. */
static bool has_cond(json_t *o, const char *type)
{
	return kcond(o, type) != NULL;
}

/* managedFields of manager mgr name a condition entry of type (map list), or the
 * whole list (atomic: f:conditions with no per-entry keys). */
static bool mgr_owns(json_t *o, const char *mgr, const char *what)
{
	json_t *mf = json_object_get(json_object_get(o, "metadata"), "managedFields"), *e;
	size_t i;

	json_array_foreach(mf, i, e) {
		char *dump;
		bool yes;

		const char *m = json_string_value(json_object_get(e, "manager"));

		if (!m || strcmp(m, mgr))
			continue;
		dump = json_dumps(json_object_get(e, "fieldsV1"), JSON_COMPACT);
		yes = dump && strstr(dump, what);
		free(dump);
		if (yes)
			return true;
	}
	return false;
}

/*
 * Manager "nso" applies its Allocated entry, then "galactic-translator" its
 * Programmed entry (first without force, then forced, as an owner of that
 * condition would). Returns true for the map-list behaviour: no conflict with
 * nso, both entries kept, each owned by its manager. Returns false for the
 * atomic behaviour, checked in full: the unforced apply conflicts with nso
 * (409), the forced one takes the whole list and Allocated is gone.
 */
static bool second_manager_keeps_first(const char *coll, const char *kind, const char *name)
{
	char path[256], body[1024];
	json_t *o = NULL;
	long code;
	bool nso_conflict, kept;

	snprintf(body, sizeof(body), "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'%s','metadata':{'name':'%s'},"
				     "'spec':{'network':{'name':'n'}}}", kind, name);
	ck_assert_int_eq(create(coll, body, NULL), 201);
	snprintf(path, sizeof(path), "%s/%s/status", coll, name);
	snprintf(body, sizeof(body), "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'%s','metadata':{'name':'%s'},"
				     "'status':{'conditions':[{'type':'Allocated','status':'True','reason':'Allocated',"
				     "'message':'addresses held'," T0 "}]}}", kind, name);
	/* Forced: the schema's seeded entries belong to the creator. */
	ck_assert_int_eq(ssa(path, "nso", true, body, NULL), 200);
	snprintf(body, sizeof(body), "{'apiVersion':'networking.datumapis.com/v1alpha','kind':'%s','metadata':{'name':'%s'},"
				     "'status':{'conditions':[{'type':'Programmed','status':'True','reason':'Programmed',"
				     "'message':'node reports the attachment programmed'," T0 "}]}}", kind, name);
	code = ssa(path, "galactic-translator", false, body, &o);
	nso_conflict = code == 409 && says(o, "\"nso\"");
	json_decref(o);
	o = NULL;
	ck_assert_int_eq(ssa(path, "galactic-translator", true, body, &o), 200);
	kept = has_cond(o, "Allocated");
	ck_assert_msg(has_cond(o, "Programmed"), "%s: the applied entry is missing", kind);
	if (kept) {
		ck_assert_msg(!nso_conflict, "%s: map list, yet the entry conflicted with nso's", kind);
		ck_assert(mgr_owns(o, "nso", "{\\\"type\\\":\\\"Allocated\\\"}"));
		ck_assert(mgr_owns(o, "galactic-translator", "{\\\"type\\\":\\\"Programmed\\\"}"));
		ck_assert(!mgr_owns(o, "galactic-translator", "{\\\"type\\\":\\\"Allocated\\\"}"));
	} else {
		ck_assert_msg(nso_conflict, "%s: atomic list, yet no conflict with nso (code %ld)", kind, code);
		ck_assert(mgr_owns(o, "galactic-translator", "\"f:conditions\":{}"));
		ck_assert(!mgr_owns(o, "nso", "f:conditions"));
	}
	json_decref(o);
	return kept;
}

START_TEST(test_condition_list_shape_decides_ssa)
{
	static const struct {
		const char *coll, *kind;
	} k[] = {
		{ NING NS "/networkinterfaces", "NetworkInterface" },
		{ NING NS "/networkinterfaceclaims", "NetworkInterfaceClaim" },
	};
	char name[32];

	/* Atomic (installed by setup): the translator's entry takes the whole list. */
	for (size_t i = 0; i < 2; i++)
		ck_assert_msg(!second_manager_keeps_first(k[i].coll, k[i].kind, "ssa-atomic"),
			      "%s: atomic list let two managers own entries", k[i].kind);
	/* Maplist variant: each manager owns its own entry. The handler picks up
	 * the new schema a moment after the CRD update: fresh object per try. */
	ck_assert_int_eq(crds_install(&cp, "maplist"), 0);
	for (size_t i = 0; i < 2; i++) {
		bool kept = false;

		for (int t = 0; t < 50 && !kept; t++) {
			snprintf(name, sizeof(name), "ssa-map-%d", t);
			kept = second_manager_keeps_first(k[i].coll, k[i].kind, name);
			if (!kept)
				usleep(200 * 1000);
		}
		ck_assert_msg(kept, "%s: maplist variant still behaves atomic after 10 s", k[i].kind);
	}
	/* Back to the atomic shape (the server accepts the change both ways). */
	ck_assert_int_eq(crds_install(&cp, "atomic"), 0);
}
END_TEST

/* ---- our own kinds ---- */

START_TEST(test_nodedataplane_block_and_node_id)
{
	json_t *st = NULL;

#define NDP(name, spec) \
	"{'apiVersion':'network.datumapis.com/v1alpha1','kind':'NodeDataplane','metadata':{'name':'" name "'},'spec':" spec "}"
	ck_assert_int_eq(create(NET "/nodedataplanes", NDP("node-a", "{'sidBlock':'fc00:0:1::/48'}"), NULL), 201);
	ck_assert_int_eq(create(NET "/nodedataplanes", NDP("node-b", "{'sidBlock':'fc00:0:1::/64'}"), &st), 422);
	json_decref(st);
	st = NULL;
	/* Node IDs stop at 0xDFFF: the rest of the 16-bit space is reserved. */
	ck_assert_int_eq(create(NET "/nodedataplanes", NDP("node-c", "{'sidBlock':'fc00:0:1::/48','nodeID':57344}"), &st),
			 422);
	json_decref(st);
#undef NDP
}
END_TEST

START_TEST(test_nodeattachment_ids_and_node_immutable)
{
	json_t *st = NULL;

#define NA(name, spec) \
	"{'apiVersion':'network.datumapis.com/v1alpha1','kind':'NodeAttachment','metadata':{'name':'" name "'},'spec':" spec "}"
	ck_assert_int_eq(create(NET NS "/nodeattachments",
				NA("node-a-1f-2e", "{'node':'node-a','vpc':'5gHk2','vpcAttachment':'9ZzA','hostInterface':'gv1f2e'}"),
				NULL), 201);
	/* ids are base62: anything else is refused. */
	ck_assert_int_eq(create(NET NS "/nodeattachments",
				NA("bad", "{'node':'node-a','vpc':'not-base62!','vpcAttachment':'9ZzA'}"), &st), 422);
	json_decref(st);
	st = NULL;
	REFUSED(merge(NET NS "/nodeattachments/node-a-1f-2e", "{'spec':{'node':'node-b'}}", &st), st, "node is immutable");
	/* Interface names longer than IFNAMSIZ-1 cannot exist in the kernel. */
	ck_assert_int_eq(merge(NET NS "/nodeattachments/node-a-1f-2e", "{'spec':{'hostInterface':'a-very-long-ifname'}}",
			       &st), 422);
	json_decref(st);
#undef NA
}
END_TEST

int main(void)
{
	Suite *s = suite_create("crds");
	TCase *tc = tcase_create("validation");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_every_kind_served);
	tcase_add_test(tc, test_crds_dir_ships_only_our_kinds);
	tcase_add_test(tc, test_maplist_variant_differs_only_in_list_type);
	tcase_add_test(tc, test_va_container_id_exactly_46);
	tcase_add_test(tc, test_va_ids_1_to_16);
	tcase_add_test(tc, test_va_pod_subnet_cel);
	tcase_add_test(tc, test_va_interface_addresses_cidr);
	tcase_add_test(tc, test_va_no_status_egress);
	tcase_add_test(tc, test_ni_addresses_cel);
	tcase_add_test(tc, test_ni_mtu_range);
	tcase_add_test(tc, test_ni_interface_name_and_defaults);
	tcase_add_test(tc, test_nic_spec_immutable);
	tcase_add_test(tc, test_conditions_item_schema);
	tcase_add_test(tc, test_seeded_conditions_on_create);
	tcase_add_test(tc, test_nc_egress_reach);
	tcase_add_test(tc, test_esc_spec_immutable_families_set);
	tcase_add_test(tc, test_es_write_once_and_family);
	tcase_add_test(tc, test_nodedataplane_block_and_node_id);
	tcase_add_test(tc, test_nodeattachment_ids_and_node_immutable);
	/* Last: it switches the interface and claim CRDs to the maplist variant and back. */
	tcase_add_test(tc, test_condition_list_shape_decides_ssa);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
