/*
 * The replay transport (wms/fixture.h): each request is answered by the
 * fixture it matches, in any order or in sequence, with that fixture's reply
 * or fault; a request that matches none gets the nearest fixture's diff.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <libxml/tree.h>

#include "internal.h"
#include "transport/replay.h"
#include "wms/fixture.h"
#include "fixture/fixture.h"
#include "soap/soap.h" /* wms__xml_safe_parse */

static void sleep_ms(uint32_t ms)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ms / 1000u);
	ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static void default_mismatch(const char *diff_text, void *ctx)
{
	(void)ctx;
	fputs(diff_text, stderr);
	fflush(stderr);
}

static const char *op_name(const wms_http_request *req)
{
	return req->operation && *req->operation ? req->operation : "(unnamed)";
}

/* Answer with fixture `fx`: its reply or its fault, the delay honoured. */
static wms_status answer_with(const wms__fx_replay *r, const wms__fx_fixture *fx,
			 const wms_http_request *req, wms_http_response *resp, wms_error *err)
{
	uint32_t delay, deadline = req->timeout_ms;
	int late;
	char pbuf[96];
	const char *p = wms__fx_short_path(fx->path, pbuf, sizeof(pbuf));
	wms_status st;

	if (fx->fault == FAULT_NONE)
		delay = fx->delay_ms;
	else if (fx->has_after)
		delay = fx->after_ms;
	else
		delay = fx->fault == FAULT_TIMEOUT || fx->fault == FAULT_CONNECT_TIMEOUT ? deadline
											    : 0;
	late = deadline && delay >= deadline;
	if (r->real_time && (late ? deadline : delay))
		sleep_ms(late ? deadline : delay);

	switch (fx->fault) {
	case FAULT_TIMEOUT:
		return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
				 "replayed timeout (fixture %s)", p);
	case FAULT_CONNECT_TIMEOUT:
		return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_NOT_SENT,
				 "replayed connect timeout, nothing sent (fixture %s)", p);
	case FAULT_REFUSED:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
				 "replayed connection refused (fixture %s)", p);
	case FAULT_DNS:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT,
				 "replayed DNS failure: could not resolve host (fixture %s)", p);
	case FAULT_RESET:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_TRANSPORT, WMS_DELIVERY_UNKNOWN,
				 "replayed connection reset by peer (fixture %s)", p);
	case FAULT_RESET_BEFORE_SEND:
		if (late)
			break;
		return wms__fail(err, WMS_ERR_TRANSPORT, WMS_DELIVERY_NOT_SENT,
				 "replayed connection reset before the request left, nothing sent "
				 "(fixture %s)",
				 p);
	case FAULT_NONE:
		if (late)
			return wms__fail(err, WMS_ERR_TIMEOUT, WMS_DELIVERY_UNKNOWN,
					 "reply delayed %u ms by fixture %s, past the %u ms timeout",
					 (unsigned)delay, p, (unsigned)deadline);
		resp->status = fx->status;
		/* as a transport reads it; the client looks at it on a 503 or 429 */
		resp->retry_after_ms = fx->retry_after_ms;
		if (fx->content_type) {
			st = wms_http_response_set_content_type(resp, fx->content_type,
								strlen(fx->content_type));
			if (st != WMS_OK)
				return wms__fail(err, st, WMS_DELIVERY_ANSWERED, "out of memory");
		}
		st = wms_http_response_append(resp, fx->body ? fx->body : "", fx->body_len);
		if (st == WMS_ERR_TOO_LARGE) {
			if (err)
				err->http_status = fx->status;
			/* as the curl transport: a reply we did not read tells nothing */
			return wms__fail(err, st, WMS_DELIVERY_UNKNOWN,
					 "reply of %zu bytes (fixture %s) exceeds the %zu-byte limit",
					 fx->body_len, p, resp->max_body);
		}
		if (st != WMS_OK)
			return wms__fail(err, st, WMS_DELIVERY_ANSWERED, "out of memory");
		return WMS_OK;
	}
	/* A fault recorded after the deadline: the deadline wins, and a
	 * connect-phase fault's request (refused, dns, reset-before-send)
	 * still never left. */
	return wms__fail(err, WMS_ERR_TIMEOUT,
			 fx->fault == FAULT_RESET ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_NOT_SENT,
			 "replayed fault after %u ms, past the %u ms timeout (fixture %s)",
			 (unsigned)delay, (unsigned)deadline, p);
}

