/* The WMS operations (wsdl/warehouse.wsdl), one table for the builder and
 * the parser: each one's name, SOAP action, request and response elements
 * and SOAP 1.2 content type. */
#include "soap/soap.h"

#define OP(name)                                                                              \
	{ name, WMS__NS "/" name, name "Request", name "Response",                            \
	  "application/soap+xml; charset=utf-8; action=\"" WMS__NS "/" name "\"" }

static const wms__op_info ops[WMS__OP_COUNT] = {
	[WMS__OP_SUBMIT_ORDER] = OP("SubmitOrder"),
	[WMS__OP_GET_ORDER_STATUS] = OP("GetOrderStatus"),
	[WMS__OP_CANCEL_ORDER] = OP("CancelOrder"),
	[WMS__OP_GET_STOCK_LEVEL] = OP("GetStockLevel"),
};

static const wms__op_info none = { "", "", "", "", "" };

const wms__op_info *wms__op_get(wms__op op)
{
	return (int)op >= 0 && op < WMS__OP_COUNT ? &ops[op] : &none;
}

const char *wms__op_name(wms__op op)
{
	return wms__op_get(op)->name;
}

const char *wms__op_action(wms__op op)
{
	return wms__op_get(op)->action;
}

const char *wms__op_content_type(wms__op op, wms_soap_version v)
{
	if ((int)op < 0 || op >= WMS__OP_COUNT)
		return "";
	return v == WMS_SOAP_12 ? ops[op].content_type_12 : "text/xml; charset=utf-8";
}
