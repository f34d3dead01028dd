/* Runs the README's wms_call example (readme_snippet.sh) once against the
 * endpoint given: it is built with every build so that it cannot rot. */
#include <stdio.h>
#include <wms/wms.h>

void readme_snippet(wms_client *client);

int main(int argc, char **argv)
{
	wms_client_options o = WMS_CLIENT_OPTIONS_INIT;
	wms_client *client;
	wms_error err;

	o.endpoint = argc > 1 ? argv[1] : "http://127.0.0.1:8080/wms";
	if (wms_client_new(&client, &o, &err) != WMS_OK)
		return fprintf(stderr, "client: %s\n", err.message), 2;
	readme_snippet(client);
	wms_client_free(client);
	return 0;
}