/* answer_with, and the cause a live call that failed so had (wms_cause):
 * a deadline passed before the request left reads as a connect timeout. */
static wms_status answer(const wms__fx_replay *r, const wms__fx_fixture *fx,
			 const wms_http_request *req, wms_http_response *resp, wms_error *err)
{
	wms_status st = answer_with(r, fx, req, resp, err);
	if (!err || st == WMS_OK)
		return st;
	if (st == WMS_ERR_TIMEOUT)
		err->cause = err->delivery == WMS_DELIVERY_NOT_SENT ? WMS_CAUSE_CONNECT_TIMEOUT
								    : WMS_CAUSE_TIMEOUT;
	else if (st == WMS_ERR_CONNECT)
		err->cause = fx->fault == FAULT_DNS ? WMS_CAUSE_DNS : WMS_CAUSE_REFUSED;
	else if (st == WMS_ERR_TRANSPORT)
		err->cause = WMS_CAUSE_RESET;
	return st;
}

/* Whether `fx` matches the parsed request (rendering into `scratch`). */
static wms_status matches(const wms__fx_replay *r, const wms__fx_fixture *fx, const char *action,
			  xmlDocPtr doc, wms__buf *scratch, int *yes)
{
	wms__fx_mask_set m = wms__fx_fixture_masks(r, fx);
	wms_status st;
	*yes = 0;
	if (strcmp(fx->soap_action, action) != 0)
		return WMS_OK;
	st = wms__fx_render_doc(scratch, doc, &m);
	if (st == WMS_OK)
		*yes = scratch->len == fx->canon_len && memcmp(scratch->data, fx->canon, fx->canon_len) == 0;
	return st;
}

/* Diff of fixture `fx` against the request (df owns the request's rendering). */
static wms_status diff_against(const wms__fx_replay *r, const wms__fx_fixture *fx, xmlDocPtr doc,
			       wms__fx_diff *df)
{
	wms__buf canon = { NULL, 0, 0 };
	wms__fx_mask_set m = wms__fx_fixture_masks(r, fx);
	wms_status st = wms__fx_render_doc(&canon, doc, &m);
	if (st == WMS_OK)
		st = wms__fx_diff_compute(df, fx->canon, fx->canon_len, canon.data ? canon.data : "", canon.len);
	if (st == WMS_OK) {
		df->own = canon.data; /* df->b points into it */
		canon.data = NULL;
	}
	wms__buf_free(&canon);
	return st;
}

/* A sequence's request after its last fixture was used: the report. */
static wms_status sequence_used_up(const wms__fx_replay *r, const char *op, const char *action,
				   xmlDocPtr doc, wms_error *err)
{
	wms__buf text = { NULL, 0, 0 }, canon = { NULL, 0, 0 };
	wms__fx_mask_set m = { r->masks, r->mask_count, NULL, 0 };
	wms_status st = wms__buf_printf(&text,
					"%s request after all %zu fixtures of the sequence were used "
					"(SOAPAction \"%s\")\n",
					op, r->count, action);
	if (st == WMS_OK)
		st = wms__fx_render_doc(&canon, doc, &m);
	if (st == WMS_OK)
		st = wms__buf_append(&text, canon.data, canon.len);
	wms__buf_free(&canon);
	if (st == WMS_OK)
		r->on_mismatch(text.data, r->mismatch_ctx);
	wms__buf_free(&text);
	if (st != WMS_OK)
		return wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory");
	return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			 "%s request after all %zu fixtures of the sequence were used", op, r->count);
}

/* In ANY order: the fixture with the request's action whose body is
 * nearest (*nearest, its diff in *best; (size_t)-1 when none has the
 * action), and how many have the action. */
static wms_status nearest_fixture(const wms__fx_replay *r, const char *action, xmlDocPtr doc,
				  wms__fx_diff *best, size_t *nearest, size_t *same_action)
{
	wms__fx_diff df;
	size_t i;
	wms_status st = WMS_OK;
	memset(&df, 0, sizeof(df));
	*nearest = (size_t)-1;
	*same_action = 0;
	for (i = 0; i < r->count && st == WMS_OK; i++) {
		if (strcmp(r->fx[i].soap_action, action) != 0)
			continue;
		(*same_action)++;
		st = diff_against(r, &r->fx[i], doc, &df);
		if (st != WMS_OK)
			break;
		if (*nearest == (size_t)-1 || df.cost < best->cost) {
			wms__fx_diff_free(best);
			*best = df;
			*nearest = i;
			memset(&df, 0, sizeof(df));
		} else {
			wms__fx_diff_free(&df);
		}
	}
	wms__fx_diff_free(&df);
	return st;
}

