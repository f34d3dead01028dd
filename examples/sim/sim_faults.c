/*
 * wms-sim's fault injection: which fault a request meets (a scheduled
 * window, its operation's fault or the all-operations one), whether the
 * listener should be refusing and when that changes, the schedule's text
 * format, and the faults API of wms_sim.h. No libmicrohttpd here.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim_internal.h"
#include "util/num.h"

#define MAX_WINDOWS 1024u
#define MAX_SCHEDULE_MS 1000000000000ull /* 31 years */
#define DEFAULT_SLOW_MS 1000u
#define DEFAULT_GARBAGE_BYTES 256u
#define DEFAULT_EVERY_NTH 2u

/* ---- fault lookup (lock held) --------------------------------------------- */

static uint32_t param_or_default(wms_sim_fault kind, uint32_t param)
{
	if (param)
		return param;
	switch (kind) {
	case WMS_SIM_FAULT_SLOW: return DEFAULT_SLOW_MS;
	case WMS_SIM_FAULT_GARBAGE: return DEFAULT_GARBAGE_BYTES;
	case WMS_SIM_FAULT_EVERY_NTH: return DEFAULT_EVERY_NTH;
	case WMS_SIM_FAULT_NONE:
	case WMS_SIM_FAULT_HANG:
	case WMS_SIM_FAULT_REFUSE:
	case WMS_SIM_FAULT_HTTP_500:
	case WMS_SIM_FAULT_HTTP_503:
	case WMS_SIM_FAULT_SERVER:
	case WMS_SIM_FAULT_CLIENT:
	case WMS_SIM_FAULT_TRUNCATED:
	case WMS_SIM_FAULT_RESET:
	case WMS_SIM_FAULT_REPLY_LOST:
		break;
	}
	return 0;
}

void wms_sim__expire(wms_sim *s, uint64_t now)
{
	if (s->all.kind == WMS_SIM_FAULT_REFUSE && s->all.until_ns && now >= s->all.until_ns)
		memset(&s->all, 0, sizeof(s->all));
}

/* The first window covering now that applies to op (SIM_OP_NONE: only the
 * all-operations ones); -1 if none. */
static long window_at(const wms_sim *s, uint64_t now, sim_op op)
{
	uint64_t t;
	size_t i;
	if (!s->window_count)
		return -1;
	t = (now - s->schedule_t0_ns) / NS_PER_MS;
	for (i = 0; i < s->window_count; i++) {
		const wms_sim__window *w = &s->windows[i];
		if (t >= w->start_ms && t < w->end_ms && (w->op == SIM_OP_NONE || w->op == op))
			return (long)i;
	}
	return -1;
}

/* Every-nth counts the matching requests; its Nth ones become server faults. */
static wms_sim_fault resolve(wms_sim_fault kind, uint32_t param, uint64_t *seen, uint32_t *out)
{
	*out = param_or_default(kind, param);
	if (kind != WMS_SIM_FAULT_EVERY_NTH)
		return kind;
	*seen += 1;
	return *seen % *out == 0 ? WMS_SIM_FAULT_SERVER : WMS_SIM_FAULT_NONE;
}

/* The fault for one request of `op` (SIM_OP_NONE: names no operation). */
wms_sim_fault wms_sim__take_fault(wms_sim *s, sim_op op, uint64_t now, uint32_t *param)
{
	long i;
	wms_sim__expire(s, now);
	*param = 0;
	i = window_at(s, now, op);
	if (i >= 0)
		return resolve(s->windows[i].kind, s->windows[i].param, &s->windows[i].seen, param);
	if (op != SIM_OP_NONE && s->per_op[op].kind != WMS_SIM_FAULT_NONE)
		return resolve(s->per_op[op].kind, s->per_op[op].param, &s->per_op[op].seen, param);
	if (s->all.kind != WMS_SIM_FAULT_NONE)
		return resolve(s->all.kind, s->all.param, &s->all.seen, param);
	return WMS_SIM_FAULT_NONE;
}

/* What applies now, without counting (for /stats). */
wms_sim_fault wms_sim__peek_fault(const wms_sim *s, sim_op op, uint64_t now, uint32_t *param)
{
	long i = window_at(s, now, op);
	const wms_sim__fault_slot *slot = NULL;
	if (i >= 0) {
		*param = param_or_default(s->windows[i].kind, s->windows[i].param);
		return s->windows[i].kind;
	}
	if (op != SIM_OP_NONE && s->per_op[op].kind != WMS_SIM_FAULT_NONE)
		slot = &s->per_op[op];
	else if (s->all.kind != WMS_SIM_FAULT_NONE &&
		 !(s->all.until_ns && now >= s->all.until_ns))
		slot = &s->all;
	*param = slot ? param_or_default(slot->kind, slot->param) : 0;
	return slot ? slot->kind : WMS_SIM_FAULT_NONE;
}

