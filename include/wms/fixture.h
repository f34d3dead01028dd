/*
 * libwms - fixture replay: test a service against recorded WMS exchanges.
 *
 * A fixture is one file per exchange (format: tests/fixtures/README.md):
 * what the request must look like and the reply that was recorded, or a
 * recorded network fault (timeout, refused, reset). The replay transport
 * matches each request SOAP-aware: same SOAPAction, and the same XML once
 * canonicalised (namespace prefixes, attribute order and whitespace between
 * elements ignored), with the fixture's named volatile elements masked.
 * A request that matches nothing gets WMS_ERR_FIXTURE and a diff against the
 * nearest fixture, on the error message and through the mismatch callback.
 *
 *     wms_replay_options ro = WMS_REPLAY_OPTIONS_INIT;
 *     const char *files[] = { "tests/fixtures/submit_ok.xml" };
 *     ro.files = files; ro.file_count = 1;
 *     wms_transport *t;
 *     wms_replay_transport_new(&t, &ro, &err);
 *     opts.transport = t;           // the client owns it now
 */
#ifndef WMS_FIXTURE_H
#define WMS_FIXTURE_H

#include "common.h"
#include "errors.h"
#include "sys/transport.h"

WMS_BEGIN_DECL

typedef enum wms_replay_order {
	/** Any fixture may answer any request; each may be used repeatedly. */
	WMS_REPLAY_ANY = 0,
	/** Fixtures answer in the order given, each exactly once. */
	WMS_REPLAY_SEQUENCE = 1
} wms_replay_order;

/** Called with the full diff when a request matches no fixture. */
typedef void (*wms_replay_mismatch_fn)(const char *diff, void *ctx);

#define WMS_REPLAY_OPTIONS_VERSION 1

typedef struct wms_replay_options {
	unsigned version;
	/** Fixture files, loaded at creation. */
	const char *const *files;
	size_t file_count;
	/** Or: every *.xml file in this directory, in name order. */
	const char *directory;
	wms_replay_order order;
	/** Extra volatile element names masked in every fixture (local names). */
	const char *const *masked_elements;
	size_t masked_count;
	/** Default: the diff goes to stderr. */
	wms_replay_mismatch_fn on_mismatch;
	void *mismatch_ctx;
	/** Honour recorded delays/timeouts by sleeping (default 0: faults are immediate). */
	int real_time;
} wms_replay_options;

#define WMS_REPLAY_OPTIONS_INIT { WMS_REPLAY_OPTIONS_VERSION, NULL, 0, NULL, WMS_REPLAY_ANY, \
	NULL, 0, NULL, NULL, 0 }

/** Load the fixtures and build the transport. A fixture that does not parse
 *  gives WMS_ERR_FIXTURE naming the file and the problem. */
WMS_EXTERN(wms_status) wms_replay_transport_new(wms_transport **out,
						const wms_replay_options *opts, wms_error *err);

/** How many requests the transport answered, and how many fixtures were
 *  never used (a test usually wants 0). */
WMS_EXTERN(size_t) wms_replay_transport_hits(wms_transport *transport);
WMS_EXTERN(size_t) wms_replay_transport_unused(wms_transport *transport);

WMS_END_DECL

#endif