/* No fixture has the request's action: the report lists what is loaded, in
 * whole lines while the text stays within DIFF_TEXT_MAX, then says how many
 * fixtures it left out. */
static wms_status no_such_action(const wms__fx_replay *r, const char *op, const char *action,
				 wms__buf *text, wms_error *err)
{
	size_t i;
	wms_status st = wms__buf_printf(text, "no fixture has SOAPAction \"%s\" (%s request); loaded:\n",
					action, op);
	for (i = 0; i < r->count && st == WMS_OK; i++) {
		/* "  PATH: ACTION\n" */
		size_t line = strlen(r->fx[i].path) + strlen(r->fx[i].soap_action) + 5;
		if (text->len + line > DIFF_TEXT_MAX)
			break;
		st = wms__buf_printf(text, "  %s: %s\n", r->fx[i].path, r->fx[i].soap_action);
	}
	if (st == WMS_OK && i < r->count)
		st = wms__buf_printf(text, "... (list truncated: %zu more not listed)\n", r->count - i);
	if (st != WMS_OK)
		return st;
	r->on_mismatch(text->data, r->mismatch_ctx);
	return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			 "%s request matches no fixture: no fixture has SOAPAction \"%s\"", op, action);
}

/* Build the mismatch report: the diff text for on_mismatch, the summary on err. */
static wms_status mismatch(const wms__fx_replay *r, const wms_http_request *req, const char *action,
			   xmlDocPtr doc, size_t expected, wms_error *err)
{
	wms__buf text = { NULL, 0, 0 };
	wms__fx_diff best;
	size_t nearest = (size_t)-1, same_action = 0;
	char first[160], pbuf[96];
	const char *op = op_name(req);
	const wms__fx_fixture *fx;
	wms_status st = WMS_OK;

	memset(&best, 0, sizeof(best));
	if (r->order == WMS_REPLAY_SEQUENCE) {
		if (expected >= r->count)
			return sequence_used_up(r, op, action, doc, err);
		nearest = expected;
		st = diff_against(r, &r->fx[nearest], doc, &best);
		same_action = strcmp(r->fx[nearest].soap_action, action) == 0;
	} else {
		st = nearest_fixture(r, action, doc, &best, &nearest, &same_action);
	}
	if (st != WMS_OK)
		goto done;
	if (nearest == (size_t)-1) {
		st = no_such_action(r, op, action, &text, err);
		goto done;
	}
	fx = &r->fx[nearest];
	st = wms__buf_printf(&text, "%s request matches no fixture; %s fixture %s (%s):\n", op,
			     r->order == WMS_REPLAY_SEQUENCE ? "the next" : "nearest", fx->path,
			     fx->name);
	if (st == WMS_OK && !same_action)
		st = wms__buf_printf(&text, "-SOAPAction: %s\n+SOAPAction: %s\n", fx->soap_action,
				     action);
	if (st == WMS_OK)
		st = wms__buf_printf(&text, "--- fixture %s\n+++ request\n", fx->name);
	if (st == WMS_OK)
		st = wms__fx_diff_render(&text, &best);
	if (st != WMS_OK)
		goto done;
	r->on_mismatch(text.data, r->mismatch_ctx);
	if (best.cost)
		wms__fx_diff_first(&best, first, sizeof(first));
	else
		snprintf(first, sizeof(first), "body equal");
	if (!same_action)
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "%s request: the next fixture %s expects SOAPAction \"%s\", not \"%s\"",
			       op, wms__fx_short_path(fx->path, pbuf, sizeof(pbuf)), fx->soap_action,
			       action);
	else
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "%s request matches no fixture; %s %s differs by %zu line(s), %s", op,
			       r->order == WMS_REPLAY_SEQUENCE ? "next" : "nearest",
			       wms__fx_short_path(fx->path, pbuf, sizeof(pbuf)), best.cost, first);
done:
	if (st == WMS_ERR_NOMEM)
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory building the fixture diff");
	wms__fx_diff_free(&best);
	wms__buf_free(&text);
	return st;
}

