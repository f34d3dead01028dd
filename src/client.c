/*
 * The client: every operation is breaker -> validate -> build -> send ->
 * parse -> classify -> record, with optional retries inside the breaker.
 * The breaker is asked first, so an open breaker answers before any XML is
 * built or any socket touched.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>
#include <time.h>
#include <stdatomic.h>
#include <sys/random.h>
#include "internal.h"
#include "client_internal.h"
#include "soap.h"
#include "wms/client.h"
#include "wms/sys/transport.h"

/* What the state-change hook of one breaker needs. */
typedef struct breaker_hook {
	wms_client *client;
	wms_breaker *breaker;  /* set once made; the gauge reads its state */
	const char *operation; /* NULL for the client-wide breaker */
	wms_breaker_event_fn user_fn;
	void *user_ctx;
} breaker_hook;

struct wms_client {
	char *endpoint;
	char *user_agent;
	char *ca_file;
	char *ca_path;
	wms_soap_version soap_version;
	uint32_t connect_timeout_ms;
	uint32_t timeout_ms;
	uint32_t stall_timeout_ms;
	size_t max_reply_bytes;
	/* breakers[op]: the same pointer for every op in PER_CLIENT scope */
	wms_breaker *breakers[WMS__OP_COUNT];
	breaker_hook hooks[WMS__OP_COUNT];
	size_t breaker_count;
	int own_breakers;
	wms_transport *transport;
	wms_retry_options retry;
	wms_error_filter_fn error_filter;
	void *error_filter_ctx;
	wms_fallbacks fallbacks;
	int has_fallbacks;
	wms_metric_fn on_metric;
	void *metric_ctx;
	char *state_metric; /* "<prefix>.circuit_breaker_state" */
	/* TLS and authentication */
	char *client_cert;
	char *client_key;
	char *pinned_public_key;
	char *http_username;
	char *http_password;
	wms__wsse wsse;
	char *wsse_username;
	char *wsse_password;
	/* wire log and correlation ids */
	wms_wire_log_fn on_wire;
	void *wire_ctx;
	size_t wire_max;
	char id_prefix[16];
	_Atomic uint64_t call_seq;
	/* libxml2 workspaces, one per call in flight (soap.h) */
	wms__xml_pool *xml_pool;
};

wms_status wms_client_options_init(wms_client_options *opts, unsigned version)
{
	if (!opts || version != WMS_CLIENT_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, sizeof(*opts));
	opts->version = version;
	opts->breaker_options.version = WMS_BREAKER_OPTIONS_VERSION;
	return WMS_OK;
}

static int has_scheme(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

/* Passwords are wiped before their memory goes back. */
static void free_secret(char *p)
{
	if (p) {
		volatile char *v = p;
		while (*v)
			*v++ = '\0';
		wms__free(p);
	}
}

void wms_client_free(wms_client *c)
{
	size_t i;
	if (!c)
		return;
	if (c->transport && c->transport->free)
		c->transport->free(c->transport);
	wms__xml_pool_free(c->xml_pool);
	if (c->own_breakers)
		for (i = 0; i < WMS__OP_COUNT; i++)
			if (c->breakers[i] && (i == 0 || c->breakers[i] != c->breakers[0]))
				wms_breaker_free(c->breakers[i]);
	wms__free(c->endpoint);
	wms__free(c->user_agent);
	wms__free(c->ca_file);
	wms__free(c->ca_path);
	wms__free(c->state_metric);
	wms__free(c->client_cert);
	wms__free(c->client_key);
	wms__free(c->pinned_public_key);
	wms__free(c->http_username);
	free_secret(c->http_password);
	wms__free(c->wsse_username);
	free_secret(c->wsse_password);
	wms__free(c);
}

static wms_status dup_opt(char **dst, const char *src)
{
	if (!src)
		return WMS_OK;
	*dst = wms__strdup(src);
	return *dst ? WMS_OK : WMS_ERR_NOMEM;
}

static void emit_state(wms_client *c, const breaker_hook *h, wms_breaker_state state,
		       const char *name)
{
	wms_metric m;
	if (!c->on_metric)
		return;
	/* The gauge has seed 000's three values: a manual state reads as what
	 * callers get from it (forced open rejects, disabled lets all through). */
	m.name = c->state_metric;
	m.value = state == WMS_BREAKER_FORCED_OPEN ? 1.0
		  : state == WMS_BREAKER_DISABLED ? 0.0
						  : (double)state;
	m.breaker = name;
	m.operation = h->operation;
	c->on_metric(&m, c->metric_ctx);
}

static void on_breaker_event(const wms_breaker_event *ev, void *ctx)
{
	breaker_hook *h = ctx;
	/* The state now, not ev->to: events made on two threads at once may
	 * arrive in either order, and the gauge must end on the true state. */
	emit_state(h->client, h, h->breaker ? wms_breaker_state_get(h->breaker) : ev->to,
		   ev->name);
	if (h->user_fn)
		h->user_fn(ev, h->user_ctx);
}

static wms_status make_breakers(wms_client *c, const wms_client_options *opts, wms_error *err)
{
	wms_breaker_options bo = opts->breaker_options;
	char name[96];
	const char *base = bo.name ? bo.name : "wms";
	size_t i, n = opts->breaker_scope == WMS_BREAKER_PER_OPERATION ? WMS__OP_COUNT : 1;
	wms_status st;

	for (i = 0; i < n; i++) {
		breaker_hook *h = &c->hooks[i];
		h->client = c;
		h->operation = n > 1 ? wms__op_name((wms__op)i) : NULL;
		h->user_fn = bo.on_state_change;
		h->user_ctx = bo.event_ctx;
		if (n > 1) {
			/* a long base is cut on a whole character, as a name must be */
			snprintf(name, sizeof(name), "%s.%s", base, h->operation);
			name[wms__utf8_whole(name, strlen(name))] = '\0';
			bo.name = name;
		}
		bo.on_state_change = on_breaker_event;
		bo.event_ctx = h;
		st = wms_breaker_new(&c->breakers[i], &bo);
		if (st != WMS_OK) {
			/* own_breakers is not set yet, so wms_client_free will not
			 * free the ones already made: free them here */
			while (i--) {
				wms_breaker_free(c->breakers[i]);
				c->breakers[i] = NULL;
			}
			return wms__fail(err, st, WMS_DELIVERY_NOT_SENT,
					 st == WMS_ERR_INVALID_ARG
						 ? "breaker_options: a value is out of range"
						 : "cannot create the breaker");
		}
		h->breaker = c->breakers[i];
		bo.on_state_change = h->user_fn;
		bo.event_ctx = h->user_ctx;
	}
	for (; i < WMS__OP_COUNT; i++) {
		c->breakers[i] = c->breakers[0];
		c->hooks[i] = c->hooks[0];
	}
	c->breaker_count = n;
	c->own_breakers = 1;
	for (i = 0; i < n; i++) {
		wms_breaker_snapshot snap;
		wms_breaker_snapshot_get(&snap, c->breakers[i]);
		emit_state(c, &c->hooks[i], snap.state, snap.name);
	}
	return WMS_OK;
}

/* A readable file (dir 0) or searchable directory (dir 1), or NULL. */
static wms_status check_path(wms_error *err, const char *what, const char *path, int dir)
{
	struct stat sb;
	char why[128];

	if (!path)
		return WMS_OK;
	if (!*path)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: empty path (leave it NULL for none)", what);
	if (stat(path, &sb) == 0 && (dir ? !S_ISDIR(sb.st_mode) : S_ISDIR(sb.st_mode)))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: \"%s\" is %s", what, path, dir ? "not a directory" : "a directory");
	if (access(path, dir ? R_OK | X_OK : R_OK) != 0) {
		int e = errno;
		if (strerror_r(e, why, sizeof(why)) != 0)
			snprintf(why, sizeof(why), "error %d", e);
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s: cannot %s \"%s\": %s", what, dir ? "search" : "read", path, why);
	}
	return WMS_OK;
}

