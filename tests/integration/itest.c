#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <curl/curl.h>
#include "itest.h"
#include "async_seen.h"

int it_valgrind(void)
{
	const char *v = getenv("WMS_UNDER_VALGRIND");
	return v && *v && strcmp(v, "0") != 0;
}

uint32_t it_slack_ms(void)
{
	return it_valgrind() ? 1500u : 0u;
}

double it_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void it_sleep_ms(uint32_t ms)
{
	struct timespec ts;
	ts.tv_sec = (time_t)(ms / 1000u);
	ts.tv_nsec = (long)(ms % 1000u) * 1000000L;
	while (nanosleep(&ts, &ts) != 0)
		;
}

void it_sleep_until_ms(double t)
{
	double now = it_now_ms();
	if (t > now)
		it_sleep_ms((uint32_t)(t - now) + 1u);
}

wms_sim *it_sim_start(uint32_t tick_ms)
{
	wms_sim_options o = WMS_SIM_OPTIONS_INIT;
	wms_sim *sim = NULL;
	wms_sim_status st;
	o.tick_ms = tick_ms;
	st = wms_sim_start(&sim, &o);
	if (st != WMS_SIM_OK)
		fail_msg("wms_sim_start: %s: %s", wms_sim_status_name(st), wms_sim_last_error());
	assert_non_null(sim);
	assert_true(wms_sim_port(sim) > 0);
	return sim;
}

uint64_t it_sim_open_becomes(wms_sim *sim, uint64_t want, uint32_t ms)
{
	double t0 = it_now_ms();
	uint64_t open_now = 0;
	do {
		wms_sim_connections(sim, &open_now);
		if (open_now == want)
			break;
		it_sleep_ms(1);
	} while (it_now_ms() - t0 < (double)ms + it_slack_ms());
	return open_now;
}

void it_wait_sim_closed(wms_sim *sim)
{
	uint64_t open_now = it_sim_open_becomes(sim, 0, 2000);
	if (open_now)
		fail_msg("the sim still has %llu connection(s) open", (unsigned long long)open_now);
}

wms_client *it_client(const wms_sim *sim, const it_client_opts *o)
{
	wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
	it_client_opts def;
	wms_client *c = NULL;
	wms_error err;

	memset(&def, 0, sizeof(def));
	if (!o)
		o = &def;
	co.endpoint = wms_sim_url(sim);
	co.soap_version = o->soap_version;
	co.timeout_ms = o->timeout_ms ? o->timeout_ms : 2000u + it_slack_ms();
	co.connect_timeout_ms = 1000u + it_slack_ms();
	co.stall_timeout_ms = o->stall_timeout_ms;
	co.breaker_options.failure_threshold = o->failure_threshold ? o->failure_threshold : 1000u;
	co.breaker_options.open_duration_ms = o->open_duration_ms ? o->open_duration_ms : 300u;
	co.breaker_options.callbacks.on_state_change = o->on_state_change;
	co.breaker_options.callbacks.payload = o->payload;
	co.breaker_scope = o->breaker_scope;
	co.transport = o->transport;
	if (wms_client_new(&c, &co, &err) != WMS_OK)
		fail_msg("wms_client_new: %s", err.message);
	return c;
}

void it_order_init(it_order *o, const char *order_id, const char *sku, uint32_t qty)
{
	wms_order init = WMS_ORDER_INIT;
	memset(o, 0, sizeof(*o));
	snprintf(o->id, sizeof(o->id), "%s", order_id);
	o->order = init;
	o->order.order_id = o->id;
	o->order.ship_to.name = "Ada Lovelace";
	o->order.ship_to.line1 = "12 St James's Square";
	o->order.ship_to.city = "London";
	o->order.ship_to.postal_code = "SW1Y 4JH";
	o->order.ship_to.country = "GB";
	o->order.priority = WMS_PRIORITY_EXPRESS;
	o->lines[0].sku = sku;
	o->lines[0].quantity = qty;
	o->order.lines = o->lines;
	o->order.line_count = 1;
}

/* it_async_mode: it_submit through an async context per client, kept
 * (with its connections) until it_client_free. */
#define IT_ASYNC_MAX 8
static int async_mode;
static struct {
	wms_client *c;
	wms_async *a;
} async_of[IT_ASYNC_MAX];

void it_async_mode(int on)
{
	async_mode = on;
}