static wms_status replay_send(wms_transport *self, const wms_http_request *req,
			      wms_http_response *resp, wms_error *err)
{
	wms__fx_replay *r = (wms__fx_replay *)self;
	const char *action;
	xmlDocPtr doc = NULL;
	wms__buf scratch = { NULL, 0, 0 };
	size_t i, chosen = (size_t)-1, expected = 0;
	char why[200];
	wms_status st = WMS_OK;
	int yes = 0;

	if (!self || !req || !resp)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay transport: NULL request or response");
	action = req->soap_action ? req->soap_action : "";
	doc = wms__xml_safe_parse(req->body, req->body_len, "request", NULL, why, sizeof(why));
	if (!doc) {
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "%s request body cannot be matched: %s", op_name(req), why);
		goto done;
	}
	if (r->order == WMS_REPLAY_SEQUENCE) {
		pthread_mutex_lock(&r->lock);
		expected = r->cursor;
		if (expected < r->count)
			st = matches(r, &r->fx[expected], action, doc, &scratch, &yes);
		if (st == WMS_OK && yes) {
			chosen = expected;
			r->cursor++;
			r->fx[chosen].used++;
			r->hits++;
		}
		pthread_mutex_unlock(&r->lock);
	} else {
		for (i = 0; i < r->count && st == WMS_OK; i++) {
			st = matches(r, &r->fx[i], action, doc, &scratch, &yes);
			if (st == WMS_OK && yes) {
				chosen = i;
				break;
			}
		}
		if (chosen != (size_t)-1) {
			pthread_mutex_lock(&r->lock);
			r->fx[chosen].used++;
			r->hits++;
			pthread_mutex_unlock(&r->lock);
		}
	}
	if (st != WMS_OK) {
		st = wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory matching fixtures");
		goto done;
	}
	if (chosen == (size_t)-1) {
		st = mismatch(r, req, action, doc, expected, err);
		if (st == WMS_OK) /* cannot happen: a mismatch always reports */
			st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT, "no fixture matches");
		goto done;
	}
	xmlFreeDoc(doc);
	doc = NULL;
	wms__buf_free(&scratch);
	st = answer(r, &r->fx[chosen], req, resp, err);
done:
	if (doc)
		xmlFreeDoc(doc);
	wms__buf_free(&scratch);
	return st;
}

static void replay_free(wms_transport *self)
{
	wms__fx_replay *r = (wms__fx_replay *)self;
	size_t i;
	if (!r)
		return;
	for (i = 0; i < r->count; i++)
		wms__fx_fixture_free(&r->fx[i]);
	wms__free(r->fx);
	for (i = 0; i < r->mask_count; i++)
		wms__free(r->masks[i]);
	wms__free(r->masks);
	pthread_mutex_destroy(&r->lock);
	wms__free(r);
}

wms_status wms_replay_options_init(wms_replay_options *opts, unsigned version)
{
	wms_replay_options def = WMS_REPLAY_OPTIONS_INIT;
	if (!opts || version != WMS_REPLAY_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	*opts = def;
	return WMS_OK;
}

static wms_status check_replay_options(const wms_replay_options *o, wms_error *err)
{
	size_t i;
	if (o->version != WMS_REPLAY_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options version %u is not supported (expected %u)", o->version,
				 WMS_REPLAY_OPTIONS_VERSION);
	if (o->file_count && !o->files)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: file_count is %zu but files is NULL", o->file_count);
	for (i = 0; i < o->file_count; i++)
		if (!o->files[i] || !*o->files[i])
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "replay options: files[%zu] is NULL or empty", i);
	if (!o->file_count && (!o->directory || !*o->directory))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: no fixture files and no directory");
	switch (o->order) {
	case WMS_REPLAY_ANY:
	case WMS_REPLAY_SEQUENCE:
		break;
	default:
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: unknown order %d", (int)o->order);
	}
	if (o->masked_count && !o->masked_elements)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "replay options: masked_count is %zu but masked_elements is NULL",
				 o->masked_count);
	for (i = 0; i < o->masked_count; i++)
		if (!o->masked_elements[i] || !*o->masked_elements[i])
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "replay options: masked_elements[%zu] is NULL or empty", i);
	return WMS_OK;
}

/* One fixture held in memory, in place of opts' files and directory. */
typedef struct mem_fixture {
	const char *name;
	const char *data;
	size_t len;
} mem_fixture;

