/* The client's options: checked, copied with their defaults, and the
 * client made from them (its breakers, workspace pool and transport). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include "breaker/breaker_int.h"
#include "client/client.h"
#include "util/fork.h"
#include "wms/sys/breaker_store.h"

/* The bytes of the options a caller built for `version` (2 ends before
 * `shared`, 3 before `bulkhead`). */
static size_t options_size(unsigned version)
{
	return version == 2   ? offsetof(wms_client_options, shared)
	       : version == 3 ? offsetof(wms_client_options, bulkhead)
			      : sizeof(wms_client_options);
}

static int version_known(unsigned version)
{
	return version >= 2 && version <= WMS_CLIENT_OPTIONS_VERSION;
}

wms_status wms_client_options_init(wms_client_options *opts, unsigned version)
{
	if (!opts || !version_known(version))
		return WMS_ERR_INVALID_ARG;
	memset(opts, 0, options_size(version));
	opts->version = version;
	opts->breaker_options.version = WMS_BREAKER_OPTIONS_VERSION;
	opts->curl.version = WMS_CURL_TRANSPORT_OPTIONS_VERSION;
	if (version >= 3)
		opts->shared.version = WMS_SHARED_OPTIONS_VERSION;
	return WMS_OK;
}

static int has_scheme(const char *url)
{
	return strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0;
}

void wms__client_async_add(wms_client *c, struct wms_async *a)
{
	if (c->calls_lock_ready)
		pthread_mutex_lock(&c->calls_lock);
	*wms__async_next(a) = c->asyncs;
	c->asyncs = a;
	if (c->calls_lock_ready)
		pthread_mutex_unlock(&c->calls_lock);
}

void wms__client_async_remove(wms_client *c, struct wms_async *a)
{
	struct wms_async **p;
	/* in a child forked since, another thread of the parent's may have
	 * held the lock at the fork: the child's only thread needs none */
	int lock = c->calls_lock_ready && !wms__forked_since(c->fork_gen);
	if (lock)
		pthread_mutex_lock(&c->calls_lock);
	for (p = &c->asyncs; *p && *p != a; p = wms__async_next(*p))
		;
	if (*p)
		*p = *wms__async_next(a);
	if (lock)
		pthread_mutex_unlock(&c->calls_lock);
}

wms_status wms__client_check_process(const wms_client *c, wms_error *err)
{
	if (!wms__forked_since(c->fork_gen))
		return WMS_OK;
	wms_error_clear(err);
	return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			 "this client was made in process %ld and cannot be used in process %ld, "
			 "forked from it since: its connections are that process's; make a "
			 "client in this one (wms_client_free lets go of the inherited one "
			 "without touching them)",
			 c->pid, (long)getpid());
}

void wms_client_free(wms_client *c)
{
	size_t i;
	int child;
	if (!c)
		return;
	child = wms__forked_since(c->fork_gen);
	/* In a child forked since, with calls_lock held at the fork by a
	 * thread of the parent's (changing the list of async contexts or the
	 * generic operations' breakers), nothing it guards can be trusted:
	 * the client stays allocated there. */
	if (child && c->calls_lock_ready && !wms__mutex_free_at_fork(&c->calls_lock))
		return;
	/* calls in flight on its async contexts complete as cancelled first:
	 * they hold its breakers' permits and its transport's handles. In a
	 * child forked since, they are the parent's: let go of, with no
	 * callback run. */
	while (c->asyncs) {
		struct wms_async *a = c->asyncs;
		c->asyncs = *wms__async_next(a);
		if (child)
			wms__async_client_forgotten(a);
		else
			wms__async_client_gone(a);
	}
	if (c->transport && c->transport->free)
		c->transport->free(c->transport);
	wms__xml_pool_free(c->xml_pool);
	if (c->own_breakers)
		for (i = 0; i < WMS__CLIENT_SLOTS; i++)
			if (c->breakers[i] && (i == 0 || c->breakers[i] != c->breakers[0]))
				wms_breaker_free(c->breakers[i]);
	wms_breaker_store_free(c->store); /* after its breakers */
	/* In a child forked since, a thread of the parent's that was waiting
	 * for a bulkhead slot at the fork is still counted as a waiter in the
	 * child's copy of the condition variable, and glibc's
	 * pthread_cond_destroy waits for its waiters: never. A mutex or a
	 * condition variable holds nothing to release, so the child skips
	 * destroying them. */
	if (!child)
		for (i = 0; i < WMS__CLIENT_SLOTS; i++)
			wms__bulkhead_destroy(&c->bulkheads[i]);
	for (i = 0; i < WMS_MAX_CALL_OPERATIONS; i++)
		wms__free(c->call_names[i]);
	if (c->calls_lock_ready)
		pthread_mutex_destroy(&c->calls_lock);
	wms__free(c->breaker_base);
	wms__read_cache_free(c->read_cache);
	wms__free(c->endpoint);
	wms__free(c->state_metric);
	wms__free(c->wsse_username);
	wms__free_secret(c->wsse_password);
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
	if (!c->cb.on_metric)
		return;
	/* The gauge has three values (0, 1, 2): a manual state reads as what
	 * callers get from it (forced open rejects, disabled lets all through). */
	m.name = c->state_metric;
	m.value = state == WMS_BREAKER_STATE_FORCED_OPEN ? 1.0
		  : state == WMS_BREAKER_STATE_DISABLED ? 0.0
						  : (double)state;
	m.breaker = name;
	m.operation = h->operation;
	c->cb.on_metric(&m, c->cb.payload);
}

