/*
 * CNI spec vocabulary shared by the plugin, the agent-side server and tests:
 * versions, commands, error codes and the error value every parser returns.
 * Spec: https://www.cni.dev/docs/spec/ (1.0.0 and 1.1.0; 0.3.x/0.4.0 results
 * are produced for runtimes that still ask for them).
 */
#ifndef GALACTIC_CNI_CNI_H
#define GALACTIC_CNI_CNI_H

#include <stdarg.h>

enum cni_ver {
	CNI_V_UNKNOWN = -1,
	CNI_V_0_3_0,
	CNI_V_0_3_1,
	CNI_V_0_4_0,
	CNI_V_1_0_0,
	CNI_V_1_1_0,
	CNI_V_COUNT,
};
#define CNI_V_LATEST CNI_V_1_1_0

enum cni_cmd {
	CNI_CMD_UNKNOWN = 0,
	CNI_CMD_ADD,
	CNI_CMD_DEL,
	CNI_CMD_CHECK,
	CNI_CMD_GC,
	CNI_CMD_STATUS,
	CNI_CMD_VERSION,
};

/* Error codes from the spec; >= 100 are this plugin's own. */
enum {
	CNI_ERR_INCOMPATIBLE_VERSION = 1,
	CNI_ERR_UNSUPPORTED_FIELD = 2,
	CNI_ERR_UNKNOWN_CONTAINER = 3,
	CNI_ERR_INVALID_ENV = 4,
	CNI_ERR_IO = 5,
	CNI_ERR_DECODE = 6,
	CNI_ERR_INVALID_CONFIG = 7,
	CNI_ERR_TRY_AGAIN_LATER = 11,
	CNI_ERR_PLUGIN_NOT_AVAILABLE = 50,
	CNI_ERR_LIMITED_CONNECTIVITY = 51,
	/* The agent answered something this plugin cannot understand. */
	CNI_ERR_AGENT_PROTOCOL = 100,
	/* The agent failed to program the kernel; details say what and where. */
	CNI_ERR_PROGRAMMING = 101,
	/* The VPC attachment or interface is held by another container. */
	CNI_ERR_CONFLICT = 102,
	/* CHECK found the kernel state differs from the attachment. */
	CNI_ERR_CHECK_FAILED = 103,
};

struct cni_err {
	int code;          /* 0: no error */
	char msg[256];     /* short, what failed */
	char details[768]; /* which object, which value, why */
};

__attribute__((format(printf, 4, 5)))
void cni_err_set(struct cni_err *e, int code, const char *msg, const char *details_fmt, ...);

const char *cni_ver_str(enum cni_ver v);
enum cni_ver cni_ver_parse(const char *s);
/* "0.3.0", ... as a comma separated list for messages. */
const char *cni_ver_list(void);

enum cni_cmd cni_cmd_parse(const char *s);
const char *cni_cmd_str(enum cni_cmd c);
/* Whether version v defines command c (CHECK >= 0.4.0, GC/STATUS >= 1.1.0). */
int cni_ver_has_cmd(enum cni_ver v, enum cni_cmd c);

#endif
