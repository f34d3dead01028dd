/*
 * A scriptable HTTP/1.1 server on 127.0.0.1 for the transport tests: plain
 * POSIX sockets and pthreads, one thread per connection. Every request gets
 * the same scripted answer. Not a general HTTP server: just enough of one to
 * read what libcurl sends and misbehave on purpose. Its serve loop is also
 * the TLS server's (tls_server.h), through the I/O seam of loopback_io.h.
 */
#ifndef WMS_TEST_LOOPBACK_H
#define WMS_TEST_LOOPBACK_H

#include <stddef.h>
#include <stdint.h>

/* What happens to a connection after the scripted answer has been written. */
typedef enum lb_after {
	LB_KEEP = 0,  /* keep-alive: read the next request */
	LB_CLOSE,     /* orderly close (FIN) */
	LB_RESET,     /* SO_LINGER 0 close: the peer sees a reset */
	LB_HOLD       /* write nothing more, wait until the client goes away */
} lb_after;

typedef struct lb_script {
	/* Raw bytes written for each request (status line, headers, body as is).
	 * NULL: answer nothing. Copied by lb_start. */
	const char *response;
	size_t response_len;      /* 0: strlen(response) */
	unsigned delay_ms;        /* wait this long before answering */
	unsigned trickle_ms;      /* > 0: write the response one byte every trickle_ms */
	size_t trickle_from;      /* ... after writing its first trickle_from bytes at once */
	size_t trickle_until;     /* ... and the rest from this offset at once (0: to the end) */
	lb_after after;
	int no_read;              /* accept, read nothing, answer nothing; hold */
	int raw;                  /* not HTTP: read what arrives once, then answer */
	int drop_reused;          /* a 2nd+ request on one connection: read, closed unanswered */
	int drop_reset;           /* ... and close with a reset (SO_LINGER 0) instead of a FIN */
	int close_unread;         /* a 2nd+ request on one connection: close as soon as it starts to
				   * arrive, unread (the kernel answers with a reset) */
	unsigned idle_close_ms;   /* > 0: close (FIN) a keep-alive connection idle this long */
	/* Written unasked unsolicited_ms after the server's first answer (on that
	 * connection, once per server), e.g. a "408 Request Timeout". Then the
	 * connection is closed (FIN) if unsolicited_close, else it stays open and
	 * requests on it are read and answered as usual. Copied by lb_start. */
	const char *unsolicited;
	unsigned unsolicited_ms;
	int unsolicited_close;
} lb_script;

/* The last request the server read. */
typedef struct lb_request {
	char method[16];
	char target[256];
	char version[16];
	char head[8192];          /* request line and headers, as received */
	char *body;               /* malloc'd, NUL-terminated; free with lb_request_free */
	size_t body_len;
	char peer_cn[128];        /* over TLS, the verified client certificate's CN; else "" */
} lb_request;

typedef struct lb_server lb_server;

/* Start listening on 127.0.0.1, port chosen by the kernel. NULL on failure. */
lb_server *lb_start(const lb_script *script);
/* Stop every thread, close every socket, free. NULL-safe. */
void lb_stop(lb_server *s);

uint16_t lb_port(const lb_server *s);
/* "http://127.0.0.1:PORT/wms" (owned by the server). */
const char *lb_url(const lb_server *s);

unsigned lb_accepted(lb_server *s);   /* connections accepted */
unsigned lb_requests(lb_server *s);   /* requests read in full */
unsigned lb_closed(lb_server *s);     /* connections the server has closed */
/* Wait up to timeout_ms until the unsolicited bytes have been written; 1 if so. */
int lb_wait_unsolicited(lb_server *s, unsigned timeout_ms);
/* Wait up to timeout_ms until lb_closed(s) >= n; 1 if it got there. */
int lb_wait_closed(lb_server *s, unsigned n, unsigned timeout_ms);

/* Hold replies back: the next n requests the server reads, on any of its
 * connections, are answered only once all n have arrived (each then after
 * delay_ms as usual), so that n callers overlap whatever the scheduler does.
 * A request still held after timeout_ms is answered anyway and counted by
 * lb_gate_missed(). Requests past the n go through at once. Call it while
 * no request is in flight. */
void lb_gate(lb_server *s, unsigned n, unsigned timeout_ms);
/* Requests answered because their gate's timeout_ms passed (since lb_start). */
unsigned lb_gate_missed(lb_server *s);

/* Copy of the last request; 0 if none yet. */
int lb_last_request(lb_server *s, lb_request *out);
void lb_request_free(lb_request *r);
/* Number of header lines named `name` (case-insensitive); the first one's
 * value (trimmed) goes to val. */
int lb_header(const lb_request *r, const char *name, char *val, size_t size);

/* An HTTP/1.1 response with Content-Length; malloc'd. content_type may be NULL. */
char *lb_http_response(int status, const char *reason, const char *content_type,
		       const char *body);

/* A blocking TCP connection to 127.0.0.1:port (close-on-exec): the socket,
 * or -1 when it cannot be made. */
int lb_connect(uint16_t port);

/* A port on 127.0.0.1 that was bound and closed again: connecting is refused. */
uint16_t lb_closed_port(void);

/* A listener whose accept queue is full (backlog 0, one connection parked):
 * Linux drops further SYNs, so connecting hangs until the client gives up. */
typedef struct lb_blackhole {
	int listen_fd;
	int parked_fd;
	uint16_t port;
} lb_blackhole;

int lb_blackhole_open(lb_blackhole *b); /* 0 on success */
void lb_blackhole_close(lb_blackhole *b);

/* Monotonic milliseconds. */
uint64_t lb_now_ms(void);

#endif