static void on_breaker_event(const wms_breaker_event *ev, void *ctx)
{
	breaker_hook *h = ctx;
	wms_breaker *b = atomic_load(&h->breaker);
	/* The state now, not ev->to: events made on two threads at once may
	 * arrive in either order, and the gauge must end on the true state. */
	emit_state(h->client, h, b ? wms_breaker_state_get(b) : ev->to, ev->name);
	if (h->user.on_state_change)
		h->user.on_state_change(ev, h->user.payload);
}

/* The caller's clock, given the caller's payload (the breaker's own
 * payload is the hook). */
static uint64_t hooked_clock(void *payload)
{
	const breaker_hook *h = payload;
	return h->user.clock(h->user.payload);
}

/* Breaker `i` of the client, for `operation` (NULL: the client's one),
 * named "<base>.<operation>", from the options kept in c->bo; its hook
 * says each transition to the metrics callback. */
static wms_status make_breaker(wms_client *c, size_t i, const char *operation, const char **why)
{
	wms_breaker_options bo = c->bo;
	breaker_hook *h = &c->hooks[i];
	char *name = NULL;
	wms_status st;

	h->client = c;
	h->operation = operation;
	h->user = c->bo.callbacks;
	/* The whole name, however long the base (a breaker name has no
	 * bound). Cut to fit a 160-byte buffer, as it was, names came out
	 * short of "<base>.<operation>" from a 145-byte base, two operations'
	 * the same from 155 bytes ("<base>.Get") and all four from 158: one
	 * key for them in a shared store. */
	if (operation && !(name = wms__join3(c->breaker_base, ".", operation)))
		return WMS_ERR_NOMEM;
	bo.name = operation ? name : c->breaker_base;
	bo.callbacks.on_state_change = on_breaker_event;
	bo.callbacks.clock = h->user.clock ? hooked_clock : NULL;
	bo.callbacks.payload = h;
	st = wms__breaker_new(&c->breakers[i], &bo, why); /* it keeps its own copy */
	wms__free(name);
	if (st != WMS_OK)
		return st;
	atomic_store(&h->breaker, c->breakers[i]);
	return WMS_OK;
}

static void first_sample(wms_client *c, size_t i)
{
	wms_breaker_snapshot snap;
	wms_breaker_snapshot_get(&snap, c->breakers[i]);
	emit_state(c, &c->hooks[i], snap.state, snap.name);
}