int wms_sim__refusing(const wms_sim *s, uint64_t now)
{
	long i = window_at(s, now, SIM_OP_NONE);
	if (i >= 0)
		return s->windows[i].kind == WMS_SIM_FAULT_REFUSE;
	return s->all.kind == WMS_SIM_FAULT_REFUSE && !(s->all.until_ns && now >= s->all.until_ns);
}

/* When the answer of wms_sim__refusing() may change next; 0: not by itself. */
uint64_t wms_sim__next_change(const wms_sim *s, uint64_t now)
{
	uint64_t best = 0, t;
	size_t i;
	if (s->all.kind == WMS_SIM_FAULT_REFUSE && s->all.until_ns > now)
		best = s->all.until_ns;
	for (i = 0; i < s->window_count; i++) {
		const wms_sim__window *w = &s->windows[i];
		uint64_t edges[2];
		int k;
		if (w->op != SIM_OP_NONE)
			continue;
		edges[0] = s->schedule_t0_ns + w->start_ms * NS_PER_MS;
		edges[1] = s->schedule_t0_ns + w->end_ms * NS_PER_MS;
		for (k = 0; k < 2; k++) {
			t = edges[k];
			if (t > now && (!best || t < best))
				best = t;
		}
	}
	return best;
}

/* ---- schedule -------------------------------------------------------------- */

int wms_sim__parse_u64(const char *s, uint64_t *out)
{
	return wms__parse_uint_str(s, 0, UINT64_MAX, out) != WMS__NUM_OK ? -1 : 0;
}

wms_sim_status wms_sim__parse_schedule(const char *text, wms_sim__window **out, size_t *count)
{
	wms_sim__window *v = NULL;
	size_t n = 0, lineno = 0;
	const char *p = text ? text : "";
	wms_sim_status st = WMS_SIM_OK;

	*out = NULL;
	*count = 0;
	while (*p) {
		char line[512], *tok, *save = NULL, *hash;
		size_t len = strcspn(p, "\n");
		wms_sim__window w;
		int field = 0;

		lineno++;
		if (len >= sizeof(line)) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule line %zu: longer than %zu bytes",
					   lineno, sizeof(line) - 1);
			goto fail;
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p += len + (p[len] == '\n');
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		memset(&w, 0, sizeof(w));
		w.op = SIM_OP_NONE;
		for (tok = strtok_r(line, " \t\r", &save); tok; tok = strtok_r(NULL, " \t\r", &save)) {
			uint64_t num;
			if (field == 0 || field == 1) {
				if (wms_sim__parse_u64(tok, &num) != 0 || num > MAX_SCHEDULE_MS) {
					st = wms_sim__fail(WMS_SIM_ERR_PARSE,
							   "schedule line %zu: %s_ms '%.30s' is not a "
							   "number of milliseconds (at most %llu)",
							   lineno, field ? "end" : "start", tok,
							   (unsigned long long)MAX_SCHEDULE_MS);
					goto fail;
				}
				*(field ? &w.end_ms : &w.start_ms) = num;
			} else if (field == 2) {
				if (wms_sim_fault_parse(&w.kind, tok) != WMS_SIM_OK) {
					char why[256];
					snprintf(why, sizeof(why), "%s", wms_sim_last_error());
					st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule line %zu: %s",
							   lineno, why);
					goto fail;
				}
			} else if (strncmp(tok, "op=", 3) == 0) {
				w.op = wms_sim__op_from_name(tok + 3, strlen(tok + 3));
				if (w.op == SIM_OP_NONE) {
					st = wms_sim__fail(WMS_SIM_ERR_PARSE,
							   "schedule line %zu: unknown operation '%.40s'",
							   lineno, tok + 3);
					goto fail;
				}
			} else if (strncmp(tok, "param=", 6) == 0) {
				if (wms_sim__parse_u64(tok + 6, &num) != 0 || num > UINT32_MAX) {
					st = wms_sim__fail(WMS_SIM_ERR_PARSE,
							   "schedule line %zu: param '%.30s' is not a "
							   "number 0..4294967295",
							   lineno, tok + 6);
					goto fail;
				}
				w.param = (uint32_t)num;
			} else {
				st = wms_sim__fail(WMS_SIM_ERR_PARSE,
						   "schedule line %zu: unexpected '%.40s' (want "
						   "start_ms end_ms fault [op=OP] [param=N])",
						   lineno, tok);
				goto fail;
			}
			field++;
		}
		if (field == 0)
			continue; /* blank or comment */
		if (field < 3) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE,
					   "schedule line %zu: want start_ms end_ms fault [op=OP] "
					   "[param=N]",
					   lineno);
			goto fail;
		}
		if (w.end_ms <= w.start_ms) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE,
					   "schedule line %zu: end_ms must be after start_ms", lineno);
			goto fail;
		}
		if (w.kind == WMS_SIM_FAULT_REFUSE && w.op != SIM_OP_NONE) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE,
					   "schedule line %zu: refuse closes the listener for every "
					   "operation (drop op=)",
					   lineno);
			goto fail;
		}
		if (n == MAX_WINDOWS) {
			st = wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule: more than %u windows",
					   MAX_WINDOWS);
			goto fail;
		}
		if (n % 16 == 0) {
			wms_sim__window *nv = realloc(v, (n + 16) * sizeof(*v));
			if (!nv) {
				st = wms_sim__fail(WMS_SIM_ERR_NOMEM, "out of memory");
				goto fail;
			}
			v = nv;
		}
		v[n++] = w;
	}
	*out = v;
	*count = n;
	return WMS_SIM_OK;
