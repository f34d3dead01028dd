/*
 * wms-sim's control plane over HTTP: the /stats document (counters, faults,
 * scripted replies, connections, the schedule) and POST /control, whose
 * parameters are all checked before any of them changes the sim.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "sim_http.h"
#include "util/json.h"
#include "util/num.h"

/* ---- /stats and /control --------------------------------------------------- */

static int json_string(wms__buf *b, const char *v)
{
	return wms__json_string(b, v) != WMS_OK;
}

int wms_sim__stats_json(wms_sim *s, wms__buf *b)
{
	uint64_t now = wms_sim__mono_ns(), total, per[SIM_OP_COUNT], t, accepted, open_now;
	wms_sim_fault f[SIM_OP_COUNT + 1];
	uint32_t param[SIM_OP_COUNT + 1];
	struct {
		int set, real;
		unsigned status;
		size_t bytes;
		uint32_t left;
	} rs[SIM_OP_COUNT + 1];
	size_t windows, orders = wms_sim__store_count(s->store);
	int listening, i, rc = 0, first = 1;

	pthread_mutex_lock(&s->lock);
	total = s->requests_total;
	memcpy(per, s->requests_op, sizeof(per));
	for (i = 0; i < SIM_OP_COUNT; i++)
		f[i] = wms_sim__peek_fault(s, (sim_op)i, now, &param[i]);
	f[SIM_OP_COUNT] = wms_sim__peek_fault(s, SIM_OP_NONE, now, &param[SIM_OP_COUNT]);
	windows = s->window_count;
	t = s->window_count ? (now - s->schedule_t0_ns) / NS_PER_MS : 0;
	listening = s->listening;
	accepted = s->conns_accepted;
	open_now = s->conns_open;
	for (i = 0; i <= SIM_OP_COUNT; i++) {
		const wms_sim__reply_slot *slot =
			i < SIM_OP_COUNT ? &s->reply_op[i] : &s->reply_all;
		rs[i].set = slot->sc != NULL;
		rs[i].real = slot->sc && !slot->sc->body;
		rs[i].status = slot->sc ? slot->sc->status : 0;
		rs[i].bytes = slot->sc ? slot->sc->body_len : 0;
		rs[i].left = slot->left;
	}
	pthread_mutex_unlock(&s->lock);

	rc |= wms__buf_append(b, "{\"url\":", 7);
	rc |= json_string(b, s->url);
	rc |= wms__buf_printf(b, ",\"listening\":%s,\"uptime_ms\":%" PRIu64
				  ",\"requests\":{\"total\":%" PRIu64,
				  listening ? "true" : "false", (now - s->start_ns) / NS_PER_MS,
				  total);
	for (i = 0; i < SIM_OP_COUNT; i++)
		rc |= wms__buf_printf(b, ",\"%s\":%" PRIu64, wms_sim__op_names[i], per[i]);
	rc |= wms__buf_printf(b, "},\"fault\":{\"kind\":\"%s\",\"param\":%" PRIu32 "}",
				  wms_sim__fault_names[f[SIM_OP_COUNT]], param[SIM_OP_COUNT]);
	rc |= wms__buf_append(b, ",\"faults\":{", 11);
	for (i = 0; i < SIM_OP_COUNT; i++) {
		if (f[i] == WMS_SIM_FAULT_NONE)
			continue;
		rc |= wms__buf_printf(b, "%s\"%s\":{\"kind\":\"%s\",\"param\":%" PRIu32 "}",
					  first ? "" : ",", wms_sim__op_names[i],
					  wms_sim__fault_names[f[i]], param[i]);
		first = 0;
	}
	rc |= wms__buf_append(b, "},\"replies\":{", 13);
	first = 1;
	for (i = 0; i <= SIM_OP_COUNT; i++) {
		if (!rs[i].set)
			continue;
		rc |= wms__buf_printf(b, "%s\"%s\":{\"status\":%u,\"body\":", first ? "" : ",",
					  i < SIM_OP_COUNT ? wms_sim__op_names[i] : "*",
					  rs[i].status);
		if (rs[i].real)
			rc |= wms__buf_append(b, "\"real\"", 6);
		else
			rc |= wms__buf_printf(b, "%zu", rs[i].bytes);
		rc |= wms__buf_printf(b, ",\"left\":%" PRIu32 "}", rs[i].left);
		first = 0;
	}
	rc |= wms__buf_printf(b, "},\"connections\":{\"accepted\":%" PRIu64 ",\"open\":%" PRIu64
				  "},\"schedule\":{\"windows\":%zu,\"elapsed_ms\":%" PRIu64
				  "},\"orders\":%zu}\n",
				  accepted, open_now, windows, t, orders);
	return rc ? -1 : 0;
}