static wms_status make_breakers(wms_client *c, const wms_client_options *opts, wms_error *err)
{
	size_t i, n = opts->breaker_scope == WMS_BREAKER_SCOPE_PER_OPERATION ? WMS__OP_COUNT : 1;
	wms_status st;

	c->bo = opts->breaker_options;
	if (dup_opt(&c->breaker_base, c->bo.name ? c->bo.name : "wms") != WMS_OK)
		return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
	c->bo.name = c->breaker_base;
	if (!c->bo.store && opts->version >= 3 && opts->shared.redis_url) {
		st = wms_redis_store_new(&c->store, &opts->shared, err);
		if (st != WMS_OK)
			return st;
		c->bo.store = c->store;
	}
	for (i = 0; i < n; i++) {
		const char *why = NULL;
		st = make_breaker(c, i, n > 1 ? wms__op_name((wms__op)i) : NULL, &why);
		if (st != WMS_OK) {
			/* own_breakers is not set yet, so wms_client_free will not
			 * free the ones already made: free them here */
			while (i--) {
				wms_breaker_free(c->breakers[i]);
				c->breakers[i] = NULL;
			}
			if (st == WMS_ERR_INVALID_ARG && why)
				return wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "breaker_options.%s",
						 why);
			return wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the breaker");
		}
	}
	for (; i < WMS__OP_COUNT; i++) {
		c->breakers[i] = c->breakers[0];
		c->hooks[i].client = c->hooks[0].client;
		c->hooks[i].operation = c->hooks[0].operation;
		c->hooks[i].user = c->hooks[0].user;
		atomic_store(&c->hooks[i].breaker, atomic_load(&c->hooks[0].breaker));
	}
	c->breaker_count = n;
	c->own_breakers = 1;
	for (i = 0; i < n; i++)
		first_sample(c, i);
	return WMS_OK;
}

size_t wms__client_slot(wms_client *c, wms__op op)
{
	return c->breaker_count > 1 ? (size_t)op : 0;
}

/* The slot of a typed operation's name, or of a generic operation this
 * client has made a breaker for: without a lock (a name is written before
 * breaker_count publishes it, and never changes). 0 if neither. */
static int known_slot(wms_client *c, const char *operation, size_t *out)
{
	size_t i, n = atomic_load(&c->breaker_count);
	for (i = 0; i < WMS__OP_COUNT; i++)
		if (strcmp(operation, wms__op_name((wms__op)i)) == 0) {
			*out = wms__client_slot(c, (wms__op)i);
			return 1;
		}
	for (i = WMS__OP_COUNT; i < n; i++)
		if (strcmp(c->call_names[i - WMS__OP_COUNT], operation) == 0) {
			*out = i;
			return 1;
		}
	return 0;
}

wms_status wms__client_call_slot(wms_client *c, const char *operation, size_t *out,
				 wms_error *err)
{
	size_t i, n;
	int made = 0;
	wms_status st = WMS_OK;

	*out = 0;
	if (atomic_load(&c->breaker_count) == 1)
		return WMS_OK; /* one breaker (and bulkhead) for every operation */
	if (known_slot(c, operation, out))
		return WMS_OK;
	/* a new one: made once, under the lock, by whichever call gets here first */
	pthread_mutex_lock(&c->calls_lock);
	if (known_slot(c, operation, out))
		goto done;
	n = c->call_count;
	if (n == WMS_MAX_CALL_OPERATIONS) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "operation '%s': this client already keeps breakers for %u other "
			       "operations (WMS_MAX_CALL_OPERATIONS)",
			       operation, (unsigned)WMS_MAX_CALL_OPERATIONS);
		goto done;
	}
	i = WMS__OP_COUNT + n;
	if (dup_opt(&c->call_names[n], operation) != WMS_OK ||
	    wms__bulkhead_init(&c->bulkheads[i], &c->bulkhead_opts) != WMS_OK) {
		wms__free(c->call_names[n]);
		c->call_names[n] = NULL;
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT,
			       "operation '%s': no memory for its breaker", operation);
		goto done;
	}
	if ((st = make_breaker(c, i, c->call_names[n], NULL)) != WMS_OK) {
		wms__bulkhead_destroy(&c->bulkheads[i]);
		memset(&c->bulkheads[i], 0, sizeof(c->bulkheads[i]));
		wms__free(c->call_names[n]);
		c->call_names[n] = NULL;
		st = wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "operation '%s': cannot create its breaker",
			       operation);
		goto done;
	}
	c->call_count = n + 1;
	/* published last: readers of breaker_count see the slot made */
	atomic_store(&c->breaker_count, i + 1);
	*out = i;
	made = 1;
