/* Reading the API server's error replies (metav1.Status) for log lines.
 *
 * kube_status_describe() turns a failed response into one readable phrase:
 * "401 Unauthorized: Unauthorized", "404 NotFound: namespaces \"x\" not found", or, for a body
 * that is not a Status, "HTTP 502". Never fails; output is truncated to fit. */
#pragma once

#include <jansson.h>
#include <stddef.h>

struct kube_request;

void kube_status_describe(long http_status, const char *body, size_t body_len, char *buf,
                          size_t size);
/* Same for a Status object already parsed (e.g. a watch ERROR event). */
void kube_status_describe_json(long http_status, json_t *status, char *buf, size_t size);
/* One phrase for a request that failed, inside its on_done: curl's description (or the errno's)
 * for a transport failure or a body over KUBE_MAX_BODY (status 200 then), else
 * kube_status_describe() of the reply. */
void kube_request_describe(const struct kube_request *req, int error, long http_status,
                           const char *body, size_t body_len, char *buf, size_t size);
/* The HTTP-like code of a Status object (its "code" field), 0 if absent. */
long kube_status_code(json_t *status);
