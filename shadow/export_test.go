package shadow

// TimerCount returns how many timers the shadow holds, stale ones
// included.
func TimerCount(s *Shadow) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.timers)
}