done:
	pthread_mutex_unlock(&c->calls_lock);
	/* the metrics callback may ask for this breaker: not under the lock */
	if (made)
		first_sample(c, i);
	return st;
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
	/* each rule its own message, naming the field and the value given */
	if (r->max_attempts > 10)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "retry.max_attempts must be 1-10 (got %u)", (unsigned)r->max_attempts);
	if (r->backoff_multiplier_pct < 100 || r->backoff_multiplier_pct > 1000)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "retry.backoff_multiplier_pct must be 100-1000 (got %u)",
				 (unsigned)r->backoff_multiplier_pct);
	if (r->max_backoff_ms > WMS_MAX_TIMEOUT_MS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "retry.max_backoff_ms must be at most %u (got %u)", WMS_MAX_TIMEOUT_MS,
				 (unsigned)r->max_backoff_ms);
	if (r->initial_backoff_ms > r->max_backoff_ms)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "retry.initial_backoff_ms must be at most max_backoff_ms (%u; got %u)",
				 (unsigned)r->max_backoff_ms, (unsigned)r->initial_backoff_ms);
	return WMS_OK;
}

static wms_status check_read_cache(const wms_read_cache_options *r, wms_error *err)
{
	if (r->max_entries > WMS_MAX_READ_CACHE_ENTRIES)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "read_cache.max_entries must be at most %u (got %u)",
				 WMS_MAX_READ_CACHE_ENTRIES, (unsigned)r->max_entries);
	if (r->max_age_ms > WMS_MAX_READ_CACHE_AGE_MS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "read_cache.max_age_ms must be at most %u (got %u)",
				 WMS_MAX_READ_CACHE_AGE_MS, (unsigned)r->max_age_ms);
	if (r->max_bytes &&
	    (r->max_bytes < WMS_MIN_READ_CACHE_BYTES || r->max_bytes > WMS_MAX_READ_CACHE_BYTES))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "read_cache.max_bytes must be 0 or %u-%u (got %u)",
				 WMS_MIN_READ_CACHE_BYTES, WMS_MAX_READ_CACHE_BYTES,
				 (unsigned)r->max_bytes);
	return WMS_OK;
}

/* The gauge's name goes as it is to the caller's on_metric, and from there
 * to StatsD, Graphite or OpenTelemetry (or to Prometheus, its exporter
 * mapping '.' and '-' to '_'): a prefix no such name could begin with is
 * refused here. The message gives the first bad byte's value, never the
 * byte (a newline or an escape would break a one-line message). No length
 * bound: the name is made whole, however long. */
static wms_status check_metric_prefix(const char *p, wms_error *err)
{
	size_t n = wms__metric_span(p, WMS__METRIC_DOTTED);
	if (!p[0])
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "metric_prefix must be one or more of [A-Za-z0-9_.:-] "
				 "(got an empty string; NULL is fulfillment)");
	if (p[n])
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "metric_prefix must be one or more of [A-Za-z0-9_.:-] "
				 "(byte 0x%02X at offset %zu)",
				 (unsigned)(unsigned char)p[n], n);
	return WMS_OK;
}

/* The libcurl transport's options, from the client's: its pool defaults
 * to the client's. */
static void curl_options_of(const wms_client_options *opts, wms_curl_transport_options *co)
{
	*co = opts->curl;
	if (!co->max_idle_connections)
		co->max_idle_connections = opts->max_idle_connections;
}

/* The first field of a curl group that is not as WMS_CURL_TRANSPORT_OPTIONS_INIT
 * leaves it, or NULL. */
