/* Every public options struct and argument at NON-NULL bad values (the
 * companion of test_null_args.c, same style): versions (0, current + 1,
 * UINT_MAX, and each older version a header still accepts, with the
 * fields added after it set to garbage), enum-typed fields and arguments
 * (one past the last, 99, (enum)-1), and strings ("" and, where a header
 * or README gives a character set, a byte outside it: a space, a control
 * byte, a lone UTF-8 continuation byte 0x80). Each refusal is made twice
 * on the same handle, then a valid call on that handle must behave as
 * before (a client's call still ends in WMS_ERR_CONNECT against
 * the sweep's refused endpoint, a breaker still counts). Expected: what the header
 * says; for an option, INVALID_ARG (err: same status, delivery NOT_SENT,
 * a message naming the field); for a *_name/strerror function a fixed
 * non-NULL string; where a header is silent, "no crash, nothing changed"
 * and the comment says "header silent". Installed headers only; no
 * network (an endpoint whose port is held and never listens, Redis on a unix socket that is not there, the
 * health server on 127.0.0.1:0). Checks are soft inside a test (every case
 * runs and prints), the test fails at its end. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <libxml/tree.h>
#include <libxml/parser.h>
#include "wms/wms.h"
#include "wms/sys/alloc.h"
#include "wms/sys/breaker_store.h"
#include "wms/sys/transport.h"
#include "api_sweep.h"

const char sweep_file[] = "test_bad_values.c";

/* Twice in a row: a refusal must leave nothing behind that changes the
 * second answer. */
