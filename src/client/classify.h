/* The default classification (client/classify.c), reachable from tests. */
#ifndef WMS_CLIENT_CLASSIFY_H
#define WMS_CLIENT_CLASSIFY_H

#include "wms/breaker.h"
#include "wms/errors.h"

/* The default error filter: how a finished call counts for the breaker.
 * *record = 0 when the call says nothing at all (our own error): the permit
 * is handed back instead of recorded. */
wms_outcome wms__default_outcome(const wms_error *err, int *record);

#endif
