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

/* logfmt value: bare when safe, else quoted with \" and \\ and \n escaped. */
static void put_value(FILE *f, const char *v)
{
	bool bare = *v != 0;
	for (const char *p = v; *p; p++)
		if (*p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p >= 0x7f)
			bare = false;
	if (bare) {
		fputs(v, f);
		return;
	}
	fputc('"', f);
	for (const char *p = v; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f), fputc(*p, f);
		else if (*p == '\n')
			fputs("\\n", f);
		else if ((unsigned char)*p < ' ')
			fputc('?', f);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void line_start(FILE *f, enum glog_level lvl, const char *comp)
{
	struct timespec ts;
	struct tm tm;
	char buf[40];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	fprintf(f, "ts=%s.%03ldZ level=%s comp=", buf, ts.tv_nsec / 1000000,
		level_names[lvl < 0 || lvl > 3 ? 1 : lvl]);
	put_value(f, comp ? comp : "-");
	fputs(" msg=", f);
}

void glog_kv(enum glog_level lvl, const char *comp, const char *msg, ...)
{
	FILE *f = atomic_load(&g_out);
	va_list ap;

	if ((int)lvl < atomic_load(&g_level))
		return;
	if (!f)
		f = stderr;
	flockfile(f);
	line_start(f, lvl, comp);
	put_value(f, msg ? msg : "");
	va_start(ap, msg);
	for (;;) {
		const char *k = va_arg(ap, const char *), *v;
		if (!k)
			break;
		v = va_arg(ap, const char *);
		fputc(' ', f);
		fputs(k, f);
		fputc('=', f);
		put_value(f, v ? v : "");
	}
	va_end(ap);
	fputc('\n', f);
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