#define BAD2(call, e, name)                                                                  \
	do {                                                                                 \
		int twice_;                                                                  \
		for (twice_ = 0; twice_ < 2; twice_++) {                                     \
			stale(e);                                                            \
			bad_arg_((call), (e), (name), #call, __LINE__);                      \
		}                                                                            \
	} while (0)
#define BAD2_NOERR(call)                                                                     \
	do {                                                                                 \
		int twice_;                                                                  \
		for (twice_ = 0; twice_ < 2; twice_++)                                       \
			bad_arg_((call), NULL, NULL, #call, __LINE__);                       \
	} while (0)

/* `init` refuses each version of the array `versions`, twice, and writes
 * nothing into `o`. */
#define INIT_REFUSES(init, o, versions)                                                       \
	do {                                                                                 \
		unsigned char before_[sizeof(o)];                                            \
		size_t v_;                                                                   \
		for (v_ = 0; v_ < sizeof(versions) / sizeof((versions)[0]); v_++) {         \
			memset(&(o), 0xA5, sizeof(o));                                       \
			memcpy(before_, &(o), sizeof(o));                                    \
			BAD2_NOERR(init(&(o), (versions)[v_]));                              \
			CHECK(memcmp(&(o), before_, sizeof(o)) == 0,                         \
			      #init "(version %u) wrote the options", (versions)[v_]);       \
		}                                                                            \
	} while (0)

/* The three bad values of an enum whose last value is `last`. */
#define BAD_ENUMS(last) { (int)(last) + 1, 99, -1 }

/* ---- what the tests share ------------------------------------------------ */

#define NO_REDIS "unix:///nonexistent-wms-badvalues/redis.sock"


/* wms_global_init's bad options, first thing in main (sys/alloc.h: "Bad
 * options can be corrected and the call repeated"): */
#define N_GLOBAL 6
static wms_status g_global_st[N_GLOBAL];
static wms_error g_global_err[N_GLOBAL];
static const char *const g_global_what[N_GLOBAL] = {
	"version 0", "version 2", "version UINT_MAX", "route 0x4", "allocator without free_fn",
	"then NULL options (must still work)"
};

static wms_client_options client_opts(void)
{
	return sweep_client_options(ENDPOINT);
}

/* The client still answers a valid call as before: CONNECT (ENDPOINT). */
static void still_connects_(wms_client *c, const char *after, int line)
{
	wms_status_reply r;
	wms_error e;
	wms_status st;
	stale(&e);
	st = wms_get_order_status(&r, c, "ORD-BADVALUES-1", &e);
	check_(st == WMS_ERR_CONNECT, line, "after %s: a valid call got %s (\"%s\"), want CONNECT",
	       after, wms_status_name(st), e.message);
}
#define STILL_CONNECTS(c, after) still_connects_((c), (after), __LINE__)

static int group_setup(void **state)
{
	(void)state;
	sweep_setup("ORD-BADVALUES-1");
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	sweep_teardown("bad_values", "bad-value cases");
	return 0;
}

/* ===== errors.h, breaker.h, client.h: the *_name and strerror functions === */

/* A fixed, non-NULL, non-empty string for each bad value: the same one for
 * all three, and none of the known values' strings. */
#define NAME_SWEEP(fn, type, first, last, want)                                              \
	do {                                                                                 \
		static const int bad_[] = BAD_ENUMS(last);                                    \
		const char *s0_ = fn((type)bad_[0]);                                          \
		int i_, k_;                                                                   \
		FN(#fn);                                                                      \
		for (i_ = 0; i_ < 3; i_++) {                                                  \
			const char *s_ = fn((type)bad_[i_]);                                  \
			CASE();                                                               \
			CHECK(s_ && *s_, #fn "(%d): NULL or empty", bad_[i_]);                \
			if (!s_ || !s0_)                                                      \
				continue;                                                     \
			CHECK(strcmp(s_, s0_) == 0, #fn "(%d) \"%s\" but (%d) \"%s\"",        \
			      bad_[i_], s_, bad_[0], s0_);                                    \
			if ((want) != NULL)                                                   \
				CHECK(strcmp(s_, (want) ? (want) : "") == 0,                  \
				      #fn "(%d) \"%s\", header says \"%s\"", bad_[i_], s_,    \
				      (want) ? (want) : "");                                  \
			for (k_ = (int)(first); k_ <= (int)(last); k_++) {                    \
				const char *v_ = fn((type)k_);                                \
				if ((want) != NULL && k_ == (int)(first) && strcmp(v_, s_) == 0) \
					continue; /* the header's "anything else" */          \
				CHECK(!v_ || strcmp(v_, s_) != 0,                             \
				      #fn "(%d) reads as the known value %d (\"%s\")",        \
				      bad_[i_], k_, s_);                                      \
			}                                                                     \
		}                                                                             \
	} while (0)

static void names(void **state)
{
	(void)state;
	/* errors.h: wms_strerror "A static, one-line description of a status.
	 * Never NULL." */
	NAME_SWEEP(wms_strerror, wms_status, WMS_OK, WMS_ERR_CANCELLED, (const char *)NULL);
	/* wms_status_name "The enum name without its prefix" - header silent
	 * on an unknown value: a fixed string, no known name */
	NAME_SWEEP(wms_status_name, wms_status, WMS_OK, WMS_ERR_CANCELLED, (const char *)NULL);
	/* wms_cause_name ""?" for a value this version does not know" */
	NAME_SWEEP(wms_cause_name, wms_cause, WMS_CAUSE_NONE, WMS_CAUSE_OTHER, "?");
	/* wms_delivery_name ""NOT_SENT", "UNKNOWN" or "ANSWERED"": always one
	 * of the three; for a value it does not know, the fixed one that is
	 * safe to act on, "UNKNOWN" (never "NOT_SENT": safe to resend) */
	NAME_SWEEP(wms_delivery_name, wms_delivery, WMS_DELIVERY_UNKNOWN, WMS_DELIVERY_ANSWERED,
		   "UNKNOWN");
	/* breaker.h: wms_breaker_state_name / wms_store_state_name - header
	 * silent on another value: a fixed string, no known name */
	NAME_SWEEP(wms_breaker_state_name, wms_breaker_state, WMS_BREAKER_STATE_CLOSED,
		   WMS_BREAKER_STATE_FORCED_OPEN, (const char *)NULL);
	NAME_SWEEP(wms_store_state_name, wms_store_state, WMS_STORE_STATE_NONE,
		   WMS_STORE_STATE_DEGRADED, (const char *)NULL);
	/* client.h: wms_order_state_name ""UNKNOWN" for anything else" (and
	 * WMS_ORDER_STATE_UNKNOWN, the first value, reads "UNKNOWN" too) */
	NAME_SWEEP(wms_order_state_name, wms_order_state, WMS_ORDER_STATE_UNKNOWN,
		   WMS_ORDER_STATE_CANCELLED, "UNKNOWN");
	END();
}

static void error_readers(void **state)
{
	static const int bad[] = BAD_ENUMS(WMS_ERR_CANCELLED);
	wms_error e;
	size_t i;
	(void)state;
	/* errors.h: wms_error_is_retryable "false ... for a value that is no
	 * wms_status" */
	FN("wms_error_is_retryable");
	/* client.h: wms_error_outcome - header silent on an unknown status: no
	 * crash, a known outcome */
	FN("wms_error_outcome");
	for (i = 0; i < 3; i++) {
		wms_outcome oc;
		memset(&e, 0, sizeof(e));
		e.status = (wms_status)bad[i];
		CASE();
		CHECK(wms_error_is_retryable(&e) == 0, "wms_error_is_retryable(status %d) = %d",
		      bad[i], wms_error_is_retryable(&e));
		CASE();
		oc = wms_error_outcome(&e);
		CHECK(oc == WMS_OUTCOME_SUCCESS || oc == WMS_OUTCOME_FAILURE ||
			      oc == WMS_OUTCOME_IGNORED,
		      "wms_error_outcome(status %d) = %d", bad[i], (int)oc);
		CHECK(oc != WMS_OUTCOME_SUCCESS, "wms_error_outcome(status %d): SUCCESS", bad[i]);
		/* an unknown delivery on a known failure */
		memset(&e, 0, sizeof(e));
		e.status = WMS_ERR_TIMEOUT;
		e.delivery = (wms_delivery)bad[i];
		CASE();
		(void)wms_error_is_retryable(&e);
	}
	END();
}

/* ===== client.h: versions ================================================== */

static void client_options_init_versions(void **state)
{
	static const unsigned bad[] = { 0, 1, WMS_CLIENT_OPTIONS_VERSION + 1, UINT_MAX };
	wms_client_options o;
	unsigned v;
	(void)state;
	/* client.h: wms_client_options_init; "a program built with version 2
	 * or 3 keeps working" (CHANGES: version 1, 0.2's, is refused;
	 * "wms_client_options_init(&o, 2) writes only a version-2 struct's
	 * bytes") */
	FN("wms_client_options_init");
	INIT_REFUSES(wms_client_options_init, o, bad);
	for (v = 2; v <= WMS_CLIENT_OPTIONS_VERSION; v++) {
		size_t end = v == 2   ? offsetof(wms_client_options, shared)
			     : v == 3 ? offsetof(wms_client_options, bulkhead)
				      : sizeof(o);
		memset(&o, 0xA5, sizeof(o));
		WORKS(wms_client_options_init(&o, v), WMS_OK, NULL);
		CHECK(o.version == v, "init(%u): version %u", v, o.version);
		CHECK(o.endpoint == NULL && o.breaker_options.version == WMS_BREAKER_OPTIONS_VERSION &&
			      o.curl.version == WMS_CURL_TRANSPORT_OPTIONS_VERSION,
		      "init(%u): not the defaults", v);
		if (end < sizeof(o)) {
			const unsigned char *p = (const unsigned char *)&o;
			size_t k, wrote = 0;
			for (k = end; k < sizeof(o); k++)
				wrote += p[k] != 0xA5;
			CHECK(wrote == 0, "init(%u) wrote %zu bytes past a version-%u struct", v,
			      wrote, v);
		}
	}
	END();
}

static int g_transport_frees;

static wms_status dead_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	(void)self;
	(void)req;
	(void)resp;
	return wms_transport_fail(err, WMS_ERR_CONNECT, WMS_DELIVERY_NOT_SENT, "dead transport");
}

static void dead_free(wms_transport *self)
{
	g_transport_frees++;
	free(self);
}

static wms_transport *dead_transport(unsigned version)
{
	wms_transport *t = calloc(1, sizeof(*t));
	assert_non_null(t);
	t->version = version;
	t->send = dead_send;
	t->free = dead_free;
	return t;
}

static void client_new_versions(void **state)
{
	static const unsigned bad[] = { 0, 1, WMS_CLIENT_OPTIONS_VERSION + 1, UINT_MAX };
	static const unsigned bad_breaker[] = { 0, 1, WMS_BREAKER_OPTIONS_VERSION + 1, UINT_MAX };
	static const unsigned bad_curl[] = { 0, 1, WMS_CURL_TRANSPORT_OPTIONS_VERSION + 1,
					     UINT_MAX };
	static const unsigned bad_shared[] = { 0, WMS_SHARED_OPTIONS_VERSION + 1, UINT_MAX };
	static const unsigned bad_transport[] = { 0, 1, WMS_TRANSPORT_VERSION + 1, UINT_MAX };
	wms_client_options o;
	wms_client *c;
	wms_error e;
	size_t i;
	unsigned v;
	(void)state;
	/* client.h: wms_client_new "`err` (optional) explains an INVALID_ARG";
	 * STYLE 5: "rejects a version it does not know" */
	FN("wms_client_new");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = client_opts();
		o.version = bad[i];
		c = (wms_client *)&c;
		BAD2(wms_client_new(&c, &o, &e), &e, "version");
		CHECK(c == NULL, "client version %u: *out not NULL", bad[i]);
	}
	/* the embedded groups' versions, each named */
	for (i = 0; i < sizeof(bad_breaker) / sizeof(bad_breaker[0]); i++) {
		o = client_opts();
		o.breaker_options.version = bad_breaker[i];
		c = NULL;
		BAD2(wms_client_new(&c, &o, &e), &e, "breaker_options.version");
	}
	for (i = 0; i < sizeof(bad_curl) / sizeof(bad_curl[0]); i++) {
		o = client_opts();
		o.curl.version = bad_curl[i];
		c = NULL;
		BAD2(wms_client_new(&c, &o, &e), &e, "version");
		CHECK(strstr(e.message, "curl") != NULL, "curl.version %u: \"%s\" does not say curl",
		      bad_curl[i], e.message);
	}
	for (i = 0; i < sizeof(bad_shared) / sizeof(bad_shared[0]); i++) {
		o = client_opts();
		o.shared.redis_url = NO_REDIS;
		o.shared.version = bad_shared[i];
		c = NULL;
		BAD2(wms_client_new(&c, &o, &e), &e, "version");
		CHECK(strstr(e.message, "shared") != NULL,
		      "shared.version %u: \"%s\" does not say shared", bad_shared[i], e.message);
	}
	/* client.h: transport "the client takes ownership, also when creation
	 * fails"; sys/transport.h WMS_TRANSPORT_VERSION */
	for (i = 0; i < sizeof(bad_transport) / sizeof(bad_transport[0]); i++) {
		int twice;
		for (twice = 0; twice < 2; twice++) {
			o = client_opts();
			o.transport = dead_transport(bad_transport[i]);
			g_transport_frees = 0;
			c = NULL;
			stale(&e);
			bad_arg_(wms_client_new(&c, &o, &e), &e, "transport", "transport version",
				 __LINE__);
			CHECK(g_transport_frees == 1, "transport version %u: freed %d times",
			      bad_transport[i], g_transport_frees);
		}
	}

	/* Older versions still accepted, the fields added after them ignored
	 * (client.h: 3 added `shared`, 4 `bulkhead` and `read_cache`; "a
	 * program built with version 2 or 3 keeps working"; options.c reads a
	 * version-2 struct only up to `shared`). The garbage would be refused
	 * in a version-4 struct. */
	for (v = 2; v < WMS_CLIENT_OPTIONS_VERSION; v++) {
		wms_bulkhead_snapshot bs;
		wms_read_cache_snapshot rs;
		o = client_opts();
		o.version = v;
		if (v < 3) {
			o.shared.version = UINT_MAX;
			o.shared.redis_url = "not a url";
			o.shared.name = "bad name \x80";
		}
		o.bulkhead.max_concurrent_calls = UINT32_MAX;
		o.bulkhead.max_wait_for_slot_ms = UINT32_MAX;
		o.read_cache.max_entries = UINT32_MAX;
		o.read_cache.max_age_ms = UINT32_MAX;
		o.read_cache.max_bytes = 1;
		c = NULL;
		stale(&e);
		WORKS(wms_client_new(&c, &o, &e), WMS_OK, &e);
		if (!c)
			continue;
		STILL_CONNECTS(c, "an old-version client");
		CASE();
		CHECK(wms_client_bulkhead_get(&bs, c, NULL) == WMS_OK && bs.max_concurrent_calls == 0,
		      "version %u: the bulkhead past its end was read (cap %u)", v,
		      (unsigned)bs.max_concurrent_calls);
		CHECK(wms_client_read_cache_get(&rs, c) == WMS_OK && rs.max_entries == 0,
		      "version %u: the read cache past its end was read (%u entries)", v,
		      (unsigned)rs.max_entries);
		CHECK(wms_breaker_snapshot_get != NULL, "-");
		{
			wms_breaker_snapshot s;
			wms_breaker_snapshot_get(&s, wms_client_breaker(c));
			CHECK(s.store_state == WMS_STORE_STATE_NONE,
			      "version %u: shared past its end was read (store %s)", v,
			      wms_store_state_name(s.store_state));
		}
		wms_client_free(c);
	}
	END();
}

/* ===== client.h: enums ===================================================== */

static void client_new_enums(void **state)
{
	static const int bad_soap[] = BAD_ENUMS(WMS_SOAP_12);
	static const int bad_scope[] = BAD_ENUMS(WMS_BREAKER_SCOPE_PER_OPERATION);
	static const int bad_wsse[] = BAD_ENUMS(WMS_WSSE_PASSWORD_DIGEST);
	static const int bad_mode[] = BAD_ENUMS(WMS_BREAKER_MODE_TIME_BASED);
	wms_client_options o;
	wms_client *c = NULL;
	wms_error e;
	size_t i;
	(void)state;
	FN("wms_client_new");
	for (i = 0; i < 3; i++) {
		o = client_opts();
		o.soap_version = (wms_soap_version)bad_soap[i];
		BAD2(wms_client_new(&c, &o, &e), &e, "soap_version");
		o = client_opts();
		o.breaker_scope = (wms_breaker_scope)bad_scope[i];
		BAD2(wms_client_new(&c, &o, &e), &e, "breaker_scope");
		/* with a username and password, so that only the mode is wrong */
		o = client_opts();
		o.wsse.mode = (wms_wsse_mode)bad_wsse[i];
		o.wsse.username = "user";
		o.wsse.password = "secret";
		BAD2(wms_client_new(&c, &o, &e), &e, "wsse.mode");
		CHECK(strstr(e.message, "secret") == NULL, "wsse.mode: the password in \"%s\"",
		      e.message);
		o = client_opts();
		o.breaker_options.mode = (wms_breaker_mode)bad_mode[i];
		BAD2(wms_client_new(&c, &o, &e), &e, "breaker_options.mode");
	}
	END();
}

/* ===== client.h: strings of the client's options =========================== */

static void client_new_strings(void **state)
{
	/* client.h: metric_prefix "One or more bytes of [A-Za-z0-9_.:-], any
	 * length (ASCII only: no control byte, space or UTF-8); anything else,
	 * "" included, is INVALID_ARG naming the field and the offset of the
	 * first bad byte" */
	static const struct {
		const char *v;
		const char *offset;
	} prefixes[] = { { "", "0" },       { " ", "0" },     { "svc name", "3" },
			 { "svc\x01", "3" }, { "svc\x80", "3" }, { "\xc3\xa9t\xc3\xa9", "0" },
			 { "a/b", "1" } };
	/* client.h: endpoint "http:// or https://"; from index 6 on, URLs
	 * libcurl's parser refuses (README's options table: refused when the
	 * client is made, with libcurl's reason and without the URL) */
	static const char *const endpoints[] = { "", " http://127.0.0.1:9/", "ftp://127.0.0.1:9/",
						 "http://127.0.0.1:9/a b", "http://127.0.0.1:9/\x01",
						 "http://127.0.0.1:9/\r\nX: y", "http://[::1/wms",
						 "http://127.0.0.1:65536/wms", "http://:80/wms",
						 "https://", "http://alice:s3cr3t@:80/wms" };
	/* breaker.h: name "UTF-8 text without control characters" */
	static const char *const breaker_names[] = { "", "wms\x01", "wms\n", "wms\x80",
						     "\xc3" };
	/* client.h: wsse username "required with a mode"; the envelope's text */
	static const char *const wsse_users[] = { "", "user\x01", "user\x80" };
	wms_client_options o;
	wms_client *c = NULL;
	wms_error e;
	size_t i;
	(void)state;
	FN("wms_client_new");
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		char want[64];
		o = client_opts();
		o.metric_prefix = prefixes[i].v;
		BAD2(wms_client_new(&c, &o, &e), &e, "metric_prefix");
		snprintf(want, sizeof(want), "%s", prefixes[i].offset);
		CHECK(strstr(e.message, want) != NULL,
		      "metric_prefix case %zu: \"%s\" does not give offset %s", i, e.message, want);
	}
	for (i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
		int twice;
		for (twice = 0; twice < 2; twice++) {
			o = client_opts();
			o.endpoint = endpoints[i];
			c = NULL;
			stale(&e);
			bad_arg_(wms_client_new(&c, &o, &e), &e, "endpoint", "endpoint", __LINE__);
			CHECK(i < 6 || (strstr(e.message, "libcurl") && !strstr(e.message, "s3cr3t")),
			      "endpoint case %zu: \"%s\" should give libcurl's reason, not the URL",
			      i, e.message);
			if (c) { /* accepted: what does a call do? */
				wms_status_reply r;
				wms_status st = wms_get_order_status(&r, c, "ORD-1", &e);
				printf("note: endpoint case %zu accepted; a call gave %s (\"%s\")\n",
				       i, wms_status_name(st), e.message);
				wms_client_free(c);
				c = NULL;
			}
		}
	}
	/* client.h: "Required (unless a custom transport ignores it)": a custom
	 * transport's endpoint is its own, whatever bytes it holds */
	for (i = 3; i < sizeof(endpoints) / sizeof(endpoints[0]); i++) {
		int twice;
		for (twice = 0; twice < 2; twice++) {
			o = client_opts();
			o.endpoint = endpoints[i];
			o.transport = dead_transport(WMS_TRANSPORT_VERSION);
			c = NULL;
			stale(&e);
			WORKS(wms_client_new(&c, &o, &e), WMS_OK, &e);
			wms_client_free(c); /* frees the transport */
			c = NULL;
		}
	}
	for (i = 0; i < sizeof(breaker_names) / sizeof(breaker_names[0]); i++) {
		o = client_opts();
		o.breaker_options.name = breaker_names[i];
		BAD2(wms_client_new(&c, &o, &e), &e, "breaker_options.name");
	}
	for (i = 0; i < sizeof(wsse_users) / sizeof(wsse_users[0]); i++) {
		o = client_opts();
		o.wsse.mode = WMS_WSSE_PASSWORD_TEXT;
		o.wsse.username = wsse_users[i];
		o.wsse.password = "secret";
		BAD2(wms_client_new(&c, &o, &e), &e, "wsse.username");
	}
	/* curl.h: user_agent "NULL = "libwms/VERSION", "" = none" */
	o = client_opts();
	o.curl.user_agent = "";
	c = NULL;
	WORKS(wms_client_new(&c, &o, &e), WMS_OK, &e);
	if (c) {
		STILL_CONNECTS(c, "user_agent \"\"");
		wms_client_free(c);
		c = NULL;
	}
	/* a header line break in the user agent: the request's headers */
	o = client_opts();
	o.curl.user_agent = "agent\r\nX-Injected: 1";
	BAD2(wms_client_new(&c, &o, &e), &e, "user_agent");
	/* TLS files: "checked readable by wms_client_new" (README), the
	 * message naming the file's field */
	o = client_opts();
	o.curl.ca_file = "";
	BAD2(wms_client_new(&c, &o, &e), &e, "curl.ca_file");
	o = client_opts();
	o.curl.ca_path = "";
	BAD2(wms_client_new(&c, &o, &e), &e, "curl.ca_path");
	o = client_opts();
	o.curl.client_cert = "";
	o.curl.client_key = "";
	BAD2(wms_client_new(&c, &o, &e), &e, "curl.client_cert");
	o = client_opts();
	o.curl.pinned_public_key = "";
	BAD2(wms_client_new(&c, &o, &e), &e, "curl.pinned_public_key");
	/* shared (version 3+): redis_url "redis://... or unix:///PATH";
	 * name "Letters, digits, '.', '-', '_', 1-64 bytes" */
	{
		static const char *const urls[] = { "", "redis://", "http://127.0.0.1:6379",
						     "redis://127.0.0.1:99999", "unix://",
						     "redis://:sekret@127.0.0.1:99999" };
		static const char *const fleet[] = { "", "a b", "a\x01", "a\x80",
						     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
		for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
			o = client_opts();
			o.shared.redis_url = urls[i];
			BAD2(wms_client_new(&c, &o, &e), &e, "redis_url");
			CHECK(strstr(e.message, "sekret") == NULL, "redis_url: the password in \"%s\"",
			      e.message);
		}
		for (i = 0; i < sizeof(fleet) / sizeof(fleet[0]); i++) {
			o = client_opts();
			o.shared.redis_url = NO_REDIS;
			o.shared.name = fleet[i];
			BAD2(wms_client_new(&c, &o, &e), &e, "shared.name");
		}
	}
	END();
}

/* ===== client.h: the operations' strings and enums ========================= */

static const char g_id65[] = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
/* client.h: order_id "1-64 bytes of [A-Za-z0-9._:-]" */
static const char *const g_bad_ids[] = { "", " ", "ORD 1", "ORD\x01", "ORD\x80", "ORD/1",
					 g_id65 };
#define N_BAD_IDS (sizeof(g_bad_ids) / sizeof(g_bad_ids[0]))

static void typed_calls(void **state)
{
	static const int bad_prio[] = BAD_ENUMS(WMS_PRIORITY_OVERNIGHT);
	static const unsigned bad_version[] = { 0, WMS_ORDER_VERSION + 1, UINT_MAX };
	wms_submit_reply ur;
	wms_status_reply sr;
	wms_cancel_reply cr;
	wms_stock_reply *kr = NULL;
	wms_order o;
	wms_order_line l[1];
	wms_error e;
	size_t i;
	(void)state;
	FN("wms_submit_order");
	FN("wms_get_order_status");
	FN("wms_cancel_order");
	FN("wms_get_stock_level");
	for (i = 0; i < N_BAD_IDS; i++) {
		o = g_order;
		o.order_id = g_bad_ids[i];
		BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "order_id");
		BAD2(wms_get_order_status(&sr, g_client, g_bad_ids[i], &e), &e, "order_id");
		BAD2(wms_cancel_order(&cr, g_client, g_bad_ids[i], "why", &e), &e, "order_id");
	}
	/* client.h: wms_order version (WMS_ORDER_VERSION) */
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = g_order;
		o.version = bad_version[i];
		BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "version");
	}
	for (i = 0; i < 3; i++) {
		o = g_order;
		o.priority = (wms_priority)bad_prio[i];
		BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "priority");
	}
	/* the address: "required" fields "" and country "ISO 3166-1 alpha-2" */
