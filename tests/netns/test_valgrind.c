/*
 * The node daemons under valgrind (release builds, as shipped): a
 * galactic-agent in a network-namespace node serves real CNI requests
 * (ADD, CHECK, DEL through the galactic-cni binary, itself under valgrind),
 * reconciles, reads the kernel back on verify ticks (the kernel backend's
 * observer, beside the passes; /metrics counts them), and exits on SIGTERM. Each run must end with no memory error
 * and no definitely-lost block; valgrind's own exit code says so
 * (--error-exitcode) and the log is checked for its summary line.
 */
#include "tests/lib/gtest.h"
#include "tests/lib/topo.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The suppressions cover only libnftables' own uninitialised netlink padding
 * (tests/valgrind/libnftables.supp says why). */
#define VG "valgrind --quiet --error-exitcode=99 --leak-check=full " \
	   "--errors-for-leak-kinds=definite --show-leak-kinds=definite " \
	   "--suppressions=tests/valgrind/libnftables.supp"

static struct topo T;
static char skip_why[256];

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void setup(void)
{
	if (geteuid() != 0) {
		snprintf(skip_why, sizeof(skip_why), "needs root for network namespaces");
		return;
	}
	if (topo_sh("command -v valgrind >/dev/null")) {
		snprintf(skip_why, sizeof(skip_why), "valgrind not installed");
		return;
	}
	ck_assert_int_eq(topo_up(&T, 1), 0);
	ck_assert_int_eq(topo_write_state(&T, 1, 0), 0);
}

static void teardown(void)
{
	if (getenv("GT_KEEP"))
		return;
	if (T.nodes)
		topo_down(&T);
}

/*
 * Runs galactic-cni under valgrind as a runtime would; returns its exit
 * status. CHECK and DEL carry the ADD result as prevResult (CNI spec).
 */
static int cni(const char *cmd, const char *sock, const char *out)
{
	int rc;

	rc = topo_sh("echo '{\"cniVersion\":\"1.1.0\",\"name\":\"vg\",\"type\":\"galactic-cni\","
		     "\"vpc\":\"Vg1\",\"vpcattachment\":\"At1\",\"ipFamilies\":[\"IPv6\",\"IPv4\"],"
		     "\"addresses\":[{\"address\":\"fd00:a::21/128\",\"gateway\":\"fe80::1\"},"
		     "{\"address\":\"10.1.0.21/32\",\"gateway\":\"169.254.1.1\"}],\"mtu\":1400,"
		     "\"agentSocket\":\"%s\"}' >%s.conf && "
		     "if [ %s != ADD ]; then jq --slurpfile p %s.ADD.out '. + {prevResult: $p[0]}' %s.conf "
		     ">%s.conf.tmp && mv %s.conf.tmp %s.conf; fi",
		     sock, out, cmd, out, out, out, out, out);
	if (rc)
		return rc;
	rc = topo_sh("CNI_COMMAND=%s CNI_CONTAINERID=vg-ctr CNI_NETNS=/var/run/netns/%s-vgpod "
		     "CNI_IFNAME=eth0 CNI_PATH=build/rel/bin %s --log-file=%s.%s.vg "
		     "build/rel/bin/galactic-cni <%s.conf >%s.%s.out 2>&1",
		     cmd, T.prefix, VG, out, cmd, out, out, cmd);
	if (rc) /* the plugin's CNI error or valgrind's report, for the test log */
		topo_sh("cat %s.%s.out %s.%s.vg >&2", out, cmd, out, cmd);
	return rc;
}

START_TEST(test_agent_and_plugin_clean_under_valgrind)
{
	char dir[300], ns[64], sock[400], log[400], base[400];
	pid_t pid;
	int st, i, port = 30000 + (int)(getpid() % 20000);
	struct stat sb;
	double end;

	if (skip_why[0])
		GT_SKIP("%s", skip_why);
	topo_state_dir(&T, 1, dir, sizeof(dir));
	topo_node_ns(&T, 1, ns, sizeof(ns));
	snprintf(sock, sizeof(sock), "%s/cni.sock", dir);
	snprintf(log, sizeof(log), "%s/agent.vg", dir);
	snprintf(base, sizeof(base), "%s/cni", dir);
	ck_assert_int_eq(topo_sh("ip netns add %s-vgpod && ip -n %s-vgpod link set lo up",
				 T.prefix, T.prefix), 0);

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char cmd[2048];

		snprintf(cmd, sizeof(cmd),
			 "exec " VG " --log-file=%s build/rel/bin/galactic-agent --state-dir %s "
			 "--netns %s --interval 1 --cni-socket %s --metrics-addr 127.0.0.1:%d --verify-interval 0.5 "
			 ">%s/agent.out 2>&1",
			 log, dir, ns, sock, port, dir);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	/* valgrind slows start-up a lot: wait for the socket. */
	end = now_s() + 120;
	while (stat(sock, &sb) != 0 && now_s() < end)
		usleep(200 * 1000);
	ck_assert_msg(stat(sock, &sb) == 0, "agent under valgrind did not open its socket");

	ck_assert_int_eq(cni("ADD", sock, base), 0);
	ck_assert_int_eq(topo_sh("ip -n %s-vgpod -6 addr show dev eth0 | grep -q fd00:a::21", T.prefix), 0);
	ck_assert_int_eq(cni("CHECK", sock, base), 0);
	/* A few periodic reconciles and verify ticks under valgrind, then
	 * remove the attachment. */
	sleep(3);
	for (i = 0; i < 100; i++) {
		char out[64];

		topo_out(out, sizeof(out), "curl -s http://127.0.0.1:%d/metrics | "
			 "sed -n 's/^galactic_agent_passes_total{kind=\"verify\",result=\"verified\"} //p'", port);
		if (atof(out) >= 1)
			break;
		usleep(200 * 1000);
	}
	ck_assert_msg(i < 100, "no verify tick read the kernel back under valgrind (see %s/agent.out)", dir);
	ck_assert_int_eq(cni("DEL", sock, base), 0);
	ck_assert_int_ne(topo_sh("ip -n %s-vgpod link show eth0 >/dev/null 2>&1", T.prefix), 0);

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	for (i = 0; i < 600 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(100 * 1000);
	ck_assert_msg(i < 600, "agent did not exit on SIGTERM");
	ck_assert_msg(WIFEXITED(st), "agent died by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	ck_assert_msg(WEXITSTATUS(st) != 99, "valgrind found errors in galactic-agent: see %s", log);
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	/* The log exists (valgrind did run the agent) and, with --quiet, holds no
	 * error or leak report. */
	ck_assert_int_eq(stat(log, &sb), 0);
	ck_assert_int_ne(topo_sh("grep -qE 'Invalid|uninitialised|definitely lost' %s", log), 0);
	ck_assert_int_ne(topo_sh("grep -qE 'Invalid|uninitialised|definitely lost' %s.*.vg", base), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("valgrind");
	TCase *tc = tcase_create("daemons");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_agent_and_plugin_clean_under_valgrind);
	suite_add_tcase(s, tc);
	return gt_run(s);
}
