package kafka

import "log/slog"

// ErrorLog logs a client's repeated errors (a fetch refused at every poll,
// a write refused for every record) at warning level once per change of
// error, not once per occurrence. It is not safe for concurrent use: give
// each poll loop or promise path its own.
type ErrorLog struct{ last string }

// Note logs err about topic and partition p under msg, unless the last
// error noted was the same.
func (e *ErrorLog) Note(log *slog.Logger, msg, topic string, p int32, err error) {
	if s := err.Error(); s != e.last {
		e.last = s
		log.Warn(msg, "topic", topic, "partition", p, "err", err)
	}
}