#define ADDR(field, value, name)                                                             \
	do {                                                                                 \
		o = g_order;                                                                 \
		o.ship_to.field = (value);                                                   \
		BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, (name));                   \
	} while (0)
	ADDR(name, "", "name");
	ADDR(line1, "", "line1");
	ADDR(city, "", "city");
	ADDR(postal_code, "", "postal_code");
	ADDR(country, "", "country");
	ADDR(country, "us", "country");
	ADDR(country, "USA", "country");
	ADDR(country, "U\x80", "country");
	ADDR(name, "A\x80Person", "name");
	ADDR(city, "Spring\x01" "field", "city");
#undef ADDR
	/* lines: sku "1-64 bytes", quantity "1-1000000", line_count
	 * "1-WMS_MAX_LINES" */
	o = g_order;
	l[0].sku = "";
	l[0].quantity = 1;
	o.lines = l;
	BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "sku");
	l[0].sku = g_id65;
	BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "sku");
	l[0].sku = "SKU\x80";
	BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "sku");
	l[0].sku = "SKU-1";
	l[0].quantity = 0;
	BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "quantity");
	l[0].quantity = 1000001;
	BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "quantity");
	o = g_order;
	o.line_count = 0;
	BAD2(wms_submit_order(&ur, g_client, &o, &e), &e, "line_count");
	/* cancel: "`reason` NULL or "": none is sent" */
	stale(&e);
	WORKS(wms_cancel_order(&cr, g_client, "ORD-1", "", &e), WMS_ERR_CONNECT, &e);
	BAD2(wms_cancel_order(&cr, g_client, "ORD-1", "why\x01", &e), &e, "reason");
	BAD2(wms_cancel_order(&cr, g_client, "ORD-1", "why\x80", &e), &e, "reason");
	/* stock: each SKU "1-64 bytes"; WMS_MAX_SKUS per query */
	{
		const char *const skus_empty[] = { "SKU-1", "" };
		const char *const skus_bad[] = { "SKU\x80" };
		const char *many[WMS_MAX_SKUS + 1];
		for (i = 0; i < WMS_MAX_SKUS + 1; i++)
			many[i] = "SKU-1";
		kr = (wms_stock_reply *)&kr;
		BAD2(wms_get_stock_level(&kr, g_client, skus_empty, 2, &e), &e, "skus[1]");
		CHECK(kr == NULL, "skus[1] \"\": *out not NULL");
		BAD2(wms_get_stock_level(&kr, g_client, skus_bad, 1, &e), &e, "skus[0]");
		BAD2(wms_get_stock_level(&kr, g_client, g_skus, 0, &e), &e, "sku_count");
		BAD2(wms_get_stock_level(&kr, g_client, many, WMS_MAX_SKUS + 1, &e), &e,
		     "sku_count");
	}
	STILL_CONNECTS(g_client, "the typed calls' bad values");
	{
		wms_breaker_snapshot s;
		wms_breaker_snapshot_get(&s, wms_client_breaker(g_client));
		CHECK(s.failures == s.permitted - s.ignored - s.successes,
		      "the refusals were counted by the breaker");
	}
	END();
}

