package shadow

// TimerCount returns how many events the shadow's stepper holds pending.
func TimerCount(s *Shadow) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st.Pending()
}
