package runfile

import (
	"regexp"
	"strings"
)

// The identifier rules every layer shares: the hub client, the Action's
// inputs, the reports and the report server all call these, so a revision
// or repository accepted in one place is accepted in all of them.
var (
	commitRE  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	hubRepoRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// GitHub allows a name to start with a dot or dash (".github") and
	// bounds both halves; the hub does neither, hence two rules.
	gitRepoRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}/[A-Za-z0-9._-]{1,100}$`)
)

// IsCommit reports whether s is a full 40-hex lowercase commit id, the only
// form of a pinned revision (git's and the Hugging Face hub's alike; a git
// blob id has the same form).
func IsCommit(s string) bool { return commitRE.MatchString(s) }

// IsHubRepo reports whether s is a Hugging Face repository id, OWNER/NAME,
// each half starting with a letter or digit.
func IsHubRepo(s string) bool { return hubRepoRE.MatchString(s) && !strings.Contains(s, "..") }

// IsGitRepo reports whether s is a GitHub repository id, OWNER/NAME: the
// training repository as Git.Repo holds it, and the repository the Action
// comments on.
func IsGitRepo(s string) bool { return gitRepoRE.MatchString(s) && !strings.Contains(s, "..") }