/* The parameters of POST /control, by name; values NUL-terminated, the
 * body's length kept (it may hold NULs). */
enum {
	CA_FAULT, CA_OP, CA_PARAM, CA_CLEAR, CA_ADVANCE, CA_SCHEDULE,
	CA_REPLY, /* the keys below go with reply= */
	CA_STATUS, CA_CONTENT_TYPE, CA_NO_CONTENT_TYPE, CA_BODY, CA_PERFORM, CA_CONTENT_LENGTH,
	CA_HANG_AFTER, CA_TRICKLE_MS, CA_CLOSE, CA_TIMES,
	CA_COUNT
};

static const char *const control_keys[CA_COUNT] = {
	"fault", "op", "param", "clear", "advance_ms", "schedule", "reply", "status",
	"content_type", "no_content_type", "body", "perform", "content_length", "hang_after",
	"trickle_ms", "close", "times"
};

typedef struct control_args {
	char *v[CA_COUNT];
	size_t body_len;
	char bad[64]; /* an unknown parameter */
} control_args;

static void control_set(control_args *a, const char *key, size_t klen, const char *val, size_t vlen)
{
	int i;
	for (i = 0; i < CA_COUNT; i++)
		if (strlen(control_keys[i]) == klen && memcmp(key, control_keys[i], klen) == 0)
			break;
	if (i == CA_COUNT) {
		if (!a->bad[0])
			snprintf(a->bad, sizeof(a->bad), "%.*s", (int)(klen < 40 ? klen : 40), key);
		return;
	}
	free(a->v[i]);
	a->v[i] = malloc(vlen + 1);
	if (a->v[i]) {
		memcpy(a->v[i], val, vlen);
		a->v[i][vlen] = '\0';
		if (i == CA_BODY)
			a->body_len = vlen;
	}
}

static enum MHD_Result on_query_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				    const char *value)
{
	(void)kind;
	control_set(cls, key, strlen(key), value ? value : "", value ? strlen(value) : 0);
	return MHD_YES;
}

