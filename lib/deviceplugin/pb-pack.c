/* SPDX-License-Identifier: Apache-2.0 */
#include "deviceplugin/pb-pack.h"

#include <errno.h>
#include <stdlib.h>

int dp_pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len)
{
        size_t len = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = malloc(len ?: 1);
        if (!buf)
                return -ENOMEM;
        protobuf_c_message_pack(m, buf);
        *ret = buf;
        *ret_len = len;
        return 0;
}

int dp_pack_reply(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len, struct grpc_status *st)
{
        if (dp_pack(m, ret, ret_len) < 0)
                return grpc_fail(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory");
        return GRPC_STATUS_OK;
}