static wms_status check_retry(wms_retry_options *r, wms_error *err)
{
	if (r->max_attempts == 0)
		r->max_attempts = 1;
	if (!r->initial_backoff_ms)
		r->initial_backoff_ms = 100;
	if (!r->max_backoff_ms)
		r->max_backoff_ms = 2000;
	if (!r->backoff_multiplier_pct)
		r->backoff_multiplier_pct = 200;
	if (r->max_attempts > 10 || r->backoff_multiplier_pct < 100 ||
	    r->backoff_multiplier_pct > 1000 || r->initial_backoff_ms > WMS_MAX_TIMEOUT_MS ||
	    r->max_backoff_ms > WMS_MAX_TIMEOUT_MS || r->max_backoff_ms < r->initial_backoff_ms)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "retry: max_attempts must be 1-10, backoff_multiplier_pct 100-1000, "
				 "initial_backoff_ms <= max_backoff_ms <= %u", WMS_MAX_TIMEOUT_MS);
	return WMS_OK;
}

wms_status wms_client_new(wms_client **out, const wms_client_options *opts, wms_error *err)
{
	wms_client *c = NULL;
	wms_transport *transport = opts ? opts->transport : NULL;
	wms_retry_options retry;
	wms_status st;
	size_t i;

	wms_error_clear(err);
	if (!out) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "out is NULL");
		goto fail;
	}
	*out = NULL;
	if (!opts) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "options are required (the endpoint has no default)");
		goto fail;
	}
	if (opts->version != WMS_CLIENT_OPTIONS_VERSION) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "options version %u is not supported (this libwms knows %u)",
			       opts->version, WMS_CLIENT_OPTIONS_VERSION);
		goto fail;
	}
	if (!transport && (!opts->endpoint || !has_scheme(opts->endpoint))) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "endpoint must be an http:// or https:// URL");
		goto fail;
	}
	if (opts->soap_version != WMS_SOAP_11 && opts->soap_version != WMS_SOAP_12) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "soap_version must be WMS_SOAP_11 or WMS_SOAP_12");
		goto fail;
	}
	if (opts->breaker_scope != WMS_BREAKER_PER_CLIENT &&
	    opts->breaker_scope != WMS_BREAKER_PER_OPERATION) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "breaker_scope must be PER_CLIENT or PER_OPERATION");
		goto fail;
	}
	if (opts->timeout_ms > WMS_MAX_TIMEOUT_MS || opts->connect_timeout_ms > WMS_MAX_TIMEOUT_MS ||
	    opts->stall_timeout_ms > WMS_MAX_TIMEOUT_MS) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "timeouts must be at most %u ms", WMS_MAX_TIMEOUT_MS);
		goto fail;
	}
	if (opts->max_idle_connections > 1024) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "max_idle_connections must be at most 1024 (got %u)",
			       (unsigned)opts->max_idle_connections);
		goto fail;
	}
	if (opts->max_reply_bytes > (size_t)1 << 30) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "max_reply_bytes must be at most 1 GiB");
		goto fail;
	}
	retry = opts->retry;
	st = check_retry(&retry, err);
	if (st != WMS_OK)
		goto fail;
	c = wms__calloc(1, sizeof(*c));
	if (!c) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	c->retry = retry;
	c->error_filter = opts->error_filter;
	c->error_filter_ctx = opts->error_filter_ctx;
	if (opts->fallbacks) {
		c->fallbacks = *opts->fallbacks;
		c->has_fallbacks = 1;
	}
	c->on_metric = opts->on_metric;
	c->metric_ctx = opts->metric_ctx;
	c->soap_version = opts->soap_version;
	c->timeout_ms = opts->timeout_ms ? opts->timeout_ms : WMS_DEFAULT_TIMEOUT_MS;
	c->connect_timeout_ms =
		opts->connect_timeout_ms ? opts->connect_timeout_ms : WMS_DEFAULT_CONNECT_TIMEOUT_MS;
	if (c->connect_timeout_ms > c->timeout_ms)
		c->connect_timeout_ms = c->timeout_ms; /* the total deadline always wins */
	c->stall_timeout_ms =
		opts->stall_timeout_ms ? opts->stall_timeout_ms : WMS_DEFAULT_STALL_TIMEOUT_MS;
	c->max_reply_bytes = opts->max_reply_bytes ? opts->max_reply_bytes : WMS_DEFAULT_MAX_REPLY_BYTES;
	{
		char metric[128];
		snprintf(metric, sizeof(metric), "%s.circuit_breaker_state",
			 opts->metric_prefix ? opts->metric_prefix : "fulfillment");
		if (dup_opt(&c->state_metric, metric) ||
		    dup_opt(&c->endpoint, opts->endpoint ? opts->endpoint : "") ||
		    dup_opt(&c->user_agent, opts->user_agent ? opts->user_agent : "libwms/" WMS_VERSION) ||
		    dup_opt(&c->ca_file, opts->ca_file) || dup_opt(&c->ca_path, opts->ca_path)) {
			st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
			goto fail;
		}
	}
	if (!opts->http_username != !opts->http_password) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "http_username and http_password go together");
		goto fail;
	}
	if (opts->wsse_mode != WMS_WSSE_NONE &&
	    ((opts->wsse_mode != WMS_WSSE_PASSWORD_TEXT &&
	      opts->wsse_mode != WMS_WSSE_PASSWORD_DIGEST) ||
	     !opts->wsse_username || !*opts->wsse_username || !opts->wsse_password)) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "wsse_mode needs wsse_username and wsse_password");
		goto fail;
	}
	/* Refused here, not on every call: what the envelope cannot carry. */
	if (opts->wsse_mode != WMS_WSSE_NONE &&
	    ((st = wms__validate_text(opts->wsse_username, "wsse_username", 0, err)) != WMS_OK ||
	     (opts->wsse_mode == WMS_WSSE_PASSWORD_TEXT && *opts->wsse_password &&
	      (st = wms__validate_text(opts->wsse_password, "wsse_password", 1, err)) != WMS_OK)))
		goto fail;
	if (!opts->client_cert != !opts->client_key) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "client_cert and client_key go together");
		goto fail;
	}
	/* The libcurl transport reads these files on every new connection: a
	 * path that is wrong today is said now, not as a TLS failure on the
	 * first call (a custom transport may read them otherwise, or not). */
	if (!transport &&
	    ((st = check_path(err, "ca_file", opts->ca_file, 0)) != WMS_OK ||
	     (st = check_path(err, "ca_path", opts->ca_path, 1)) != WMS_OK ||
	     (st = check_path(err, "client_cert", opts->client_cert, 0)) != WMS_OK ||
	     (st = check_path(err, "client_key", opts->client_key, 0)) != WMS_OK ||
	     (opts->pinned_public_key && strncmp(opts->pinned_public_key, "sha256//", 8) != 0 &&
	      (st = check_path(err, "pinned_public_key", opts->pinned_public_key, 0)) != WMS_OK)))
		goto fail;
	if (dup_opt(&c->client_cert, opts->client_cert) ||
	    dup_opt(&c->client_key, opts->client_key) ||
	    dup_opt(&c->pinned_public_key, opts->pinned_public_key) ||
	    dup_opt(&c->http_username, opts->http_username) ||
	    dup_opt(&c->http_password, opts->http_password) ||
	    dup_opt(&c->wsse_username, opts->wsse_username) ||
	    dup_opt(&c->wsse_password, opts->wsse_password)) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	c->wsse.mode = opts->wsse_mode;
	c->wsse.username = c->wsse_username;
	c->wsse.password = c->wsse_password;
	c->on_wire = opts->on_wire;
	c->wire_ctx = opts->wire_ctx;
	c->wire_max = opts->wire_log_max_bytes ? opts->wire_log_max_bytes : 4096;
	{
		/* correlation ids: a random per-client prefix and a counter */
		unsigned char rnd[4] = { 0 };
		uint64_t t = wms__now_ns();
		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
			memcpy(rnd, &t, sizeof(rnd));
		snprintf(c->id_prefix, sizeof(c->id_prefix), "wms-%02x%02x%02x%02x", rnd[0], rnd[1],
			 rnd[2], rnd[3]);
	}
	if (opts->breaker) {
		for (i = 0; i < WMS__OP_COUNT; i++) {
			c->breakers[i] = opts->breaker;
			c->hooks[i].client = c;
		}
		c->breaker_count = 1;
	} else {
		st = make_breakers(c, opts, err);
		if (st != WMS_OK)
			goto fail;
	}
	wms__xml_init();
	st = wms__xml_pool_new(&c->xml_pool, opts->max_idle_connections);
	if (st != WMS_OK) {
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the XML workspace pool");
		goto fail;
	}
	if (!transport) {
		st = wms__curl_transport_new(&transport, opts->max_idle_connections);
		if (st != WMS_OK) {
			wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the HTTP transport");
			goto fail;
		}
	}
	c->transport = transport;
	transport = NULL;
	*out = c;
	return WMS_OK;
