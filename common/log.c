#include "common/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static atomic_int g_level = GLOG_INFO;
static FILE *_Atomic g_out;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

void glog_set_level(enum glog_level lvl) { atomic_store(&g_level, (int)lvl); }
enum glog_level glog_get_level(void) { return (enum glog_level)atomic_load(&g_level); }
void glog_set_output(FILE *f) { atomic_store(&g_out, f); }

int glog_parse_level(const char *s, enum glog_level *out)
{
	for (int i = 0; i < 4; i++)
		if (s && !strcmp(s, level_names[i])) {
			*out = (enum glog_level)i;
			return 0;
		}
	return -1;
}

/*
 * A line is built in memory and written with one fwrite: stderr is
 * unbuffered, so a character at a time was one write(2) each (about a
 * hundred per line, under the stream lock every other logging thread
 * queues on). A line longer than the buffer goes out in pieces, still
 * under the stream lock.
 */
struct line {
	FILE *f;
	size_t n;
	char b[4096];
};

static void put_mem(struct line *l, const char *p, size_t n)
{
	while (n) {
		size_t k = sizeof(l->b) - l->n;

		if (!k) {
			fwrite(l->b, 1, l->n, l->f);
			l->n = 0;
			k = sizeof(l->b);
		}
		if (k > n)
			k = n;
		memcpy(l->b + l->n, p, k);
		l->n += k;
		p += k;
		n -= k;
	}
}

static void put_str(struct line *l, const char *s) { put_mem(l, s, strlen(s)); }
static void put_ch(struct line *l, char c) { put_mem(l, &c, 1); }

/* logfmt value: bare when safe, else quoted with \" and \\ and \n escaped. */
static void put_value(struct line *l, const char *v)
{
	bool bare = *v != 0;
	for (const char *p = v; *p; p++)
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p >= 0x7f)
			bare = false;
	if (bare) {
		put_str(l, v);
		return;
	}
	put_ch(l, '"');
	for (const char *p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			put_ch(l, '\\'), put_ch(l, *p);
		else if (*p == '\n')
			put_str(l, "\\n");
		else if ((unsigned char)*p < ' ')
			put_ch(l, '?');
		else
			put_ch(l, *p);
	}
	put_ch(l, '"');
}

static void line_start(struct line *l, enum glog_level lvl, const char *comp)
{
	struct timespec ts;
	struct tm tm;
	char buf[40], head[96];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(head, sizeof(head), "ts=%s.%03ldZ level=%s comp=", buf, ts.tv_nsec / 1000000,
		 level_names[lvl < 0 || lvl > 3 ? 1 : lvl]);
	put_str(l, head);
	put_value(l, comp ? comp : "-");
	put_str(l, " msg=");
}

void glog_kv(enum glog_level lvl, const char *comp, const char *msg, ...)
{
	FILE *f = atomic_load(&g_out);
	struct line l;
	va_list ap;

	if ((int)lvl < atomic_load(&g_level))
		return;
	if (!f)
		f = stderr;
	l.f = f;
	l.n = 0;
	flockfile(f);
	line_start(&l, lvl, comp);
	put_value(&l, msg ? msg : "");
	va_start(ap, msg);
	for (;;) {
		const char *k = va_arg(ap, const char *), *v;
		if (!k)
			break;
		v = va_arg(ap, const char *);
		put_ch(&l, ' ');
		put_str(&l, k);
		put_ch(&l, '=');
		put_value(&l, v ? v : "");
	}
	va_end(ap);
	put_ch(&l, '\n');
	fwrite(l.b, 1, l.n, f);
	fflush(f);
	funlockfile(f);
}

void glogf(enum glog_level lvl, const char *comp, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if ((int)lvl < atomic_load(&g_level))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	glog_kv(lvl, comp, msg, NULL);
}
