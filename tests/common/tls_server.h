/*
 * An HTTPS/1.1 server on 127.0.0.1 for the TLS tests: the loopback server
 * (loopback.h) over OpenSSL, non-blocking sockets, one thread per
 * connection, every wait a poll() with a timeout and the stop pipe. It records what it received (connections, handshakes, the
 * decrypted bytes, the last request) and writes one canned answer per
 * request, keeping the connection alive. Not a general server: just enough
 * of one to see what libcurl sends, or does not send, over TLS.
 */
#ifndef WMS_TEST_TLS_SERVER_H
#define WMS_TEST_TLS_SERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct ts_options {
	const char *cert_file;      /* PEM, the server's certificate */
	const char *key_file;       /* PEM, its key */
	/* Non-NULL: require a client certificate issued by this CA (PEM); a
	 * missing or untrusted one fails the handshake on the server. */
	const char *client_ca_file;
	int tls12_only;             /* cap the protocol at TLS 1.2 (default: up to 1.3) */
	/* Raw bytes written for each request; copied. NULL: a 200 with
	 * ts_submit_reply. */
	const char *response;
	/* Non-NULL: a request whose Authorization header is not exactly this
	 * gets a 401 instead of `response`. */
	const char *expect_authorization;
	/* Close each connection after one answer (the default answer then says
	 * Connection: close): every call needs a new handshake, which the
	 * client may resume from its session cache. */
	int close_after_reply;
} ts_options;

/* What the server saw, all connections together. */
typedef struct ts_stats {
	unsigned accepted;           /* TCP connections */
	unsigned client_finished;    /* handshakes in which the client sent its Finished */
	unsigned handshakes;         /* handshakes the server completed */
	unsigned resumed;            /* of those, resumed from an earlier session */
	unsigned handshake_failures; /* handshakes the server failed or the client aborted */
	size_t app_bytes;            /* decrypted application bytes (requests) received */
	size_t bytes_after_failure;  /* raw bytes that arrived after a failed handshake */
	unsigned requests;           /* HTTP requests read in full */
	unsigned unauthorized;       /* of those, answered 401 */
	unsigned open;               /* connections still being served */
} ts_stats;

typedef struct ts_request {
	char head[8192];             /* request line and headers, as decrypted */
	char *body;                  /* malloc'd, NUL-terminated; ts_request_free */
	size_t body_len;
	char peer_cn[128];           /* the verified client certificate's CN, or "" */
} ts_request;

typedef struct ts_server ts_server;

/* The SubmitOrder reply for order "ORD-TLS-1" every server sends by default. */
extern const char ts_submit_reply[];

/* Start listening on 127.0.0.1, port chosen by the kernel. NULL on failure
 * (the reason on stderr). */
ts_server *ts_start(const ts_options *o);
/* Stop every thread, close every socket, free. NULL-safe. */
void ts_stop(ts_server *s);

uint16_t ts_port(const ts_server *s);
/* "https://127.0.0.1:PORT/wms" (owned by the server). */
const char *ts_url(const ts_server *s);

void ts_stats_get(ts_server *s, ts_stats *out);
/* Wait until at least `accepted` connections were accepted and at most
 * `open` of them are still being served (a keep-alive connection the client
 * holds), for at most timeout_ms. 1 when that happened. */
int ts_settle(ts_server *s, unsigned accepted, unsigned open, unsigned timeout_ms);

/* Copy of the last request; 0 if none yet. */
int ts_last_request(ts_server *s, ts_request *out);
void ts_request_free(ts_request *r);
/* Number of header lines named `name` (case-insensitive) in r->head; the
 * first one's value (trimmed) goes to val. */
int ts_header(const ts_request *r, const char *name, char *val, size_t size);

/* "Basic " + base64(user ":" pw) into out, the value to give as
 * ts_options.expect_authorization for a client sending that credential.
 * 0 on success; -1 when it does not fit in out (or in 128 bytes of
 * user:pw). */
int ts_basic_authorization(char *out, size_t size, const char *user, const char *pw);

#endif
