/* The breaker engine's internals for the rest of the library
 * (src/breaker/breaker.c). Never installed. */
#ifndef WMS_BREAKER_BREAKER_INT_H
#define WMS_BREAKER_BREAKER_INT_H

#include "wms/breaker.h"

/* wms_breaker_new, and on WMS_ERR_INVALID_ARG *why (when why is not NULL)
 * names the option at fault and what it takes: static text such as
 * "failure_threshold: must be 1 to 1000000" (NULL for other statuses). */
wms_status wms__breaker_new(wms_breaker **out, const wms_breaker_options *opts, const char **why);

#endif
