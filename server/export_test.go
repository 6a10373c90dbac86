package server

// HoldCompareSlots takes every bootstrap slot of one kind (custom: other
// resamples or seeds) until the returned function is called, so a test can
// see what waits for them without timing anything.
func (s *Server) HoldCompareSlots(custom bool) func() {
	slots := s.compareSlots
	if custom {
		slots = s.customSlots
	}
	for range cap(slots) {
		slots <- struct{}{}
	}
	return func() {
		for range cap(slots) {
			<-slots
		}
	}
}