fail:
	if (transport && transport->free)
		transport->free(transport);
	wms_client_free(c);
	return err ? err->status : st;
}

wms_breaker *wms_client_breaker(wms_client *c)
{
	return c ? c->breakers[0] : NULL;
}

wms_breaker *wms_client_breaker_for(wms_client *c, const char *operation)
{
	size_t i;
	if (!c || !operation)
		return NULL;
	for (i = 0; i < WMS__OP_COUNT; i++)
		if (strcmp(operation, wms__op_name((wms__op)i)) == 0)
			return c->breakers[i];
	return NULL;
}

size_t wms_client_breakers(wms_breaker **out, size_t max, wms_client *c)
{
	size_t i;
	if (!c)
		return 0;
	for (i = 0; i < c->breaker_count && i < max && out; i++)
		out[i] = c->breakers[i];
	return c->breaker_count;
}

wms_status wms_stock_reply_new(wms_stock_reply **out, size_t count)
{
	wms_stock_reply *r;
	if (!out)
		return WMS_ERR_INVALID_ARG;
	*out = NULL;
	if (count > WMS_MAX_SKUS)
		return WMS_ERR_INVALID_ARG;
	r = wms__calloc(1, sizeof(*r));
	if (!r)
		return WMS_ERR_NOMEM;
	if (count) {
		r->levels = wms__calloc(count, sizeof(*r->levels));
		if (!r->levels) {
			wms__free(r);
			return WMS_ERR_NOMEM;
		}
	}
	r->count = count;
	*out = r;
	return WMS_OK;
}

