package compare

// Level is the level of the comparison's headline interval (Result.CI):
// the anytime-valid level of a sequential head run's rule, else the
// bootstrap's confidence. Groups are always at Confidence. Every surface
// labels the headline interval with it, so no label says 95% for an
// interval at another level.
func (c *Comparison) Level() float64 {
	if c.Sequential != nil {
		return c.Sequential.Level
	}
	return c.Confidence
}
