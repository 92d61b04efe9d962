package kafka

import (
	"log/slog"
	"strconv"
)

// ErrorLog logs a client's repeated errors (a fetch refused at every poll,
// a write refused for every record) at warning level once per change of
// error of each topic partition, not once per occurrence. It is not safe
// for concurrent use: give each poll loop or promise path its own, or
// guard it.
type ErrorLog struct{ last map[string]string }

// Note logs err about topic and partition p under msg, unless the last
// error noted for that partition was the same.
func (e *ErrorLog) Note(log *slog.Logger, msg, topic string, p int32, err error) {
	key, s := topic+"/"+strconv.FormatInt(int64(p), 10), err.Error()
	if e.last[key] == s {
		return
	}
	if e.last == nil {
		e.last = make(map[string]string)
	}
	e.last[key] = s
	log.Warn(msg, "topic", topic, "partition", p, "err", err)
}
