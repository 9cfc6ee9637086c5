/* SPDX-License-Identifier: Apache-2.0 */
/* sriov-agent: entry point and subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "util/log.h"

static const struct command commands[] = {
        { "version", cmd_version, "print the version" },
        { "discover", cmd_discover, "list SR-IOV PFs, VFs and RDMA devices of this node" },
        { "debug", cmd_debug, NULL }, /* hidden: single host operations for tests */
        { "plan", cmd_plan, "show the desired state and the actions, change nothing" },
        { "run", cmd_run, "the node daemon: configure VFs and serve them to the kubelet" },
        { "nad-controller", cmd_nad_controller,
          "render SriovNetworks into NetworkAttachmentDefinitions (one leader)" },
        { "watch", cmd_watch, "print the policy and node changes the agent sees" },
};

static void print_help(FILE *f)
{
        fprintf(f, "Usage: sriov-agent COMMAND [OPTIONS]\n\n"
                   "One node agent for SR-IOV NICs: creates and configures VFs from\n"
                   "SriovNetworkNodePolicy objects and advertises them to the kubelet.\n\n"
                   "Commands:\n");
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (commands[i].summary)
                        fprintf(f, "  %-15s %s\n", commands[i].name, commands[i].summary);
        fprintf(f, "\nRun 'sriov-agent COMMAND --help' for the options of a command.\n");
}

int main(int argc, char **argv)
{
        log_setup(LOG_TARGET_AUTO, LOG_INFO);

        if (argc < 2) {
                print_help(stderr);
                return 1;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
            strcmp(argv[1], "help") == 0) {
                print_help(stdout);
                return 0;
        }
        if (strcmp(argv[1], "--version") == 0)
                return cmd_version(argc - 1, argv + 1);

        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].run(argc - 1, argv + 1);

        fprintf(stderr, "sriov-agent: unknown command '%s'\n\n", argv[1]);
        print_help(stderr);
        return 1;
}
