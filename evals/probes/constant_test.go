package probes

import (
	"math"
	"testing"
)

func TestConstantBest(t *testing.T) {
	t.Parallel()
	items := []Item{
		{Type: "syllogism", Answer: "Yes", Choices: []string{"No", "Yes"}},
		{Type: "syllogism", Answer: "Yes", Choices: []string{"Yes", "No"}},
		{Type: "syllogism", Answer: "No", Choices: []string{"Yes", "No"}},
		{Type: "add", Answer: "7", Choices: []string{"7", "8", "9", "17"}},
		{Type: "add", Answer: "9", Choices: []string{"8", "9", "10", "19"}},
		{Type: "add", Answer: "12", Choices: []string{"11", "12", "13", "22"}},
	}
	got := ConstantBest(items)
	// "Yes" is right twice of three, though at no one position; in add
	// position 1 is right twice, and no text repeats.
	for typ, want := range map[string]float64{"syllogism": 200.0 / 3, "add": 200.0 / 3} {
		if math.Abs(got[typ]-want) > 1e-9 {
			t.Errorf("%s: %v, want %v", typ, got[typ], want)
		}
	}
	core, err := Core()
	if err != nil {
		t.Fatal(err)
	}
	// The finding: always answering "Yes" scores 66.7% on syllogism.
	if c := ConstantBest(core.Items)["syllogism"]; math.Abs(c-200.0/3) > 1e-9 {
		t.Errorf("core syllogism constant best %v, want 66.7", c)
	}
}
