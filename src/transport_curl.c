/*
 * libwms - the libcurl transport (wms/sys/transport.h).
 *
 * One transport serves any number of threads at once. Each call takes a CURL
 * easy handle from a small pool (created on demand, at most POOL_MAX_IDLE kept
 * idle) and hands it back afterwards. A CURLSH shares the DNS cache and the TLS
 * session cache between the handles, under one pthread mutex per lock type.
 *
 * Keep-alive: the connection cache is NOT put in the share. libcurl documents
 * CURL_LOCK_DATA_CONNECT as unsupported across concurrent threads (KNOWN_BUGS
 * "A shared connection cache is not thread-safe", curl issues #4915/#9404,
 * still open for 7.88). Instead every pooled easy handle keeps its own live
 * connection, and a handle is reused LIFO, so sequential calls ride the same
 * keep-alive connection and N concurrent callers use at most N connections.
 * The idle pool size (8) is therefore also the number of idle connections kept.
 *
 * Global init: curl_global_init() runs once, on the first
 * wms_curl_transport_new(), under pthread_once. libcurl older than 7.84 (or
 * built without CURL_VERSION_THREADSAFE) does not make curl_global_init()
 * thread-safe against itself: an application that calls curl_global_init()
 * or curl_global_cleanup() itself must not do so while another thread creates
 * the first libwms client. libwms never calls curl_global_cleanup().
 *
 * Proxies: libcurl's default proxy handling is left alone, so http_proxy,
 * https_proxy, ALL_PROXY and NO_PROXY in the environment apply to WMS calls
 * (set NO_PROXY for the WMS host to bypass one).
 *
 * Stall guard: CURLOPT_LOW_SPEED_LIMIT 1 byte/s over LOW_SPEED_TIME
 * ceil(stall_timeout_ms / 1000) s, plus a progress callback that aborts once
 * nothing has moved for stall_timeout_ms (see on_progress for why both).
 *
 * Signals: CURLOPT_NOSIGNAL is always set; on Linux sends use MSG_NOSIGNAL.
 * The threaded resolver honours the timeouts without SIGALRM.
 *
 * Nothing here logs.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include "internal.h"
#include "wms/sys/transport.h"

_Static_assert(sizeof(curl_off_t) == sizeof(int64_t), "curl_off_t is 64 bits");

/* Idle easy handles (and so idle keep-alive connections) kept for reuse. */
#define POOL_MAX_IDLE 8

struct curl_transport {
	wms_transport parent;
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	int share_locks_ready;
	pthread_mutex_t pool_lock;
	int pool_lock_ready;
	CURL *idle[POOL_MAX_IDLE];
	size_t idle_count;
};

/* What the callbacks of one call share. */
struct call {
	CURL *h;
	wms_http_response *resp;
	/* First failure of a callback (TOO_LARGE, NOMEM), WMS_OK if none. */
	wms_status cb_status;
	/* Body bytes have arrived for the current response: later header lines
	 * are trailers and must not replace the Content-Type. */
	int in_body;
	/* Silence guard (see on_progress). */
	uint64_t stall_ns;
	uint64_t last_move_ns;
	curl_off_t moved;
	curl_off_t header_bytes;
	int connected;
	int stalled;
};

/* ---- global init ------------------------------------------------------ */

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- share locks ------------------------------------------------------ */

static void share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *userptr)
{
	struct curl_transport *t = userptr;
	(void)handle;
	(void)access;
	if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&t->share_locks[data]);
}

static void share_unlock(CURL *handle, curl_lock_data data, void *userptr)
{
	struct curl_transport *t = userptr;
	(void)handle;
	if ((int)data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&t->share_locks[data]);
}

/* ---- handle pool ------------------------------------------------------ */

static CURL *pool_take(struct curl_transport *t)
{
	CURL *h = NULL;
	pthread_mutex_lock(&t->pool_lock);
	if (t->idle_count)
		h = t->idle[--t->idle_count];
	pthread_mutex_unlock(&t->pool_lock);
	if (h)
		return h;
	/* A fresh handle; CURLOPT_SHARE is set on every call (after reset). */
	return curl_easy_init();
}

/* Back to the pool with every per-request option dropped (no pointer into
 * the finished call survives). curl_easy_reset keeps the live connection,
 * the DNS and TLS session caches and the share. */
static void pool_give(struct curl_transport *t, CURL *h)
{
	int kept = 0;
	curl_easy_reset(h);
	pthread_mutex_lock(&t->pool_lock);
	if (t->idle_count < POOL_MAX_IDLE) {
		t->idle[t->idle_count++] = h;
		kept = 1;
	}
	pthread_mutex_unlock(&t->pool_lock);
	if (!kept)
		curl_easy_cleanup(h);
}