/* ---- classification -------------------------------------------------- */


wms_outcome wms__default_outcome(const wms_error *err, int *record)
{
	*record = 1;
	switch (err->status) {
	case WMS_OK:
		return WMS_OUTCOME_SUCCESS;
	case WMS_ERR_SOAP_FAULT:
		/* Server/Receiver: the WMS is in trouble. Client/Sender and the
		 * envelope-level codes reject the request itself. */
		if (wms__fault_is_request_error(err->fault_code))
			return WMS_OUTCOME_IGNORED;
		return WMS_OUTCOME_FAILURE; /* Server, Receiver, and a fault too broken to say */
	case WMS_ERR_HTTP:
		return err->http_status >= 500 ? WMS_OUTCOME_FAILURE : WMS_OUTCOME_IGNORED;
	case WMS_ERR_CONNECT:
	case WMS_ERR_TIMEOUT:
	case WMS_ERR_TRANSPORT:
	case WMS_ERR_TLS:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
		return WMS_OUTCOME_FAILURE;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
		break;
	}
	/* Our own trouble, not the WMS's: hand the permit back. */
	*record = 0;
	return WMS_OUTCOME_IGNORED;
}

wms_outcome wms_error_outcome(const wms_error *err)
{
	int record;
	if (!err)
		return WMS_OUTCOME_IGNORED;
	return wms__default_outcome(err, &record);
}

/* ---- one exchange ------------------------------------------------------ */

static const char *reason_phrase(long status)
{
	switch (status) {
	case 400: return " Bad Request";
	case 401: return " Unauthorized";
	case 403: return " Forbidden";
	case 404: return " Not Found";
	case 405: return " Method Not Allowed";
	case 408: return " Request Timeout";
	case 413: return " Payload Too Large";
	case 415: return " Unsupported Media Type";
	case 429: return " Too Many Requests";
	case 500: return " Internal Server Error";
	case 502: return " Bad Gateway";
	case 503: return " Service Unavailable";
	case 504: return " Gateway Timeout";
	default: return "";
	}
}

/* Interpret an HTTP reply: a SOAP answer, a SOAP fault, or an HTTP error. */
static wms_status interpret(wms__xml_ws *ws, wms__op op, void *out,
			    const wms_http_response *resp, size_t max, uint64_t deadline_ns,
			    wms_error *err)
{
	wms_status st;
	long code = resp->status;
	int ok_status = code >= 200 && code < 300;

	if (resp->overflow)
		return wms__fail(err, WMS_ERR_TOO_LARGE, WMS_DELIVERY_UNKNOWN,
				 "reply exceeds max_reply_bytes (%zu)", max);
	if (ok_status || (code >= 400 && resp->body_len)) {
		st = wms__parse_reply_ws(ws, op, out, resp->body ? resp->body : "", resp->body_len,
					 resp->content_type, max, deadline_ns, err);
		if (st == WMS_ERR_SOAP_FAULT) {
			err->delivery = WMS_DELIVERY_ANSWERED;
			err->http_status = code;
			return st;
		}
		if (ok_status) {
			err->http_status = code;
			err->delivery = st == WMS_OK ? WMS_DELIVERY_ANSWERED : WMS_DELIVERY_UNKNOWN;
			return st;
		}
		/* Out of memory while reading the error body: that, not the status. */
		if (st == WMS_ERR_NOMEM) {
			err->http_status = code;
			err->delivery = code >= 500 ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_ANSWERED;
			return st;
		}
		/* An error status whose body is no SOAP fault: an HTTP error. */
		if (st == WMS_OK && op == WMS__OP_GET_STOCK_LEVEL && out) {
			wms_stock_reply_free(*(wms_stock_reply **)out);
			*(wms_stock_reply **)out = NULL;
		}
	}
	/* drop what the parser said (fault fields, message), keep the call's identity */
	err->fault_code[0] = err->fault_string[0] = err->wms_code[0] = '\0';
	st = wms__fail(err, WMS_ERR_HTTP,
		       code >= 500 ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_ANSWERED,
		       "HTTP %ld%s from the endpoint (%s, %zu bytes)", code, reason_phrase(code),
		       resp->content_type && *resp->content_type ? resp->content_type
								 : "no content type",
		       resp->body_len);
	err->http_status = code;
	return st;
}