/* Bulkhead and breaker lookups by name. */
static void client_lookups(void **state)
{
	wms_bulkhead_snapshot s;
	(void)state;
	/* client.h: wms_client_bulkhead_get "INVALID_ARG for ... an unknown
	 * operation"; wms_client_breaker_for "NULL if unknown" */
	FN("wms_client_bulkhead_get");
	BAD2_NOERR(wms_client_bulkhead_get(&s, g_client, ""));
	BAD2_NOERR(wms_client_bulkhead_get(&s, g_client, "SubmitOrder "));
	BAD2_NOERR(wms_client_bulkhead_get(&s, g_client, "SubmitOrder\x80"));
	WORKS(wms_client_bulkhead_get(&s, g_client, "SubmitOrder"), WMS_OK, NULL);
	FN("wms_client_breaker_for");
	CASE();
	CHECK(wms_client_breaker_for(g_client, "") == NULL, "breaker_for(\"\") not NULL");
	CASE();
	CHECK(wms_client_breaker_for(g_client, "submitorder") == NULL,
	      "breaker_for(\"submitorder\") not NULL");
	CHECK(wms_client_breaker_for(g_client, "SubmitOrder") != NULL, "baseline");
	END();
}

/* ===== call.h ============================================================== */

static void call_options(void **state)
{
	static const unsigned bad_version[] = { 0, WMS_CALL_OPTIONS_VERSION + 1, UINT_MAX };
	/* call.h: operation "1-64 bytes of [A-Za-z0-9._-]" */
	static const char *const ops[] = { "", " ", "Get Shipment", "Get\x01", "Get\x80",
					   "Get:Shipment", g_id65 };
	/* soap_action "At most 512 bytes, no control characters or '"'" */
	static const char *const actions[] = { "urn:x\"y", "urn:x\x01", "urn:x\r\nX: y" };
	static char long_action[514];
	wms_call_options o;
	xmlDocPtr out = (xmlDocPtr)&out;
	wms_error e;
	size_t i;
	(void)state;
	memset(long_action, 'a', 513);
	long_action[513] = '\0';
	FN("wms_call_options_init");
	INIT_REFUSES(wms_call_options_init, o, bad_version);
	WORKS(wms_call_options_init(&o, WMS_CALL_OPTIONS_VERSION), WMS_OK, NULL);
	FN("wms_call");
	FN("wms_call_bytes");
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = g_call;
		o.version = bad_version[i];
		BAD2(wms_call(&out, g_client, &o, body_node(), &e), &e, "version");
		CHECK(out == NULL, "version %u: *out not NULL", bad_version[i]);
		BAD2(wms_call_bytes(&out, g_client, &o, g_body_xml, strlen(g_body_xml), &e), &e,
		     "version");
	}
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		o = g_call;
		o.operation = ops[i];
		BAD2(wms_call(&out, g_client, &o, body_node(), &e), &e, "operation");
		BAD2(wms_call_bytes(&out, g_client, &o, g_body_xml, strlen(g_body_xml), &e), &e,
		     "operation");
	}
	for (i = 0; i < sizeof(actions) / sizeof(actions[0]); i++) {
		o = g_call;
		o.soap_action = actions[i];
		BAD2(wms_call(&out, g_client, &o, body_node(), &e), &e, "soap_action");
	}
	o = g_call;
	o.soap_action = long_action;
	BAD2(wms_call(&out, g_client, &o, body_node(), &e), &e, "soap_action");
	/* soap_action "NULL = """; reply_namespace "" for none: both allowed */
	o = g_call;
	o.soap_action = "";
	o.reply_namespace = "";
	stale(&e);
	WORKS(wms_call(&out, g_client, &o, body_node(), &e), WMS_ERR_CONNECT, &e);
	/* call.h: reply_element "\"\" names none: WMS_ERR_INVALID_ARG" */
	o = g_call;
	o.reply_element = "";
	BAD2(wms_call(&out, g_client, &o, body_node(), &e), &e, "reply_element");
	/* call.h: wms_call_bytes "one element ... no DOCTYPE ...: INVALID_ARG
	 * saying why otherwise, nothing sent" */
	{
		static const char *const bodies[] = { "", "<a>", "<a/><b/>", "text",
						      "<!DOCTYPE a [<!ENTITY x \"y\">]><a>&x;</a>",
						      "<a>\x80</a>" };
		for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++)
			BAD2(wms_call_bytes(&out, g_client, &g_call, bodies[i], strlen(bodies[i]),
					    &e),
			     &e, (const char *)NULL);
	}
	STILL_CONNECTS(g_client, "the generic calls' bad values");
	WORKS(wms_call(&out, g_client, &g_call, body_node(), &e), WMS_ERR_CONNECT, &e);
	END();
}

/* ===== breaker.h =========================================================== */

typedef struct events {
	int n;
	wms_breaker_state last_to;
	wms_store_state last_store;
} events;

static void on_event(const wms_breaker_event *ev, void *payload)
{
	events *x = payload;
	x->n++;
	x->last_to = ev->to;
	x->last_store = ev->store;
}

static void breaker_options(void **state)
{
	static const unsigned bad_version[] = { 0, 1, WMS_BREAKER_OPTIONS_VERSION + 1, UINT_MAX };
	static const int bad_mode[] = BAD_ENUMS(WMS_BREAKER_MODE_TIME_BASED);
	static const char *const names_bad[] = { "", "wms\x01", "wms\n", "wms\x80", "\xc3" };
	wms_breaker_options o;
	wms_breaker *b = (wms_breaker *)&b;
	size_t i;
	(void)state;
	/* breaker.h: wms_breaker_options_init "with the right version" */
	FN("wms_breaker_options_init");
	INIT_REFUSES(wms_breaker_options_init, o, bad_version);
	/* wms_breaker_new "Validates every field: an out-of-range value gives
	 * WMS_ERR_INVALID_ARG" (no err: the status alone) */
	FN("wms_breaker_new");
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = (wms_breaker_options)WMS_BREAKER_OPTIONS_INIT;
		o.version = bad_version[i];
		b = (wms_breaker *)&b;
		BAD2_NOERR(wms_breaker_new(&b, &o));
		CHECK(b == NULL, "version %u: *out not NULL", bad_version[i]);
		if (b && b != (wms_breaker *)&b)
			wms_breaker_free(b);
	}
	for (i = 0; i < 3; i++) {
		o = (wms_breaker_options)WMS_BREAKER_OPTIONS_INIT;
		o.mode = (wms_breaker_mode)bad_mode[i];
		b = NULL;
		BAD2_NOERR(wms_breaker_new(&b, &o));
		wms_breaker_free(b);
	}
	for (i = 0; i < sizeof(names_bad) / sizeof(names_bad[0]); i++) {
		o = (wms_breaker_options)WMS_BREAKER_OPTIONS_INIT;
		o.name = names_bad[i];
		b = NULL;
		BAD2_NOERR(wms_breaker_new(&b, &o));
		wms_breaker_free(b);
	}
	/* UTF-8 text is allowed */
	o = (wms_breaker_options)WMS_BREAKER_OPTIONS_INIT;
	o.name = "entrep\xc3\xb4t";
	b = NULL;
	WORKS(wms_breaker_new(&b, &o), WMS_OK, NULL);
	wms_breaker_free(b);
	END();
}

