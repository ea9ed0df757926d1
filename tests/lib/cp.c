#include "tests/lib/cp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef CP_SCRIPT
#define CP_SCRIPT "tests/controlplane/cp.sh"
#endif

static void set(char *dst, size_t n, const char *v)
{
	snprintf(dst, n, "%s", v);
}

int cp_up(struct cp *cp)
{
	return cp_up_with(cp, "");
}

int cp_up_with(struct cp *cp, const char *flags)
{
	char tmpl[] = "/tmp/galactic-cp-XXXXXX", cmd[512], line[512];
	FILE *f;

	memset(cp, 0, sizeof(*cp));
	if (!mkdtemp(tmpl)) {
		perror("cp_up: mkdtemp");
		return -1;
	}
	set(cp->dir, sizeof(cp->dir), tmpl);
	snprintf(cmd, sizeof(cmd), "%s up %s --owner %d %s >%s/up.log 2>&1",
		 CP_SCRIPT, cp->dir, (int)getpid(), flags ? flags : "", cp->dir);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "cat %s/up.log >&2", cp->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cp_up: no log\n");
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "%s/env", cp->dir);
	f = fopen(cmd, "r");
	if (!f) {
		perror("cp_up: env");
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq++ = 0;
		eq[strcspn(eq, "\n")] = 0;
		if (!strcmp(line, "APISERVER"))
			set(cp->apiserver, sizeof(cp->apiserver), eq);
		else if (!strcmp(line, "ETCD_ENDPOINT"))
			set(cp->etcd, sizeof(cp->etcd), eq);
		else if (!strcmp(line, "KUBECONFIG"))
			set(cp->kubeconfig, sizeof(cp->kubeconfig), eq);
		else if (!strcmp(line, "CP_CA"))
			set(cp->ca, sizeof(cp->ca), eq);
		else if (!strcmp(line, "CP_TOKEN"))
			set(cp->token, sizeof(cp->token), eq);
		else if (!strcmp(line, "CP_BIN"))
			set(cp->bin, sizeof(cp->bin), eq);
	}
	fclose(f);
	return cp->apiserver[0] && cp->token[0] ? 0 : -1;
}

int cp_ctl(const struct cp *cp, const char *verb_and_args)
{
	char cmd[1024];
	const char *sp = strchr(verb_and_args, ' ');
	int vlen = sp ? (int)(sp - verb_and_args) : (int)strlen(verb_and_args);

	snprintf(cmd, sizeof(cmd), "%s %.*s %s%s", CP_SCRIPT, vlen, verb_and_args,
		 cp->dir, sp ? sp : "");
	return system(cmd) == 0 ? 0 : -1;
}

void cp_down(struct cp *cp)
{
	if (cp->dir[0])
		cp_ctl(cp, "down");
	cp->dir[0] = 0;
}