static const char *curl_option_set(const wms_curl_transport_options *co)
{
	static const wms_curl_transport_options init = WMS_CURL_TRANSPORT_OPTIONS_INIT;
	const char *const *s[] = { &co->user_agent, &co->ca_file, &co->ca_path, &co->client_cert,
				   &co->client_key, &co->pinned_public_key, &co->http_username,
				   &co->http_password };
	static const char *const names[] = { "curl.user_agent", "curl.ca_file", "curl.ca_path",
					     "curl.client_cert", "curl.client_key",
					     "curl.pinned_public_key", "curl.http_username",
					     "curl.http_password" };
	size_t i;
	if (co->version != init.version)
		return "curl.version";
	for (i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (*s[i])
			return names[i];
	if (co->max_idle_connections)
		return "curl.max_idle_connections";
	return NULL;
}

/* The libcurl transport's checks of the curl group, its message naming the
 * client's field ("curl.ca_file: cannot read ..."). */
static wms_status check_curl(const wms_client_options *opts, wms_error *err)
{
	wms_curl_transport_options co;
	wms_status st;
	curl_options_of(opts, &co);
	st = wms__curl_transport_check(&co, err);
	if (st != WMS_OK && err && strncmp(err->message, "curl", 4) != 0) {
		size_t n = strlen(err->message);
		if (n > sizeof(err->message) - 6)
			n = wms__utf8_whole(err->message, sizeof(err->message) - 6);
		memmove(err->message + 5, err->message, n); /* cut on a whole character */
		memcpy(err->message, "curl.", 5);
		err->message[5 + n] = '\0';
	}
	return st;
}

/* Every check of the options, before anything is made: INVALID_ARG saying
 * what is wrong. *retry gets the retry options with their defaults. */
static wms_status check_options(const wms_client_options *opts, wms_retry_options *retry,
				wms_error *err)
{
	const wms_transport *transport = opts->transport;
	const wms_wsse_options *w = &opts->wsse;
	const char *set;
	wms_status st;

	if (!version_known(opts->version))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "options version %u is not supported (this libwms knows 2-%u)",
				 opts->version, WMS_CLIENT_OPTIONS_VERSION);
	/* libcurl's endpoint (a custom transport's is its own business); the
	 * URL itself is not repeated: it may hold a user and password */
	if (!transport) {
		const char *why;
		size_t n, bad;
		int code;
		if (!opts->endpoint || !has_scheme(opts->endpoint))
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "endpoint must be an http:// or https:// URL");
		n = strlen(opts->endpoint);
		bad = wms__url_bad_byte(opts->endpoint, n);
		if (bad < n)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "endpoint: byte %zu is a space, control character or DEL "
					 "(0x%02x): percent-encode it",
					 bad, (unsigned)(unsigned char)opts->endpoint[bad]);
		if ((why = wms__curl_url_refused(opts->endpoint, &code)) != NULL)
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "endpoint: not a URL libcurl can send to: %s (curl URL "
					 "error %d)", why, code);
	}
	if (opts->soap_version != WMS_SOAP_11 && opts->soap_version != WMS_SOAP_12)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "soap_version must be WMS_SOAP_11 or WMS_SOAP_12");
	if (opts->breaker_scope != WMS_BREAKER_SCOPE_PER_CLIENT &&
	    opts->breaker_scope != WMS_BREAKER_SCOPE_PER_OPERATION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "breaker_scope must be PER_CLIENT or PER_OPERATION");
	/* each named, as the fields below are: which timeout is too long */
	if (opts->connect_timeout_ms > WMS_MAX_TIMEOUT_MS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "connect_timeout_ms must be at most %u (got %u)", WMS_MAX_TIMEOUT_MS,
				 (unsigned)opts->connect_timeout_ms);
	if (opts->timeout_ms > WMS_MAX_TIMEOUT_MS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "timeout_ms must be at most %u (got %u)", WMS_MAX_TIMEOUT_MS,
				 (unsigned)opts->timeout_ms);
	if (opts->stall_timeout_ms > WMS_MAX_TIMEOUT_MS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "stall_timeout_ms must be at most %u (got %u)", WMS_MAX_TIMEOUT_MS,
				 (unsigned)opts->stall_timeout_ms);
	if (opts->max_idle_connections > 1024)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "max_idle_connections must be at most 1024 (got %u)",
				 (unsigned)opts->max_idle_connections);
	if (opts->max_reply_bytes > (size_t)1 << 30)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "max_reply_bytes must be at most 1 GiB");
	if (opts->version >= 4 &&
	    opts->bulkhead.max_concurrent_calls > WMS_MAX_CONCURRENT_CALLS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "bulkhead.max_concurrent_calls must be at most %u (got %u)",
				 WMS_MAX_CONCURRENT_CALLS,
				 (unsigned)opts->bulkhead.max_concurrent_calls);
	if (opts->version >= 4 && opts->bulkhead.max_wait_for_slot_ms > WMS_MAX_TIMEOUT_MS)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "bulkhead.max_wait_for_slot_ms must be at most %u (got %u)",
				 WMS_MAX_TIMEOUT_MS, (unsigned)opts->bulkhead.max_wait_for_slot_ms);
	if (opts->version >= 4 && (st = check_read_cache(&opts->read_cache, err)) != WMS_OK)
		return st;
	if (opts->metric_prefix && (st = check_metric_prefix(opts->metric_prefix, err)) != WMS_OK)
		return st;
	*retry = opts->retry;
	if ((st = check_retry(retry, err)) != WMS_OK)
		return st;
	/* The user agent, TLS files, pin and HTTP credentials configure the
	 * libcurl transport when the client makes it (which checks them); a
	 * transport of the caller's was configured when it was made, and none
	 * sees them on a request. */
	if (transport && transport->version != WMS_TRANSPORT_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "transport version %u is not supported (this libwms knows %u)",
				 transport->version, WMS_TRANSPORT_VERSION);
	/* The curl group configures the libcurl transport when the client
	 * makes it (which checks it); a transport of the caller's was
	 * configured when it was made, and none sees it on a request. */
	if (transport && (set = curl_option_set(&opts->curl)) != NULL)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "%s configures the default transport: with options->transport, "
				 "configure that one when it is made (the curl group must stay "
				 "WMS_CURL_TRANSPORT_OPTIONS_INIT)", set);
	if (w->mode != WMS_WSSE_NONE && w->mode != WMS_WSSE_PASSWORD_TEXT &&
	    w->mode != WMS_WSSE_PASSWORD_DIGEST)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wsse.mode must be WMS_WSSE_NONE, _PASSWORD_TEXT or _PASSWORD_DIGEST");
	if (w->mode != WMS_WSSE_NONE && (!w->username || !*w->username || !w->password))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wsse.mode needs wsse.username and wsse.password");
	/* Refused here, not on every call: what the envelope cannot carry. */
	if (w->mode != WMS_WSSE_NONE &&
	    ((st = wms__validate_text(w->username, "wsse.username", 0, err)) != WMS_OK ||
	     (w->mode == WMS_WSSE_PASSWORD_TEXT && *w->password &&
	      (st = wms__validate_text(w->password, "wsse.password", 1, err)) != WMS_OK)))
		return st;
	/* The default transport's own checks (pairs, files, its pool), as it
	 * will make them: said now, before anything is made. */
	if (!transport && (st = check_curl(opts, err)) != WMS_OK)
		return st;
	return WMS_OK;
}

