/*
 * libwms - fixture replay and recording: test a service against recorded
 * WMS exchanges.
 *
 * A fixture is one file per exchange (format: docs/fixtures.md):
 * what the request must look like and the reply that was recorded, or a
 * recorded network fault (timeout, connect-timeout, refused, reset,
 * reset-before-send, dns), replayed with the status and delivery the live
 * call had. The replay transport matches each request SOAP-aware: same
 * SOAPAction, and the same XML once canonicalised (namespace prefixes,
 * attribute order, comments and whitespace between elements ignored), with
 * the fixture's named volatile elements masked. A request that matches
 * nothing gets WMS_ERR_FIXTURE (delivery NOT_SENT), a one-line summary on
 * the error message and a unified diff against the nearest fixture through
 * the mismatch callback.
 *
 *     wms_replay_options ro = WMS_REPLAY_OPTIONS_INIT;
 *     const char *files[] = { "tests/data/fixtures/good/submit-order-ok.xml" };
 *     ro.files = files; ro.file_count = 1;
 *     wms_transport *t;
 *     wms_replay_transport_new(&t, &ro, &err);
 *     opts.transport = t;           // the client owns it now
 *
 * The recording transport wraps a real one and writes each exchange as a
 * fixture file, secrets redacted, so the same files can be replayed later.
 */
#ifndef WMS_FIXTURE_H
#define WMS_FIXTURE_H

#include "common.h"
#include "errors.h"
#include "sys/transport.h"

WMS_BEGIN_DECL

/* ---- replay ------------------------------------------------------------ */

typedef enum wms_replay_order {
	/** Any fixture may answer any request; each may be used repeatedly.
	 *  The first matching fixture (in load order) answers. */
	WMS_REPLAY_ANY = 0,
	/** Fixtures answer in the order given, each exactly once: a request
	 *  must match the next unused fixture. */
	WMS_REPLAY_SEQUENCE = 1
} wms_replay_order;

/** Called with the full diff (several lines, '\n'-terminated) when a request
 *  matches no fixture. May be called from several threads at once. */
typedef void (*wms_replay_mismatch_fn)(const char *diff, void *payload);

#define WMS_REPLAY_OPTIONS_VERSION 1

typedef struct wms_replay_options {
	unsigned version;
	/** Fixture files, loaded at creation, in this order. */
	const char *const *files;
	size_t file_count;
	/** And/or: every *.xml file in this directory (dot files skipped), in
	 *  byte-wise name order, loaded after `files`. */
	const char *directory;
	wms_replay_order order;
	/** Extra volatile element names masked in every fixture (local names). */
	const char *const *masked_elements;
	size_t masked_count;
	/** Default (NULL): the diff goes to stderr. */
	wms_replay_mismatch_fn on_mismatch;
	/** Given to on_mismatch. */
	void *payload;
	/** Honour recorded delays by sleeping (bounded by the request's
	 *  timeout_ms). Default 0: replies and faults come at once. Either way a
	 *  recorded delay >= the request's timeout_ms gives WMS_ERR_TIMEOUT. */
	int real_time;
} wms_replay_options;

#define WMS_REPLAY_OPTIONS_INIT { WMS_REPLAY_OPTIONS_VERSION, NULL, 0, NULL, WMS_REPLAY_ANY, \
	NULL, 0, NULL, NULL, 0 }

/** Fill `opts` with the defaults. INVALID_ARG for an unknown version. */
WMS_EXTERN(wms_status) wms_replay_options_init(wms_replay_options *opts, unsigned version);

/** Load the fixtures and build the transport. A fixture that does not load
 *  gives WMS_ERR_FIXTURE naming the file and the problem; no fixture at all
 *  is WMS_ERR_FIXTURE too. Options are copied. */
WMS_EXTERN(wms_status) wms_replay_transport_new(wms_transport **out,
						const wms_replay_options *opts, wms_error *err);

/** How many requests the transport answered (with a reply or a recorded
 *  fault), and how many fixtures were never used (a test usually wants 0).
 *  0 for a transport that is not a replay transport. */
WMS_EXTERN(size_t) wms_replay_transport_hits(wms_transport *transport);
WMS_EXTERN(size_t) wms_replay_transport_unused(wms_transport *transport);

/* ---- recording --------------------------------------------------------- */

/**
 * Names the file for exchange number `index` (1, 2, ...): write a plain file
 * name (no '/', not starting with '.') of at most size-1 bytes into `buf` and
 * return 0; anything else fails the recording with WMS_ERR_FIXTURE. End it in
 * ".xml" for a directory replay to find it. `operation` is never NULL.
 */
typedef int (*wms_record_name_fn)(char *buf, size_t size, unsigned index,
				  const char *operation, void *payload);

#define WMS_RECORD_OPTIONS_VERSION 1

typedef struct wms_record_options {
	unsigned version;
	/** Existing directory the fixture files are written to. Required. */
	const char *directory;
	/** File name prefix: "<prefix><NNN>-<Operation>.xml"; NULL = "". At
	 *  most 128 bytes (more is WMS_ERR_INVALID_ARG). <Operation> is the
	 *  call's operation, or else the SOAPAction's last part, its first 48
	 *  bytes with any byte but [A-Za-z0-9._-] written '_'; the fixture's
	 *  `operation` is the call's whole, or that file-name form. */
	const char *prefix;
	/** Or: name each file with this callback. */
	wms_record_name_fn name;
	/** Given to `name`. */
	void *payload;
	/** Element names (local names) written as <mask> in every fixture. */
	const char *const *volatile_elements;
	size_t volatile_count;
} wms_record_options;

#define WMS_RECORD_OPTIONS_INIT { WMS_RECORD_OPTIONS_VERSION, NULL, NULL, NULL, NULL, NULL, 0 }

/** Fill `opts` with the defaults. INVALID_ARG for an unknown version. */
WMS_EXTERN(wms_status) wms_record_options_init(wms_record_options *opts, unsigned version);

/**
 * Wrap `inner` (owned from now on, also when this fails) in a transport that
 * forwards every request and writes the exchange to opts->directory: the
 * request body with WS-Security Password and Nonce contents replaced by
 * "REDACTED" (and masked), the reply's status, Content-Type and body, or a
 * <fault> for TIMEOUT (timeout or connect-timeout), CONNECT (refused or dns)
 * and TRANSPORT (reset, or reset-before-send when NOT_SENT) failures; other
 * failures are passed on unrecorded. Each file is written atomically
 * (temporary file + rename). When the inner transport succeeded but the file
 * cannot be written, `send` fails with WMS_ERR_FIXTURE (delivery ANSWERED,
 * the reply still filled in).
 */
WMS_EXTERN(wms_status) wms_record_transport_new(wms_transport **out, wms_transport *inner,
						const wms_record_options *opts, wms_error *err);

/** How many fixture files the recording transport has written; 0 for a
 *  transport that is not a recording transport. */
WMS_EXTERN(size_t) wms_record_transport_written(wms_transport *transport);

WMS_END_DECL

#endif