static void breaker_enums(void **state)
{
	static const int bad_outcome[] = BAD_ENUMS(WMS_OUTCOME_IGNORED);
	static const int bad_state[] = BAD_ENUMS(WMS_BREAKER_STATE_FORCED_OPEN);
	static const int bad_store[] = BAD_ENUMS(WMS_STORE_STATE_DEGRADED);
	wms_breaker_options o = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_snapshot s0, s1;
	wms_breaker_permit p;
	wms_breaker *b = NULL;
	events ev;
	size_t i;
	int twice;
	(void)state;
	memset(&ev, 0, sizeof(ev));
	o.failure_threshold = 3;
	o.callbacks.on_state_change = on_event;
	o.callbacks.payload = &ev;
	assert_int_equal(wms_breaker_new(&b, &o), WMS_OK);

	/* breaker.h: wms_breaker_record - header silent on an unknown outcome:
	 * no crash, the permit used up, nothing counted for or against the
	 * dependency (no success, no failure, no transition) */
	FN("wms_breaker_record");
	for (i = 0; i < 3; i++)
		for (twice = 0; twice < 2; twice++) {
			CASE();
			wms_breaker_snapshot_get(&s0, b);
			assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
			wms_breaker_record(b, &p, (wms_outcome)bad_outcome[i]);
			wms_breaker_snapshot_get(&s1, b);
			CHECK(s1.successes == s0.successes && s1.failures == s0.failures &&
				      s1.consecutive_failures == s0.consecutive_failures &&
				      s1.state == WMS_BREAKER_STATE_CLOSED && ev.n == 0,
			      "record(outcome %d): successes %llu->%llu failures %llu->%llu "
			      "state %s", bad_outcome[i], (unsigned long long)s0.successes,
			      (unsigned long long)s1.successes, (unsigned long long)s0.failures,
			      (unsigned long long)s1.failures, wms_breaker_state_name(s1.state));
		}
	/* the breaker still counts: three failures open it */
	for (i = 0; i < 3; i++) {
		assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
		wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
	}
	CHECK(wms_breaker_state_get(b) == WMS_BREAKER_STATE_OPEN,
	      "after bad outcomes, 3 failures did not open it (%s)",
	      wms_breaker_state_name(wms_breaker_state_get(b)));
	wms_breaker_reset(b);
	ev.n = 0;

	/* sys/breaker_store.h: wms_breaker_local_adopt "OPEN ..., CLOSED
	 * afresh, FORCED_OPEN or DISABLED. HALF_OPEN is taken as OPEN" -
	 * silent on another value: nothing changed, no event ("Fires no
	 * event") */
	FN("wms_breaker_local_adopt");
	for (i = 0; i < 3; i++)
		for (twice = 0; twice < 2; twice++) {
			uint32_t left = 7;
			CASE();
			wms_breaker_local_adopt(b, (wms_breaker_state)bad_state[i], 1000);
			CHECK(wms_breaker_local_state(b, &left) == WMS_BREAKER_STATE_CLOSED &&
				      wms_breaker_state_get(b) == WMS_BREAKER_STATE_CLOSED,
			      "local_adopt(%d): state %s", bad_state[i],
			      wms_breaker_state_name(wms_breaker_state_get(b)));
		}
	CHECK(ev.n == 0, "local_adopt: %d events", ev.n);

	/* wms_breaker_store_event "Tell the breaker's listener of a change the
	 * store made (or of a change of the store's own state ...)" - header
	 * silent on states out of range: no state or store state this
	 * version does not know is a change: nothing changed (no transition
	 * counted, the snapshot's store state as it was, no event) */
	FN("wms_breaker_store_event");
	for (i = 0; i < 3; i++)
		for (twice = 0; twice < 2; twice++) {
			CASE();
			ev.n = 0;
			wms_breaker_snapshot_get(&s0, b);
			wms_breaker_store_event(b, WMS_BREAKER_STATE_CLOSED,
						(wms_breaker_state)bad_state[i], "bad to",
						WMS_STORE_STATE_NONE);
			wms_breaker_snapshot_get(&s1, b);
			CHECK(s1.transitions == s0.transitions && ev.n == 0,
			      "store_event(to %d): transitions %llu->%llu, %d events (to %d)",
			      bad_state[i], (unsigned long long)s0.transitions,
			      (unsigned long long)s1.transitions, ev.n, (int)ev.last_to);
			CASE();
			ev.n = 0;
			wms_breaker_store_event(b, (wms_breaker_state)bad_state[i],
						WMS_BREAKER_STATE_OPEN, "bad from",
						WMS_STORE_STATE_DEGRADED);
			wms_breaker_snapshot_get(&s1, b);
			CHECK(s1.transitions == s0.transitions && ev.n == 0 &&
				      s1.store_state == s0.store_state,
			      "store_event(from %d): transitions %llu->%llu, %d events, store %d",
			      bad_state[i], (unsigned long long)s0.transitions,
			      (unsigned long long)s1.transitions, ev.n, (int)s1.store_state);
			CASE();
			ev.n = 0;
			wms_breaker_store_event(b, WMS_BREAKER_STATE_CLOSED, WMS_BREAKER_STATE_CLOSED,
						"bad store", (wms_store_state)bad_store[i]);
			wms_breaker_snapshot_get(&s1, b);
			CHECK(s1.store_state == s0.store_state && ev.n == 0,
			      "store_event(store %d): snapshot store_state %d, %d events",
			      bad_store[i], (int)s1.store_state, ev.n);
		}
	/* and health renders it all the same (no crash) */
	{
		char *out = NULL;
		WORKS(wms_health_json(&out, &b, 1), WMS_OK, NULL);
		if (out && strstr(out, "\"store\""))
			printf("note: after bad store events the health JSON has: %s\n", out);
		wms_free(out);
	}
	/* the breaker still counts */
	wms_breaker_reset(b);
	for (i = 0; i < 3; i++) {
		assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
		wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
	}
	CHECK(wms_breaker_state_get(b) == WMS_BREAKER_STATE_OPEN,
	      "after bad store events, 3 failures did not open it");
	wms_breaker_free(b);
	END();
}

/* ===== shared.h ============================================================ */

static void shared(void **state)
{
	static const unsigned bad_version[] = { 0, WMS_SHARED_OPTIONS_VERSION + 1, UINT_MAX };
	static const char *const urls[] = { "", "redis://", "http://127.0.0.1:6379",
					    "redis://127.0.0.1:99999", "redis://127.0.0.1:6379/x",
					    "unix://", "redis://127.0.0.1 :6379",
					    "redis://:sekret@127.0.0.1:99999" };
	static const char *const fleet[] = { "", "a b", "a\x01", "a\x80", "a:b",
					     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
	wms_shared_options o;
	wms_breaker_store *s = NULL;
	wms_error e;
	size_t i;
	(void)state;
	FN("wms_shared_options_init");
	INIT_REFUSES(wms_shared_options_init, o, bad_version);
	/* shared.h: wms_redis_store_new "WMS_ERR_INVALID_ARG (naming the field)
	 * for a bad option or URL"; "on any error *out is NULL"; "The password
	 * is never logged or put in a message" */
	FN("wms_redis_store_new");
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = (wms_shared_options)WMS_SHARED_OPTIONS_INIT;
		o.redis_url = NO_REDIS;
		o.version = bad_version[i];
		s = (wms_breaker_store *)&s;
		BAD2(wms_redis_store_new(&s, &o, &e), &e, "version");
		CHECK(s == NULL, "version %u: *out not NULL", bad_version[i]);
	}
	for (i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		o = (wms_shared_options)WMS_SHARED_OPTIONS_INIT;
		o.redis_url = urls[i];
		s = (wms_breaker_store *)&s;
		BAD2(wms_redis_store_new(&s, &o, &e), &e, "redis_url");
		CHECK(strstr(e.message, "sekret") == NULL, "the password in \"%s\"", e.message);
		if (s && s != (wms_breaker_store *)&s) {
			wms_breaker_store_free(s);
			s = NULL;
		}
	}
	for (i = 0; i < sizeof(fleet) / sizeof(fleet[0]); i++) {
		o = (wms_shared_options)WMS_SHARED_OPTIONS_INIT;
		o.redis_url = NO_REDIS;
		o.name = fleet[i];
		s = (wms_breaker_store *)&s;
		BAD2(wms_redis_store_new(&s, &o, &e), &e, "name");
		if (s && s != (wms_breaker_store *)&s) {
			wms_breaker_store_free(s);
			s = NULL;
		}
	}
	/* a store of a version the breaker does not know
	 * (sys/breaker_store.h: "A store starts with this header": version
	 * WMS_BREAKER_STORE_VERSION): wms_breaker_new refuses the link */
	o = (wms_shared_options)WMS_SHARED_OPTIONS_INIT;
	o.redis_url = NO_REDIS;
	o.name = "badvalues";
	s = NULL;
	stale(&e); /* a success after refusals says so in `err` too */
	WORKS(wms_redis_store_new(&s, &o, &e), WMS_OK, &e);
	assert_non_null(s);
	{
		static const unsigned bad_store_version[] = { 0, WMS_BREAKER_STORE_VERSION + 1,
							      UINT_MAX };
		wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
		wms_breaker *b = NULL;
		FN("wms_breaker_new (store version)");
		bo.store = s;
		for (i = 0; i < sizeof(bad_store_version) / sizeof(bad_store_version[0]); i++) {
			s->version = bad_store_version[i];
			b = NULL;
			BAD2_NOERR(wms_breaker_new(&b, &bo));
			wms_breaker_free(b);
		}
		s->version = WMS_BREAKER_STORE_VERSION;
		b = NULL;
		WORKS(wms_breaker_new(&b, &bo), WMS_OK, NULL);
		wms_breaker_free(b);
	}
	wms_breaker_store_free(s);
	END();
}

/* ===== async.h ============================================================= */

#define COMPLETES2(call, s, a, want, name)                                                   \
	do {                                                                                 \
		int twice_;                                                                  \
		for (twice_ = 0; twice_ < 2; twice_++)                                       \
			completes_((call), (s), (a), (want), (name), #call, __LINE__);       \
	} while (0)

static void async_options(void **state)
{
	static const unsigned bad_version[] = { 0, WMS_ASYNC_OPTIONS_VERSION + 1, UINT_MAX };
	wms_async_options o;
	wms_async *a = (wms_async *)&a;
	wms_error e;
	size_t i;
	(void)state;
	FN("wms_async_options_init");
	INIT_REFUSES(wms_async_options_init, o, bad_version);
	FN("wms_async_new");
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = (wms_async_options)WMS_ASYNC_OPTIONS_INIT;
		o.version = bad_version[i];
		a = (wms_async *)&a;
		BAD2(wms_async_new(&a, g_client, &o, &e), &e, "version");
		CHECK(a == NULL, "version %u: *out not NULL", bad_version[i]);
	}
	STILL_CONNECTS(g_client, "refused async contexts");
	END();
}

