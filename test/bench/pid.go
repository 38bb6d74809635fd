package bench

// PID is the server process's id, for benchmarks that sample its memory and CPU.
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}
