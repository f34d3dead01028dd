/*
 * The fleet suite, the URL's credentials and database against a real
 * redis-server (started by each test, stopped by PID): AUTH with the
 * default user's password and with an ACL user, SELECT over TCP and a unix
 * socket; a wrong password, a missing one and a database the server does
 * not have never join (the in-process engine decides) and the password is
 * in no message, event reason or log the test can capture. Each case runs
 * twice, on a fresh store and breaker each time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "wms/wms.h"
#include "wms/breaker.h"
#include "wms/shared.h"
#include "wms/sys/breaker_store.h"
#include "redis_server.h"
#include "fleet_time.h"

#define FLEET "url-test"

/* ---- a breaker linked to a store of its own --------------------------- */

typedef struct member {
	wms_breaker_store *store;
	wms_breaker *b;
	pthread_mutex_t mu; /* events come from the store's thread */
	char reasons[4096];
	size_t len;
	int events;
	int connected_events; /* events whose store was CONNECTED */
} member;

static void on_event(const wms_breaker_event *e, void *p)
{
	member *m = p;
	pthread_mutex_lock(&m->mu);
	m->events++;
	if (e->store == WMS_STORE_STATE_CONNECTED)
		m->connected_events++;
	if (e->reason) {
		int n = snprintf(m->reasons + m->len, sizeof(m->reasons) - m->len, "%s\n", e->reason);
		if (n > 0)
			m->len += (size_t)n < sizeof(m->reasons) - m->len ? (size_t)n
									 : sizeof(m->reasons) - m->len - 1;
	}
	pthread_mutex_unlock(&m->mu);
}

