/*
 * wmsctl breaker-sim: replay a call log through a breaker configured from
 * the SLA file, on a fake clock, to see what the breaker would have done.
 *
 * The model is seed 002's lab (Resilience4j fed the calls in order, its
 * clock advanced per call): for each call the clock is set to its t_ms and
 * the breaker is asked; a permitted call's outcome is recorded at once, at
 * t_ms, with the permit's start moved back by the call's duration so that
 * slow calls are classified by how long they took. A rejected call is not
 * made: it costs the caller nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wmsctl.h"

#define NS_PER_MS UINT64_C(1000000)
/* The fake clock starts one day in, so a permit's start can move back by
 * the longest duration without reaching 0 (which the breaker reads as "no
 * start"); whole seconds, so time-window buckets fall on t_ms seconds. */
#define CLOCK_BASE_NS (UINT64_C(86400000) * NS_PER_MS)
#define MAX_LINE 255 /* a valid line is under 50 bytes */
#define ECHO_MAX 24  /* bytes of a bad field echoed in a message */

/* ---- parsing ----------------------------------------------------------- */

/* `s` (n bytes) for a message: at most ECHO_MAX bytes, unprintables as '?'. */
static void echo(char *dst, size_t size, const char *s, size_t n)
{
	size_t i, k = 0, lim = n > ECHO_MAX ? ECHO_MAX : n;

	for (i = 0; i < lim && k + 1 < size; i++) {
		unsigned char c = (unsigned char)s[i];
		dst[k++] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
	}
	if (n > lim && k + 4 <= size) {
		memcpy(dst + k, "...", 3);
		k += 3;
	}
	dst[k] = '\0';
}

