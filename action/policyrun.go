package action

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v66/github"
	"github.com/udgamlabs/udgam-ci/action/failon"
	"github.com/udgamlabs/udgam-ci/report"
)

// gateState is what the Action found of the base's policy for this pull
// request, for the comment, the Check run and the job summary.
type gateState struct {
	path, ref string // the policy file and the base commit it was read at
	found     bool
	noToken   bool     // not read: no github-token
	asked     string   // the policy path the pull request named, when the base lacks it
	changes   []Change // the pull request's settings that differ from the base's
	policy    Policy
	labelBy   string // who applied the accepting label last ("" when it is not on)
	labelRole string // their role
	labelErr  error  // why who applied it could not be checked
	accepted  bool   // the label accepts the looser settings
}

// applyPolicy reads the gate's policy at a pull request's base commit and
// makes the settings that decide the verdict the base's wherever the pull
// request's are looser, unless a maintainer's label accepts them. A push
// runs the base's own workflow, so it is judged by its inputs. A policy
// that exists but cannot be read or parsed fails the run: falling back to
// the pull request's own settings would let it loosen its gate by
// breaking the file. It returns what it found (nil on a push) and the
// settings to judge by.
func (r *actionRun) applyPolicy(ctx context.Context) (*gateState, GateSettings, error) {
	pr := r.in.gate()
	if r.ev.PR == 0 {
		return nil, pr, nil
	}
	st := &gateState{path: r.in.Policy, ref: r.ev.BaseSHA}
	if st.ref == "" {
		st.ref = r.ev.BaseRef // workflow_run of a fork's pull request names no base commit
	}
	if st.ref == "" {
		st.ref = r.ev.Default
	}
	if r.in.GitHubToken == "" {
		st.noToken = true
		return st, pr, nil
	}
	gh, err := NewGitHubClient(r.ev.APIURL, r.in.GitHubToken, r.d.GitHub)
	if err != nil {
		return nil, pr, err
	}
	paths := []string{r.in.Policy}
	if r.in.Policy != DefaultPolicyPath {
		// A pull request must not escape the policy by naming a file the
		// base does not have.
		paths = append(paths, DefaultPolicyPath)
	}
	var b []byte
	for _, p := range paths {
		b, st.found, err = readFileAt(ctx, gh, r.ev.Repo, p, st.ref)
		if err != nil {
			return nil, pr, fmt.Errorf("read the gate's policy %s at the base %s: %w", p, st.ref, err)
		}
		if st.found {
			if p != r.in.Policy {
				st.asked, st.path = r.in.Policy, p
			}
			break
		}
	}
	if !st.found {
		return st, pr, nil
	}
	if st.policy, err = ParsePolicy(st.path, b); err != nil {
		return nil, pr, fmt.Errorf("the gate's policy at the base %s: %w", st.ref, err)
	}
	eff, changes := MergeGate(st.policy.Gate, pr, false)
	st.changes = changes
	if st.looser() && st.policy.AcceptLabel != "" {
		// Unchecked, the label accepts nothing: the base's settings apply.
		if st.labelErr = st.checkLabel(ctx, gh, r.ev.Repo, r.ev.PR); st.labelErr != nil {
			st.accepted = false
			r.warn("label unchecked", "who applied the label %q to #%d: %v; the base's gate applies", st.policy.AcceptLabel, r.ev.PR, st.labelErr)
		}
		if st.accepted {
			eff, _ = MergeGate(st.policy.Gate, pr, true)
		}
	}
	for _, c := range st.changes {
		r.a.Infof("policy %s: %s %q, base %q (%s)", st.path, c.Setting, c.PR, c.Base, st.verb(c))
	}
	return st, eff, nil
}

// checkLabel finds who last applied the accepting label and whether
// their role lets it accept.
func (st *gateState) checkLabel(ctx context.Context, gh *github.Client, repo string, pr int) error {
	by, err := labelActor(ctx, gh, repo, pr, st.policy.AcceptLabel)
	if err != nil || by == "" {
		return err
	}
	st.labelBy = by
	if st.labelRole, err = repoRole(ctx, gh, repo, by); err != nil {
		return err
	}
	st.accepted = slices.Contains(st.policy.AcceptRoles, st.labelRole)
	return nil
}

func (st *gateState) looser() bool {
	return slices.ContainsFunc(st.changes, func(c Change) bool { return c.Looser })
}

func (st *gateState) verb(c Change) string {
	switch {
	case !c.Looser:
		return "stricter, applied"
	case st.accepted:
		return "looser, accepted by label"
	}
	return "looser, the base's applies"
}

// readFileAt reads path at ref through the contents API; found is false
// when ref has no such file.
func readFileAt(ctx context.Context, gh *github.Client, repo, path, ref string) (b []byte, found bool, err error) {
	owner, name, ok := splitRepo(repo)
	if !ok {
		return nil, false, fmt.Errorf("repository %q is not OWNER/NAME", repo)
	}
	file, dir, _, err := gh.Repositories.GetContents(ctx, owner, name, path, &github.RepositoryContentGetOptions{Ref: ref})
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if file == nil || dir != nil || file.GetType() != "file" {
		// A directory, symlink or submodule holds no settings to read.
		return nil, false, fmt.Errorf("%s is not a file", path)
	}
	s, err := file.GetContent()
	if err != nil {
		return nil, false, err
	}
	return []byte(s), true, nil
}

