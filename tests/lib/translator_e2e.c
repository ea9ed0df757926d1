/* Translator e2e start-up and tear-down (translator_e2e.h). */
#include "tests/lib/translator_e2e.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/lib/crds.h"
#include "tests/lib/gtest.h"

void te_up(struct cp *cp, const char *variant, bool measure, const char *const *namespaces)
{
	char cmd[2048] = "";
	size_t off = 0;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	ck_assert_msg(cp_up(cp) == 0, "control plane did not start");
	ck_assert_msg(crds_install(cp, variant) == 0, "CRDs (%s) not installed", variant);
	if (measure)
		printf("MEASURE: CRD variant %s\n", variant);
	for (size_t i = 0; namespaces && namespaces[i]; i++)
		off += (size_t)snprintf(cmd + off, off < sizeof(cmd) ? sizeof(cmd) - off : 0,
					"%s%s/kubectl --kubeconfig %s create namespace %s >/dev/null", i ? " && " : "",
					cp->bin, cp->kubeconfig, namespaces[i]);
	ck_assert_msg(off < sizeof(cmd), "namespaces: command too long");
	ck_assert_msg(!off || system(cmd) == 0, "namespaces not ready");
}

void te_kill(pid_t *pid)
{
	if (*pid > 0) {
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	*pid = 0;
}

void te_down(struct cp *cp, const char *logs)
{
	if (getenv("GT_KEEP_LOGS")) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "cat %s/%s >&2", cp->dir, logs);
		if (system(cmd))
			fprintf(stderr, "no translator logs\n");
	}
	cp_down(cp);
	curl_global_cleanup();
}
