/* SPDX-License-Identifier: Apache-2.0 */
/* The parsers of kernel netlink answers added for RDMA isolation and InfiniBand: nldev's
 * SYS_GET and GET replies (host_rdma_parse_sys_reply, host_rdma_parse_device_reply) and the
 * VF list of an RTM_NEWLINK with the VFs' GUIDs (host_netlink_parse_vf_list). A driver or a
 * kernel of another version may answer with attributes we do not expect: no answer may crash
 * the agent or hand out a device name that is not a C string.
 * Input: byte 0 picks the message type, the rest is the message's payload after the netlink
 * header (whose length is set to fit, as the kernel's would). */
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <rdma/rdma_netlink.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-common.h"
#include "host/netlink-link.h"
#include "host/rdma-netlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > 65536)
                return 0;
        static const uint16_t types[] = {
                RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET),
                RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
                RTM_NEWLINK,
        };
        const uint16_t type = types[data[0] % 3];
        const size_t payload = size - 1;
        struct nlmsghdr *h = calloc(1, NLMSG_HDRLEN + NLMSG_ALIGN(payload));
        if (!h)
                return 0;
        h->nlmsg_len = (uint32_t)(NLMSG_HDRLEN + payload);
        h->nlmsg_type = type;
        memcpy((char *)h + NLMSG_HDRLEN, data + 1, payload);

        enum host_rdma_netns_mode mode;
        if (host_rdma_parse_sys_reply(h, &mode) == 0 && mode != HOST_RDMA_NETNS_SHARED &&
            mode != HOST_RDMA_NETNS_EXCLUSIVE)
                abort();
        struct host_rdma_link link;
        if (host_rdma_parse_device_reply(h, &link) == 0 &&
            (!link.name[0] || strnlen(link.name, sizeof(link.name)) == sizeof(link.name) ||
             strnlen(link.protocol, sizeof(link.protocol)) == sizeof(link.protocol)))
                abort();
        struct netlink_vf_info *vfs = NULL;
        size_t n = 0;
        if (host_netlink_parse_vf_list(h, &vfs, &n) == 0)
                free(vfs);
        free(h);
        return 0;
}