/* ---- callbacks ------------------------------------------------------- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct call *c = userdata;
	size_t n = size * nmemb;
	wms_status st = wms_http_response_append(c->resp, ptr, n);
	if (st != WMS_OK) {
		if (c->cb_status == WMS_OK)
			c->cb_status = st;
#ifdef CURL_WRITEFUNC_ERROR
		return n ? 0 : CURL_WRITEFUNC_ERROR;
#else
		return n ? 0 : 1;
#endif
	}
	if (n)
		c->in_body = 1;
	return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	static const char ct[] = "content-type:";
	struct call *c = userdata;
	size_t n = size * nmemb;
	wms_status st;

	c->header_bytes += (curl_off_t)n;
	if (n >= 5 && strncmp(ptr, "HTTP/", 5) == 0) {
		/* A new status line (after a 1xx, or a retry): forget the last one's. */
		wms__free(c->resp->content_type);
		c->resp->content_type = NULL;
		c->in_body = 0;
		return n;
	}
	if (c->in_body || n < sizeof(ct) - 1 || strncasecmp(ptr, ct, sizeof(ct) - 1) != 0)
		return n;
	st = wms_http_response_set_content_type(c->resp, ptr + sizeof(ct) - 1,
						 n - (sizeof(ct) - 1));
	if (st != WMS_OK) {
		if (c->cb_status == WMS_OK)
			c->cb_status = st;
		return 0;
	}
	return n;
}

/*
 * The stall guard, part two. CURLOPT_LOW_SPEED_* judges curl's transfer
 * speed, which libcurl averages over a window of about five seconds: measured
 * on 7.88, a reply that goes silent after a few bytes with LOW_SPEED_TIME 1
 * is only aborted after ~7 s, and with the defaults (5 s stall, 10 s deadline)
 * the deadline always wins. So this callback also aborts when nothing has
 * moved for stall_timeout_ms once the connection is up (server think time
 * included). "Moved": body bytes either way, or a complete header line (curl
 * hands headers over by the line). libcurl calls it at least once a second.
 */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct call *c = userdata;
	uint64_t now = wms__now_ns();
	curl_off_t moved = dlnow + ulnow + c->header_bytes;
	(void)dltotal;
	(void)ultotal;
	if (!c->connected) {
		curl_off_t pre = 0;
		if (moved > 0 ||
		    (curl_easy_getinfo(c->h, CURLINFO_PRETRANSFER_TIME_T, &pre) == CURLE_OK &&
		     pre > 0))
			c->connected = 1;
		c->last_move_ns = now;
		c->moved = moved;
		return 0;
	}
	if (moved != c->moved) {
		c->moved = moved;
		c->last_move_ns = now;
		return 0;
	}
	if (now - c->last_move_ns >= c->stall_ns) {
		c->stalled = 1;
		return 1;
	}
	return 0;
}

/* ---- helpers ---------------------------------------------------------- */

static int has_crlf(const char *s)
{
	return s && strpbrk(s, "\r\n") != NULL;
}

/* prefix + value + suffix, freshly allocated. */
static char *join3(const char *prefix, const char *value, const char *suffix)
{
	size_t a = strlen(prefix), b = strlen(value), c = strlen(suffix);
	char *s = wms__malloc(a + b + c + 1);
	if (!s)
		return NULL;
	memcpy(s, prefix, a);
	memcpy(s + a, value, b);
	memcpy(s + a + b, suffix, c + 1);
	return s;
}

static wms_status add_header(struct curl_slist **list, const char *prefix, const char *value,
			     const char *suffix)
{
	struct curl_slist *l;
	char *line = join3(prefix, value, suffix);
	if (!line)
		return WMS_ERR_NOMEM;
	l = curl_slist_append(*list, line);
	wms__free(line);
	if (!l)
		return WMS_ERR_NOMEM;
	*list = l;
	return WMS_OK;
}

/* Copy src to dst (size bytes), replacing every occurrence of needle with "***". */
static void scrub_into(char *dst, size_t size, const char *src, const char *needle, size_t nlen)
{
	size_t o = 0;
	if (!size)
		return;
	while (*src && o + 1 < size) {
		if (nlen && strncmp(src, needle, nlen) == 0) {
			const char *r = "***";
			while (*r && o + 1 < size)
				dst[o++] = *r++;
			src += nlen;
		} else {
			dst[o++] = *src++;
		}
	}
	dst[o] = '\0';
}