static int hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch |= 0x20;
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* application/x-www-form-urlencoded, decoded in place. */
static size_t url_decode(char *s, size_t len)
{
	size_t i, o = 0;
	for (i = 0; i < len; i++) {
		if (s[i] == '+') {
			s[o++] = ' ';
		} else if (s[i] == '%' && i + 2 < len && hexval(s[i + 1]) >= 0 &&
			   hexval(s[i + 2]) >= 0) {
			s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

static void parse_form(control_args *a, char *body, size_t len)
{
	size_t i = 0;
	while (i < len) {
		size_t end = i, eq;
		while (end < len && body[end] != '&')
			end++;
		for (eq = i; eq < end && body[eq] != '='; eq++)
			;
		if (end > i) {
			size_t kl = url_decode(body + i, eq - i), raw = eq < end ? end - eq - 1 : 0, vl;
			/* the raw trailing newline of `curl -d @file` and the like (an
			 * encoded %0A is meant and stays) */
			while (raw && (body[eq + raw] == '\n' || body[eq + raw] == '\r'))
				raw--;
			vl = raw ? url_decode(body + eq + 1, raw) : 0;
			control_set(a, body + i, kl, eq < end ? body + eq + 1 : "", vl);
		}
		i = end + 1;
	}
}

static int parse_u32(const char *s, uint32_t *out)
{
	uint64_t v;
	if (wms__parse_uint_str(s, 0, UINT32_MAX, &v) != WMS__NUM_OK)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* A 0/1 flag: "1", "true", "yes" / "0", "false", "no". */
static int parse_flag(const char *v, int *out)
{
	if (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes"))
		*out = 1;
	else if (!strcmp(v, "0") || !strcasecmp(v, "false") || !strcasecmp(v, "no"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* reply=... and its keys into a script (reply=none: *out NULL). 0, or -1 with msg. */
static int control_reply(const control_args *a, wms_sim__script **out, uint32_t *times, char *msg,
			 size_t size)
{
	wms_sim_reply rp = WMS_SIM_REPLY_INIT;
	uint32_t u32;
	uint64_t u64;
	int i, flag;

	*out = NULL;
	*times = 0;
	if (!strcasecmp(a->v[CA_REPLY], "none")) {
		for (i = CA_REPLY + 1; i < CA_COUNT; i++)
			if (a->v[i]) {
				snprintf(msg, size, "reply=none takes no %s", control_keys[i]);
				return -1;
			}
		return 0;
	}
	if (parse_flag(a->v[CA_REPLY], &flag) != 0 || !flag) {
		snprintf(msg, size, "reply must be 1 (script a reply) or none (clear it)");
		return -1;
	}
	for (i = CA_STATUS; i < CA_COUNT; i++) {
		const char *v = a->v[i];
		if (!v)
			continue;
		switch (i) {
		case CA_CONTENT_TYPE:
			rp.content_type = v;
			continue;
		case CA_BODY:
			rp.body = v;
			rp.body_len = a->body_len;
			continue;
		case CA_NO_CONTENT_TYPE:
		case CA_PERFORM:
		case CA_CLOSE:
			if (parse_flag(v, &flag) != 0)
				goto bad_number;
			*(i == CA_NO_CONTENT_TYPE ? &rp.no_content_type
			  : i == CA_PERFORM ? &rp.perform : &rp.close) = flag;
			continue;
		case CA_CONTENT_LENGTH:
		case CA_HANG_AFTER:
			if (wms_sim__parse_u64(v, &u64) != 0)
				goto bad_number;
			if (i == CA_CONTENT_LENGTH) {
				rp.lie_length = 1;
				rp.content_length = u64;
			} else {
				rp.hang = 1;
				rp.hang_after = u64;
			}
			continue;
		default:
			if (parse_u32(v, &u32) != 0)
				goto bad_number;
			if (i == CA_STATUS)
				rp.status = u32;
			else if (i == CA_TRICKLE_MS)
				rp.trickle_ms = u32;
			else
				rp.times = u32;
			continue;
		}
bad_number:
		snprintf(msg, size, "%s: '%.40s' is not a %s", control_keys[i], v,
			 i == CA_NO_CONTENT_TYPE || i == CA_PERFORM || i == CA_CLOSE
				 ? "flag (1 or 0)" : "non-negative integer");
		return -1;
	}
	if (wms_sim__script_new(out, &rp) != WMS_SIM_OK) {
		snprintf(msg, size, "%s", wms_sim_last_error());
		return -1;
	}
	*times = rp.times;
	return 0;
}

enum MHD_Result wms_sim__serve_control(wms_sim *s, struct MHD_Connection *c, wms_sim__req_ctx *r)
{
	control_args a;
	wms_sim_status st = WMS_SIM_OK;
	char msg[300] = "";
	wms__buf out = { NULL, 0, 0 };
	enum MHD_Result ret;
	wms_sim__window *w = NULL;
	size_t wn = 0;
	uint32_t param = 0, adv = 0, times = 0;
	wms_sim_fault kind = WMS_SIM_FAULT_NONE;
	wms_sim__script *sc = NULL, *old[2 * (SIM_OP_COUNT + 1)];
	const char *op;
	sim_op o = SIM_OP_NONE;
	int i;

	memset(&a, 0, sizeof(a));
	for (i = 0; i < 2 * (SIM_OP_COUNT + 1); i++)
		old[i] = NULL;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_query_arg, &a);
	if (r->body.data)
		parse_form(&a, r->body.data, r->body.len);
	op = a.v[CA_OP] && *a.v[CA_OP] ? a.v[CA_OP] : NULL;
	if (a.bad[0]) {
		snprintf(msg, sizeof(msg), "unknown parameter '%s' (fault, op, param, clear, "
			 "advance_ms, schedule, reply, ...)", a.bad);
		goto bad;
	}
	if (!a.v[CA_REPLY])
		for (i = CA_REPLY + 1; i < CA_COUNT; i++)
			if (a.v[i]) {
				snprintf(msg, sizeof(msg), "%s goes with reply=1", control_keys[i]);
				goto bad;
			}
	if (!a.v[CA_FAULT] && !a.v[CA_CLEAR] && !a.v[CA_ADVANCE] && !a.v[CA_SCHEDULE] &&
	    !a.v[CA_REPLY]) {
		snprintf(msg, sizeof(msg), "nothing to do: fault=KIND [op=OP] [param=N], clear=1, "
			 "advance_ms=N, schedule=TEXT, reply=1 [...] or reply=none");
		goto bad;
	}
	/* Check everything before changing anything. */
	if ((a.v[CA_PARAM] && parse_u32(a.v[CA_PARAM], &param) != 0) ||
	    (a.v[CA_ADVANCE] && parse_u32(a.v[CA_ADVANCE], &adv) != 0)) {
		snprintf(msg, sizeof(msg), "param and advance_ms must be integers 0..4294967295");
		goto bad;
	}
	if (a.v[CA_FAULT] && wms_sim_fault_parse(&kind, a.v[CA_FAULT]) != WMS_SIM_OK) {
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		goto bad;
	}
	if (op && ((o = wms_sim__op_from_name(op, strlen(op))) == SIM_OP_NONE ||
		   (a.v[CA_FAULT] && kind == WMS_SIM_FAULT_REFUSE) ||
		   (!a.v[CA_FAULT] && !a.v[CA_REPLY]))) {
		snprintf(msg, sizeof(msg), "op must name an operation (SubmitOrder, GetOrderStatus, "
			 "CancelOrder, GetStockLevel), go with fault= or reply=, and not with refuse");
		goto bad;
	}
	if (a.v[CA_REPLY] && control_reply(&a, &sc, &times, msg, sizeof(msg)) != 0)
		goto bad;
	if (a.v[CA_SCHEDULE] && wms_sim__parse_schedule(a.v[CA_SCHEDULE], &w, &wn) != WMS_SIM_OK) {
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		goto bad;
	}

	pthread_mutex_lock(&s->lock);
	if (a.v[CA_CLEAR]) {
		memset(&s->all, 0, sizeof(s->all));
		memset(s->per_op, 0, sizeof(s->per_op));
		wms_sim__uninstall_scripts(s, old);
		wms_sim__install_schedule(s, NULL, 0);
	}
	if (a.v[CA_SCHEDULE]) {
		wms_sim__install_schedule(s, w, wn);
		w = NULL;
	}
	if (a.v[CA_FAULT])
		st = wms_sim__set_fault_locked(s, op, kind, param);
	if (st == WMS_SIM_OK && a.v[CA_REPLY]) {
		if (!sc && !op) {
			wms_sim__uninstall_scripts(s, old + SIM_OP_COUNT + 1);
		} else {
			old[SIM_OP_COUNT + 1] = wms_sim__install_script(s, o, sc, times);
			sc = NULL;
		}
	}
	if (a.v[CA_ADVANCE])
		s->clock_offset_ns += (uint64_t)adv * NS_PER_MS;
	if (st == WMS_SIM_OK && wms_sim__refusing(s, wms_sim__mono_ns()) == s->listening) {
		/* The reply goes out before the listener closes (on_completed). */
		r->hold = 1;
		s->hold++;
	}
	s->requested++;
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
	wms_sim__unref_scripts(s, old);
	wms_sim__unref_scripts(s, old + SIM_OP_COUNT + 1);
	if (st != WMS_SIM_OK) {
		snprintf(msg, sizeof(msg), "%s", wms_sim_last_error());
		goto bad;
	}
	if (wms_sim__stats_json(s, &out) != 0) {
		wms__buf_free(&out);
		ret = MHD_NO;
		goto done;
	}
	ret = wms_sim__respond(c, 200, "application/json", out.data, out.len, NULL, NULL);
	wms__buf_free(&out);
	goto done;
bad:
	ret = wms_sim__respond_text(c, 400, msg);
done:
	wms_sim__script_free(sc);
	free(w);
	for (i = 0; i < CA_COUNT; i++)
		free(a.v[i]);
	return ret;
}
