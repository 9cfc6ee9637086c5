/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>

#include "commands.h"

int cmd_version(int argc, char **argv)
{
        printf("sriov-agent %s\n", SRIOV_AGENT_VERSION);
        return 0;
}
