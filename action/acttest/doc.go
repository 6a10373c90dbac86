// Package acttest runs action.yml itself, not only the binary it calls,
// under nektos/act, a runner implementation that executes workflows as
// GitHub's runner does (expressions, composite steps, GITHUB_OUTPUT,
// GITHUB_PATH, the job summary, if: conditions, post steps), on this
// machine with no Docker, against the test servers of action/actiontest
// (GitHub), hub/hubtest (the hub) and `udgam-ci serve`. `make action-e2e`
// installs act and runs it; docs/action.md says what stands in for what.
package acttest
