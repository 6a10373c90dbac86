// Command udgam-ci scores small language models on Fresh Text and the Probe
// Suite, compares runs, serves the run history and runs as a GitHub Action.
// This package only parses flags and wires packages together.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/udgamlabs/udgam-ci/internal/release"
)

// env is what every command gets from the outside world, so tests can run
// commands with buffers, a fixed clock and a fake environment.
type env struct {
	Ctx    context.Context
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// CPUVariant is the build's CPU target (release.CPUVariant in main),
	// named by version and recorded in run headers.
	CPUVariant string
	// CPUs is the machine's cores (runtime.NumCPU in main): the engine's
	// threads when --threads is 0, and the most it may ask for.
	CPUs int
}

// threads is the engine's thread count for a --threads value: the flag,
// or all of e.CPUs when it is 0.
func (e *env) threads(flag int) int {
	if flag > 0 {
		return flag
	}
	return e.CPUs
}

type command struct {
	summary string
	run     func(e *env, args []string) error
}

// commands maps "verb" or "verb noun" to its implementation. Each lives in
// its own file of this package.
func commands() map[string]command {
	return map[string]command{
		"score fresh":           {"score a model on Fresh Text (bits per byte)", runScoreFresh},
		"score probes":          {"score a model on the Probe Suite (accuracy)", runScoreProbes},
		"compare":               {"compare two runs by paired bootstrap", runCompare},
		"export":                {"write runs or a comparison as a model card's model-index or lm-eval's results JSON", runExport},
		"audit artifact":        {"audit a shipped artifact (a quantized GGUF) against its full-precision reference", runAuditArtifact},
		"audit push":            {"upload artifact audit reports to a report server", runAuditPush},
		"report":                {"print one or more runs' summaries side by side", runReport},
		"merge":                 {"join shard run files into one run", runMerge},
		"probes generate":       {"generate Probe Suite items", runProbesGenerate},
		"fresh build":           {"build a Fresh Text set from Wikipedia and arXiv", runFreshBuild},
		"model fetch":           {"fetch a model from the Hugging Face hub as GGUF", runModelFetch},
		"model convert":         {"convert a local Hugging Face checkpoint to GGUF", runModelConvert},
		"model info":            {"print a GGUF model's metadata", runModelInfo},
		"model check-tokenizer": {"compare the scoring path's token ids with the checkpoint's tokenizer.json", runModelCheckTokenizer},
		"contamination scan":    {"find test items that training data contains", runContaminationScan},
		"contamination merge":   {"join the reports of a scan's shards", runContaminationMerge},
		"serve":                 {"run the report server", runServe},
		"server token create":   {"create an upload token for a repository", runTokenCreate},
		"server token list":     {"list upload tokens", runTokenList},
		"server token revoke":   {"revoke an upload token", runTokenRevoke},
		"push":                  {"upload run files to a report server", runPush},
		"anchor pin":            {"pin a stored run as its model's anchor (drift is measured since it)", runAnchorPin},
		"action":                {"the GitHub Action's entrypoint", runAction},
		"version":               {"print the version", runVersion},
	}
}

func main() {
	// ggml logs its CPU features through slog at start; people reading the
	// output need warnings only, unless they ask (UDGAM_DEBUG=1).
	level := slog.LevelWarn
	if os.Getenv("UDGAM_DEBUG") != "" {
		level = slog.LevelDebug
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	e := &env{Ctx: ctx, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Now: time.Now, CPUVariant: release.CPUVariant, CPUs: runtime.NumCPU()}
	os.Exit(run(e, os.Args[1:]))
}

// run dispatches and maps errors to exit codes: 2 for usage, 1 otherwise.
func run(e *env, args []string) int {
	cmds := commands()
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	name, rest := lookup(cmds, args)
	if name == "" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			usage(e.Stdout, cmds)
			return 0
		}
		usage(e.Stderr, cmds)
		if len(args) > 0 {
			fmt.Fprintf(e.Stderr, "\nunknown command %q\n", strings.Join(args, " "))
		}
		return 2
	}
	err := cmds[name].run(e, rest)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(e.Stderr, "udgam-ci %s: %v\n", name, err)
		return 2
	default:
		var ec exitCode
		if errors.As(err, &ec) {
			return int(ec)
		}
		fmt.Fprintf(e.Stderr, "udgam-ci %s: %v\n", name, err)
		return 1
	}
}

// lookup finds the longest command name that prefixes args.
func lookup(cmds map[string]command, args []string) (string, []string) {
	for n := min(3, len(args)); n > 0; n-- {
		k := strings.Join(args[:n], " ")
		if _, ok := cmds[k]; ok {
			return k, args[n:]
		}
	}
	return "", nil
}

func usage(w io.Writer, cmds map[string]command) {
	fmt.Fprintln(w, "udgam-ci: contamination-free evaluation of small language models as a merge gate")
	fmt.Fprintln(w, "\nUsage: udgam-ci COMMAND [flags]   (udgam-ci COMMAND --help for each)")
	fmt.Fprintln(w, "\nCommands:")
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-21s %s\n", n, cmds[n].summary)
	}
}

// usageError marks a bad command line: exit code 2 after the usage.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// exitCode ends the process with a code and no further message (the command
// has already said why).
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// newFlags makes a FlagSet that prints usage with a description and an
// example, and reports errors instead of exiting.
func newFlags(e *env, name, about, example string) *flag.FlagSet {
	fs := flag.NewFlagSet("udgam-ci "+name, flag.ContinueOnError)
	fs.SetOutput(e.Stderr)
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "udgam-ci %s: %s\n\nExample:\n  %s\n\nFlags:\n", name, about, example)
		printFlags(w, fs)
	}
	return fs
}

// printFlags lists flags as people type them and as the documentation writes
// them, with two dashes (the flag package prints one).
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
		if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "false" {
			line += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintln(w, line)
	})
}

// refuseOverwrite refuses to write over an existing file unless force: the
// one rule of every command that writes a named output.
func refuseOverwrite(path string, force bool) error {
	if _, err := os.Stat(path); err == nil && !force {
		return fmt.Errorf("%s exists (use --force to overwrite it)", path)
	}
	return nil
}

// arguments counts positional arguments for a message: "1 argument".
func arguments(n int) string {
	if n == 1 {
		return "1 argument"
	}
	return fmt.Sprintf("%d arguments", n)
}

// parseFlags parses and turns a parse failure into a usage error (exit 2).
// Flags may come after positional arguments, as people type them.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fs.SetOutput(io.Discard)
				return nil, err
			}
			return nil, usageError{err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// parseOne parses fs and returns the one positional argument the command
// takes; what names it in the usage error.
func parseOne(fs *flag.FlagSet, args []string, what string) (string, error) {
	pos, err := parseFlags(fs, args)
	if err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usageError{errors.New("give one " + what)}
	}
	return pos[0], nil
}