/* Remove the URL's userinfo (user:password) and the password alone from msg. */
static void scrub_credentials(char *msg, size_t size, const char *url)
{
	char tmp[CURL_ERROR_SIZE + 128];
	const char *auth, *at = NULL, *colon, *p;
	size_t alen;

	if (!url || size > sizeof(tmp))
		return;
	p = strstr(url, "://");
	auth = p ? p + 3 : url;
	alen = strcspn(auth, "/?#");
	for (p = auth; p < auth + alen; p++)
		if (*p == '@')
			at = p;
	if (!at || at == auth)
		return;
	scrub_into(tmp, sizeof(tmp), msg, auth, (size_t)(at - auth));
	colon = memchr(auth, ':', (size_t)(at - auth));
	if (colon && colon + 1 < at)
		scrub_into(msg, size, tmp, colon + 1, (size_t)(at - colon - 1));
	else
		wms__strlcpy(msg, tmp, size);
}

/* Whether the whole request (head and body) was written to the socket. Body
 * bytes only count once written (CURLINFO_SIZE_UPLOAD_T); a request whose
 * body did not fully leave cannot be acted on by an HTTP server. */
static int request_fully_sent(CURL *h, size_t body_len)
{
	curl_off_t up = 0;
	long head = 0;
	if (curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &head) != CURLE_OK || head <= 0)
		return 0;
	if (curl_easy_getinfo(h, CURLINFO_SIZE_UPLOAD_T, &up) != CURLE_OK || up < 0)
		return 0;
	return (curl_off_t)body_len <= up;
}

/* Map a failed transfer (or setopt) to a status and delivery. */
static wms_status map_curl_error(CURLcode rc, int sent, const struct call *c,
				 wms_delivery *delivery)
{
	wms_delivery maybe = sent ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_NOT_SENT;
	*delivery = WMS_DELIVERY_NOT_SENT;
	/* On int: CURLcode has ~100 values and -Wswitch-enum wants them all. */
	switch ((int)rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
		return WMS_ERR_CONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		*delivery = maybe;
		return WMS_ERR_TIMEOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
#if LIBCURL_VERSION_NUM >= 0x074d00
	case CURLE_SSL_CLIENTCERT:
#endif
	case CURLE_USE_SSL_FAILED:
		/* Handshake failures: nothing of the request was written. */
		*delivery = maybe;
		return WMS_ERR_TLS;
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_HTTP3:
	case CURLE_QUIC_CONNECT_ERROR:
	case CURLE_PROXY:
	case CURLE_BAD_CONTENT_ENCODING:
		*delivery = maybe;
		return WMS_ERR_TRANSPORT;
	case CURLE_PARTIAL_FILE:
		*delivery = WMS_DELIVERY_UNKNOWN;
		return WMS_ERR_TRUNCATED;
	case CURLE_WRITE_ERROR:
		/* One of our callbacks refused the data. */
		*delivery = maybe;
		if (c->cb_status == WMS_ERR_TOO_LARGE) {
			*delivery = WMS_DELIVERY_UNKNOWN;
			return WMS_ERR_TOO_LARGE;
		}
		if (c->cb_status == WMS_ERR_NOMEM)
			return WMS_ERR_NOMEM;
		return WMS_ERR_TRANSPORT;
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
		return WMS_ERR_INVALID_ARG;
	case CURLE_OUT_OF_MEMORY:
		*delivery = maybe;
		return WMS_ERR_NOMEM;
	case CURLE_ABORTED_BY_CALLBACK:
		if (c->stalled) {
			*delivery = maybe;
			return WMS_ERR_TIMEOUT;
		}
		return WMS_ERR_INTERNAL;
	case CURLE_OK:
	case CURLE_FAILED_INIT:
	case CURLE_NOT_BUILT_IN:
	case CURLE_UNKNOWN_OPTION:
	case CURLE_BAD_FUNCTION_ARGUMENT:
		return WMS_ERR_INTERNAL;
	default:
		/* Anything else (a libcurl code this file does not know) is a
		 * transport failure; whether it left depends on what was written. */
		*delivery = maybe;
		return WMS_ERR_TRANSPORT;
	}
}

