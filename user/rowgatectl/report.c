// SPDX-License-Identifier: GPL-2.0
/* What every rowgatectl command reads: the options (ctl_cfg, set by
 * main.c), and how a failure or a JSON value is reported. */
#include <stdio.h>
#include <stdlib.h>

#include "rowgatectl.h"

struct ctl_config ctl_cfg;

/* One line: JSON on stdout in --json mode, a sentence on stderr otherwise. */
int ctl_fail(const char *msg)
{
	if (ctl_cfg.json) {
		json_t *obj = json_pack("{s:s}", "error", msg);
		char *text = obj ? json_dumps(obj, JSON_COMPACT) : NULL;

		if (text)
			printf("%s\n", text);
		free(text);
		json_decref(obj);
	} else {
		pr_err("%s", msg);
	}
	return EXIT_FAILURE;
}

void ctl_print_json(const json_t *value)
{
	char *text = json_dumps(value, JSON_COMPACT);

	if (text)
		printf("%s\n", text);
	free(text);
}