static void async_calls(void **state)
{
	static const int bad_prio[] = BAD_ENUMS(WMS_PRIORITY_OVERNIGHT);
	wms_async *a = NULL;
	wms_call_options co;
	wms_order o;
	wms_error e;
	seen s;
	size_t i;
	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(wms_async_new(&a, g_client, NULL, &e), WMS_OK);
	FN("wms_async_submit_order");
	FN("wms_async_get_order_status");
	FN("wms_async_cancel_order");
	FN("wms_async_get_stock_level");
	FN("wms_async_call_start");
	for (i = 0; i < N_BAD_IDS; i++) {
		o = g_order;
		o.order_id = g_bad_ids[i];
		COMPLETES2(wms_async_submit_order(NULL, a, &o, on_submit, &s), &s, a,
			   WMS_ERR_INVALID_ARG, "order_id");
		COMPLETES2(wms_async_get_order_status(NULL, a, g_bad_ids[i], on_status, &s), &s, a,
			   WMS_ERR_INVALID_ARG, "order_id");
		COMPLETES2(wms_async_cancel_order(NULL, a, g_bad_ids[i], "why", on_cancel, &s), &s,
			   a, WMS_ERR_INVALID_ARG, "order_id");
	}
	o = g_order;
	o.version = UINT_MAX;
	COMPLETES2(wms_async_submit_order(NULL, a, &o, on_submit, &s), &s, a, WMS_ERR_INVALID_ARG,
		   "version");
	for (i = 0; i < 3; i++) {
		o = g_order;
		o.priority = (wms_priority)bad_prio[i];
		COMPLETES2(wms_async_submit_order(NULL, a, &o, on_submit, &s), &s, a,
			   WMS_ERR_INVALID_ARG, "priority");
	}
	{
		const char *const skus_bad[] = { "" };
		COMPLETES2(wms_async_get_stock_level(NULL, a, skus_bad, 1, on_stock, &s), &s, a,
			   WMS_ERR_INVALID_ARG, "skus[0]");
		COMPLETES2(wms_async_get_stock_level(NULL, a, g_skus, 0, on_stock, &s), &s, a,
			   WMS_ERR_INVALID_ARG, "sku_count");
	}
	COMPLETES2(wms_async_cancel_order(NULL, a, "ORD-1", "why\x80", on_cancel, &s), &s, a,
		   WMS_ERR_INVALID_ARG, "reason");
	co = g_call;
	co.version = 0;
	COMPLETES2(wms_async_call_start(NULL, a, &co, body_node(), on_call, &s), &s, a,
		   WMS_ERR_INVALID_ARG, "version");
	co = g_call;
	co.operation = "";
	COMPLETES2(wms_async_call_start(NULL, a, &co, body_node(), on_call, &s), &s, a,
		   WMS_ERR_INVALID_ARG, "operation");
	co = g_call;
	co.soap_action = "urn:\"x";
	COMPLETES2(wms_async_call_start(NULL, a, &co, body_node(), on_call, &s), &s, a,
		   WMS_ERR_INVALID_ARG, "soap_action");
	/* the same context still runs a valid call */
	COMPLETES2(wms_async_get_order_status(NULL, a, "ORD-1", on_status, &s), &s, a,
		   WMS_ERR_CONNECT, NULL);
	COMPLETES2(wms_async_call_start(NULL, a, &g_call, body_node(), on_call, &s), &s, a,
		   WMS_ERR_CONNECT, NULL);
	wms_async_free(a);
	END();
}

static void async_loop_values(void **state)
{
	static const int bad_events[] = { 0, 8, 99, -1 };
	wms_async *a = NULL;
	wms_error e;
	seen s;
	size_t i;
	wms_status st;
	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(wms_async_new(&a, g_client, NULL, &e), WMS_OK);
	/* async.h: wms_async_socket_action "`events`: WMS_EV_IN, _OUT, _ERR,
	 * or'ed" - header silent on other bits, on an fd it never asked to
	 * watch, and on a context without a loop of the caller's: no crash,
	 * nothing started or ended, the context still runs calls */
	FN("wms_async_socket_action");
	for (i = 0; i < sizeof(bad_events) / sizeof(bad_events[0]); i++) {
		int twice;
		for (twice = 0; twice < 2; twice++) {
			CASE();
			st = wms_async_socket_action(a, -1, bad_events[i]);
			CHECK(wms_async_in_flight(a) == 0 && s.calls == 0,
			      "socket_action(-1, %d): %s, a call appeared", bad_events[i],
			      wms_status_name(st));
			CASE();
			st = wms_async_socket_action(a, 12345, bad_events[i]);
			CHECK(wms_async_in_flight(a) == 0, "socket_action(12345, %d): %s",
			      bad_events[i], wms_status_name(st));
		}
	}
	COMPLETES2(wms_async_get_order_status(NULL, a, "ORD-1", on_status, &s), &s, a,
		   WMS_ERR_CONNECT, NULL);
	/* wms_async_poll / wms_async_run "(-1: until something happens / no
	 * limit; 0: do not wait)" - header silent on other negative values:
	 * with a call in flight that ends at once (ENDPOINT), no hang, the call
	 * completes */
	FN("wms_async_poll");
	FN("wms_async_run");
	{
		static const int bad_timeouts[] = { -2, INT_MIN };
		for (i = 0; i < 2; i++) {
			int n;
			CASE();
			memset(&s, 0, sizeof(s));
			assert_int_equal(wms_async_get_order_status(NULL, a, "ORD-1", on_status, &s),
					 WMS_OK);
			st = wms_async_run(a, bad_timeouts[i]);
			CHECK(s.calls == 1 && s.st == WMS_ERR_CONNECT,
			      "run(%d): %s, %d calls, %s", bad_timeouts[i], wms_status_name(st),
			      s.calls, wms_status_name(s.st));
			CASE();
			memset(&s, 0, sizeof(s));
			assert_int_equal(wms_async_get_order_status(NULL, a, "ORD-1", on_status, &s),
					 WMS_OK);
			for (n = 0; n < 2000 && s.calls == 0; n++)
				(void)wms_async_poll(a, bad_timeouts[i]);
			CHECK(s.calls == 1 && s.st == WMS_ERR_CONNECT, "poll(%d): %d calls, %s",
			      bad_timeouts[i], s.calls, wms_status_name(s.st));
		}
	}
	wms_async_free(a);
	END();
}

/* ===== config.h ============================================================ */

static const char g_yaml[] = "circuit_breaker:\n"
			     "  failure_threshold: 3\n"
			     "  shared:\n"
			     "    redis_url: " NO_REDIS "\n"
			     "client:\n"
			     "  timeout_ms: 2500\n"
			     "  max_concurrent_calls: 4\n";
static const char g_yaml_plain[] = "circuit_breaker:\n"
				   "  failure_threshold: 3\n";

static void config_versions(void **state)
{
	static const unsigned bad_client[] = { 0, 1, WMS_CLIENT_OPTIONS_VERSION + 1, UINT_MAX };
	static const unsigned bad_breaker[] = { 0, 1, WMS_BREAKER_OPTIONS_VERSION + 1, UINT_MAX };
	static const unsigned bad_shared[] = { 0, WMS_SHARED_OPTIONS_VERSION + 1, UINT_MAX };
	wms_config *cfg = NULL, *plain = NULL;
	wms_client_options co, before;
	wms_breaker_options bo, bbefore;
	wms_shared_options so, sbefore;
	wms_error e;
	size_t i;
	(void)state;
	assert_int_equal(wms_config_parse_yaml(&cfg, g_yaml, strlen(g_yaml), "sla", &e), WMS_OK);
	assert_int_equal(
		wms_config_parse_yaml(&plain, g_yaml_plain, strlen(g_yaml_plain), "sla", &e),
		WMS_OK);
	/* config.h: wms_config_apply "`opts` must be initialised ..., version
	 * 2 to 4 ...; with a shared block in the file, version 3 or later with
	 * `shared` initialised ...; with the bulkhead keys ..., version 4.
	 * WMS_ERR_INVALID_ARG, with nothing written, otherwise." */
	FN("wms_config_apply");
	for (i = 0; i < sizeof(bad_client) / sizeof(bad_client[0]); i++) {
		co = client_opts();
		co.version = bad_client[i];
		before = co;
		BAD2_NOERR(wms_config_apply(plain, &co));
		CHECK(memcmp(&co, &before, sizeof(co)) == 0, "version %u: written", bad_client[i]);
	}
	co = client_opts();
	co.version = 2; /* no room for shared */
	before = co;
	BAD2_NOERR(wms_config_apply(cfg, &co));
	CHECK(memcmp(&co, &before, offsetof(wms_client_options, shared)) == 0,
	      "version 2 with a shared block: written");
	co = client_opts();
	co.version = 3; /* no room for the bulkhead keys */
	before = co;
	BAD2_NOERR(wms_config_apply(cfg, &co));
	CHECK(memcmp(&co, &before, offsetof(wms_client_options, bulkhead)) == 0,
	      "version 3 with bulkhead keys: written");
	for (i = 0; i < sizeof(bad_shared) / sizeof(bad_shared[0]); i++) {
		co = client_opts();
		co.shared.version = bad_shared[i];
		before = co;
		BAD2_NOERR(wms_config_apply(cfg, &co));
		CHECK(memcmp(&co, &before, sizeof(co)) == 0, "shared.version %u: written",
		      bad_shared[i]);
	}
	co = client_opts();
	WORKS(wms_config_apply(cfg, &co), WMS_OK, NULL);
	CHECK(co.breaker_options.failure_threshold == 3 && co.timeout_ms == 2500,
	      "the valid apply did not apply");
	/* the older versions the header accepts, without the newer keys */
	co = client_opts();
	co.version = 2;
	WORKS(wms_config_apply(plain, &co), WMS_OK, NULL);
	CHECK(co.breaker_options.failure_threshold == 3, "version 2: not applied");
	FN("wms_config_breaker_options");
	for (i = 0; i < sizeof(bad_breaker) / sizeof(bad_breaker[0]); i++) {
		bo = (wms_breaker_options)WMS_BREAKER_OPTIONS_INIT;
		bo.version = bad_breaker[i];
		bbefore = bo;
		BAD2_NOERR(wms_config_breaker_options(cfg, &bo));
		CHECK(memcmp(&bo, &bbefore, sizeof(bo)) == 0, "version %u: written",
		      bad_breaker[i]);
	}
	FN("wms_config_shared_options");
	for (i = 0; i < sizeof(bad_shared) / sizeof(bad_shared[0]); i++) {
		so = (wms_shared_options)WMS_SHARED_OPTIONS_INIT;
		so.version = bad_shared[i];
		sbefore = so;
		BAD2_NOERR(wms_config_shared_options(cfg, &so));
		CHECK(memcmp(&so, &sbefore, sizeof(so)) == 0, "version %u: written",
		      bad_shared[i]);
	}
	wms_config_free(cfg);
	wms_config_free(plain);
	END();
}

