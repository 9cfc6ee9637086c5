/* SPDX-License-Identifier: Apache-2.0 */
/* Standard base64 (RFC 4648, with padding) decoding: kubeconfig *-data fields, the kubelet
 * checkpoint's AllocResp (the CNI plugin).
 *
 * Whitespace inside the input is skipped (PEM blobs are sometimes wrapped); anything else
 * outside the alphabet is -EINVAL. The result is NUL-terminated for convenience. */
#pragma once

#include <stddef.h>

int base64_decode(const char *in, char **ret, size_t *ret_len);
