/* The libcurl transport's insides shared by its two files: curl.c (the
 * transfer) and curl_errors.c (what a failure means). */
#ifndef WMS_TRANSPORT_CURL_INT_H
#define WMS_TRANSPORT_CURL_INT_H

#include <pthread.h>
#include <stdint.h>
#include <curl/curl.h>
#include "util/affine.h"
#include "wms/sys/transport.h"

/* What the callbacks of one call share. */
struct call {
	CURL *h;
	wms_http_response *resp;
	/* First failure of a callback (TOO_LARGE, NOMEM), WMS_OK if none. */
	wms_status cb_status;
	/* The current response's headers have ended (its blank line, or body
	 * bytes): later header lines are trailers and must not replace the
	 * Content-Type or the Retry-After. */
	int in_body;
	/* Silence guard (see on_progress). */
	uint64_t stall_ns;
	uint64_t last_move_ns;
	/* "Now" for on_progress's check for silence: the event loop's clock,
	 * read when it last woke, just before it handed libcurl the socket or
	 * the timer (so a transfer does not read the clock at every callback).
	 * Points at the blocking loop's now_ns below (wms__curl_prepare) or
	 * at the async engine's. */
	const uint64_t *clock;
	uint64_t now_ns;
	curl_off_t moved;
	curl_off_t header_bytes;
	int connected;
	int stalled;
	/* Sockets opened, and whether a resend was refused (see on_sockopt). */
	int sockets;
	int resend_refused;
	/* libcurl is about to write this transfer's request (CURLOPT_PREREQ-
	 * FUNCTION): before it, no byte of it can have left, whatever the
	 * handle's getinfo still says of its last transfer. */
	int requesting;
	/* The CURLcode came from the transfer (not from setting it up), and
	 * whether a libcurl allocation failed on this thread meanwhile (seen
	 * only with libcurl routed through the allocation seam). */
	int transferred;
	int lib_alloc_failed;
	/* h carries the URL parsed (CURLOPT_CURLU; see set_url in curl.c). */
	int url_parsed;
};

/* Set `err` for a failed transfer (or setopt): status, delivery, cause,
 * curl_code and a message without the URL's credentials; `sent`: the
 * whole request was written. Returns the status. */
wms_status wms__curl_fail(wms_error *err, CURLcode rc, int sent, const struct call *c,
			  const char *errbuf, const char *url, long http_status);

/* The flags every URL is parsed with (curl_url_set): those libcurl 7.88
 * parses a CURLOPT_URL string with itself (parseurlandfillconn), so that a
 * URL means the same parsed once (set_url in curl.c), checked when a client
 * is made (wms__curl_endpoint_check) and handed over as a string. */
#define WMS__CURL_URL_FLAGS (CURLU_GUESS_SCHEME | CURLU_NON_SUPPORT_SCHEME)

/* Mask url's userinfo (user:password), and its password alone, where msg
 * (NUL-terminated, in a buffer of `size` bytes) carries them as a copy of
 * the URL would: just before an '@' ("***@"). */
void wms__curl_scrub_credentials(char *msg, size_t size, const char *url);

/* Whether libcurl's allocations go through the seam (wms_global_init). */
int wms__curl_routed(void);

/* Sockets libcurl asks us to watch at once: one per connection being set up
 * (two while happy eyeballs races IPv6 and IPv4) plus the resolver's. */
#define WATCH_MAX 8

