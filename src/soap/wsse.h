/* WS-Security UsernameToken (soap/wsse.c), for the builder. */
#ifndef WMS_SOAP_WSSE_H
#define WMS_SOAP_WSSE_H

#include <libxml/tree.h>
#include "soap/soap.h"

/* Fill `header` (the envelope's, in namespace `soap`) with a UsernameToken
 * as `w` asks: WMS_OK, NOMEM, or INTERNAL when no random nonce or digest
 * could be made. */
wms_status wms__wsse_add(xmlNodePtr header, xmlNsPtr soap, const wms__wsse *w);

/* `w` (NULL or mode NONE: no header) is complete, and its text is what an
 * envelope can carry: WMS_OK or INVALID_ARG naming what is wrong. */
wms_status wms__wsse_check(const wms__wsse *w, wms_error *err);

#endif
