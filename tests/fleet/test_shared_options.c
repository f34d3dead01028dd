/*
 * The Redis store's options and URL, without a Redis: every bound on both
 * sides (a store whose Redis is unreachable is made and freed: it does not
 * wait for Redis), each refusal naming its field, and no password in any
 * message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "wms/wms.h"
#include "wms/sys/breaker_store.h"
#include "breaker/redis_int.h"

static wms_status url(const char *u, wms__redis_addr *a, wms_error *err)
{
	memset(err, 0, sizeof(*err));
	return wms__redis_url_parse(a, u, err);
}

static void urls_that_parse(void **state)
{
	wms__redis_addr a;
	wms_error err;
	(void)state;

	assert_int_equal(url("redis://127.0.0.1", &a, &err), WMS_OK);
	assert_string_equal(a.host, "127.0.0.1");
	assert_int_equal(a.port, 6379);
	assert_int_equal(a.db, 0);
	assert_int_equal(url("redis://h:1/15", &a, &err), WMS_OK);
	assert_int_equal(a.port, 1);
	assert_int_equal(a.db, 15);
	assert_int_equal(url("redis://h:65535/0", &a, &err), WMS_OK);
	assert_int_equal(a.port, 65535);
	assert_int_equal(url("redis://[::1]:7000/2", &a, &err), WMS_OK);
	assert_string_equal(a.host, "::1");
	assert_int_equal(a.port, 7000);
	assert_int_equal(url("redis://:p@ss/w@rd@h/3", &a, &err), WMS_OK);
	assert_string_equal(a.user, "");
	assert_string_equal(a.password, "p@ss/w@rd");
	assert_string_equal(a.host, "h");
	assert_int_equal(a.db, 3);
	assert_int_equal(url("redis://svc:pw@h", &a, &err), WMS_OK);
	assert_string_equal(a.user, "svc");
	assert_string_equal(a.password, "pw");
	assert_int_equal(url("unix:///run/redis.sock", &a, &err), WMS_OK);
	assert_string_equal(a.path, "/run/redis.sock");
	assert_int_equal(url("unix:///r.sock?db=15", &a, &err), WMS_OK);
	assert_int_equal(a.db, 15);
}

static void refused(const char *u, const char *needle)
{
	wms__redis_addr a;
	wms_error err;
	if (url(u, &a, &err) != WMS_ERR_INVALID_ARG)
		fail_msg("accepted: %s", u);
	if (!strstr(err.message, needle))
		fail_msg("%s: message '%s' lacks '%s'", u, err.message, needle);
	assert_null(strstr(err.message, "s3cret"));
}

static void urls_refused(void **state)
{
	(void)state;
	refused("", "required");
	refused("http://h", "must start with");
	refused("rediss://h", "TLS");
	refused("redis://", "host");
	refused("redis://h:0", "port");
	refused("redis://h:65536", "port");
	refused("redis://h:08", "port");
	refused("redis://h:", "port");
	refused("redis://h/16", "database");
	refused("redis://h/01", "database");
	refused("redis://h/x", "database");
	refused("redis://:s3cret@h:99999/0", "port");
	refused("redis://:@h", "password is empty");
	refused("redis://s3cret@h", "USER:PASSWORD");
	refused("redis://[::1", "IPv6");
	refused("redis://[::1]x", "after [ADDR]");
	refused("redis://h st", "blank");
	refused("unix://relative.sock", "absolute");
	refused("unix:///r.sock?x=1", "?db=N");
	refused("unix:///r.sock?db=16", "database");
}

/* Each field at its size limit and one byte past it. */
static void url_parts_at_their_bounds(void **state)
{
	char u[2048], part[600];
	wms__redis_addr a;
	wms_error err;
	(void)state;

	memset(part, 'h', sizeof(part));
	part[255] = '\0'; /* host: 255 bytes fit in 256 */
	snprintf(u, sizeof(u), "redis://%s", part);
	assert_int_equal(url(u, &a, &err), WMS_OK);
	part[255] = 'h';
	part[256] = '\0';
	snprintf(u, sizeof(u), "redis://%s", part);
	refused(u, "host is too long");
	memset(part, 'p', sizeof(part));
	part[255] = '\0'; /* password: 255 */
	snprintf(u, sizeof(u), "redis://:%s@h", part);
	assert_int_equal(url(u, &a, &err), WMS_OK);
	part[255] = 'p';
	part[256] = '\0';
	snprintf(u, sizeof(u), "redis://:%s@h", part);
	refused(u, "too long");
	assert_null(strstr(err.message, "ppppp"));
	memset(part, 's', sizeof(part));
	part[0] = '/';
	part[107] = '\0'; /* socket path: 107 */
	snprintf(u, sizeof(u), "unix://%s", part);
	assert_int_equal(url(u, &a, &err), WMS_OK);
	part[107] = 's';
	part[108] = '\0';
	snprintf(u, sizeof(u), "unix://%s", part);
	refused(u, "too long");
	/* the whole URL: 1024 bytes, then 1025 */
	memset(u, 'h', sizeof(u));
	memcpy(u, "unix:///", 8);
	u[1024] = '\0';
	refused(u, "too long"); /* a 1016-byte path: too long a path, not a URL */
	u[1024] = 'h';
	u[1025] = '\0';
	refused(u, "longer than 1024");
}

