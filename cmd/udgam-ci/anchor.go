package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/udgamlabs/udgam-ci/report"
)

// anchorPinOptions are the inputs of `udgam-ci anchor pin`.
type anchorPinOptions struct {
	Run      string
	MaxDrift *float64
	uploadFlags
}

func runAnchorPin(e *env, args []string) error {
	o, err := parseAnchorPin(e, args)
	if err != nil {
		return err
	}
	return anchorPin(e, o)
}

func parseAnchorPin(e *env, args []string) (anchorPinOptions, error) {
	fs := newFlags(e, "anchor pin RUN_ID",
		"pin a stored run as its model's anchor for its test: every pull request is also compared with it, and the server flags runs whose change since it is beyond --max-drift",
		"udgam-ci anchor pin fresh-1a2b3c --max-drift 0.01 --server https://evals.example.org --token $UDGAM_SERVER_TOKEN")
	var o anchorPinOptions
	o.uploadFlags.add(fs, e, "pin")
	fs.Func("max-drift", "drift budget in the test's unit (bits per byte, accuracy points); 0 or unset for none", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 {
			return fmt.Errorf("%q is not a number >= 0", v)
		}
		o.MaxDrift = &f
		return nil
	})
	pos, err := parseFlags(fs, args)
	if err != nil {
		return o, err
	}
	if err := o.uploadFlags.check(e, pos, "run id"); err != nil {
		return o, err
	}
	if len(pos) != 1 {
		return o, usageError{errors.New("want one run id")}
	}
	o.Run = pos[0]
	return o, nil
}

func anchorPin(e *env, o anchorPinOptions) error {
	a, err := o.client().PinAnchor(e.Ctx, o.Run, o.MaxDrift)
	if err != nil {
		return err
	}
	if o.JSON {
		return json.NewEncoder(e.Stdout).Encode(a)
	}
	budget := "no drift budget"
	if a.MaxDrift != nil && *a.MaxDrift > 0 {
		budget = "drift budget " + report.FormatEffect(a.Run.Score.Metric, *a.MaxDrift)
	}
	fmt.Fprintf(e.Stdout, "pinned run %s as the %s anchor of %s in %s (%s)\n", a.Run.ID, a.Run.Test, a.Run.Model, a.Run.Repo, budget)
	return nil
}