/* The first `s` (n bytes) at or after `from` in [.., end), NULL if none;
 * cached in *seen (`end`: none), as the caller only moves forward: each
 * byte is searched once. */
static const char *next_of(const char **seen, const char *from, const char *end, const char *s,
			   size_t n)
{
	if (*seen != end && (!*seen || *seen < from)) {
		*seen = wms__find(from, end, s, n);
		if (!*seen)
			*seen = end;
	}
	return *seen == end ? NULL : *seen;
}

/* Copy `body` into `out` with the content of every WS-Security Password
 * and Nonce element replaced by REDACTED (we build those with the wsse
 * prefix; a reply is scrubbed the same way in case a WMS echoes them).
 * Linear in `len`: the next '>' and "</" are found once, not from each
 * tag to the end of the body (a reply of 4 MiB of "<wsse:Password " was
 * quadratic). */
static wms_status redact(wms__buf *out, const char *body, size_t len)
{
	static const char *const tags[] = { "wsse:Password", "wsse:Nonce" };
	const char *end = body + len, *gt_seen = NULL, *close_seen = NULL;
	size_t i = 0;
	wms_status st = WMS_OK;

	while (st == WMS_OK && i < len) {
		const char *lt = memchr(body + i, '<', len - i);
		size_t t, at = lt ? (size_t)(lt - body) : len;
		int done = 0;
		st = wms__buf_append(out, body + i, at - i);
		i = at;
		if (!lt || st)
			break;
		for (t = 0; t < 2 && !done; t++) {
			size_t n = strlen(tags[t]);
			const char *gt, *close;
			if (len - i < n + 2 || memcmp(body + i + 1, tags[t], n) != 0 ||
			    (body[i + 1 + n] != '>' && body[i + 1 + n] != ' '))
				continue;
			gt = next_of(&gt_seen, body + i, end, ">", 1);
			close = gt ? next_of(&close_seen, gt, end, "</", 2) : NULL;
			if (!gt || !close)
				continue;
			st = wms__buf_append(out, body + i, (size_t)(gt - body) + 1 - i);
			if (!st)
				st = wms__buf_append(out, "REDACTED", 8);
			i = (size_t)(close - body);
			done = 1;
		}
		if (!done && !st) {
			st = wms__buf_append(out, "<", 1);
			i++;
		}
	}
	return st;
}

static void wire_log(wms_client *c, const wms_http_request *req, const wms_http_response *resp,
		     wms_status st, const wms_error *err, uint64_t start)
{
	wms_wire_record rec;
	wms__buf clean = { 0 };
	const char *body = resp ? resp->body : req->body;
	size_t len = resp ? resp->body_len : req->body_len;

	memset(&rec, 0, sizeof(rec));
	rec.correlation_id = err->correlation_id;
	rec.direction = resp ? WMS_WIRE_REPLY : WMS_WIRE_REQUEST;
	rec.operation = req->operation;
	rec.attempt = err->attempts;
	rec.http_status = resp ? resp->status : 0;
	rec.content_type = resp ? resp->content_type : req->content_type;
	rec.full_len = len;
	rec.status = st;
	if (resp)
		rec.elapsed_ms = (wms__now_ns() - start) / 1e6;
	if (body && len && redact(&clean, body, len) == WMS_OK) {
		rec.body = clean.data;
		rec.body_len = clean.len < c->wire_max ? clean.len : c->wire_max;
	} else {
		rec.body = "";
		rec.body_len = 0;
	}
	c->on_wire(&rec, c->wire_ctx);
	wms__buf_free(&clean);
}

static wms_status exchange(wms_client *c, wms__xml_ws *ws, wms__op op, const wms__buf *body,
			   void *out, uint32_t timeout_ms, wms_error *err)
{
	wms_http_request req;
	wms_http_response resp;
	/* What is done with the reply's bytes keeps the attempt's deadline too. */
	uint64_t start, deadline = wms__now_ns() + (uint64_t)timeout_ms * 1000000u;
	wms_status st;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	resp.max_body = c->max_reply_bytes;
	req.url = c->endpoint;
	req.operation = wms__op_name(op);
	req.soap_action = wms__op_action(op);
	req.soap_version = c->soap_version;
	req.content_type = wms__op_content_type(op, c->soap_version);
	req.body = body->data;
	req.body_len = body->len;
	req.timeout_ms = timeout_ms;
	req.connect_timeout_ms = c->connect_timeout_ms < timeout_ms ? c->connect_timeout_ms
								    : timeout_ms;
	req.stall_timeout_ms = c->stall_timeout_ms;
	req.max_reply_bytes = c->max_reply_bytes;
	req.user_agent = c->user_agent;
	req.ca_file = c->ca_file;
	req.ca_path = c->ca_path;
	req.client_cert = c->client_cert;
	req.client_key = c->client_key;
	req.pinned_public_key = c->pinned_public_key;
	req.http_username = c->http_username;
	req.http_password = c->http_password;
	req.correlation_id = err->correlation_id;

	if (c->on_wire)
		wire_log(c, &req, NULL, WMS_OK, err, 0);
	start = c->on_wire ? wms__now_ns() : 0;
	st = c->transport->send(c->transport, &req, &resp, err);
	if (st == WMS_OK)
		st = interpret(ws, op, out, &resp, c->max_reply_bytes, deadline, err);
	else if (err->status != st)
		wms__fail(err, st, WMS_DELIVERY_UNKNOWN, "%s", wms_strerror(st));
	if (c->on_wire)
		wire_log(c, &req, &resp, st, err, start);
	wms_http_response_clear(&resp);
	return st;
}

