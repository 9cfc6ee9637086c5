/* SPDX-License-Identifier: Apache-2.0 */
/* The sriov-agent subcommands. Each lives in its own agent/cmd-*.c, parses its own options
 * (getopt_long, argv[0] is the subcommand name) and returns the process exit code. */
#pragma once

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary; /* one line for `sriov-agent --help`; NULL hides the command */
};

int cmd_version(int argc, char **argv);
int cmd_discover(int argc, char **argv);
int cmd_debug(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_nad_controller(int argc, char **argv);
int cmd_watch(int argc, char **argv);