static wms_status fail_curl(wms_error *err, CURLcode rc, int sent, const struct call *c,
			    const char *errbuf, const char *url, long http_status)
{
	char msg[CURL_ERROR_SIZE + 64];
	const char *text = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
	size_t len;
	wms_delivery delivery;
	wms_status st = map_curl_error(rc, sent, c, &delivery);

	if (st == WMS_ERR_TOO_LARGE)
		snprintf(msg, sizeof(msg), "reply body exceeds %zu bytes (curl %d)",
			 c->resp->max_body, (int)rc);
	else if (st == WMS_ERR_TIMEOUT && c->stalled)
		snprintf(msg, sizeof(msg), "stall guard: nothing moved for %llu ms (curl %d)",
			 (unsigned long long)(c->stall_ns / 1000000u), (int)rc);
	else
		snprintf(msg, sizeof(msg), "%s (curl %d)", text, (int)rc);
	/* curl's error buffer may end with a newline. */
	len = strlen(msg);
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
		msg[--len] = '\0';
	scrub_credentials(msg, sizeof(msg), url);
	wms_transport_fail(err, st, delivery, "%s", msg);
	if (err) {
		err->curl_code = (int)rc;
		if (http_status > 0)
			err->http_status = http_status;
	}
	return st;
}

/* ---- the send call ----------------------------------------------------- */

#define SETOPT(opt, val)                                   \
	do {                                               \
		rc = curl_easy_setopt(h, opt, val);        \
		if (rc != CURLE_OK)                        \
			goto setopt_failed;                \
	} while (0)

static wms_status curl_send(wms_transport *self, const wms_http_request *req,
			    wms_http_response *resp, wms_error *err)
{
	struct curl_transport *t = (struct curl_transport *)self;
	struct curl_slist *headers = NULL;
	struct call c;
	char errbuf[CURL_ERROR_SIZE];
	CURL *h = NULL;
	CURLcode rc = CURLE_OK;
	wms_status st = WMS_OK;
	long connect_ms, total_ms, stall_s, http_status = 0;
	uint32_t stall_ms;

	if (!t || !req || !resp)
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "transport, request and response are required");
	if (!req->url || !req->url[0])
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request has no URL");
	if (!req->content_type || !req->content_type[0])
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request has no content type");
	if (!req->body && req->body_len)
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request body is NULL with a non-zero length");
	if ((uint64_t)req->body_len > (uint64_t)INT64_MAX)
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "request body too large");
	if (has_crlf(req->url) || has_crlf(req->content_type) || has_crlf(req->soap_action) ||
	    has_crlf(req->user_agent))
		return wms_transport_fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					  "URL or header value contains CR or LF");

	memset(&c, 0, sizeof(c));
	c.resp = resp;
	errbuf[0] = '\0';
	wms_http_response_clear(resp);

	/* Headers. Content-Length comes from POSTFIELDSIZE_LARGE: never chunked. */
	st = add_header(&headers, "Content-Type: ", req->content_type, "");
	if (st == WMS_OK && req->soap_version == WMS_SOAP_11)
		st = add_header(&headers, "SOAPAction: \"",
				req->soap_action ? req->soap_action : "", "\"");
	if (st == WMS_OK)
		st = add_header(&headers, "Expect:", "", "");
	if (st == WMS_OK)
		st = add_header(&headers, "Accept: ", "text/xml, application/soap+xml", "");
	if (st != WMS_OK) {
		wms_transport_fail(err, st, WMS_DELIVERY_NOT_SENT, "cannot build request headers");
		goto done;
	}

	h = pool_take(t);
	if (!h) {
		st = wms_transport_fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT,
					"cannot create a libcurl handle");
		goto done;
	}

	/* A value of 0 must never reach curl (it means "no timeout" there). */
	connect_ms = req->connect_timeout_ms ? (long)req->connect_timeout_ms
					     : (long)WMS_DEFAULT_CONNECT_TIMEOUT_MS;
	total_ms = req->timeout_ms ? (long)req->timeout_ms : (long)WMS_DEFAULT_TIMEOUT_MS;
	stall_ms = req->stall_timeout_ms ? req->stall_timeout_ms : WMS_DEFAULT_STALL_TIMEOUT_MS;
	stall_s = (long)((stall_ms + 999u) / 1000u);
	if (stall_s < 1)
		stall_s = 1;
	c.h = h;
	c.stall_ns = (uint64_t)stall_ms * 1000000u;

	SETOPT(CURLOPT_SHARE, t->share);
	SETOPT(CURLOPT_URL, req->url);
#if LIBCURL_VERSION_NUM >= 0x075500
	SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
