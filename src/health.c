/* Health (JSON) and Prometheus renderings of breaker snapshots. */
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "internal.h"
#include "util/json.h"
#include "wms/health.h"
#include "wms/sys/breaker_store.h"

void wms_free(void *ptr)
{
	wms__free(ptr);
}

static wms_status put(wms__buf *b, const char *s)
{
	return wms__buf_append(b, s, strlen(s));
}

static wms_status putf(wms__buf *b, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/* JSON and the Prometheus text want "33.33" whatever LC_NUMERIC the
 * application chose ("33,33" under de_DE is neither): numbers are printed
 * in the C locale, on this thread only, for the one call. */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void c_numeric_init(void)
{
	c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

static wms_status putf(wms__buf *b, const char *fmt, ...)
{
	char tmp[512];
	locale_t old = (locale_t)0;
	va_list ap;
	int n;
	pthread_once(&c_numeric_once, c_numeric_init);
	if (!c_numeric)
		return WMS_ERR_NOMEM;
	old = uselocale(c_numeric);
	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	uselocale(old);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return WMS_ERR_INTERNAL;
	return wms__buf_append(b, tmp, (size_t)n);
}

/* Prometheus label value: backslash, double quote and newline escaped. */
static wms_status put_label(wms__buf *b, const char *s)
{
	wms_status st = WMS_OK;
	for (; st == WMS_OK && s && *s; s++) {
		if (*s == '\\' || *s == '"')
			st = putf(b, "\\%c", *s);
		else if (*s == '\n')
			st = put(b, "\\n");
		else
			st = wms__buf_append(b, s, 1);
	}
	return st;
}

static wms_status put_rate(wms__buf *b, double rate)
{
	return rate < 0 ? put(b, "null") : putf(b, "%.2f", rate);
}

static const char *overall(const wms_breaker_snapshot *s, size_t n)
{
	size_t i, up = 0, down = 0;
	for (i = 0; i < n; i++) {
		if (s[i].state == WMS_BREAKER_STATE_CLOSED || s[i].state == WMS_BREAKER_STATE_DISABLED)
			up++;
		else if (s[i].state == WMS_BREAKER_STATE_OPEN || s[i].state == WMS_BREAKER_STATE_FORCED_OPEN)
			down++;
	}
	if (up == n)
		return "UP";
	return down == n ? "DOWN" : "DEGRADED";
}

static wms_status snapshots(wms_breaker_snapshot **out, wms_breaker *const *breakers, size_t n)
{
	size_t i;
	*out = NULL;
	if (!n)
		return WMS_OK;
	/* a NULL entry would read as a healthy breaker named "" */
	for (i = 0; i < n; i++)
		if (!breakers[i])
			return WMS_ERR_INVALID_ARG;
	*out = wms__calloc(n, sizeof(**out));
	if (!*out)
		return WMS_ERR_NOMEM;
	for (i = 0; i < n; i++)
		wms_breaker_snapshot_get(&(*out)[i], breakers[i]);
	return WMS_OK;
}

/* A breaker's bulkhead, when it has one (a cap set), inside its object. */
static wms_status json_bulkhead(wms__buf *b, const wms_bulkhead_snapshot *h)
{
	if (!h || !h->max_concurrent_calls)
		return WMS_OK;
	b->len--; /* reopen the breaker's object */
	return putf(b,
		    ",\"bulkhead\":{\"max_concurrent_calls\":%u,\"max_wait_for_slot_ms\":%u,"
		    "\"in_flight\":%u,\"waiting\":%u,\"admitted\":%llu,\"waited\":%llu,"
		    "\"rejected\":%llu}}",
		    h->max_concurrent_calls, h->max_wait_for_slot_ms, h->in_flight, h->waiting,
		    (unsigned long long)h->admitted, (unsigned long long)h->waited,
		    (unsigned long long)h->rejected);
}

/* A client's read cache, when it has one, after its breakers. */
static wms_status json_read_cache(wms__buf *b, const wms_read_cache_snapshot *r)
{
	if (!r || !r->max_entries)
		return WMS_OK;
	return putf(b,
		    ",\"read_cache\":{\"max_entries\":%u,\"max_age_ms\":%u,\"max_bytes\":%llu,"
		    "\"entries\":%llu,\"bytes\":%llu,\"hits\":%llu,\"misses\":%llu,"
		    "\"expired\":%llu,\"evictions\":%llu}",
		    r->max_entries, r->max_age_ms, (unsigned long long)r->max_bytes,
		    (unsigned long long)r->entries, (unsigned long long)r->bytes,
		    (unsigned long long)r->hits, (unsigned long long)r->misses,
		    (unsigned long long)r->expired, (unsigned long long)r->evictions);
}

/* The document for `count` breakers; bulkheads[i] (bulkheads may be NULL)
 * is the one guarding breakers[i]; a client's read cache (may be NULL)
 * follows them. */
static wms_status render_json(char **out, wms_breaker *const *breakers,
			      const wms_bulkhead_snapshot *bulkheads,
			      const wms_read_cache_snapshot *cache, size_t count)
{
	wms_breaker_snapshot *s = NULL;
	wms__buf b = { 0 };
	wms_status st;
	size_t i;

	if (!out || (count && !breakers))
		return WMS_ERR_INVALID_ARG;
	*out = NULL;
	st = snapshots(&s, breakers, count);
	if (st)
		goto done;
	st = putf(&b, "{\"status\":\"%s\",\"breakers\":[", overall(s, count));
	for (i = 0; st == WMS_OK && i < count; i++) {
		const wms_breaker_snapshot *k = &s[i];
		st = put(&b, i ? ",{\"name\":" : "{\"name\":");
		if (!st)
			st = wms__json_string(&b, k->name);
		if (!st)
			st = putf(&b, ",\"state\":\"%s\",\"state_value\":%d,\"failure_rate\":",
				  wms_breaker_state_name(k->state), (int)k->state);
		if (!st)
			st = put_rate(&b, k->failure_rate);
		if (!st)
			st = put(&b, ",\"slow_call_rate\":");
		if (!st)
			st = put_rate(&b, k->slow_call_rate);
		if (!st)
			st = putf(&b,
				  ",\"retry_after_ms\":%u,\"window_calls\":%u,\"consecutive_failures\":%u,"
				  "\"half_open_in_flight\":%u,\"transitions\":%llu,\"calls\":{"
				  "\"permitted\":%llu,\"rejected\":%llu,\"successes\":%llu,"
				  "\"failures\":%llu,\"slow\":%llu,\"ignored\":%llu}}",
				  k->retry_after_ms, k->window_calls, k->consecutive_failures,
				  k->half_open_in_flight, (unsigned long long)k->transitions,
				  (unsigned long long)k->permitted, (unsigned long long)k->rejected,
				  (unsigned long long)k->successes, (unsigned long long)k->failures,
				  (unsigned long long)k->slow, (unsigned long long)k->ignored);
		if (!st && k->store_state != WMS_STORE_STATE_NONE) {
			/* a shared breaker: its store, and for how long it has been so */
			uint64_t now = wms_breaker_clock_ns(breakers[i]);
			b.len--; /* reopen the breaker's object */
			st = putf(&b, ",\"store\":\"%s\",\"store_for_ms\":%llu}",
				  wms_store_state_name(k->store_state),
				  (unsigned long long)(now > k->store_since_ns
							       ? (now - k->store_since_ns) / 1000000u
							       : 0u));
		}
		if (!st)
			st = json_bulkhead(&b, bulkheads ? &bulkheads[i] : NULL);
	}
	if (!st)
		st = put(&b, "]");
	if (!st)
		st = json_read_cache(&b, cache);
	if (!st)
		st = put(&b, "}\n");
	if (!st) {
		*out = b.data;
		b.data = NULL;
	}
done:
	wms__buf_free(&b);
	wms__free(s);
	return st;
}

wms_status wms_health_json(char **out, wms_breaker *const *breakers, size_t count)
{
	return render_json(out, breakers, NULL, NULL, count);
}

static wms_status prom_header(wms__buf *b, const char *prefix, const char *metric,
			      const char *type, const char *help)
{
	return putf(b, "# HELP %s_%s %s\n# TYPE %s_%s %s\n", prefix, metric, help, prefix, metric,
		    type);
}

static wms_status prom_sample(wms__buf *b, const char *prefix, const char *metric,
			      const char *name, const char *kind, double value)
{
	wms_status st = putf(b, "%s_%s{breaker=\"", prefix, metric);
	if (!st)
		st = put_label(b, name);
	if (!st && kind)
		st = putf(b, "\",kind=\"%s", kind);
	if (!st)
		st = putf(b, "\"} %.17g\n", value);
	return st;
}

static int prefix_ok(const char *p)
{
	size_t n = wms__metric_span(p, WMS__METRIC_PROMETHEUS);
	return n > 0 && !p[n] && n <= WMS__PROMETHEUS_PREFIX_MAX;
}

/* A bulkhead's figures by number: the three gauges, then the counter's
 * three kinds (prom_bulkheads' order). */
static double bulkhead_value(const wms_bulkhead_snapshot *h, int which)
{
	switch (which) {
	case 0: return (double)h->max_concurrent_calls;
	case 1: return (double)h->in_flight;
	case 2: return (double)h->waiting;
	case 3: return (double)h->admitted;
	case 4: return (double)h->waited;
	default: return (double)h->rejected;
	}
}

/* The bulkheads' samples (none when no breaker has one). */
static wms_status prom_bulkheads(wms__buf *b, const char *prefix, const wms_breaker_snapshot *s,
				 const wms_bulkhead_snapshot *h, size_t count)
{
	static const char *const gauges[][2] = {
		{ "bulkhead_max_concurrent_calls", "Calls the bulkhead lets be in flight at once." },
		{ "bulkhead_in_flight", "Calls holding a bulkhead slot." },
		{ "bulkhead_waiting", "Calls waiting for a bulkhead slot." },
	};
	static const char *const kinds[] = { "admitted", "waited", "rejected" };
	wms_status st = WMS_OK;
	size_t i, any = 0;
	int g, k;

	for (i = 0; h && i < count; i++)
		any += h[i].max_concurrent_calls != 0;
	if (!any)
		return WMS_OK;
	for (g = 0; !st && g < 3; g++) {
		st = prom_header(b, prefix, gauges[g][0], "gauge", gauges[g][1]);
		for (i = 0; !st && i < count; i++)
			if (h[i].max_concurrent_calls)
				st = prom_sample(b, prefix, gauges[g][0], s[i].name, NULL,
						 bulkhead_value(&h[i], g));
	}
	if (!st)
		st = prom_header(b, prefix, "bulkhead_calls_total", "counter",
				 "Calls seen by the bulkhead: admitted (waited: of those, after a "
				 "wait), rejected (BULKHEAD_FULL).");
	for (i = 0; !st && i < count; i++)
		for (k = 0; !st && k < 3 && h[i].max_concurrent_calls; k++)
			st = prom_sample(b, prefix, "bulkhead_calls_total", s[i].name, kinds[k],
					 bulkhead_value(&h[i], 3 + k));
	return st;
}

/* A client's read cache (none when off): no breaker label, it is the
 * client's. */
static wms_status prom_read_cache(wms__buf *b, const char *prefix,
				  const wms_read_cache_snapshot *r)
{
	wms_status st;
	if (!r || !r->max_entries)
		return WMS_OK;
	st = prom_header(b, prefix, "read_cache_entries", "gauge",
			 "Answers held by the read cache.");
	if (!st)
		st = putf(b, "%s_read_cache_entries %llu\n", prefix,
			  (unsigned long long)r->entries);
	if (!st)
		st = prom_header(b, prefix, "read_cache_bytes", "gauge",
				 "Bytes the read cache's entries take (max_bytes bounds them).");
	if (!st)
		st = putf(b, "%s_read_cache_bytes %llu\n", prefix, (unsigned long long)r->bytes);
	if (!st)
		st = prom_header(b, prefix, "read_cache_lookups_total", "counter",
				 "Refused reads looked up in the read cache: hit (served), miss "
				 "(expired: of the misses, those that found an answer too old).");
	if (!st)
		st = putf(b,
			  "%s_read_cache_lookups_total{kind=\"hit\"} %llu\n"
			  "%s_read_cache_lookups_total{kind=\"miss\"} %llu\n"
			  "%s_read_cache_lookups_total{kind=\"expired\"} %llu\n",
			  prefix, (unsigned long long)r->hits, prefix,
			  (unsigned long long)r->misses, prefix, (unsigned long long)r->expired);
	if (!st)
		st = prom_header(b, prefix, "read_cache_evictions_total", "counter",
				 "Entries the read cache dropped to make room.");
	if (!st)
		st = putf(b, "%s_read_cache_evictions_total %llu\n", prefix,
			  (unsigned long long)r->evictions);
	return st;
}

static wms_status render_prometheus(char **out, wms_breaker *const *breakers,
				    const wms_bulkhead_snapshot *bulkheads,
				    const wms_read_cache_snapshot *cache, size_t count,
				    const char *prefix)
{
	static const char *kinds[] = { "permitted", "rejected", "successes", "failures", "slow",
				       "ignored" };
	wms_breaker_snapshot *s = NULL;
	wms__buf b = { 0 };
	wms_status st;
	size_t i, j;

	if (!out || (count && !breakers))
		return WMS_ERR_INVALID_ARG;
	*out = NULL;
	if (!prefix)
		prefix = "fulfillment";
	if (!prefix_ok(prefix))
		return WMS_ERR_INVALID_ARG;
	st = snapshots(&s, breakers, count);
	if (!st)
		st = prom_header(&b, prefix, "circuit_breaker_state", "gauge",
				 "Breaker state: 0 closed, 1 open, 2 half-open, 3 disabled, 4 forced open.");
	for (i = 0; !st && i < count; i++)
		st = prom_sample(&b, prefix, "circuit_breaker_state", s[i].name, NULL,
				 (double)s[i].state);
	if (!st)
		st = prom_header(&b, prefix, "circuit_breaker_calls_total", "counter",
				 "Calls seen by the breaker, by kind.");
	for (i = 0; !st && i < count; i++) {
		uint64_t v[6];
		v[0] = s[i].permitted;
		v[1] = s[i].rejected;
		v[2] = s[i].successes;
		v[3] = s[i].failures;
		v[4] = s[i].slow;
		v[5] = s[i].ignored;
		for (j = 0; !st && j < 6; j++)
			st = prom_sample(&b, prefix, "circuit_breaker_calls_total", s[i].name,
					 kinds[j], (double)v[j]);
	}
	if (!st)
		st = prom_header(&b, prefix, "circuit_breaker_failure_rate_percent", "gauge",
				 "Failure rate over the window; NaN until minimum_number_of_calls.");
	for (i = 0; !st && i < count; i++) {
		st = putf(&b, "%s_circuit_breaker_failure_rate_percent{breaker=\"", prefix);
		if (!st)
			st = put_label(&b, s[i].name);
		if (!st)
			st = s[i].failure_rate < 0 ? put(&b, "\"} NaN\n")
						   : putf(&b, "\"} %.4f\n", s[i].failure_rate);
	}
	if (!st)
		st = prom_header(&b, prefix, "circuit_breaker_retry_after_seconds", "gauge",
				 "Seconds until an open breaker lets a probe through; forced open: "
				 "its open duration, a hint (no probe until a manual change).");
	for (i = 0; !st && i < count; i++)
		st = prom_sample(&b, prefix, "circuit_breaker_retry_after_seconds", s[i].name, NULL,
				 s[i].retry_after_ms / 1000.0);
	j = 0;
	for (i = 0; !st && i < count; i++) {
		if (s[i].store_state == WMS_STORE_STATE_NONE)
			continue;
		if (!j++)
			st = prom_header(&b, prefix, "circuit_breaker_store_state", "gauge",
					 "Shared breakers' store: 1 connecting, 2 connected, 3 degraded "
					 "(the in-process breaker decides).");
		if (!st)
			st = prom_sample(&b, prefix, "circuit_breaker_store_state", s[i].name, NULL,
					 (double)s[i].store_state);
	}
	if (!st)
		st = prom_bulkheads(&b, prefix, s, bulkheads, count);
	if (!st)
		st = prom_read_cache(&b, prefix, cache);
	if (!st) {
		*out = b.data ? b.data : wms__strdup("");
		b.data = NULL;
		if (!*out)
			st = WMS_ERR_NOMEM;
	}
	wms__buf_free(&b);
	wms__free(s);
	return st;
}

wms_status wms_health_prometheus(char **out, wms_breaker *const *breakers, size_t count,
				 const char *prefix)
{
	return render_prometheus(out, breakers, NULL, NULL, count, prefix);
}

/* Every breaker of the clients, each with the bulkhead guarding it, as
 * they stand now (a client makes a generic operation's breaker on its
 * first call): *b and *h allocated, *n rows. */
static wms_status client_rows(wms_client *const *clients, size_t count, wms_breaker ***b,
			      wms_bulkhead_snapshot **h, size_t *n)
{
	size_t i, j, total = 0, got;

	*b = NULL;
	*h = NULL;
	*n = 0;
	for (i = 0; i < count; i++) {
		if (!clients[i])
			return WMS_ERR_INVALID_ARG;
		total += wms_client_breakers(NULL, 0, clients[i]);
	}
	*b = wms__calloc(total ? total : 1, sizeof(**b));
	*h = wms__calloc(total ? total : 1, sizeof(**h));
	if (!*b || !*h) {
		wms__free(*b);
		wms__free(*h);
		*b = NULL;
		*h = NULL;
		return WMS_ERR_NOMEM;
	}
	for (i = 0; i < count && *n < total; i++) {
		got = wms_client_breakers(*b + *n, total - *n, clients[i]);
		if (got > total - *n)
			got = total - *n; /* made since we counted: next time */
		for (j = 0; j < got; j++)
			wms__client_bulkhead_at(&(*h)[*n + j], clients[i], j);
		*n += got;
	}
	return WMS_OK;
}

/* The read caches of the clients, summed (one client: its own); off
 * (max_entries 0) when none has one. */
static void client_caches(wms_read_cache_snapshot *out, wms_client *const *clients, size_t count)
{
	wms_read_cache_snapshot one;
	size_t i;
	memset(out, 0, sizeof(*out));
	for (i = 0; i < count; i++) {
		if (wms_client_read_cache_get(&one, clients[i]) != WMS_OK || !one.max_entries)
			continue;
		out->max_entries += one.max_entries;
		if (one.max_age_ms > out->max_age_ms)
			out->max_age_ms = one.max_age_ms;
		out->max_bytes += one.max_bytes;
		out->entries += one.entries;
		out->bytes += one.bytes;
		out->hits += one.hits;
		out->misses += one.misses;
		out->expired += one.expired;
		out->evictions += one.evictions;
	}
}

/* One document for every breaker of the clients: JSON, or Prometheus text
 * with `prefix`. */
static wms_status render_clients(char **out, wms_client *const *clients, size_t count,
				 int prometheus, const char *prefix)
{
	wms_breaker **b;
	wms_bulkhead_snapshot *h;
	wms_read_cache_snapshot rc;
	size_t n;
	wms_status st;

	if (!out || (count && !clients))
		return WMS_ERR_INVALID_ARG;
	*out = NULL;
	if ((st = client_rows(clients, count, &b, &h, &n)) != WMS_OK)
		return st;
	client_caches(&rc, clients, count);
	st = prometheus ? render_prometheus(out, b, h, &rc, n, prefix)
			: render_json(out, b, h, &rc, n);
	wms__free(b);
	wms__free(h);
	return st;
}

wms_status wms__health_clients_json(char **out, wms_client *const *clients, size_t count)
{
	return render_clients(out, clients, count, 0, NULL);
}

wms_status wms__health_clients_prometheus(char **out, wms_client *const *clients, size_t count,
					  const char *prefix)
{
	return render_clients(out, clients, count, 1, prefix);
}

wms_status wms_client_health_json(char **out, wms_client *client)
{
	if (!client)
		return WMS_ERR_INVALID_ARG;
	return wms__health_clients_json(out, &client, 1);
}

wms_status wms_client_health_prometheus(char **out, wms_client *client, const char *prefix)
{
	if (!client)
		return WMS_ERR_INVALID_ARG;
	return wms__health_clients_prometheus(out, &client, 1, prefix);
}