static wms_status make(wms_shared_options *o, wms_error *err)
{
	wms_breaker_store *s = NULL;
	wms_status st;
	memset(err, 0, sizeof(*err));
	st = wms_redis_store_new(&s, o, err);
	if (st == WMS_OK) {
		assert_non_null(s);
		wms_breaker_store_free(s);
	} else {
		assert_null(s);
	}
	return st;
}

#define BOUND(field, lo, hi)                                                            \
	do {                                                                             \
		wms_shared_options bo_ = WMS_SHARED_OPTIONS_INIT;                         \
		bo_.redis_url = "unix:///nonexistent/wms-test.sock";                    \
		bo_.field = (lo);                                                          \
		assert_int_equal(make(&bo_, &err), WMS_OK);                                \
		bo_.field = (hi);                                                          \
		assert_int_equal(make(&bo_, &err), WMS_OK);                                \
		bo_.field = (hi) + 1;                                                      \
		assert_int_equal(make(&bo_, &err), WMS_ERR_INVALID_ARG);                   \
		assert_non_null(strstr(err.message, "shared." #field));                  \
		if ((lo) > 1) {                                                          \
			bo_.field = (lo) - 1;                                              \
			assert_int_equal(make(&bo_, &err), WMS_ERR_INVALID_ARG);           \
			assert_non_null(strstr(err.message, "shared." #field));          \
		}                                                                        \
	} while (0)

static void option_bounds(void **state)
{
	wms_shared_options o = WMS_SHARED_OPTIONS_INIT;
	char name[80];
	wms_error err;
	(void)state;

	BOUND(command_timeout_ms, 1u, 10000u);
	BOUND(heartbeat_ms, 5u, 10000u);
	BOUND(key_ttl_s, 60u, 2592000u);
	BOUND(queue_size, 64u, 1048576u);
	BOUND(quorum, 1u, 64u);
	o.redis_url = "unix:///nonexistent/wms-test.sock";
	memset(name, 'n', sizeof(name));
	name[64] = '\0';
	o.name = name;
	assert_int_equal(make(&o, &err), WMS_OK);
	name[64] = 'n';
	name[65] = '\0';
	assert_int_equal(make(&o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "shared.name"));
	o.name = "a{b}";
	assert_int_equal(make(&o, &err), WMS_ERR_INVALID_ARG);
	o.name = "";
	assert_int_equal(make(&o, &err), WMS_ERR_INVALID_ARG);
	o.name = "fleet_1.eu-west";
	assert_int_equal(make(&o, &err), WMS_OK);
	o.version = 2;
	assert_int_equal(make(&o, &err), WMS_ERR_INVALID_ARG);
	assert_non_null(strstr(err.message, "version"));
	assert_int_equal(wms_redis_store_new(NULL, &o, &err), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_shared_options_init(&o, 2), WMS_ERR_INVALID_ARG);
	assert_int_equal(wms_shared_options_init(NULL, WMS_SHARED_OPTIONS_VERSION), WMS_ERR_INVALID_ARG);
}

/* A store whose Redis never answers: its breaker decides in-process, and
 * a rate-mode breaker is refused. */
static void a_store_without_redis(void **state)
{
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_breaker_store *s;
	wms_breaker *b = NULL;
	wms_breaker_permit p;
	wms_error err;
	int i, m;
	(void)state;

	so.redis_url = "unix:///nonexistent/wms-test.sock";
	assert_int_equal(wms_redis_store_new(&s, &so, &err), WMS_OK);
	bo.store = s;
	bo.failure_threshold = 2;
	bo.sliding_window_size = 2;
	bo.minimum_number_of_calls = 2;
	bo.failure_rate_threshold = 100;
	/* every mode: the in-process engine decides while Redis is away */
	for (m = 0; m < 3; m++) {
		bo.mode = (wms_breaker_mode)m;
		assert_int_equal(wms_breaker_new(&b, &bo), WMS_OK);
		for (i = 0; i < 2; i++) {
			assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_OK);
			assert_false(p.flags & WMS_PERMIT_STORE);
			wms_breaker_record(b, &p, WMS_OUTCOME_FAILURE);
		}
		assert_int_equal(wms_breaker_state_get(b), WMS_BREAKER_STATE_OPEN);
		assert_int_equal(wms_breaker_acquire(&p, b, NULL), WMS_ERR_CIRCUIT_OPEN);
		wms_breaker_free(b);
	}
	wms_breaker_store_free(s);
	wms_breaker_store_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(urls_that_parse),
		cmocka_unit_test(urls_refused),
		cmocka_unit_test(url_parts_at_their_bounds),
		cmocka_unit_test(option_bounds),
		cmocka_unit_test(a_store_without_redis),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
