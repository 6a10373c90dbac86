package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/udgamlabs/udgam-ci/compare"
	"github.com/udgamlabs/udgam-ci/compare/sequential"
	"github.com/udgamlabs/udgam-ci/evals"
	"github.com/udgamlabs/udgam-ci/runfile"
)

// untilFlags are --until and what a sequential run needs: its baseline,
// budget, level, minimum effect and order.
type untilFlags struct {
	Until    string // "" or "all": every record; "decided": sequential
	Budget   string
	Baseline string
	Level    float64
	// MinEffect is the smallest delta that matters, per test, 0 for none.
	MinEffect compare.MinEffect
	OrderSeed uint64
	// base is the baseline run when the Action hands it over in memory;
	// else --baseline is read.
	base *runfile.Run
}

// newUntilFlags are --until's defaults: every record, and the defaults of
// a sequential run should one be asked for.
func newUntilFlags() untilFlags {
	return untilFlags{Until: "all", Level: compare.DefaultConfidence, MinEffect: compare.NewOptions().MinEffect, OrderSeed: sequential.DefaultSeed}
}

// add registers the flags over u's values, their defaults.
func (u *untilFlags) add(fs *flag.FlagSet, unit string) {
	fs.StringVar(&u.Until, "until", u.Until, "all: score every "+unit+"; decided: score them in a seeded random order and stop once the anytime-valid comparison with --baseline decides (or --budget runs out)")
	fs.StringVar(&u.Budget, "budget", "", "with --until decided: stop after this much scoring time (45m) or this many "+unit+" (400) if undecided")
	fs.StringVar(&u.Baseline, "baseline", "", "with --until decided: the baseline's run file, which scored every "+unit+" of the set")
	fs.Float64Var(&u.Level, "level", u.Level, "with --until decided: level of the anytime-valid interval")
	minEffectFlag(fs, &u.MinEffect, "with --until decided: smallest delta that matters")
	fs.Uint64Var(&u.OrderSeed, "order-seed", u.OrderSeed, "with --until decided: seed of the order (keep it the same for every model)")
}

// minEffectFlag registers --min-effect over *p, which holds each test's
// default until it is given: the threshold itself, in the test's unit, 0
// for none, as the Action's min-effect inputs are (compare and score
// alike). Given, it applies to every test.
func minEffectFlag(fs *flag.FlagSet, p *compare.MinEffect, what string) {
	usage := fmt.Sprintf("%s, in the test's unit, 0 for none (default: %g bpb for fresh text, %g point for probes)",
		what, p.BPB, p.Accuracy)
	fs.Func("min-effect", usage, func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 1) { // NaN too
			return errors.New("want a number, 0 or more")
		}
		*p = compare.MinEffect{BPB: v, Accuracy: v}
		return nil
	})
}

// until builds the sequential part of a run of test; nil for --until all.
func (u *untilFlags) until(test string) (*evals.Until, error) {
	switch u.Until {
	case "", "all":
		if u.Baseline != "" || u.Budget != "" {
			return nil, usageError{errors.New("--baseline and --budget go with --until decided")}
		}
		return nil, nil
	case "decided":
	default:
		return nil, usageError{fmt.Errorf("--until %q: want all or decided", u.Until)}
	}
	if u.Baseline == "" && u.base == nil {
		return nil, usageError{errors.New("--until decided needs --baseline RUN.jsonl: a run of the baseline model over the whole set")}
	}
	records, d, err := evals.ParseBudget(u.Budget)
	if err != nil {
		return nil, usageError{fmt.Errorf("--%w", err)}
	}
	base := u.base
	if base == nil {
		if base, err = runfile.ReadFile(u.Baseline); err != nil {
			return nil, err
		}
		u.base = base
	}
	h, tr, err := compare.StartSequential(base, test, u.OrderSeed, u.Level, u.MinEffect.Of(test), u.Budget)
	if err != nil {
		return nil, fmt.Errorf("--baseline %s: %w", u.Baseline, err)
	}
	return &evals.Until{Header: h, Tracker: tr, MaxRecords: records, MaxDuration: d}, nil
}
