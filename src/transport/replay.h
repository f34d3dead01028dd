/* The replay transport's internals reachable from tests (the fuzz harness). */
#ifndef WMS_TRANSPORT_REPLAY_H
#define WMS_TRANSPORT_REPLAY_H

#include "wms/fixture.h"

/*
 * A replay transport over one fixture held in memory: `len` bytes at `data`
 * (need not be NUL-terminated), `name` standing for the file name in
 * messages (NULL: "<memory>"). The same checks, errors and behaviour as
 * wms_replay_transport_new() with that one file; `opts` (NULL: the
 * defaults) gives the order, masks, mismatch callback and real_time, its
 * files and directory are ignored.
 */
wms_status wms__replay_transport_from_memory(wms_transport **out, const char *data, size_t len,
					     const char *name, const wms_replay_options *opts,
					     wms_error *err);

#endif
