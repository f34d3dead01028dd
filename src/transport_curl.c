/* placeholder until implemented */
typedef int wms__placeholder_transport_curl;
