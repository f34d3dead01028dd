/*
 * libwms - a C SDK for calling a legacy SOAP warehouse management system
 * through an embedded circuit breaker. Include this header.
 */
#ifndef WMS_WMS_H
#define WMS_WMS_H

#include "common.h"
#include "errors.h"
#include "breaker.h"
#include "shared.h"
#include "client.h"
#include "fixture.h"
#include "health.h"
#include "health_server.h"
#include "call.h"
#include "async.h"
#include "config.h"

#endif
