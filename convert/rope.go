package convert

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ropeParams is what transformers 5's rope_parameters say of plain RoPE
// (it writes them in place of rope_theta, rope_scaling and GPT-NeoX's
// rotary_pct on every save). Zero: not given.
type ropeParams struct {
	theta, partial float64
}

// readRopeParameters reads the config's rope_parameters, allowed only as
// the default, unscaled rope; partialOK says whether the architecture turns
// part of each head (partial_rotary_factor other than 1).
func readRopeParameters(r *ConfigReader, partialOK bool) ropeParams {
	raw := r.Raw("rope_parameters")
	if raw == nil {
		return ropeParams{}
	}
	return r.ropeDict("rope_parameters", raw, partialOK)
}

// PlainRope reads one rope_parameters dict of transformers 5 (name is its
// path in config.json, for errors) that must be the default, unscaled
// rope turning whole heads. It returns rope_theta and whether the dict
// sets it; anything else is r's error, naming the key.
func (r *ConfigReader) PlainRope(name string, raw json.RawMessage) (theta float64, ok bool) {
	p := r.ropeDict(name, raw, false)
	return p.theta, p.theta > 0
}

// ropeDict is the one reader of a rope_parameters dict: rope_type (or its
// older name type) "default", a positive rope_theta, partial_rotary_factor
// 1 (or in (0, 1) when partialOK); any other key or value is r's error.
func (r *ConfigReader) ropeDict(name string, raw json.RawMessage, partialOK bool) ropeParams {
	var p ropeParams
	var rp map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rp); err != nil {
		r.Fail(fmt.Errorf("config.json: %s: %w", name, err))
		return p
	}
	for _, k := range slices.Sorted(maps.Keys(rp)) {
		v := strings.Join(strings.Fields(string(rp[k])), "")
		var x float64
		isNum := json.Unmarshal(rp[k], &x) == nil
		switch {
		case (k == "rope_type" || k == "type") && v == `"default"`:
		case k == "rope_theta" && isNum && x > 0:
			p.theta = x
		case k == "rope_theta":
			r.Fail(fmt.Errorf("config.json: %s.rope_theta = %s is not a positive number", name, v))
			return ropeParams{}
		case k == "partial_rotary_factor" && isNum && x == 1:
			p.partial = x
		case k == "partial_rotary_factor" && isNum && partialOK && x > 0 && x < 1:
			p.partial = x
		default:
			r.Fail(fmt.Errorf("config.json: %s.%s = %s is not supported by the converter (only the default, unscaled rope: rope_type \"default\" and rope_theta)", name, k, v))
			return ropeParams{}
		}
	}
	return p
}

// ropeOverride returns the rope_parameters value v for a setting the
// config may also give under an older key (from names it, "" when none,
// old its value): they must agree.
func ropeOverride(r *ConfigReader, name string, v float64, from string, old float64) float64 {
	if v == 0 {
		return old
	}
	if from != "" && v != old {
		r.Fail(fmt.Errorf("config.json: rope_parameters.%s %v differs from %s %v", name, v, from, old))
	}
	return v
}
