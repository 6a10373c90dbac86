package compare

// DefaultMinEffect is the minimum effect a comparison of metric counts
// when it asks for none of its own: what the server's badge judges the
// change it stored after upload by (Judge).
func DefaultMinEffect(metric string) float64 {
	if metric == MetricBPB {
		return DefaultMinEffectBPB
	}
	return DefaultMinEffectAccuracy
}