static void config_strings(void **state)
{
	wms_config *cfg = (wms_config *)&cfg;
	wms_error e;
	wms_status st;
	(void)state;
	/* config.h: wms_config_load_yaml "<file>: cannot open: <strerror>" as
	 * WMS_ERR_CONFIG, *out NULL */
	FN("wms_config_load_yaml");
	{
		static const char *const paths[] = { "", "/nonexistent-wms-badvalues/sla.yaml",
						     "/nonexistent-wms-badvalues/\x80.yaml" };
		size_t i;
		int twice;
		for (i = 0; i < 3; i++)
			for (twice = 0; twice < 2; twice++) {
				CASE();
				cfg = (wms_config *)&cfg;
				stale(&e);
				st = wms_config_load_yaml(&cfg, paths[i], &e);
				CHECK(st == WMS_ERR_CONFIG && e.status == st &&
					      e.delivery == WMS_DELIVERY_NOT_SENT &&
					      strstr(e.message, "cannot open") && cfg == NULL,
				      "load_yaml(\"%s\"): %s (\"%s\"), out %p", paths[i],
				      wms_status_name(st), e.message, (void *)cfg);
			}
	}
	/* wms_config_parse_yaml: `name` "used in messages in place of a file
	 * name": "" is a name (the message then starts ":"); len 0 is an empty
	 * file - header silent: either a config with nothing in it or
	 * CONFIG, no crash */
	FN("wms_config_parse_yaml");
	{
		static const char bad[] = "circuit_breaker:\n  failure_threshold: lots\n";
		CASE();
		cfg = NULL;
		stale(&e);
		st = wms_config_parse_yaml(&cfg, bad, strlen(bad), "", &e);
		CHECK(st == WMS_ERR_CONFIG && cfg == NULL && e.message[0] == ':',
		      "name \"\": %s \"%s\"", wms_status_name(st), e.message);
		CASE();
		cfg = NULL;
		stale(&e);
		/* config.h: "an empty file is WMS_ERR_CONFIG" */
		st = wms_config_parse_yaml(&cfg, "", 0, "empty", &e);
		CHECK(st == WMS_ERR_CONFIG && !cfg && strstr(e.message, "empty"),
		      "len 0: %s (\"%s\")", wms_status_name(st), e.message);
		wms_config_free(cfg);
		/* client.health_listen "checked when the file was read (a dotted
		 * IPv4 address or [IPv6], port 1-65535)" */
		{
			static const char *const listens[] = {
				"client:\n  health_listen: \"\"\n",
				"client:\n  health_listen: localhost:9464\n",
				"client:\n  health_listen: 127.0.0.1:0\n",
				"client:\n  health_listen: 127.0.0.1:65536\n",
				"client:\n  health_listen: \"127.0.0.1 :9464\"\n",
			};
			size_t i;
			for (i = 0; i < sizeof(listens) / sizeof(listens[0]); i++) {
				CASE();
				cfg = NULL;
				stale(&e);
				st = wms_config_parse_yaml(&cfg, listens[i], strlen(listens[i]), "sla",
							   &e);
				CHECK(st == WMS_ERR_CONFIG && cfg == NULL &&
					      strstr(e.message, "health_listen"),
				      "health_listen case %zu: %s (\"%s\")", i, wms_status_name(st),
				      e.message);
				wms_config_free(cfg);
			}
		}
	}
	END();
}

/* ===== curl.h ============================================================== */

static void curl_options(void **state)
{
	static const unsigned bad_version[] = { 0, 1, WMS_CURL_TRANSPORT_OPTIONS_VERSION + 1,
						UINT_MAX };
	wms_curl_transport_options o;
	wms_transport *t = NULL;
	wms_error e;
	size_t i;
	(void)state;
	FN("wms_curl_transport_options_init");
	INIT_REFUSES(wms_curl_transport_options_init, o, bad_version);
	/* curl.h: wms_curl_transport_create "INVALID_ARG, with `err` (optional)
	 * saying which and why, for a path that cannot be read, a half pair, a
	 * bad value or an unknown version" */
	FN("wms_curl_transport_create");
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = (wms_curl_transport_options)WMS_CURL_TRANSPORT_OPTIONS_INIT;
		o.version = bad_version[i];
		t = (wms_transport *)&t;
		BAD2(wms_curl_transport_create(&t, &o, &e), &e, "version");
		CHECK(t == NULL, "version %u: *out not NULL", bad_version[i]);
	}
#define CURL_BAD(field, value, name)                                                         \
	do {                                                                                 \
		o = (wms_curl_transport_options)WMS_CURL_TRANSPORT_OPTIONS_INIT;             \
		o.field = (value);                                                           \
		t = NULL;                                                                    \
		BAD2(wms_curl_transport_create(&t, &o, &e), &e, (name));                     \
		if (t)                                                                       \
			t->free(t);                                                          \
	} while (0)
	CURL_BAD(ca_file, "", "ca_file");
	CURL_BAD(ca_path, "", "ca_path");
	CURL_BAD(pinned_public_key, "", "pinned_public_key");
	CURL_BAD(user_agent, "ua\nX: y", "user_agent");
	CURL_BAD(user_agent, "ua\rX: y", "user_agent");
#undef CURL_BAD
	/* user_agent "" = none */
	o = (wms_curl_transport_options)WMS_CURL_TRANSPORT_OPTIONS_INIT;
	o.user_agent = "";
	t = NULL;
	WORKS(wms_curl_transport_create(&t, &o, &e), WMS_OK, &e);
	if (t)
		t->free(t);
	END();
}

/* ===== fixture.h =========================================================== */

static void replay(void **state)
{
	static const unsigned bad_version[] = { 0, WMS_REPLAY_OPTIONS_VERSION + 1, UINT_MAX };
	static const int bad_order[] = BAD_ENUMS(WMS_REPLAY_SEQUENCE);
	char file[512];
	const char *files[1];
	wms_replay_options o;
	wms_transport *t = NULL;
	wms_error e;
	size_t i;
	(void)state;
	files[0] = source_path(file, sizeof(file),
			       "tests/data/fixtures/good/get-order-status-ok.xml");
	/* fixture.h: wms_replay_options_init "INVALID_ARG for an unknown
	 * version" */
	FN("wms_replay_options_init");
	INIT_REFUSES(wms_replay_options_init, o, bad_version);
	FN("wms_replay_transport_new");
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++) {
		o = (wms_replay_options)WMS_REPLAY_OPTIONS_INIT;
		o.files = files;
		o.file_count = 1;
		o.version = bad_version[i];
		t = (wms_transport *)&t;
		BAD2(wms_replay_transport_new(&t, &o, &e), &e, "version");
		CHECK(t == NULL, "version %u: *out not NULL", bad_version[i]);
	}
	for (i = 0; i < 3; i++) {
		o = (wms_replay_options)WMS_REPLAY_OPTIONS_INIT;
		o.files = files;
		o.file_count = 1;
		o.order = (wms_replay_order)bad_order[i];
		t = NULL;
		BAD2(wms_replay_transport_new(&t, &o, &e), &e, "order");
		if (t)
			t->free(t);
	}
	/* a file "" / a directory "": "A fixture that does not load gives
	 * WMS_ERR_FIXTURE naming the file" - "" is no file: FIXTURE or
	 * INVALID_ARG, no transport */
	{
		const char *empty[1] = { "" };
		int twice;
		for (twice = 0; twice < 2; twice++) {
			wms_status st;
			o = (wms_replay_options)WMS_REPLAY_OPTIONS_INIT;
			o.files = empty;
			o.file_count = 1;
			t = (wms_transport *)&t;
			stale(&e);
			CASE();
			st = wms_replay_transport_new(&t, &o, &e);
			CHECK((st == WMS_ERR_FIXTURE || st == WMS_ERR_INVALID_ARG) && t == NULL,
			      "files[0] \"\": %s (\"%s\")", wms_status_name(st), e.message);
			o = (wms_replay_options)WMS_REPLAY_OPTIONS_INIT;
			o.directory = "";
			t = (wms_transport *)&t;
			stale(&e);
			CASE();
			st = wms_replay_transport_new(&t, &o, &e);
			CHECK((st == WMS_ERR_FIXTURE || st == WMS_ERR_INVALID_ARG) && t == NULL,
			      "directory \"\": %s (\"%s\")", wms_status_name(st), e.message);
		}
	}
	/* then a valid one, `err` reused: a success after refusals says so */
	o = (wms_replay_options)WMS_REPLAY_OPTIONS_INIT;
	o.files = files;
	o.file_count = 1;
	t = NULL;
	stale(&e);
	WORKS(wms_replay_transport_new(&t, &o, &e), WMS_OK, &e);
	if (t)
		t->free(t);
	END();
}