/* A pooled easy handle, with what it was last configured with. */
struct conn {
	CURL *h;
	CURLM *m; /* h's own multi handle: its connection cache and event loop */
	/* What libcurl wants watched (CURLMOPT_SOCKETFUNCTION) ... */
	curl_socket_t watch_fd[WATCH_MAX];
	int watch_what[WATCH_MAX];
	size_t watch_count;
	/* ... and when it wants to be called back (CURLMOPT_TIMERFUNCTION). */
	int timer_set;
	int timer_moved; /* on_timer ran since we last acted on the timer */
	uint64_t timer_due_ns;
	/* A multi call failed: the multi handle may be dead, do not pool it. */
	int broken;
	/* Between calls, the socket of the connection m's cache keeps (the
	 * last call's, CURLINFO_ACTIVESOCKET), CURL_SOCKET_BAD if none; and
	 * idle_unknown when the cache may hold one we cannot name (see
	 * note_idle). */
	curl_socket_t idle_fd;
	int idle_unknown;
	struct call c;
	char errbuf[CURL_ERROR_SIZE];
	/* errbuf when on_sockopt refused a resend: why the connection died */
	char died[96];
	/* Set once the constant options are on h; 0 forces a full set-up. */
	int configured;
	/* The URL h carries now (NULL: not set), and parsed (see set_url in
	 * curl.c; NULL until first needed, or when it could not be made). */
	char *url;
#if LIBCURL_VERSION_NUM >= 0x073f00
	CURLU *u;
#endif
	int url_parsed; /* h carries u (1) or the string (0) */
	/* the per-call X-Correlation-Id line, linked after the cached headers
	 * for the transfer only (never freed by curl_slist_free_all) */
	struct curl_slist corr_node;
	char corr_line[96];
	struct curl_slist *corr_tail; /* the node corr_node hangs from, NULL: none */
	unsigned long lib_failures;   /* wms__alloc_lib_failures() at the start */
	void *xfer;                   /* an engine's transfer running on it */
	/* The share h is set up with: an engine shard's (its connection cache
	 * and TLS sessions), or NULL: the transport's (DNS and TLS sessions) */
	CURLSH *share;
	long connect_ms;
	long total_ms;
	long stall_s;
	/* The request headers, for (content type, SOAP version, action). */
	struct curl_slist *headers;
	int headers_soap11;
};

_Static_assert(sizeof(((struct conn *)0)->corr_line) >= sizeof("X-Correlation-Id: ") + 60,
	       "corr_line holds the header name and 60 bytes of id");

/* A socket libcurl opened (wms__curl_on_open): its number, and the file it
 * was (libcurl closes some without telling: the number may be another's
 * by the time a forked child looks). */
struct wms__curl_sock {
	curl_socket_t fd;
	unsigned long long dev, ino;
};

struct curl_transport {
	wms_transport parent;
	/* What every handle is set up with (copies; NULL: libcurl's default). */
	char *user_agent;
	char *ca_file;
	char *ca_path;
	char *client_cert;
	char *client_key;
	char *pinned_public_key;
	char *http_username;
	char *http_password; /* wiped when the transport goes */
	CURLSH *share;
	pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
	int share_locks_ready;
	pthread_mutex_t pool_lock;
	int pool_lock_ready;
	wms__affine_slot *idle; /* thread-affine (util/affine.h) */
	size_t idle_max;
	size_t idle_count;
	/* The sockets libcurl opened for this transport, its blocking calls'
	 * and its async engines', and has not closed (wms__curl_on_open and
	 * wms__curl_socket_closed), for a child forked since to let go of
	 * without touching the parent's connections. */
	pthread_mutex_t socks_lock;
	int socks_lock_ready;
	struct wms__curl_sock *socks;
	size_t socks_count, socks_cap;
	unsigned long fork_gen; /* the process it was made in (util/fork.h) */
	int socks_forgotten;
};


/* ---- what curl_async.c takes from curl.c -------------------------------- */

/* A handle with no multi of its own (m NULL: an engine's multi runs it). */
struct conn *wms__curl_conn_new(int own_multi);
void wms__curl_conn_free(struct conn *k);
/* curl_async.c's engine */
const struct wms__engine_ops *wms__curl_engine(void);
/* The sockets (curl.c): every handle opens its sockets through curl.c's
 * on_open (CURLOPT_OPENSOCKETFUNCTION, data: the transport), and whatever
 * closes one (CURLOPT_CLOSESOCKETFUNCTION, curl_async.c's let_go for those
 * libcurl closes without the callback) calls wms__curl_socket_closed. In a
 * child forked since the transport was made, wms__curl_forget_sockets
 * points every one of them still open, and still the socket it was, at
 * /dev/null (once; later calls do nothing) before libcurl lets go. */
void wms__curl_socket_closed(struct curl_transport *t, curl_socket_t fd);
void wms__curl_forget_sockets(struct curl_transport *t);
/* What send checks before it takes a handle. */
wms_status wms__curl_check_request(const wms_http_request *req, wms_error *err);
/* k set up to carry req into resp (cleared): options, headers, the
 * correlation header linked. Not WMS_OK: err set, nothing linked. */
wms_status wms__curl_prepare(struct curl_transport *t, struct conn *k,
			     const wms_http_request *req, wms_http_response *resp, wms_error *err);
/* After k's transfer ended with rc: the correlation header unlinked,
 * resp->status, and err for a failure. The transfer's status. */
wms_status wms__curl_finish(struct conn *k, const wms_http_request *req, CURLcode rc,
			    wms_http_response *resp, wms_error *err);

#endif