/* The transport over opts' fixtures (checked already), or over `mem` alone. */
static wms_status replay_new(wms_transport **out, const wms_replay_options *opts,
			     const mem_fixture *mem, wms_error *err)
{
	wms__fx_replay *r = NULL;
	char **dir_files = NULL;
	size_t ndir = 0, i, total;
	int locked = 0;
	wms_status st;

	wms__fx_xml_init();

	r = wms__calloc(1, sizeof(*r));
	if (!r) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if (pthread_mutex_init(&r->lock, NULL) != 0) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	locked = 1;
	r->parent.version = WMS_TRANSPORT_VERSION;
	r->parent.send = replay_send;
	r->parent.free = replay_free;
	r->order = opts->order;
	r->on_mismatch = opts->on_mismatch ? opts->on_mismatch : default_mismatch;
	r->mismatch_ctx = opts->payload;
	r->real_time = opts->real_time;
	if (opts->masked_count) {
		r->masks = wms__calloc(opts->masked_count, sizeof(*r->masks));
		if (!r->masks) {
			st = WMS_ERR_NOMEM;
			goto done;
		}
		for (i = 0; i < opts->masked_count; i++) {
			r->masks[i] = wms__strdup(opts->masked_elements[i]);
			if (!r->masks[i]) {
				st = WMS_ERR_NOMEM;
				goto done;
			}
			r->mask_count++;
		}
	}
	if (!mem && opts->directory && *opts->directory) {
		st = wms__fx_list_dir(opts->directory, &dir_files, &ndir, err);
		if (st != WMS_OK)
			goto done;
	}
	total = mem ? 1 : opts->file_count + ndir;
	if (!total) {
		st = wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_NOT_SENT,
			       "fixture directory %s holds no *.xml fixture", opts->directory);
		goto done;
	}
	r->fx = wms__calloc(total, sizeof(*r->fx));
	if (!r->fx) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	for (i = 0; i < total; i++) {
		const char *path = i < opts->file_count ? opts->files[i] : dir_files[i - opts->file_count];
		r->count++;
		if (mem)
			st = wms__fx_load_fixture_bytes(r, &r->fx[i], mem->name, mem->data, mem->len, err);
		else
			st = wms__fx_load_fixture(r, &r->fx[i], path, err);
		if (st != WMS_OK)
			goto done;
	}
	*out = &r->parent;
	r = NULL;
done:
	if (st == WMS_ERR_NOMEM)
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "out of memory creating the replay transport");
	if (dir_files) {
		for (i = 0; i < ndir; i++)
			wms__free(dir_files[i]);
		wms__free(dir_files);
	}
	if (r) {
		if (!locked) {
			wms__free(r);
		} else {
			replay_free(&r->parent);
		}
	}
	return st;
}

wms_status wms_replay_transport_new(wms_transport **out, const wms_replay_options *opts,
				    wms_error *err)
{
	wms_status st;

	wms_error_clear(err); /* an earlier call's error does not outlive a success */
	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_replay_transport_new: out is NULL");
	*out = NULL;
	if (!opts)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_replay_transport_new: options are required (the fixtures to load)");
	st = check_replay_options(opts, err);
	if (st != WMS_OK)
		return st;
	return replay_new(out, opts, NULL, err);
}

wms_status wms__replay_transport_from_memory(wms_transport **out, const char *data, size_t len,
					     const char *name, const wms_replay_options *opts,
					     wms_error *err)
{
	wms_replay_options o = WMS_REPLAY_OPTIONS_INIT;
	mem_fixture mem;
	wms_status st;

	if (!out)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms__replay_transport_from_memory: out is NULL");
	*out = NULL;
	if (!data && len)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms__replay_transport_from_memory: NULL data of %zu bytes", len);
	mem.name = name && *name ? name : "<memory>";
	mem.data = data ? data : "";
	mem.len = len;
	if (opts)
		o = *opts;
	o.files = &mem.name;
	o.file_count = 1;
	o.directory = NULL;
	st = check_replay_options(&o, err);
	if (st != WMS_OK)
		return st;
	return replay_new(out, &o, &mem, err);
}

size_t wms_replay_transport_hits(wms_transport *transport)
{
	wms__fx_replay *r = (wms__fx_replay *)transport;
	size_t n;
	if (!transport || transport->send != replay_send)
		return 0;
	pthread_mutex_lock(&r->lock);
	n = r->hits;
	pthread_mutex_unlock(&r->lock);
	return n;
}

size_t wms_replay_transport_unused(wms_transport *transport)
{
	wms__fx_replay *r = (wms__fx_replay *)transport;
	size_t n = 0, i;
	if (!transport || transport->send != replay_send)
		return 0;
	pthread_mutex_lock(&r->lock);
	for (i = 0; i < r->count; i++)
		if (!r->fx[i].used)
			n++;
	pthread_mutex_unlock(&r->lock);
	return n;
}