static void record(void **state)
{
	static const unsigned bad_version[] = { 0, WMS_RECORD_OPTIONS_VERSION + 1, UINT_MAX };
	char dir[] = "/tmp/wms-badvalues-XXXXXX", long_prefix[130];
	wms_record_options o;
	wms_transport *t = NULL, *inner;
	wms_error e;
	size_t i;
	(void)state;
	assert_non_null(mkdtemp(dir));
	memset(long_prefix, 'p', 129);
	long_prefix[129] = '\0';
	FN("wms_record_options_init");
	INIT_REFUSES(wms_record_options_init, o, bad_version);
	/* fixture.h: wms_record_transport_new - `inner` "owned from now on,
	 * also when this fails" (valgrind sees a leak otherwise) */
	FN("wms_record_transport_new");
#define RECORD_BAD(setup, name)                                                              \
	do {                                                                                 \
		int twice_;                                                                  \
		for (twice_ = 0; twice_ < 2; twice_++) {                                     \
			o = (wms_record_options)WMS_RECORD_OPTIONS_INIT;                     \
			o.directory = dir;                                                   \
			setup;                                                               \
			assert_int_equal(wms_curl_transport_new(&inner), WMS_OK);            \
			t = (wms_transport *)&t;                                             \
			stale(&e);                                                           \
			bad_arg_(wms_record_transport_new(&t, inner, &o, &e), &e, (name),    \
				 #setup, __LINE__);                                          \
			CHECK(t == NULL, #setup ": *out not NULL");                          \
		}                                                                            \
	} while (0)
	for (i = 0; i < sizeof(bad_version) / sizeof(bad_version[0]); i++)
		RECORD_BAD(o.version = bad_version[i], "version");
	/* directory "Existing directory ... Required" */
	RECORD_BAD(o.directory = "", "directory");
	RECORD_BAD(o.directory = "/nonexistent-wms-badvalues", "directory");
	/* prefix "At most 128 bytes (more is WMS_ERR_INVALID_ARG)"; a prefix
	 * that leaves the directory ('/', "..") is no file-name prefix
	 * (wms_record_name_fn: "a plain file name (no '/', not starting with
	 * '.')") */
	RECORD_BAD(o.prefix = long_prefix, "prefix");
	RECORD_BAD(o.prefix = "../escape-", "prefix");
	RECORD_BAD(o.prefix = "sub/x-", "prefix");
	/* volatile_elements: element local names */
	{
		const char *const v_empty[] = { "" };
		const char *const v_space[] = { "a b" };
		RECORD_BAD((o.volatile_elements = v_empty, o.volatile_count = 1),
			   "volatile_elements[0]");
		RECORD_BAD((o.volatile_elements = v_space, o.volatile_count = 1),
			   "volatile_elements[0]");
	}
#undef RECORD_BAD
	/* prefix "" is as NULL (""): allowed */
	o = (wms_record_options)WMS_RECORD_OPTIONS_INIT;
	o.directory = dir;
	o.prefix = "";
	assert_int_equal(wms_curl_transport_new(&inner), WMS_OK);
	t = NULL;
	stale(&e); /* a success after refusals says so in `err` too */
	WORKS(wms_record_transport_new(&t, inner, &o, &e), WMS_OK, &e);
	if (t)
		t->free(t);
	rmdir(dir);
	END();
}

/* ===== health.h and health_server.h ======================================== */

static void health_prefixes(void **state)
{
	/* health.h: "A prefix is 1 to 64 bytes of [A-Za-z0-9_:], not starting
	 * with a digit ...; any other is WMS_ERR_INVALID_ARG, with *out NULL" */
	static const char *const bad[] = {
		"", "1svc", "svc.name", "svc-name", "svc name", "svc\x01", "svc\x80",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" /* 65 */
	};
	static const char ok64[] =
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:"; /* 64 */
	wms_breaker *b = wms_client_breaker(g_client);
	char *out = NULL;
	size_t i;
	(void)state;
	FN("wms_health_prometheus");
	FN("wms_client_health_prometheus");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		out = (char *)&out;
		BAD2_NOERR(wms_health_prometheus(&out, &b, 1, bad[i]));
		CHECK(out == NULL, "prefix case %zu: *out not NULL", i);
		out = (char *)&out;
		BAD2_NOERR(wms_client_health_prometheus(&out, g_client, bad[i]));
		CHECK(out == NULL, "client prefix case %zu: *out not NULL", i);
	}
	out = NULL;
	WORKS(wms_health_prometheus(&out, &b, 1, ok64), WMS_OK, NULL);
	wms_free(out);
	out = NULL;
	WORKS(wms_client_health_prometheus(&out, g_client, "_svc"), WMS_OK, NULL);
	wms_free(out);
	END();
}

static void health_server(void **state)
{
	/* health_server.h: listen_addr "ADDRESS:PORT, ADDRESS an IPv4 dotted
	 * quad ... or an IPv6 literal in brackets ..., PORT 0-65535 ... No
	 * host names"; "WMS_ERR_INVALID_ARG for ... a malformed `listen_addr`",
	 * `*out` NULL */
	static const char *const addrs[] = {
		"", "127.0.0.1", "127.0.0.1:", ":0", "localhost:0", "127.0.0.1:65536",
		"127.0.0.1:-1", " 127.0.0.1:0", "127.0.0.1:0 ", "127.0.0.1:0\x01", "[::1:0",
		"::1:0", "127.0.0.1:0x10", "127.0.0.256:0", "127.0.0.1:\x80"
	};
	static const char *const prefixes[] = { "", "1svc", "svc name", "svc\x80" };
	wms_client *clients[1] = { g_client };
	wms_health_server *srv = NULL;
	wms_error e;
	wms_status st;
	size_t i;
	(void)state;
	st = wms_health_server_start(&srv, clients, 1, "127.0.0.1:0", "svc", &e);
	if (st == WMS_ERR_INVALID_ARG && strstr(e.message, "built without")) {
		FN("wms_health_server_start");
		skip();
	}
	assert_int_equal(st, WMS_OK);
	wms_health_server_stop(srv);
	FN("wms_health_server_start");
	for (i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++) {
		srv = (wms_health_server *)&srv;
		BAD2(wms_health_server_start(&srv, clients, 1, addrs[i], "svc", &e), &e,
		     (const char *)NULL);
		CHECK(srv == NULL, "listen_addr case %zu: *out not NULL", i);
		if (srv && srv != (wms_health_server *)&srv) {
			printf("note: listen_addr \"%s\" served on port %u\n", addrs[i],
			       (unsigned)wms_health_server_port(srv));
			wms_health_server_stop(srv);
		}
		CHECK(strstr(e.message, "listen") != NULL || strstr(e.message, "address") != NULL,
		      "listen_addr case %zu: \"%s\" names neither listen_addr nor the address", i,
		      e.message);
	}
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		srv = (wms_health_server *)&srv;
		BAD2(wms_health_server_start(&srv, clients, 1, "127.0.0.1:0", prefixes[i], &e), &e,
		     "prefix");
		CHECK(srv == NULL, "prefix case %zu: *out not NULL", i);
		if (srv && srv != (wms_health_server *)&srv)
			wms_health_server_stop(srv);
	}
	srv = NULL;
	WORKS(wms_health_server_start(&srv, clients, 1, "127.0.0.1:0", "svc", &e), WMS_OK, &e);
	wms_health_server_stop(srv);
	END();
}

/* ===== sys/alloc.h ========================================================= */

static void global_init(void **state)
{
	size_t i;
	(void)state;
	/* sys/alloc.h: wms_global_init "WMS_ERR_INVALID_ARG (bad version,
	 * unknown route flag, incomplete allocator ...)"; "Bad options can be
	 * corrected and the call repeated": main tried each bad one first,
	 * then NULL options, which must still have worked */
	FN("wms_global_init");
	for (i = 0; i + 1 < N_GLOBAL; i++) {
		CASE();
		CHECK(g_global_st[i] == WMS_ERR_INVALID_ARG && g_global_err[i].status == g_global_st[i] &&
			      g_global_err[i].message[0],
		      "wms_global_init(%s): %s (\"%s\")", g_global_what[i],
		      wms_status_name(g_global_st[i]), g_global_err[i].message);
	}
	CASE();
	CHECK(g_global_st[N_GLOBAL - 1] == WMS_OK, "wms_global_init(%s): %s (\"%s\")",
	      g_global_what[N_GLOBAL - 1], wms_status_name(g_global_st[N_GLOBAL - 1]),
	      g_global_err[N_GLOBAL - 1].message);
	/* wms_global_options_init: versions */
	FN("wms_global_options_init");
	{
		static const unsigned bad[] = { 0, WMS_GLOBAL_OPTIONS_VERSION + 1, UINT_MAX };
		wms_global_options o, before;
		for (i = 0; i < 3; i++) {
			memset(&o, 0xA5, sizeof(o));
			before = o;
			BAD2_NOERR(wms_global_options_init(&o, bad[i]));
			CHECK(memcmp(&o, &before, sizeof(o)) == 0,
			      "init(version %u) wrote the options", bad[i]);
		}
	}
	END();
}

static void *a_malloc(size_t n, void *p)
{
	(void)p;
	return malloc(n);
}

static void *a_realloc(void *ptr, size_t n, void *p)
{
	(void)p;
	return realloc(ptr, n);
}

static int reset(void **state)
{
	(void)state;
	nfail = 0;
	return 0;
}

#define T(f) cmocka_unit_test_setup(f, reset)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(global_init),
		T(names),
		T(error_readers),
		T(client_options_init_versions),
		T(client_new_versions),
		T(client_new_enums),
		T(client_new_strings),
		T(typed_calls),
		T(client_lookups),
		T(call_options),
		T(breaker_options),
		T(breaker_enums),
		T(shared),
		T(async_options),
		T(async_calls),
		T(async_loop_values),
		T(config_versions),
		T(config_strings),
		T(curl_options),
		T(replay),
		T(record),
		T(health_prefixes),
		T(health_server),
	};
	/* sys/alloc.h: wms_global_init goes first, before any other use of
	 * libwms, libxml2 or libcurl: each bad option, then NULL options */
	{
		wms_global_options o = WMS_GLOBAL_OPTIONS_INIT;
		wms_allocator half = { a_malloc, a_realloc, NULL, NULL };
		int k = 0;
		o.version = 0;
		g_global_st[k] = wms_global_init(&o, &g_global_err[k]), k++;
		o.version = WMS_GLOBAL_OPTIONS_VERSION + 1;
		g_global_st[k] = wms_global_init(&o, &g_global_err[k]), k++;
		o.version = UINT_MAX;
		g_global_st[k] = wms_global_init(&o, &g_global_err[k]), k++;
		o = (wms_global_options)WMS_GLOBAL_OPTIONS_INIT;
		o.route = 0x4u;
		g_global_st[k] = wms_global_init(&o, &g_global_err[k]), k++;
		o = (wms_global_options)WMS_GLOBAL_OPTIONS_INIT;
		o.allocator = &half;
		g_global_st[k] = wms_global_init(&o, &g_global_err[k]), k++;
		g_global_st[k] = wms_global_init(NULL, &g_global_err[k]);
	}
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