fail:
	free(v);
	return st;
}

/* Lock held. Takes ownership of w. */
void wms_sim__install_schedule(wms_sim *s, wms_sim__window *w, size_t n)
{
	free(s->windows);
	s->windows = w;
	s->window_count = n;
	s->schedule_t0_ns = wms_sim__mono_ns();
}

wms_sim_status wms_sim_set_schedule(wms_sim *s, const char *text)
{
	wms_sim__window *w;
	size_t n;
	wms_sim_status st;

	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim is NULL");
	st = wms_sim__parse_schedule(text, &w, &n);
	if (st != WMS_SIM_OK)
		return st;
	pthread_mutex_lock(&s->lock);
	wms_sim__install_schedule(s, w, n);
	st = wms_sim__sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	return st;
}

wms_sim_status wms_sim_load_schedule(wms_sim *s, const char *path)
{
	char *text;
	size_t len;
	wms_sim_status st;

	if (!s || !path)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim and path are required");
	st = wms_sim__read_file(path, &text, &len);
	if (st != WMS_SIM_OK)
		return st;
	if (strlen(text) != len) {
		wms__free(text);
		return wms_sim__fail(WMS_SIM_ERR_PARSE, "schedule %s contains a NUL byte", path);
	}
	st = wms_sim_set_schedule(s, text);
	wms__free(text);
	if (st != WMS_SIM_OK && st != WMS_SIM_ERR_NOMEM) {
		char msg[256];
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		st = wms_sim__fail(st, "%s: %s", path, msg);
	}
	return st;
}

/* ---- faults API ------------------------------------------------------------ */

/* Lock held. */
wms_sim_status wms_sim__set_fault_locked(wms_sim *s, const char *op, wms_sim_fault kind,
					 uint32_t param)
{
	sim_op o = SIM_OP_NONE;
	wms_sim__fault_slot *slot;

	if ((unsigned)kind >= WMS_SIM_FAULT_COUNT)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "unknown fault %d", (int)kind);
	if (op) {
		o = wms_sim__op_from_name(op, strlen(op));
		if (o == SIM_OP_NONE)
			return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
					     "unknown operation '%.40s' (SubmitOrder, GetOrderStatus, "
					     "CancelOrder, GetStockLevel)", op);
		if (kind == WMS_SIM_FAULT_REFUSE)
			return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG,
					     "refuse closes the listener for every operation: no op");
	}
	if (kind == WMS_SIM_FAULT_NONE && !op) {
		memset(&s->all, 0, sizeof(s->all));
		memset(s->per_op, 0, sizeof(s->per_op));
		return WMS_SIM_OK;
	}
	slot = op ? &s->per_op[o] : &s->all;
	memset(slot, 0, sizeof(*slot));
	slot->kind = kind;
	slot->param = param;
	if (kind == WMS_SIM_FAULT_REFUSE && param)
		slot->until_ns = wms_sim__mono_ns() + (uint64_t)param * NS_PER_MS;
	return WMS_SIM_OK;
}

wms_sim_status wms_sim_set_fault(wms_sim *s, const char *op, wms_sim_fault kind, uint32_t param)
{
	wms_sim_status st;
	if (!s)
		return wms_sim__fail(WMS_SIM_ERR_INVALID_ARG, "sim is NULL");
	pthread_mutex_lock(&s->lock);
	st = wms_sim__set_fault_locked(s, op, kind, param);
	if (st == WMS_SIM_OK)
		st = wms_sim__sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	return st;
}

void wms_sim_clear_faults(wms_sim *s)
{
	wms_sim__script *old[SIM_OP_COUNT + 1];
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	memset(&s->all, 0, sizeof(s->all));
	memset(s->per_op, 0, sizeof(s->per_op));
	wms_sim__uninstall_scripts(s, old);
	wms_sim__install_schedule(s, NULL, 0);
	(void)wms_sim__sync_listener(s);
	pthread_mutex_unlock(&s->lock);
	wms_sim__unref_scripts(s, old);
}