/* What the client keeps of the options: values with their defaults, and
 * its own copy of every string. WMS_OK or WMS_ERR_NOMEM. */
static wms_status copy_options(wms_client *c, const wms_client_options *opts,
			       const wms_retry_options *retry)
{
	c->retry = *retry;
	c->cb = opts->callbacks;
	if (opts->fallbacks) {
		c->fallbacks = *opts->fallbacks;
		c->has_fallbacks = 1;
	}
	c->soap_version = opts->soap_version;
	c->timeout_ms = opts->timeout_ms ? opts->timeout_ms : WMS_DEFAULT_TIMEOUT_MS;
	c->connect_timeout_ms =
		opts->connect_timeout_ms ? opts->connect_timeout_ms : WMS_DEFAULT_CONNECT_TIMEOUT_MS;
	if (c->connect_timeout_ms > c->timeout_ms)
		c->connect_timeout_ms = c->timeout_ms; /* the total deadline always wins */
	c->stall_timeout_ms =
		opts->stall_timeout_ms ? opts->stall_timeout_ms : WMS_DEFAULT_STALL_TIMEOUT_MS;
	c->max_reply_bytes = opts->max_reply_bytes ? opts->max_reply_bytes : WMS_DEFAULT_MAX_REPLY_BYTES;
	/* The prefix whole, however long: in a 128-byte buffer one over 105
	 * bytes was cut silently ("...circuit_breaker_stat"), perhaps inside
	 * a UTF-8 character, where client.h promises
	 * "<prefix>.circuit_breaker_state". */
	c->state_metric = wms__join3(opts->metric_prefix ? opts->metric_prefix : "fulfillment",
				     ".circuit_breaker_state", "");
	if (!c->state_metric ||
	    dup_opt(&c->endpoint, opts->endpoint ? opts->endpoint : "") ||
	    dup_opt(&c->wsse_username, opts->wsse.username) ||
	    dup_opt(&c->wsse_password, opts->wsse.password))
		return WMS_ERR_NOMEM;
	c->wsse.mode = opts->wsse.mode;
	c->wsse.username = c->wsse_username;
	c->wsse.password = c->wsse_password;
	c->wire_max = opts->wire_log_max_bytes ? opts->wire_log_max_bytes : 4096;
	return WMS_OK;
}