/* ---- one call: breaker, retries, fallback ------------------------------- */

typedef struct call {
	wms__op op;
	const wms_order *order;
	const char *order_id;
	const char *reason;
	const char *const *skus;
	size_t sku_count;
	void *out; /* the reply struct, or wms_stock_reply ** */
} call;

static const char circuit_open_msg[] = "circuit breaker open: call rejected without sending";

/* The parser knows the reply, not the request: check the reply answers
 * this request (same order id; one level per SKU asked, in order). */
static wms_status correlate(const call *k, wms_error *err)
{
	const char *got = NULL, *want = NULL;
	size_t i;

	switch (k->op) {
	case WMS__OP_SUBMIT_ORDER:
		got = ((const wms_submit_reply *)k->out)->order_id;
		want = k->order->order_id;
		break;
	case WMS__OP_GET_ORDER_STATUS:
		got = ((const wms_status_reply *)k->out)->order_id;
		want = k->order_id;
		break;
	case WMS__OP_CANCEL_ORDER:
		got = ((const wms_cancel_reply *)k->out)->order_id;
		want = k->order_id;
		break;
	case WMS__OP_GET_STOCK_LEVEL: {
		wms_stock_reply **r = k->out;
		if ((*r)->count != k->sku_count)
			goto stock_mismatch;
		for (i = 0; i < k->sku_count; i++)
			if (strcmp((*r)->levels[i].sku, k->skus[i]) != 0)
				goto stock_mismatch;
		return WMS_OK;
stock_mismatch:
		wms_stock_reply_free(*r);
		*r = NULL;
		return wms__fail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_UNKNOWN,
				 "GetStockLevel reply does not list the %zu SKUs asked for, in order",
				 k->sku_count);
	}
	case WMS__OP_COUNT:
		break;
	}
	if (got && want && strcmp(got, want) != 0)
		return wms__fail(err, WMS_ERR_UNEXPECTED_REPLY, WMS_DELIVERY_UNKNOWN,
				 "%s reply is for order id '%.64s', not '%.64s'", wms__op_name(k->op),
				 got, want);
	return WMS_OK;
}

static wms_status ask_breaker(wms_breaker *b, wms_breaker_permit *permit, wms_error *err)
{
	uint32_t retry = 0;
	wms_status st = wms_breaker_acquire(permit, b, &retry);
	if (st == WMS_ERR_CIRCUIT_OPEN) {
		err->status = st;
		err->delivery = WMS_DELIVERY_NOT_SENT;
		err->retry_after_ms = retry;
		memcpy(err->message, circuit_open_msg, sizeof(circuit_open_msg));
	}
	return st;
}

/* Whether the breaker refuses calls now (a failed attempt may just have
 * opened it); if so, *retry_after_ms says for how long. OPEN's comes from
 * the snapshot: the call was made, not refused, so no rejection is counted
 * (OPEN with no time left lets a probe through: not refused). FORCED_OPEN
 * has none there, so a rejected acquire gives the hint a new call would
 * get; a permit granted because it changed meanwhile goes straight back. */
static int breaker_refuses(wms_breaker *b, uint32_t *retry_after_ms)
{
	wms_breaker_state state = wms_breaker_state_get(b);
	wms_breaker_snapshot snap;
	wms_breaker_permit p;

	if (state == WMS_BREAKER_OPEN) {
		wms_breaker_snapshot_get(&snap, b);
		if (snap.state == WMS_BREAKER_OPEN && snap.retry_after_ms) {
			*retry_after_ms = snap.retry_after_ms;
			return 1;
		}
		state = snap.state;
	}
	if (state != WMS_BREAKER_FORCED_OPEN)
		return 0;
	if (wms_breaker_acquire(&p, b, retry_after_ms) == WMS_ERR_CIRCUIT_OPEN)
		return 1;
	wms_breaker_release(b, &p);
	return 0;
}

/* Tell the breaker how an attempt went; returns how it counted. */
static wms_outcome tell_breaker(wms_client *c, wms_breaker *b, const wms_breaker_permit *permit,
				const wms_error *err, int *recorded)
{
	wms_outcome outcome = wms__default_outcome(err, recorded);

	if (*recorded) {
		if (c->error_filter) {
			outcome = c->error_filter(err, outcome, c->error_filter_ctx);
			if (outcome != WMS_OUTCOME_SUCCESS && outcome != WMS_OUTCOME_FAILURE)
				outcome = WMS_OUTCOME_IGNORED;
		}
		wms_breaker_record(b, permit, outcome);
	} else {
		wms_breaker_release(b, permit);
	}
	return outcome;
}

/* Validate the arguments and build the envelope for one attempt (the
 * builders check their input first, without allocating; WS-Security needs
 * a fresh nonce and created per message, so with it every attempt builds
 * anew). */