static wms_async *async_for(wms_client *c)
{
	wms_error err;
	size_t i, free_slot = IT_ASYNC_MAX;
	for (i = 0; i < IT_ASYNC_MAX; i++) {
		if (async_of[i].c == c)
			return async_of[i].a;
		if (!async_of[i].c && free_slot == IT_ASYNC_MAX)
			free_slot = i;
	}
	if (free_slot == IT_ASYNC_MAX)
		fail_msg("it_submit: more than %d clients in async mode", IT_ASYNC_MAX);
	if (wms_async_new(&async_of[free_slot].a, c, NULL, &err) != WMS_OK)
		fail_msg("wms_async_new: %s", err.message);
	async_of[free_slot].c = c;
	return async_of[free_slot].a;
}

void it_client_free(wms_client *c)
{
	size_t i;
	for (i = 0; i < IT_ASYNC_MAX; i++)
		if (async_of[i].c == c) {
			wms_async_free(async_of[i].a);
			async_of[i].c = NULL;
			async_of[i].a = NULL;
		}
	wms_client_free(c);
}


wms_status it_submit(wms_client *c, const char *order_id, const char *sku, uint32_t qty,
		     wms_submit_reply *out, wms_error *err)
{
	seen res;
	wms_async *a;
	it_order o;
	it_order_init(&o, order_id, sku, qty);
	if (!async_mode)
		return wms_submit_order(out, c, &o.order, err);
	a = async_for(c);
	memset(&res, 0, sizeof(res));
	if (wms_async_submit_order(NULL, a, &o.order, on_submit, &res) != WMS_OK)
		fail_msg("wms_async_submit_order refused to start");
	if (wms_async_run(a, -1) != WMS_OK)
		fail_msg("wms_async_run failed");
	if (res.calls != 1)
		fail_msg("async SubmitOrder %s completed %d times", order_id, res.calls);
	if (out && res.st == WMS_OK)
		*out = res.submit;
	if (err)
		*err = res.err;
	return res.st;
}

typedef struct sink {
	char *data;
	size_t len;
} sink;

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	sink *s = ctx;
	char *d = realloc(s->data, s->len + size * n + 1);
	if (!d)
		return 0;
	memcpy(d + s->len, p, size * n);
	s->len += size * n;
	d[s->len] = '\0';
	s->data = d;
	return size * n;
}

long it_http(const char *method, const char *url, const char *content_type,
	     const char *extra_header, const char *body, char **out_body)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hdrs = NULL;
	sink s = { NULL, 0 };
	long code = 0;
	char line[256];

	if (out_body)
		*out_body = NULL;
	assert_non_null(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(5000u + it_slack_ms() * 4u));
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	if (content_type) {
		snprintf(line, sizeof(line), "Content-Type: %s", content_type);
		hdrs = curl_slist_append(hdrs, line);
	}
	if (extra_header)
		hdrs = curl_slist_append(hdrs, extra_header);
	hdrs = curl_slist_append(hdrs, "Expect:");
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (strcmp(method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body ? body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)(body ? strlen(body) : 0));
	} else if (strcmp(method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	}
	if (curl_easy_perform(h) == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_slist_free_all(hdrs);
	curl_easy_cleanup(h);
	if (out_body)
		*out_body = s.data ? s.data : strdup("");
	else
		free(s.data);
	return code;
}

static char tmp_dir[256];
static char tmp_paths[16][512];
static size_t tmp_count;

const char *it_tmp_file(const char *name, const char *content)
{
	char *path;
	FILE *f;
	size_t i;
	if (!tmp_dir[0]) {
		snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/wms-itest-XXXXXX");
		assert_non_null(mkdtemp(tmp_dir));
	}
	for (i = 0; i < tmp_count; i++)
		if (strcmp(strrchr(tmp_paths[i], '/') + 1, name) == 0)
			break;
	assert_true(i < 16);
	path = tmp_paths[i];
	snprintf(path, sizeof(tmp_paths[i]), "%s/%s", tmp_dir, name);
	if (i == tmp_count)
		tmp_count++;
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	return path;
}

void it_tmp_cleanup(void)
{
	size_t i;
	for (i = 0; i < tmp_count; i++)
		unlink(tmp_paths[i]);
	tmp_count = 0;
	if (tmp_dir[0])
		rmdir(tmp_dir);
	tmp_dir[0] = '\0';
}