/* Correlation ids: a random per-client prefix and a counter. */
static void make_id_prefix(wms_client *c)
{
	unsigned char rnd[4] = { 0 };
	uint64_t t = wms__now_ns();
	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		memcpy(rnd, &t, sizeof(rnd));
	snprintf(c->id_prefix, sizeof(c->id_prefix), "wms-%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2],
		 rnd[3]);
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
	if ((st = check_options(opts, &retry, err)) != WMS_OK)
		goto fail;
	c = wms__calloc(1, sizeof(*c));
	/* first: a client freed on a failure below is this process's */
	if (c)
		c->fork_gen = wms__fork_gen_now();
	if (!c || copy_options(c, opts, &retry) != WMS_OK) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	make_id_prefix(c);
	c->pid = (long)getpid();
	if (pthread_mutex_init(&c->calls_lock, NULL) != 0) {
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	c->calls_lock_ready = 1;
	if (opts->version >= 4)
		c->bulkhead_opts = opts->bulkhead;
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
	if (opts->version >= 4)
		for (i = 0; i < c->breaker_count; i++)
			if ((st = wms__bulkhead_init(&c->bulkheads[i], &opts->bulkhead)) != WMS_OK) {
				wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the bulkhead");
				goto fail;
			}
	if (opts->version >= 4 &&
	    (st = wms__read_cache_new(&c->read_cache, &opts->read_cache)) != WMS_OK) {
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the read cache");
		goto fail;
	}
	wms__xml_init();
	st = wms__xml_pool_new(&c->xml_pool, opts->max_idle_connections);
	if (st != WMS_OK) {
		wms__fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot create the XML workspace pool");
		goto fail;
	}
	if (!transport) {
		wms_curl_transport_options co;
		curl_options_of(opts, &co);
		if ((st = wms_curl_transport_create(&transport, &co, err)) != WMS_OK) {
			/* its options were checked first: what is left is ours */
			if (st != WMS_ERR_INVALID_ARG)
				wms__fail(err, st, WMS_DELIVERY_NOT_SENT,
					  "cannot create the HTTP transport");
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
	if (!c || !operation || !known_slot(c, operation, &i))
		return NULL;
	return c->breakers[i];
}

void wms__client_bulkhead_at(wms_bulkhead_snapshot *out, wms_client *c, size_t i)
{
	wms__bulkhead_snapshot(out, &c->bulkheads[i < c->breaker_count ? i : 0]);
}

wms_status wms_client_bulkhead_get(wms_bulkhead_snapshot *out, wms_client *c,
				   const char *operation)
{
	size_t i = 0;
	if (!out || !c || (operation && !known_slot(c, operation, &i)))
		return WMS_ERR_INVALID_ARG;
	wms__client_bulkhead_at(out, c, i);
	return WMS_OK;
}

wms_status wms_client_read_cache_get(wms_read_cache_snapshot *out, wms_client *c)
{
	if (!out || !c)
		return WMS_ERR_INVALID_ARG;
	wms__read_cache_snapshot(out, c->read_cache);
	return WMS_OK;
}

size_t wms_client_breakers(wms_breaker **out, size_t max, wms_client *c)
{
	size_t i, n;
	if (!c)
		return 0;
	n = atomic_load(&c->breaker_count); /* once: generic breakers may be made meanwhile */
	for (i = 0; i < n && i < max && out; i++)
		out[i] = c->breakers[i];
	return n;
}
