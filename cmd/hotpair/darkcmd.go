package main

import "context"

// darkCommands are the subcommands of `hotpair dark`, one file per group:
// dark_dispatch.go (the dispatcher daemon), dark_target.go (set, clear,
// status of the target documents), dark_compare.go (the comparator daemon
// and the verdict). A new group adds its entries here.
var darkCommands = []command{
	{"dispatch", "copy one live side's input to the dark targets (--config FILE)", runDarkDispatch},
	{"set", "create or change a dark target (writes /hotpair/dark/NAME as the operator)", runDarkSet},
	{"clear", "delete a dark target: the dispatchers stop feeding it within a second", runDarkClear},
	{"status", "every dark target: its document, fraction, instance counts, why it is paused", runDarkStatus},
	{"compare", "run the dark comparator (--config FILE): dark targets against live, with the noise floor", runDarkCompare},
	{"report", "the dark canary's verdict (exit 0 pass, 1 regression, 3 insufficient data)", runDarkReport},
}

// runDark is "hotpair dark SUBCOMMAND".
func runDark(ctx context.Context, a *app, args []string) int {
	return runSubcommand(ctx, a, "dark", "docs/dark.md", darkCommands, args)
}
