package server

import "context"

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

// UploadsOf counts the uploads of a token that hold or wait for a place.
func (s *Server) UploadsOf(secret string) int {
	tok, err := s.store.CheckToken(context.Background(), secret)
	if err != nil {
		return 0
	}
	s.uploads.mu.Lock()
	defer s.uploads.mu.Unlock()
	if tp := s.uploads.byToken[tok.ID]; tp != nil {
		return tp.users
	}
	return 0
}

// WaitDeltas waits until every queued change interval is computed.
func (s *Server) WaitDeltas() { s.deltaWG.Wait() }
