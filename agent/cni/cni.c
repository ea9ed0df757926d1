#include "agent/cni/cni.h"

#include <stdio.h>
#include <string.h>

static const char *const vers[CNI_V_COUNT] = {
	"0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
};

void cni_err_set(struct cni_err *e, int code, const char *msg, const char *details_fmt, ...)
{
	va_list ap;

	e->code = code;
	snprintf(e->msg, sizeof(e->msg), "%s", msg);
	va_start(ap, details_fmt);
	vsnprintf(e->details, sizeof(e->details), details_fmt, ap);
	va_end(ap);
}

const char *cni_ver_str(enum cni_ver v)
{
	return v >= 0 && v < CNI_V_COUNT ? vers[v] : "unknown";
}

enum cni_ver cni_ver_parse(const char *s)
{
	for (int i = 0; i < CNI_V_COUNT; i++)
		if (!strcmp(s, vers[i]))
			return (enum cni_ver)i;
	return CNI_V_UNKNOWN;
}

const char *cni_ver_list(void)
{
	return "0.3.0, 0.3.1, 0.4.0, 1.0.0, 1.1.0";
}

static const char *const cmds[] = {
	[CNI_CMD_UNKNOWN] = "UNKNOWN", [CNI_CMD_ADD] = "ADD", [CNI_CMD_DEL] = "DEL",
	[CNI_CMD_CHECK] = "CHECK", [CNI_CMD_GC] = "GC", [CNI_CMD_STATUS] = "STATUS",
	[CNI_CMD_VERSION] = "VERSION",
};

enum cni_cmd cni_cmd_parse(const char *s)
{
	for (int i = CNI_CMD_ADD; i <= CNI_CMD_VERSION; i++)
		if (!strcmp(s, cmds[i]))
			return (enum cni_cmd)i;
	return CNI_CMD_UNKNOWN;
}

const char *cni_cmd_str(enum cni_cmd c)
{
	return c >= CNI_CMD_UNKNOWN && c <= CNI_CMD_VERSION ? cmds[c] : "UNKNOWN";
}

int cni_ver_has_cmd(enum cni_ver v, enum cni_cmd c)
{
	switch (c) {
	case CNI_CMD_ADD:
	case CNI_CMD_DEL:
	case CNI_CMD_VERSION:
		return v != CNI_V_UNKNOWN;
	case CNI_CMD_CHECK:
		return v >= CNI_V_0_4_0;
	case CNI_CMD_GC:
	case CNI_CMD_STATUS:
		return v >= CNI_V_1_1_0;
	default:
		return 0;
	}
}
