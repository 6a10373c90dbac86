package convert

import "testing"

// Lfm2Config's own arithmetic for the MLP width (LFM2-350M's numbers).
func TestLfm2FeedForward(t *testing.T) {
	t.Parallel()
	tests := []struct {
		config string
		want   int
	}{
		{`{"block_ff_dim": 6656, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": 1.0, "block_multiple_of": 256}`, 4608},
		{`{"intermediate_size": 6656}`, 4608}, // the defaults adjust
		{`{"block_ff_dim": 6656, "block_auto_adjust_ff_dim": true, "block_ffn_dim_multiplier": null}`, 4437},
		{`{"intermediate_size": 96, "block_auto_adjust_ff_dim": false}`, 96},
	}
	for _, tt := range tests {
		cfg, err := ParseConfig([]byte(tt.config))
		if err != nil {
			t.Fatal(err)
		}
		r := cfg.Reader()
		if got := lfm2FeedForward(r); got != tt.want || r.Err() != nil {
			t.Errorf("%s: %d, %v; want %d", tt.config, got, r.Err(), tt.want)
		}
	}
}
