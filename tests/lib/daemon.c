#include "tests/lib/daemon.h"

#include <arpa/inet.h>
#include <curl/curl.h>

#include "tests/lib/curlbuf.h"
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double gt_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int gt_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &l) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

pid_t gt_spawn(const char *log, char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

long gt_http_get(int port, const char *path, char **body)
{
	CURL *c = curl_easy_init();
	struct gt_buf b = { 0 };
	char url[128];
	long code = 0;

	if (!c)
		return 0;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, gt_buf_sink);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 5L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(c);
	if (body)
		*body = b.p;
	else
		free(b.p);
	return code;
}

double gt_metric(int port, const char *sample)
{
	char *body = NULL, *line;
	double v = -1;
	size_t n = strlen(sample);

	if (gt_http_get(port, "/metrics", &body) != 200) {
		free(body);
		return -1;
	}
	for (line = body; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, sample, n) && line[n] == ' ') {
			v = strtod(line + n + 1, NULL);
			break;
		}
	free(body);
	return v;
}