/* Plain decimal digits, at most `max`. */
static int parse_whole(uint64_t *out, const char *s, size_t n, uint64_t max)
{
	uint64_t v = 0;

	if (n == 0 || n > 20)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (max - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Milliseconds with up to 6 decimals ("3000", "0.41"), at most max_ms, to ns. */
static int parse_duration(uint64_t *out_ns, const char *s, size_t n, uint64_t max_ms)
{
	const char *dot = memchr(s, '.', n);
	size_t whole = dot ? (size_t)(dot - s) : n;
	uint64_t ms, frac = 0;
	size_t digits = dot ? n - whole - 1 : 0;

	if (parse_whole(&ms, s, whole, max_ms) != 0)
		return -1;
	if (dot) {
		if (digits < 1 || digits > 6 || parse_whole(&frac, dot + 1, digits, 999999) != 0)
			return -1;
		for (size_t i = digits; i < 6; i++)
			frac *= 10;
		if (ms == max_ms && frac)
			return -1;
	}
	*out_ns = ms * NS_PER_MS + frac;
	return 0;
}

int ctl_sim_parse_line(ctl_sim_call *out, const char *line, size_t len, char *why,
		       size_t why_size)
{
	const char *field[3], *end = line + len, *p = line;
	size_t flen[3], nf = 0;
	char shown[ECHO_MAX + 4];

	if (len && line[len - 1] == '\r') /* CRLF */
		end--;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (p == end || *p == '#')
		return 0;
	if (memchr(line, '\0', len)) {
		snprintf(why, why_size, "contains a NUL byte");
		return -1;
	}
	p = line;
	for (;;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		if (nf == 3) {
			snprintf(why, why_size, "expected t_ms,outcome[,duration_ms]: too many fields");
			return -1;
		}
		field[nf] = p;
		flen[nf++] = (size_t)(stop - p);
		if (!comma)
			break;
		p = comma + 1;
	}
	if (nf < 2) {
		snprintf(why, why_size, "expected t_ms,outcome[,duration_ms]: no outcome");
		return -1;
	}
	if (parse_whole(&out->t_ms, field[0], flen[0], CTL_SIM_MAX_T_MS) != 0) {
		echo(shown, sizeof(shown), field[0], flen[0]);
		snprintf(why, why_size, "t_ms '%s': expected a whole number of milliseconds, "
			 "0-%llu", shown, (unsigned long long)CTL_SIM_MAX_T_MS);
		return -1;
	}
	if (flen[1] == 2 && memcmp(field[1], "ok", 2) == 0) {
		out->outcome = WMS_OUTCOME_SUCCESS;
	} else if (flen[1] == 4 && memcmp(field[1], "fail", 4) == 0) {
		out->outcome = WMS_OUTCOME_FAILURE;
	} else if (flen[1] == 6 && memcmp(field[1], "ignore", 6) == 0) {
		out->outcome = WMS_OUTCOME_IGNORED;
	} else {
		echo(shown, sizeof(shown), field[1], flen[1]);
		snprintf(why, why_size, "outcome '%s': expected ok, fail or ignore", shown);
		return -1;
	}
	out->duration_ns = 0;
	if (nf == 3 &&
	    parse_duration(&out->duration_ns, field[2], flen[2], CTL_SIM_MAX_DURATION_MS) != 0) {
		echo(shown, sizeof(shown), field[2], flen[2]);
		snprintf(why, why_size, "duration_ms '%s': expected milliseconds 0-%u, "
			 "at most 6 decimals", shown, (unsigned)CTL_SIM_MAX_DURATION_MS);
		return -1;
	}
	return 1;
}

int ctl_sim_read(ctl_sim_call **out, size_t *count, FILE *in, const char *name, FILE *errf)
{
	ctl_sim_call *calls = NULL, call;
	size_t n = 0, cap = 0, len = 0;
	unsigned long lineno = 0;
	char buf[MAX_LINE + 1], why[160];
	int c, too_long = 0, rc = CTL_EXIT_OK;

	*out = NULL;
	*count = 0;
	for (;;) {
		c = getc(in);
		if (c != EOF && c != '\n') {
			if (len < MAX_LINE)
				buf[len++] = (char)c;
			else
				too_long = 1;
			continue;
		}
		if (c == EOF && len == 0 && !too_long)
			break;
		lineno++;
		if (too_long) {
			fprintf(errf, "wmsctl: breaker-sim: %s: line %lu: longer than %d bytes\n",
				name, lineno, MAX_LINE);
			rc = CTL_EXIT_USAGE;
			goto done;
		}
		switch (ctl_sim_parse_line(&call, buf, len, why, sizeof(why))) {
		case 1:
			if (n && call.t_ms < calls[n - 1].t_ms) {
				fprintf(errf, "wmsctl: breaker-sim: %s: line %lu: t_ms %" PRIu64
					" is before the previous call's %" PRIu64
					" (the log must be in time order)\n",
					name, lineno, call.t_ms, calls[n - 1].t_ms);
				rc = CTL_EXIT_USAGE;
				goto done;
			}
			if (n == cap) {
				size_t ncap = cap ? cap * 2 : 256;
				ctl_sim_call *p = ncap > SIZE_MAX / sizeof(*p)
							  ? NULL
							  : realloc(calls, ncap * sizeof(*p));
				if (!p) {
					fprintf(errf, "wmsctl: breaker-sim: %s: out of memory at "
						"line %lu\n", name, lineno);
					rc = CTL_EXIT_INTERNAL;
					goto done;
				}
				calls = p;
				cap = ncap;
			}
			calls[n++] = call;
			break;
		case 0:
			break;
		default:
			fprintf(errf, "wmsctl: breaker-sim: %s: line %lu: %s\n", name, lineno, why);
			rc = CTL_EXIT_USAGE;
			goto done;
		}
		len = 0;
		if (c == EOF)
			break;
	}
	if (ferror(in)) {
		fprintf(errf, "wmsctl: breaker-sim: %s: cannot read: %s\n", name, strerror(errno));
		rc = CTL_EXIT_USAGE;
		goto done;
	}
	*out = calls;
	*count = n;
	calls = NULL;
done:
	free(calls);
	return rc;
}

/* ---- the replay -------------------------------------------------------- */

typedef struct sim_transition {
	wms_breaker_state to;
	uint64_t time_ns;
} sim_transition;

typedef struct sim_run {
	uint64_t now_ns; /* the fake clock */
	sim_transition *tr;
	size_t n_tr, cap_tr;
	int lost; /* out of memory recording a transition */
} sim_run;

static uint64_t sim_clock(void *ctx)
{
	return ((const sim_run *)ctx)->now_ns;
}

static void sim_event(const wms_breaker_event *ev, void *ctx)
{
	sim_run *run = ctx;

	if (run->n_tr == run->cap_tr) {
		size_t cap = run->cap_tr ? run->cap_tr * 2 : 16;
		sim_transition *p = realloc(run->tr, cap * sizeof(*p));
		if (!p) {
			run->lost = 1;
			return;
		}
		run->tr = p;
		run->cap_tr = cap;
	}
	run->tr[run->n_tr].to = ev->to;
	run->tr[run->n_tr].time_ns = ev->time_ns;
	run->n_tr++;
}

/* Nanoseconds as milliseconds: "25200", "0.41". */
static void put_ms(FILE *f, uint64_t ns)
{
	uint64_t frac = ns % NS_PER_MS;
	char digits[8];
	int n;

	fprintf(f, "%" PRIu64, ns / NS_PER_MS);
	if (!frac)
		return;
	n = snprintf(digits, sizeof(digits), "%06" PRIu64, frac);
	while (n > 0 && digits[n - 1] == '0')
		digits[--n] = '\0';
	fprintf(f, ".%s", digits);
}

int ctl_sim_replay(FILE *out, const ctl_sim_call *calls, size_t count,
		   const wms_breaker_options *bo, FILE *errf)
{
	wms_breaker_options o = *bo;
	wms_breaker_snapshot snap;
	wms_breaker *b = NULL;
	uint64_t waiting_ns = 0, without_ns = 0;
	sim_run run;
	wms_status st;
	int rc = CTL_EXIT_OK;

	memset(&run, 0, sizeof(run));
	run.now_ns = CLOCK_BASE_NS;
	o.callbacks.clock = sim_clock;
	o.callbacks.payload = &run;
	o.callbacks.on_state_change = sim_event;
	o.callbacks.payload = &run;
	st = wms_breaker_new(&b, &o);
	if (st != WMS_OK) {
		if (st == WMS_ERR_NOMEM) {
			fputs("wmsctl: breaker-sim: out of memory\n", errf);
			rc = CTL_EXIT_INTERNAL;
		} else {
			fputs("wmsctl: breaker-sim: the breaker settings do not go together "
			      "(e.g. --open-ms above the file's max_open_duration_ms)\n", errf);
			rc = CTL_EXIT_USAGE;
		}
		goto done;
	}
	for (size_t i = 0; i < count; i++) {
		const ctl_sim_call *c = &calls[i];
		wms_breaker_permit p;
		int permitted;

		run.now_ns = CLOCK_BASE_NS + c->t_ms * NS_PER_MS;
		permitted = wms_breaker_acquire(&p, b, NULL) == WMS_OK;
		if (permitted) {
			/* Started duration ago, ends now: the lab's model. (The
			 * consecutive mode keeps no start time: start_ns is 0.) */
			if (p.start_ns >= c->duration_ns)
				p.start_ns -= c->duration_ns;
			wms_breaker_record(b, &p, c->outcome);
			waiting_ns += c->duration_ns;
		}
		without_ns += c->duration_ns;
		fprintf(out, "{\"t_ms\":%" PRIu64 ",\"permitted\":%s,\"state\":\"%s\"}\n", c->t_ms,
			permitted ? "true" : "false", wms_breaker_state_name(wms_breaker_state_get(b)));
	}
	if (run.lost) {
		fputs("wmsctl: breaker-sim: out of memory recording the transitions\n", errf);
		rc = CTL_EXIT_INTERNAL;
		goto done;
	}
	wms_breaker_snapshot_get(&snap, b);
	fputs("{\"summary\":{\"transitions\":[\"CLOSED\"", out);
	for (size_t i = 0; i < run.n_tr; i++)
		fprintf(out, ",\"%s\"", wms_breaker_state_name(run.tr[i].to));
	fputs("],\"transition_times_ms\":[", out);
	for (size_t i = 0; i < run.n_tr; i++) {
		if (i)
			fputc(',', out);
		put_ms(out, run.tr[i].time_ns - CLOCK_BASE_NS);
	}
	fprintf(out, "],\"permitted\":%" PRIu64 ",\"rejected\":%" PRIu64 ",\"successes\":%" PRIu64
		",\"failures\":%" PRIu64 ",\"ignored\":%" PRIu64 ",\"slow\":%" PRIu64
		",\"waiting_ms\":",
		snap.permitted, snap.rejected, snap.successes, snap.failures, snap.ignored,
		snap.slow);
	put_ms(out, waiting_ns);
	fputs(",\"waiting_ms_without_breaker\":", out);
	put_ms(out, without_ns);
	fprintf(out, ",\"calls\":%zu}}\n", count);
done:
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(errf, "wmsctl: breaker-sim: writing the output: %s\n", strerror(errno));
		rc = CTL_EXIT_INTERNAL;
	}
	wms_breaker_free(b);
	free(run.tr);
	return rc;
}

void ctl_breaker_flags(wms_breaker_options *bo, const ctl_config *cfg)
{
	if (cfg->breaker_threshold)
		bo->failure_threshold = cfg->breaker_threshold;
	if (cfg->open_ms)
		bo->open_duration_ms = cfg->open_ms;
}

int ctl_run_breaker_sim(const ctl_config *cfg)
{
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	ctl_sim_call *calls = NULL;
	const char *name = "<stdin>";
	FILE *in = stdin;
	size_t count = 0;
	int rc;

	if (cfg->calls && strcmp(cfg->calls, "-") != 0) {
		name = cfg->calls;
		in = fopen(name, "r");
		if (!in) {
			fprintf(stderr, "wmsctl: breaker-sim: %s: %s\n", name, strerror(errno));
			return CTL_EXIT_USAGE;
		}
	}
	bo.name = "breaker-sim";
	if (cfg->sla)
		wms_config_breaker_options(cfg->sla, &bo);
	ctl_breaker_flags(&bo, cfg);
	rc = ctl_sim_read(&calls, &count, in, name, stderr);
	if (rc == CTL_EXIT_OK)
		rc = ctl_sim_replay(stdout, calls, count, &bo, stderr);
	if (in != stdin)
		fclose(in);
	free(calls);
	return rc;
}
