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

// readRopeParameters reads rope_parameters, allowed only as the default,
// unscaled rope; partialOK says whether the architecture turns part of
// each head (partial_rotary_factor other than 1).
func readRopeParameters(r *ConfigReader, partialOK bool) ropeParams {
	var p ropeParams
	raw := r.Raw("rope_parameters")
	if raw == nil {
		return p
	}
	var rp map[string]json.RawMessage
	if err := json.Unmarshal(raw, &rp); err != nil {
		r.Fail(fmt.Errorf("config.json: rope_parameters: %w", err))
		return p
	}
	for _, k := range slices.Sorted(maps.Keys(rp)) {
		v := strings.Join(strings.Fields(string(rp[k])), "")
		var x float64
		isNum := json.Unmarshal(rp[k], &x) == nil
		switch {
		case k == "rope_type" && v == `"default"`:
		case k == "rope_theta" && isNum && x > 0:
			p.theta = x
		case k == "partial_rotary_factor" && isNum && x == 1:
			p.partial = x
		case k == "partial_rotary_factor" && isNum && partialOK && x > 0 && x < 1:
			p.partial = x
		case k == "rope_theta" || k == "partial_rotary_factor":
			r.Fail(fmt.Errorf("config.json: rope_parameters.%s = %s is not supported by the converter", k, v))
			return p
		default:
			r.Fail(fmt.Errorf("config.json: rope_parameters.%s = %s is not supported by the converter (only the default, unscaled rope)", k, v))
			return p
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
