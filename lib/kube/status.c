/* SPDX-License-Identifier: Apache-2.0 */
#include "kube/status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kube/http.h"

long kube_status_code(json_t *status)
{
        return (long)json_integer_value(json_object_get(status, "code"));
}

void kube_status_describe_json(long http_status, json_t *status, char *buf, size_t size)
{
        const char *reason = json_string_value(json_object_get(status, "reason"));
        const char *message = json_string_value(json_object_get(status, "message"));
        long code = kube_status_code(status);
        if (code == 0)
                code = http_status;
        if (reason || message)
                snprintf(buf, size, "%ld %s: %s", code, reason ? reason : "",
                         message ? message : "");
        else
                snprintf(buf, size, "HTTP %ld", code);
}

void kube_status_describe(long http_status, const char *body, size_t body_len, char *buf,
                          size_t size)
{
        json_auto_t *status = body ? json_loadb(body, body_len, 0, NULL) : NULL;
        kube_status_describe_json(http_status, status, buf, size);
}

void kube_request_describe(const struct kube_request *req, int error, long http_status,
                           const char *body, size_t body_len, char *buf, size_t size)
{
        if (error < 0 && (http_status == 0 || error == -EFBIG))
                snprintf(buf, size, "%s",
                         *kube_request_error_text(req) ? kube_request_error_text(req)
                                                       : strerror(-error));
        else
                kube_status_describe(http_status, body, body_len, buf, size);
}