static wms_status build(wms_client *c, wms__xml_ws *ws, const call *k, wms__buf *body,
			wms_error *err)
{
	wms__request r;
	r.op = k->op;
	r.order = k->order;
	r.order_id = k->order_id;
	r.reason = k->reason;
	r.skus = k->skus;
	r.sku_count = k->sku_count;
	wms__buf_free(body);
	return wms__build_request_ws(ws, body, c->soap_version, &r,
				     c->wsse.mode != WMS_WSSE_NONE ? &c->wsse : NULL, err);
}

static wms_status run_fallback(wms_client *c, const call *k, wms_error *err)
{
	const wms_fallbacks *f = &c->fallbacks;
	wms_fallback_call fc;
	wms_error why = *err;
	wms_status st = WMS_ERR_CIRCUIT_OPEN;
	int ran = 1;

	memset(&fc, 0, sizeof(fc));
	fc.operation = wms__op_name(k->op);
	fc.order = k->order;
	fc.order_id = k->op == WMS__OP_SUBMIT_ORDER && k->order ? k->order->order_id : k->order_id;
	fc.reason = k->reason;
	fc.skus = k->skus;
	fc.sku_count = k->sku_count;
	fc.error = &why;
	switch (k->op) {
	case WMS__OP_SUBMIT_ORDER:
		if (!f->submit_order)
			return st;
		memset(k->out, 0, sizeof(wms_submit_reply));
		st = f->submit_order(k->out, &fc, f->ctx);
		((wms_submit_reply *)k->out)->from_fallback = 1;
		break;
	case WMS__OP_GET_ORDER_STATUS:
		if (!f->get_order_status)
			return st;
		memset(k->out, 0, sizeof(wms_status_reply));
		st = f->get_order_status(k->out, &fc, f->ctx);
		((wms_status_reply *)k->out)->from_fallback = 1;
		break;
	case WMS__OP_CANCEL_ORDER:
		if (!f->cancel_order)
			return st;
		memset(k->out, 0, sizeof(wms_cancel_reply));
		st = f->cancel_order(k->out, &fc, f->ctx);
		((wms_cancel_reply *)k->out)->from_fallback = 1;
		break;
	case WMS__OP_GET_STOCK_LEVEL: {
		wms_stock_reply **o = k->out;
		if (!f->get_stock_level)
			return st;
		*o = NULL;
		st = f->get_stock_level(o, &fc, f->ctx);
		if (*o)
			(*o)->from_fallback = 1;
		break;
	}
	case WMS__OP_COUNT:
		ran = 0;
		break;
	}
	if (!ran)
		return st;
	err->status = st;
	err->delivery = WMS_DELIVERY_NOT_SENT;
	err->fallback = 1;
	snprintf(err->message, sizeof(err->message), "circuit breaker open: answered by the %s fallback (%s)",
		 fc.operation, wms_status_name(st));
	return st;
}

/* Full-jitter backoff: uniform in [0, min(max, initial * mult^n)]. */
static uint64_t backoff_ns(const wms_retry_options *r, uint32_t retry_no, uint64_t *rng)
{
	uint64_t ms = r->initial_backoff_ms;
	uint32_t i;
	for (i = 1; i < retry_no && ms < r->max_backoff_ms; i++)
		ms = ms * r->backoff_multiplier_pct / 100u;
	if (ms > r->max_backoff_ms)
		ms = r->max_backoff_ms;
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return (*rng % (ms * 1000000u + 1u));
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ns / 1000000000u);
	ts.tv_nsec = (long)(ns % 1000000000u);
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* The delivery that is true of the whole call: once any attempt may have
 * reached the WMS, the call may have. */
static wms_delivery merge_delivery(wms_delivery so_far, wms_delivery last)
{
	if (last == WMS_DELIVERY_ANSWERED)
		return last;
	if (so_far == WMS_DELIVERY_UNKNOWN || so_far == WMS_DELIVERY_ANSWERED)
		return WMS_DELIVERY_UNKNOWN;
	return last;
}