// labelActor is who applied label to issue (or pull request) n, by the
// issue's events; "" when its last labeled or unlabeled event removed it
// or there is none.
func labelActor(ctx context.Context, gh *github.Client, repo string, n int, label string) (string, error) {
	owner, name, ok := splitRepo(repo)
	if !ok {
		return "", fmt.Errorf("repository %q is not OWNER/NAME", repo)
	}
	by := ""
	opts := &github.ListOptions{PerPage: 100}
	for {
		events, resp, err := gh.Issues.ListIssueEvents(ctx, owner, name, n, opts)
		if err != nil {
			return "", fmt.Errorf("list events of %s#%d: %w", repo, n, err)
		}
		for _, e := range events {
			if e.Label == nil || e.Label.GetName() != label {
				continue
			}
			switch e.GetEvent() {
			case "labeled":
				by = e.GetActor().GetLogin()
			case "unlabeled":
				by = ""
			}
		}
		if resp.NextPage == 0 {
			return by, nil
		}
		opts.Page = resp.NextPage
	}
}

// repoRole is user's role on repo (admin, maintain, write, triage, read or
// a custom role's name); "none" when they are no collaborator.
func repoRole(ctx context.Context, gh *github.Client, repo, user string) (string, error) {
	owner, name, _ := splitRepo(repo)
	p, _, err := gh.Repositories.GetPermissionLevel(ctx, owner, name, user)
	var er *github.ErrorResponse
	if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
		return "none", nil
	}
	if err != nil {
		return "", fmt.Errorf("permission of %s on %s: %w", user, repo, err)
	}
	// role_name tells maintain from write and triage from read; the legacy
	// permission does not.
	if role := p.GetRoleName(); role != "" {
		return role, nil
	}
	return p.GetPermission(), nil
}

// lines say, for the comment and the job summary, whose gate judged the
// pull request and what it tried to change.
func (st *gateState) lines() []string {
	if st == nil {
		return nil
	}
	at := report.Code(shortRef(st.ref))
	switch {
	case st.noToken:
		return []string{fmt.Sprintf("**Gate:** this pull request's own settings: without `github-token` the base's policy %s could not be read.", report.Code(st.path))}
	case !st.found:
		return []string{fmt.Sprintf("**Gate:** this pull request's own settings; the base (%s) has no policy file %s.", at, report.Code(st.path))}
	}
	line := fmt.Sprintf("**Gate:** the base's policy, %s at %s.", report.Code(st.path), at)
	if st.asked != "" {
		line += fmt.Sprintf(" This pull request names the policy %s, which the base does not have.", report.Code(st.asked))
	}
	if s := changeList(st.changes, false); s != "" {
		line += " Stricter here, so applied: " + s + "."
	}
	out := []string{line}
	if !st.looser() {
		return out
	}
	who := ""
	if st.labelBy != "" {
		who = fmt.Sprintf("%s (role %s)", report.Code("@"+st.labelBy), report.Code(st.labelRole))
	}
	label := report.Code(st.policy.AcceptLabel)
	roles := strings.Join(st.policy.AcceptRoles, ", ")
	if st.accepted {
		return append(out, fmt.Sprintf("> [!WARNING]\n> Looser than the base's policy, accepted by the label %s applied by %s: %s.",
			label, who, changeList(st.changes, true)))
	}
	msg := fmt.Sprintf("> [!CAUTION]\n> This pull request tried to loosen the gate; the base's settings apply instead: %s.", changeList(st.changes, true))
	switch {
	case st.policy.AcceptLabel == "":
		msg += "\n> The policy names no label that accepts a looser gate: change the policy itself."
	case st.labelErr != nil:
		msg += fmt.Sprintf("\n> Who applied the label %s could not be checked (%s), so it accepts nothing.", label, oneLine(st.labelErr.Error()))
	case st.labelBy != "":
		msg += fmt.Sprintf("\n> The label %s was applied by %s, who is not one of %s: ignored.", label, who, roles)
	default:
		msg += fmt.Sprintf("\n> A maintainer (%s) can accept them with the label %s.", roles, label)
	}
	return append(out, msg)
}

// finding is the policy as the gate reports it: a warning, never a
// failure, since the verdict is the base's (or the accepted) gate's.
func (st *gateState) finding() []failon.Finding {
	if st == nil || !st.looser() {
		return nil
	}
	changes := strings.ReplaceAll(changeList(st.changes, true), "`", "")
	if st.accepted {
		return []failon.Finding{{Title: "udgam-ci: looser gate accepted by label " + st.policy.AcceptLabel,
			Msg: fmt.Sprintf("the label %q applied by %s (%s) accepts settings looser than the base's policy %s: %s", st.policy.AcceptLabel, st.labelBy, st.labelRole, st.path, changes)}}
	}
	msg := fmt.Sprintf("this pull request tried to loosen the gate; the base's policy %s applies instead: %s", st.path, changes)
	if st.labelBy != "" {
		msg += fmt.Sprintf("; the label %q was applied by %s (%s), who is not one of %s: ignored", st.policy.AcceptLabel, st.labelBy, st.labelRole, strings.Join(st.policy.AcceptRoles, ", "))
	}
	return []failon.Finding{{Title: "udgam-ci: looser gate refused", Msg: msg}}
}

// changeList writes the looser (or the stricter) changes: "fail-on
// `never` (base: `regression`); ...".
func changeList(cs []Change, looser bool) string {
	var parts []string
	for _, c := range cs {
		if c.Looser == looser {
			parts = append(parts, fmt.Sprintf("%s %s (base: %s)", c.Setting, orEmpty(c.PR), orEmpty(c.Base)))
		}
	}
	return strings.Join(parts, "; ")
}

func orEmpty(v string) string {
	if v == "" {
		return "(empty)"
	}
	return report.Code(v)
}

func shortRef(ref string) string {
	if len(ref) == 40 {
		return ref[:7]
	}
	return ref
}