#else
	SETOPT(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	SETOPT(CURLOPT_FOLLOWLOCATION, 0L);
	SETOPT(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SETOPT(CURLOPT_NOSIGNAL, 1L);
	SETOPT(CURLOPT_MAXCONNECTS, 1L);
	SETOPT(CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	SETOPT(CURLOPT_TIMEOUT_MS, total_ms);
	SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
	SETOPT(CURLOPT_LOW_SPEED_TIME, stall_s);
	SETOPT(CURLOPT_SSL_VERIFYPEER, 1L);
	SETOPT(CURLOPT_SSL_VERIFYHOST, 2L);
	if (req->ca_file)
		SETOPT(CURLOPT_CAINFO, req->ca_file);
	if (req->ca_path)
		SETOPT(CURLOPT_CAPATH, req->ca_path);
	if (req->user_agent)
		SETOPT(CURLOPT_USERAGENT, req->user_agent);
	SETOPT(CURLOPT_HTTPHEADER, headers);
	SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
	/* Never NULL: a NULL POSTFIELDS makes curl read the body from stdin. */
	SETOPT(CURLOPT_POSTFIELDS, req->body ? req->body : "");
	SETOPT(CURLOPT_WRITEFUNCTION, on_body);
	SETOPT(CURLOPT_WRITEDATA, &c);
	SETOPT(CURLOPT_HEADERFUNCTION, on_header);
	SETOPT(CURLOPT_HEADERDATA, &c);
	SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
	SETOPT(CURLOPT_XFERINFODATA, &c);
	SETOPT(CURLOPT_NOPROGRESS, 0L);
	SETOPT(CURLOPT_ERRORBUFFER, errbuf);

	c.last_move_ns = wms__now_ns();
	rc = curl_easy_perform(h);
	if (curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http_status) != CURLE_OK)
		http_status = 0;
	resp->status = http_status;
	if (rc == CURLE_OK) {
		st = WMS_OK;
		goto done;
	}
	st = fail_curl(err, rc, request_fully_sent(h, req->body_len), &c, errbuf, req->url,
		       http_status);
	goto done;

setopt_failed:
	st = fail_curl(err, rc, 0, &c, NULL, req->url, 0);
done:
	if (h)
		pool_give(t, h);
	curl_slist_free_all(headers);
	return st;
}

#undef SETOPT

/* ---- lifetime ------------------------------------------------------------ */

static void curl_transport_free(wms_transport *self)
{
	struct curl_transport *t = (struct curl_transport *)self;
	size_t i;
	if (!t)
		return;
	/* Every handle must leave the share before the share can go. */
	for (i = 0; i < t->idle_count; i++)
		curl_easy_cleanup(t->idle[i]);
	t->idle_count = 0;
	if (t->share)
		curl_share_cleanup(t->share);
	if (t->share_locks_ready)
		for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
			pthread_mutex_destroy(&t->share_locks[i]);
	if (t->pool_lock_ready)
		pthread_mutex_destroy(&t->pool_lock);
	wms__free(t);
}

wms_status wms_curl_transport_new(wms_transport **out)
{
	struct curl_transport *t = NULL;
	wms_status st = WMS_OK;
	size_t i;

	if (!out)
		return WMS_ERR_INVALID_ARG;
	*out = NULL;
	if (pthread_once(&global_once, global_init) != 0 || global_rc != CURLE_OK)
		return WMS_ERR_INTERNAL;

	t = wms__calloc(1, sizeof(*t));
	if (!t)
		return WMS_ERR_NOMEM;
	t->parent.version = WMS_TRANSPORT_VERSION;
	t->parent.send = curl_send;
	t->parent.free = curl_transport_free;

	if (pthread_mutex_init(&t->pool_lock, NULL) != 0) {
		st = WMS_ERR_INTERNAL;
		goto done;
	}
	t->pool_lock_ready = 1;
	for (i = 0; i < CURL_LOCK_DATA_LAST; i++) {
		if (pthread_mutex_init(&t->share_locks[i], NULL) != 0) {
			while (i--)
				pthread_mutex_destroy(&t->share_locks[i]);
			st = WMS_ERR_INTERNAL;
			goto done;
		}
	}
	t->share_locks_ready = 1;

	t->share = curl_share_init();
	if (!t->share) {
		st = WMS_ERR_NOMEM;
		goto done;
	}
	if (curl_share_setopt(t->share, CURLSHOPT_USERDATA, (void *)t) != CURLSHE_OK ||
	    curl_share_setopt(t->share, CURLSHOPT_LOCKFUNC, share_lock) != CURLSHE_OK ||
	    curl_share_setopt(t->share, CURLSHOPT_UNLOCKFUNC, share_unlock) != CURLSHE_OK ||
	    curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
	    curl_share_setopt(t->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) !=
		    CURLSHE_OK) {
		st = WMS_ERR_INTERNAL;
		goto done;
	}
	*out = &t->parent;
	t = NULL;
done:
	if (t)
		curl_transport_free(&t->parent);
	return st;
}