static wms_status perform(wms_client *c, const call *k, wms_error *err)
{
	wms_breaker *b = c->breakers[k->op];
	wms_breaker_permit permit;
	wms__buf body = { 0 };
	wms__xml_ws *ws = NULL;
	wms_delivery delivery = WMS_DELIVERY_NOT_SENT;
	uint64_t start = 0, deadline = 0, rng = 0;
	uint32_t attempt, timeout = c->timeout_ms;
	wms_outcome outcome;
	int recorded;
	wms_status st;

	wms_error_clear(err);
	wms__strlcpy(err->operation, wms__op_name(k->op), sizeof(err->operation));
	st = ask_breaker(b, &permit, err);
	if (st == WMS_ERR_CIRCUIT_OPEN)
		return c->has_fallbacks ? run_fallback(c, k, err) : st;
	ws = wms__xml_pool_take(c->xml_pool);
	st = build(c, ws, k, &body, err);
	if (st != WMS_OK) {
		wms_breaker_release(b, &permit);
		goto done;
	}
	snprintf(err->correlation_id, sizeof(err->correlation_id), "%s-%06llu", c->id_prefix,
		 (unsigned long long)(atomic_fetch_add_explicit(&c->call_seq, 1,
								memory_order_relaxed) + 1));
	if (c->retry.max_attempts > 1) {
		start = wms__now_ns();
		deadline = start + (uint64_t)c->timeout_ms * 1000000u;
		rng = start ^ (uint64_t)(uintptr_t)&permit;
	}
	for (attempt = 1;; attempt++) {
		wms_status prev = st; /* the last attempt's status (attempt > 1) */
		err->attempts = attempt;
		if (attempt > 1 && c->wsse.mode != WMS_WSSE_NONE &&
		    (st = build(c, ws, k, &body, err)) != WMS_OK) {
			/* This attempt was never made, the earlier ones were: the
			 * call's delivery is theirs, UNKNOWN once one may have
			 * arrived (NOMEM after the request was sent), and the
			 * message keeps the last one's status. */
			size_t n = strlen(err->message);
			wms_breaker_release(b, &permit);
			err->attempts = attempt - 1;
			err->delivery = merge_delivery(delivery, WMS_DELIVERY_NOT_SENT);
			snprintf(err->message + n, sizeof(err->message) - n,
				 " (attempt %u not sent; attempt %u: %s)", attempt, attempt - 1,
				 wms_status_name(prev));
			break;
		}
		st = exchange(c, ws, k->op, &body, k->out, timeout, err);
		if (st == WMS_OK)
			st = correlate(k, err);
		delivery = merge_delivery(attempt == 1 ? WMS_DELIVERY_NOT_SENT : delivery,
					  err->delivery);
		err->delivery = delivery;
		outcome = tell_breaker(c, b, &permit, err, &recorded);
		if (st == WMS_OK || attempt >= c->retry.max_attempts ||
		    outcome != WMS_OUTCOME_FAILURE || !recorded)
			break;
		if (c->retry.not_sent_only && delivery != WMS_DELIVERY_NOT_SENT)
			break;
		/* If this attempt opened the breaker, the retry would be refused:
		 * stop now rather than after the pause (or at the deadline check). */
		if (breaker_refuses(b, &err->retry_after_ms))
			break;
		{
			uint64_t now = wms__now_ns();
			uint64_t pause = backoff_ns(&c->retry, attempt, &rng);
			/* the next attempt needs time left after its pause: at least 1 ms */
			if (now + pause + 1000000u >= deadline)
				break;
			sleep_ns(pause);
			now = wms__now_ns();
			if (now + 1000000u >= deadline)
				break;
			timeout = (uint32_t)((deadline - now) / 1000000u);
		}
		{
			/* Never after CIRCUIT_OPEN: keep the last real error. */
			wms_error open_err = *err;
			if (ask_breaker(b, &permit, &open_err) == WMS_ERR_CIRCUIT_OPEN) {
				err->retry_after_ms = open_err.retry_after_ms;
				break;
			}
		}
		/* a fresh error for the attempt; the merged delivery is kept aside */
		{
			char op[sizeof(err->operation)], id[sizeof(err->correlation_id)];
			memcpy(op, err->operation, sizeof(op));
			memcpy(id, err->correlation_id, sizeof(id));
			wms_error_clear(err);
			memcpy(err->operation, op, sizeof(op));
			memcpy(err->correlation_id, id, sizeof(id));
		}
	}
done:
	wms__xml_pool_give(c->xml_pool, ws);
	wms__buf_free(&body);
	return st;
}

/* ---- the operations --------------------------------------------------------- */

#define NULL_ARG(err, what)                                                                  \
	(wms_error_clear(err),                                                               \
	 wms__fail((err), WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, "%s is NULL", (what)))

wms_status wms_submit_order(wms_submit_reply *out, wms_client *c, const wms_order *order,
			    wms_error *err)
{
	wms_submit_reply tmp;
	wms_error local;
	call k = { WMS__OP_SUBMIT_ORDER, NULL, NULL, NULL, NULL, 0, NULL };

	if (!c || !order)
		return NULL_ARG(err, c ? "order" : "client");
	k.order = order;
	k.out = out ? out : &tmp;
	return perform(c, &k, err ? err : &local);
}

wms_status wms_get_order_status(wms_status_reply *out, wms_client *c, const char *order_id,
				wms_error *err)
{
	wms_status_reply tmp;
	wms_error local;
	call k = { WMS__OP_GET_ORDER_STATUS, NULL, NULL, NULL, NULL, 0, NULL };

	if (!c)
		return NULL_ARG(err, "client");
	k.order_id = order_id;
	k.out = out ? out : &tmp;
	return perform(c, &k, err ? err : &local);
}

wms_status wms_cancel_order(wms_cancel_reply *out, wms_client *c, const char *order_id,
			    const char *reason, wms_error *err)
{
	wms_cancel_reply tmp;
	wms_error local;
	call k = { WMS__OP_CANCEL_ORDER, NULL, NULL, NULL, NULL, 0, NULL };

	if (!c)
		return NULL_ARG(err, "client");
	k.order_id = order_id;
	k.reason = reason;
	k.out = out ? out : &tmp;
	return perform(c, &k, err ? err : &local);
}

wms_status wms_get_stock_level(wms_stock_reply **out, wms_client *c, const char *const *skus,
			       size_t sku_count, wms_error *err)
{
	wms_stock_reply *reply = NULL;
	wms_error local;
	wms_status st;
	call k = { WMS__OP_GET_STOCK_LEVEL, NULL, NULL, NULL, NULL, 0, NULL };

	if (out)
		*out = NULL;
	if (!c || !out)
		return NULL_ARG(err, c ? "out" : "client");
	k.skus = skus;
	k.sku_count = sku_count;
	k.out = &reply;
	st = perform(c, &k, err ? err : &local);
	if (st == WMS_OK)
		*out = reply;
	else
		wms_stock_reply_free(reply);
	return st;
}