/* A store for `url` and a breaker `bname` (threshold 2, open a minute). */
static wms_status member_make(member *m, const char *url, const char *bname, wms_error *err)
{
	wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
	wms_breaker_options bo = WMS_BREAKER_OPTIONS_INIT;
	wms_status st;

	memset(m, 0, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	so.redis_url = url;
	so.name = FLEET;
	so.heartbeat_ms = 20;
	so.command_timeout_ms = valgrind() ? 2000 : 500;
	st = wms_redis_store_new(&m->store, &so, err);
	if (st != WMS_OK)
		return st;
	bo.name = bname;
	bo.failure_threshold = 2;
	bo.open_duration_ms = 60000;
	bo.store = m->store;
	bo.callbacks.on_state_change = on_event;
	bo.callbacks.payload = m;
	st = wms_breaker_new(&m->b, &bo);
	if (st != WMS_OK) {
		wms_breaker_store_free(m->store);
		m->store = NULL;
	}
	return st;
}

static void member_free(member *m)
{
	wms_breaker_free(m->b); /* before its store */
	wms_breaker_store_free(m->store);
	m->b = NULL;
	m->store = NULL;
	pthread_mutex_destroy(&m->mu);
}

static wms_store_state store_of(wms_breaker *b)
{
	wms_breaker_snapshot s;
	wms_breaker_snapshot_get(&s, b);
	return s.store_state;
}

static void wait_joined(wms_breaker *b)
{
	double t0 = now_ms();
	while (store_of(b) != WMS_STORE_STATE_CONNECTED) {
		if (now_ms() - t0 > limit(3000))
			fail_msg("store not CONNECTED after %.0f ms", limit(3000));
		sleep_ms(2);
	}
}

/* ---- what the test captures: stderr, and the server's own log ---------- */

typedef struct capture {
	int saved;
	char path[64];
} capture;

static void capture_begin(capture *c)
{
	int fd;
	fflush(stderr);
	snprintf(c->path, sizeof(c->path), "/tmp/wms-url-stderr-XXXXXX");
	fd = mkstemp(c->path);
	c->saved = fd >= 0 ? dup(2) : -1;
	if (fd < 0 || c->saved < 0 || dup2(fd, 2) < 0)
		fail_msg("cannot capture stderr");
	close(fd);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n = 0;

	if (!f)
		return NULL;
	buf = malloc(1 << 20);
	if (buf)
		n = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	if (buf)
		buf[n] = '\0';
	return buf;
}

/* Restore stderr; what was written to it meanwhile (free it). */
static char *capture_end(capture *c)
{
	char *text;
	fflush(stderr);
	dup2(c->saved, 2);
	close(c->saved);
	text = slurp(c->path);
	unlink(c->path);
	if (!text)
		fail_msg("cannot read the captured stderr");
	return text;
}

static void assert_no_secret(const char *text, const char *secret, const char *what)
{
	if (text && strstr(text, secret))
		fail_msg("the password is in %s", what);
}

static void server_log_has_no(const rs_server *rs, const char *secret)
{
	char path[160];
	char *text;
	snprintf(path, sizeof(path), "%s/redis.log", rs->dir);
	text = slurp(path);
	assert_non_null(text);
	assert_no_secret(text, secret, "redis-server's log");
	free(text);
}

/* ---- what a database holds -------------------------------------------- */

/* A command in database `db` (NULL on failure); free the reply. */
static redisReply *db_cmd(const rs_server *rs, int db, const char *fmt, ...)
{
	redisContext *c = rs_connect(rs);
	redisReply *r;
	va_list ap;

	if (!c)
		return NULL;
	r = redisCommand(c, "SELECT %d", db);
	if (!r || r->type != REDIS_REPLY_STATUS) {
		if (r)
			freeReplyObject(r);
		redisFree(c);
		return NULL;
	}
	freeReplyObject(r);
	va_start(ap, fmt);
	r = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return r;
}

static long long db_int(const rs_server *rs, int db, const char *fmt, const char *arg)
{
	redisReply *r = db_cmd(rs, db, fmt, arg);
	long long v = -1;
	if (r && r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	if (r)
		freeReplyObject(r);
	return v;
}

/* The number of the fleet's keys in database `db`. */
static long long fleet_keys(const rs_server *rs, int db)
{
	redisReply *r = db_cmd(rs, db, "KEYS wms:{" FLEET "}:*");
	long long n = -1;
	if (r && r->type == REDIS_REPLY_ARRAY)
		n = (long long)r->elements;
	if (r)
		freeReplyObject(r);
	return n;
}

static long long db_size(const rs_server *rs, int db)
{
	redisReply *r = db_cmd(rs, db, "DBSIZE");
	long long v = -1;
	if (r && r->type == REDIS_REPLY_INTEGER)
		v = r->integer;
	if (r)
		freeReplyObject(r);
	return v;
}

/* ---- a URL that joins ------------------------------------------------- */

/* `url` joins; the breaker's state hash is in `db` and nowhere else among
 * `ndb` databases, and an outcome is counted there. */
static void joins_into(const rs_server *rs, const char *url, int db, int ndb, const char *bname)
{
	char key[128];
	member m;
	wms_error err;
	wms_shared_stats st;
	wms_breaker_permit p;
	double t0;
	int i;

	memset(&err, 0, sizeof(err));
	snprintf(key, sizeof(key), "wms:{" FLEET "}:s:%s", bname);
	if (member_make(&m, url, bname, &err) != WMS_OK)
		fail_msg("member_make: %s", err.message);
	wait_joined(m.b);
	assert_int_equal(db_int(rs, db, "EXISTS %s", key), 1);
	for (i = 0; i < ndb; i++)
		if (i != db)
			assert_int_equal(db_int(rs, i, "EXISTS %s", key), 0);
	/* the store decides the permit, and the failure is counted in `db` */
	assert_int_equal(wms_breaker_acquire(&p, m.b, NULL), WMS_OK);
	assert_true(p.flags & WMS_PERMIT_STORE);
	wms_breaker_record(m.b, &p, WMS_OUTCOME_FAILURE);
	t0 = now_ms();
	for (;;) {
		redisReply *r = db_cmd(rs, db, "HGET %s n", key);
		int one = r && r->type == REDIS_REPLY_STRING && !strcmp(r->str, "1");
		if (r)
			freeReplyObject(r);
		if (one)
			break;
		if (now_ms() - t0 > limit(2000))
			fail_msg("the failure did not reach database %d", db);
		sleep_ms(2);
	}
	wms_redis_store_stats(&st, m.store);
	assert_true(st.connects >= 1);
	pthread_mutex_lock(&m.mu);
	i = m.connected_events;
	pthread_mutex_unlock(&m.mu);
	assert_true(i >= 1); /* the join was told (an event with store CONNECTED) */
	member_free(&m);
}

/* ---- a URL that never joins ------------------------------------------- */

typedef struct refused {
	wms_status made;
	char message[512];
	int degraded;                  /* reached DEGRADED */
	int connected;                 /* was ever seen CONNECTED */
	wms_status first, third;       /* acquire: before and after 2 failures */
	uint32_t first_flags;
	wms_breaker_state after;       /* the state after 2 failures */
	wms_shared_stats stats;
	int events, connected_events;
	char reasons[4096];
	char *stderr_text;
} refused;

/* Make a store for `url` and a breaker, under a stderr capture: it must go
 * DEGRADED and stay off CONNECTED for a while (several reconnects: from
 * 20 ms, doubling); the in-process engine decides meanwhile. Nothing is
 * asserted while stderr is captured. */
static void run_refused(refused *out, const char *url, const char *bname)
{
	wms_error err;
	capture cap;
	member m;
	double t0, since = 0, watch = valgrind() ? 1500 : 300;

	memset(out, 0, sizeof(*out));
	memset(&err, 0, sizeof(err));
	capture_begin(&cap);
	out->made = member_make(&m, url, bname, &err);
	snprintf(out->message, sizeof(out->message), "%s", err.message);
	if (out->made == WMS_OK) {
		t0 = now_ms();
		for (;;) {
			wms_store_state s = store_of(m.b);
			double t = now_ms();
			if (s == WMS_STORE_STATE_CONNECTED)
				out->connected = 1;
			if (s == WMS_STORE_STATE_DEGRADED && !out->degraded) {
				out->degraded = 1;
				since = t;
			}
			if (out->degraded ? t - since > watch : t - t0 > limit(2000))
				break;
			sleep_ms(2);
		}
		{
			wms_breaker_permit p;
			out->first = wms_breaker_acquire(&p, m.b, NULL);
			if (out->first == WMS_OK) {
				out->first_flags = p.flags;
				wms_breaker_record(m.b, &p, WMS_OUTCOME_FAILURE);
			}
			if (wms_breaker_acquire(&p, m.b, NULL) == WMS_OK)
				wms_breaker_record(m.b, &p, WMS_OUTCOME_FAILURE);
			out->third = wms_breaker_acquire(&p, m.b, NULL);
			if (out->third == WMS_OK)
				wms_breaker_release(m.b, &p);
			out->after = wms_breaker_state_get(m.b);
		}
		wms_redis_store_stats(&out->stats, m.store);
		if (store_of(m.b) == WMS_STORE_STATE_CONNECTED)
			out->connected = 1;
		pthread_mutex_lock(&m.mu);
		out->events = m.events;
		out->connected_events = m.connected_events;
		memcpy(out->reasons, m.reasons, sizeof(out->reasons));
		pthread_mutex_unlock(&m.mu);
		member_free(&m);
	} else {
		pthread_mutex_destroy(&m.mu);
	}
	out->stderr_text = capture_end(&cap);
}

/* `url` never joins, the events' reason names `why`, and `secret` (when
 * not NULL) shows nowhere. */
static void never_joins(const rs_server *rs, const char *url, const char *bname, const char *secret,
			const char *why)
{
	refused r;

	run_refused(&r, url, bname);
	if (secret) {
		assert_no_secret(r.message, secret, "an error message");
		assert_no_secret(r.reasons, secret, "an event reason");
		assert_no_secret(r.stderr_text, secret, "stderr");
		server_log_has_no(rs, secret);
	}
	if (r.stderr_text[0])
		print_message("stderr while refused: %s\n", r.stderr_text);
	free(r.stderr_text);
	if (r.made != WMS_OK)
		fail_msg("member_make: %s", r.message);
	assert_true(r.degraded);
	assert_false(r.connected);
	assert_int_equal(r.connected_events, 0);
	assert_true(r.events >= 1); /* "shared store lost: the in-process breaker decides" */
	assert_non_null(strstr(r.reasons, "in-process"));
	if (!strstr(r.reasons, why))
		fail_msg("no reason names %s: %s", why, r.reasons);
	assert_int_equal(r.stats.connects, 0);
	assert_int_equal(r.stats.scripts, 0);
	assert_true(r.stats.commands >= 1); /* it did try: AUTH, SELECT or PSUBSCRIBE */
	/* the in-process engine: permits of its own, opened by its own count */
	assert_int_equal(r.first, WMS_OK);
	assert_false(r.first_flags & WMS_PERMIT_STORE);
	assert_int_equal(r.third, WMS_ERR_CIRCUIT_OPEN);
	assert_int_equal(r.after, WMS_BREAKER_STATE_OPEN);
	/* nothing of the fleet's was written anywhere */
	assert_int_equal(fleet_keys(rs, 0), 0);
}

/* Failed AUTHs the server logged (ACL LOG: entries of reason "auth",
 * alike ones merged with a count); no entry may hold `secret`. */
static long long acl_auth_failures(const rs_server *rs, const char *secret)
{
	redisReply *r = rs_cmd(rs, "ACL LOG 128");
	long long n = 0;
	size_t i, j;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_ARRAY);
	for (i = 0; i < r->elements; i++) {
		redisReply *e = r->element[i];
		long long count = 0;
		int auth = 0;
		if (e->type != REDIS_REPLY_ARRAY)
			continue;
		for (j = 0; j + 1 < e->elements; j += 2) {
			redisReply *k = e->element[j], *v = e->element[j + 1];
			if (v->type == REDIS_REPLY_STRING || v->type == REDIS_REPLY_STATUS)
				assert_no_secret(v->str, secret, "the server's ACL LOG");
			if (k->type != REDIS_REPLY_STRING)
				continue;
			if (!strcmp(k->str, "reason") && v->type == REDIS_REPLY_STRING &&
			    !strcmp(v->str, "auth"))
				auth = 1;
			if (!strcmp(k->str, "count") && v->type == REDIS_REPLY_INTEGER)
				count = v->integer;
		}
		if (auth)
			n += count;
	}
	freeReplyObject(r);
	return n;
}

/* ---- (a) the default user's password, database 3 ----------------------- */

static void password_and_db_over_tcp(void **state)
{
	/* a password with the URL's own separators: the last '@' ends it */
	rs_opts o = { "s3cr/et@pw:1", NULL, NULL, 0 };
	rs_server rs;
	char url[256];
	int round;
	(void)state;

	if (rs_start_opts(&rs, 1, &o) != 0)
		fail_msg("cannot start redis-server (is it installed? ./run installs it)");
	/* the server does want the password */
	{
		redisContext *c = redisConnect("127.0.0.1", rs.port);
		redisReply *r;
		assert_non_null(c);
		assert_int_equal(c->err, 0);
		r = redisCommand(c, "GET x");
		assert_non_null(r);
		assert_int_equal(r->type, REDIS_REPLY_ERROR);
		assert_non_null(strstr(r->str, "NOAUTH"));
		freeReplyObject(r);
		redisFree(c);
	}
	snprintf(url, sizeof(url), "redis://:%s@127.0.0.1:%d/3", o.password, rs.port);
	for (round = 0; round < 2; round++) {
		char name[16];
		snprintf(name, sizeof(name), "a%d", round);
		joins_into(&rs, url, 3, 16, name);
		assert_int_equal(fleet_keys(&rs, 3), round + 1);
		assert_int_equal(db_size(&rs, 0), 0);
	}
	server_log_has_no(&rs, o.password);
	rs_stop(&rs);
}

/* ---- (b) an ACL user ---------------------------------------------------- */

/* The store's connections are the user's (CLIENT LIST: user=NAME). */
static int clients_as(const rs_server *rs, const char *user)
{
	redisReply *r = rs_cmd(rs, "CLIENT LIST");
	char needle[96];
	const char *p;
	int n = 0;

	assert_non_null(r);
	assert_int_equal(r->type, REDIS_REPLY_STRING);
	snprintf(needle, sizeof(needle), " user=%s ", user);
	for (p = r->str; (p = strstr(p, needle)) != NULL; p++)
		n++;
	freeReplyObject(r);
	return n;
}

static void acl_user(void **state)
{
	rs_opts o = { "default-pw-b", "fleetu", "user-pw-b", 0 };
	rs_server rs;
	char url[256];
	int round;
	long long before;
	(void)state;

	if (rs_start_opts(&rs, 1, &o) != 0)
		fail_msg("cannot start redis-server (is it installed? ./run installs it)");
	snprintf(url, sizeof(url), "redis://fleetu:user-pw-b@127.0.0.1:%d/1", rs.port);
	for (round = 0; round < 2; round++) {
		char name[16];
		member m;
		wms_error err;

		snprintf(name, sizeof(name), "b%d", round);
		joins_into(&rs, url, 1, 16, name);
		/* while one is joined, its two connections (commands, pub/sub)
		 * are fleetu's */
		memset(&err, 0, sizeof(err));
		if (member_make(&m, url, name, &err) != WMS_OK)
			fail_msg("member_make: %s", err.message);
		wait_joined(m.b);
		assert_true(clients_as(&rs, "fleetu") >= 2);
		member_free(&m);
	}
	/* The user name is sent: the default user's password given with it,
	 * or the user's password without it, is refused. */
	before = acl_auth_failures(&rs, "user-pw-b");
	for (round = 0; round < 2; round++) {
		char bad[256];
		snprintf(bad, sizeof(bad), "redis://fleetu:default-pw-b@127.0.0.1:%d/1", rs.port);
		never_joins(&rs, bad, "b-bad", "default-pw-b", "refused AUTH");
		snprintf(bad, sizeof(bad), "redis://:user-pw-b@127.0.0.1:%d/1", rs.port);
		never_joins(&rs, bad, "b-bad", "user-pw-b", "refused AUTH");
	}
	assert_true(acl_auth_failures(&rs, "user-pw-b") > before);
	assert_int_equal(fleet_keys(&rs, 1), 2); /* b0 and b1 only */
	rs_stop(&rs);
}

/* ---- (c) a wrong or missing password ------------------------------------ */

static void wrong_password_never_joins(void **state)
{
	rs_opts o = { "right-pw-c", "fleetu", "user-pw-c", 0 };
	rs_server rs;
	char url[256];
	int round;
	(void)state;

	if (rs_start_opts(&rs, 1, &o) != 0)
		fail_msg("cannot start redis-server (is it installed? ./run installs it)");
	for (round = 0; round < 2; round++) {
		snprintf(url, sizeof(url), "redis://:Wr0ng-Secret-c@127.0.0.1:%d/0", rs.port);
		never_joins(&rs, url, "c", "Wr0ng-Secret-c", "refused AUTH");
		snprintf(url, sizeof(url), "redis://fleetu:Wr0ng-Secret-u@127.0.0.1:%d/2", rs.port);
		never_joins(&rs, url, "c", "Wr0ng-Secret-u", "refused AUTH");
		/* no password at all: AUTH is not sent, the server answers
		 * NOAUTH */
		snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", rs.port);
		never_joins(&rs, url, "c", NULL, "needs AUTH");
		/* an unknown user */
		snprintf(url, sizeof(url), "redis://nobody:Wr0ng-Secret-n@127.0.0.1:%d", rs.port);
		never_joins(&rs, url, "c", "Wr0ng-Secret-n", "refused AUTH");
	}
	/* every failed AUTH reached the server (6; more with the reconnects) */
	assert_true(acl_auth_failures(&rs, "Wr0ng-Secret") >= 6);
	{
		int i;
		for (i = 0; i < 16; i++)
			assert_int_equal(db_size(&rs, i), 0);
	}

	/* A client made with the wrong password: degraded, and its health
	 * output does not show the password either. */
	for (round = 0; round < 2; round++) {
		wms_client_options co = WMS_CLIENT_OPTIONS_INIT;
		wms_client *c = NULL;
		wms_error err;
		wms_status made;
		wms_store_state seen = WMS_STORE_STATE_NONE;
		char *json = NULL, *prom = NULL, *text;
		capture cap;
		double t0;

		memset(&err, 0, sizeof(err));
		snprintf(url, sizeof(url), "redis://:Wr0ng-Secret-k@127.0.0.1:%d/0", rs.port);
		co.endpoint = "http://127.0.0.1:9/";
		co.shared.redis_url = url;
		co.shared.name = FLEET;
		co.shared.heartbeat_ms = 20;
		capture_begin(&cap);
		made = wms_client_new(&c, &co, &err);
		if (made == WMS_OK) {
			wms_breaker *b = wms_client_breaker_for(c, "SubmitOrder");
			t0 = now_ms();
			while ((seen = store_of(b)) != WMS_STORE_STATE_DEGRADED &&
			       now_ms() - t0 < limit(2000))
				sleep_ms(2);
			wms_client_health_json(&json, c);
			wms_client_health_prometheus(&prom, c, NULL);
			wms_client_free(c);
		}
		text = capture_end(&cap);
		assert_no_secret(err.message, "Wr0ng-Secret-k", "an error message");
		assert_no_secret(text, "Wr0ng-Secret-k", "stderr");
		free(text);
		if (made != WMS_OK)
			fail_msg("wms_client_new: %s", err.message);
		assert_int_equal(seen, WMS_STORE_STATE_DEGRADED);
		assert_non_null(json);
		assert_non_null(prom);
		assert_no_secret(json, "Wr0ng-Secret-k", "the health JSON");
		assert_no_secret(prom, "Wr0ng-Secret-k", "the Prometheus text");
		assert_non_null(strstr(json, "\"store\":\"DEGRADED\""));
		wms_free(json);
		wms_free(prom);
	}
	server_log_has_no(&rs, "Wr0ng-Secret");
	assert_int_equal(db_size(&rs, 0), 0);
	rs_stop(&rs);
}

/* ---- (d) unix:///PATH?db=2 ----------------------------------------------- */

static void unix_socket_db(void **state)
{
	rs_server rs;
	char url[256];
	int round;
	(void)state;

	if (rs_start(&rs, 0) != 0)
		fail_msg("cannot start redis-server (is it installed? ./run installs it)");
	snprintf(url, sizeof(url), "unix://%s?db=2", rs.sock);
	for (round = 0; round < 2; round++) {
		char name[16];
		snprintf(name, sizeof(name), "d%d", round);
		joins_into(&rs, url, 2, 16, name);
		assert_int_equal(fleet_keys(&rs, 2), round + 1);
		assert_int_equal(db_size(&rs, 0), 0);
	}
	/* ?db=0 and no query are database 0 */
	snprintf(url, sizeof(url), "unix://%s?db=0", rs.sock);
	joins_into(&rs, url, 0, 3, "d-zero");
	snprintf(url, sizeof(url), "unix://%s", rs.sock);
	joins_into(&rs, url, 0, 3, "d-none");
	assert_int_equal(fleet_keys(&rs, 0), 2);
	rs_stop(&rs);
}

/* ---- (e) a database the server does not have ---------------------------- */

static void db_out_of_the_servers_range(void **state)
{
	rs_opts o = { "pw-e", NULL, NULL, 4 };
	rs_server rs, us;
	char url[256];
	int round, i;
	(void)state;

	if (rs_start_opts(&rs, 1, &o) != 0)
		fail_msg("cannot start redis-server (is it installed? ./run installs it)");
	/* the server has 4: SELECT 4 and 5 fail (after a good AUTH) */
	assert_null(db_cmd(&rs, 4, "DBSIZE"));
	for (round = 0; round < 2; round++) {
		snprintf(url, sizeof(url), "redis://:pw-e@127.0.0.1:%d/5", rs.port);
		never_joins(&rs, url, "e", "pw-e", "refused SELECT");
		snprintf(url, sizeof(url), "redis://:pw-e@127.0.0.1:%d/4", rs.port);
		never_joins(&rs, url, "e", "pw-e", "refused SELECT");
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(db_size(&rs, i), 0);
	assert_int_equal(acl_auth_failures(&rs, "pw-e"), 0); /* AUTH itself was good */
	/* above what the URL takes (0-15): refused at once, naming the
	 * database, not the password */
	for (round = 0; round < 2; round++) {
		wms_breaker_store *store = NULL;
		wms_shared_options so = WMS_SHARED_OPTIONS_INIT;
		wms_error err;
		memset(&err, 0, sizeof(err));
		snprintf(url, sizeof(url), "redis://:pw-e-16@127.0.0.1:%d/16", rs.port);
		so.redis_url = url;
		assert_int_equal(wms_redis_store_new(&store, &so, &err), WMS_ERR_INVALID_ARG);
		assert_null(store);
		assert_non_null(strstr(err.message, "database"));
		assert_no_secret(err.message, "pw-e-16", "an error message");
	}
	/* the highest it has joins */
	snprintf(url, sizeof(url), "redis://:pw-e@127.0.0.1:%d/3", rs.port);
	joins_into(&rs, url, 3, 4, "e-ok");
	rs_stop(&rs);

	/* the same over a unix socket */
	{
		rs_opts uo = { NULL, NULL, NULL, 4 };
		if (rs_start_opts(&us, 0, &uo) != 0)
			fail_msg("cannot start redis-server");
	}
	for (round = 0; round < 2; round++) {
		snprintf(url, sizeof(url), "unix://%s?db=5", us.sock);
		never_joins(&us, url, "e", NULL, "refused SELECT");
	}
	for (i = 0; i < 4; i++)
		assert_int_equal(db_size(&us, i), 0);
	snprintf(url, sizeof(url), "unix://%s?db=3", us.sock);
	joins_into(&us, url, 3, 4, "e-ok");
	rs_stop(&us);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(password_and_db_over_tcp),
		cmocka_unit_test(acl_user),
		cmocka_unit_test(wrong_password_never_joins),
		cmocka_unit_test(unix_socket_db),
		cmocka_unit_test(db_out_of_the_servers_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
