package convert

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ConfigReader reads config.json fields for an architecture and keeps the
// first error, so a converter reads every field it needs and checks once:
//
//	r := cfg.Reader()
//	hidden := r.Int("hidden_size")
//	eps := r.FloatOr("rms_norm_eps", 1e-6)
//	if err := r.Err(); err != nil { ... }
type ConfigReader struct {
	c   Config
	err error
}

// Reader starts reading c.
func (c Config) Reader() *ConfigReader { return &ConfigReader{c: c} }

// Err is the first error met, naming its key.
func (r *ConfigReader) Err() error { return r.err }

// Fail records err unless an earlier error is kept.
func (r *ConfigReader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Int reads a required positive integer.
func (r *ConfigReader) Int(key string) int {
	if !r.c.Has(key) {
		r.Fail(fmt.Errorf("config.json: %s is required", key))
		return 0
	}
	v := r.IntOr(key, 0)
	if v <= 0 && r.err == nil {
		r.Fail(fmt.Errorf("config.json: %s is %d; want a positive integer", key, v))
	}
	return v
}

// IntOr reads an integer, def when absent or null.
func (r *ConfigReader) IntOr(key string, def int) int {
	var f float64 = float64(def)
	if err := r.c.Get(key, &f); err != nil {
		r.Fail(err)
		return def
	}
	if f != float64(int(f)) {
		r.Fail(fmt.Errorf("config.json: %s is %v; want an integer", key, f))
		return def
	}
	return int(f)
}

// FloatOr reads a number, def when absent or null.
func (r *ConfigReader) FloatOr(key string, def float64) float64 { return readOr(r, key, def) }

// BoolOr reads a boolean, def when absent or null.
func (r *ConfigReader) BoolOr(key string, def bool) bool { return readOr(r, key, def) }

// StringOr reads a string, def when absent or null.
func (r *ConfigReader) StringOr(key string, def string) string { return readOr(r, key, def) }

// readOr reads key into a T, def when absent or null; a value of another
// type is r's error, and def is returned.
func readOr[T any](r *ConfigReader, key string, def T) T {
	v := def
	if err := r.c.Get(key, &v); err != nil {
		r.Fail(err)
		return def
	}
	return v
}

// Refuse fails when key is set (not null) to anything but one of the
// allowed JSON values (such as `false` or `"silu"`): an option that changes
// the model's math and that the converter does not implement must not be
// dropped silently.
func (r *ConfigReader) Refuse(key string, allowed ...string) {
	if !r.c.Has(key) {
		return
	}
	raw := strings.Join(strings.Fields(string(r.c.raw[key])), "")
	for _, a := range allowed {
		if raw == a {
			return
		}
	}
	r.Fail(fmt.Errorf("config.json: %s = %s is not supported by the converter%s", key, raw, allowedList(allowed)))
}

func allowedList(allowed []string) string {
	if len(allowed) == 0 {
		return " (only absent or null)"
	}
	return " (supported: " + strings.Join(allowed, ", ") + ", or absent)"
}

// Raw returns key's JSON, nil when absent or null.
func (r *ConfigReader) Raw(key string) json.RawMessage {
	if !r.c.Has(key) {
		return nil
	}
	return r.c.raw[key]
}

// LayerTypes reads layer_types: one of allowed for each of the model's
// layers. It returns nil, with no error, when the key is absent or null.
func (r *ConfigReader) LayerTypes(layers int, allowed ...string) []string {
	raw := r.Raw("layer_types")
	if raw == nil {
		return nil
	}
	var types []string
	if err := json.Unmarshal(raw, &types); err != nil {
		r.Fail(fmt.Errorf("config.json: layer_types: %w", err))
		return nil
	}
	if len(types) != layers {
		r.Fail(fmt.Errorf("config.json: layer_types lists %d layers; num_hidden_layers is %d", len(types), layers))
		return nil
	}
	for i, t := range types {
		if !slices.Contains(allowed, t) {
			r.Fail(fmt.Errorf("config.json: layer_types[%d] is %q; want one of %s", i, t, strings.Join(allowed, ", ")))
			return nil
		}
	}
	return types
}
