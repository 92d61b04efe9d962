package core

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig is wrapped by every error of Config.Validate.
var ErrInvalidConfig = errors.New("monitor: invalid config")

// ErrInvalidSelection is returned by StateFromSelection when a persisted
// selection cannot seed the state machine (e.g. it names another service).
var ErrInvalidSelection = errors.New("monitor: selection cannot be restored")

// ErrEmptyHistory is returned by Simulate when the history holds no sample
// of a live pipeline.
var ErrEmptyHistory = errors.New("monitor: history has no live samples")

// ErrShortHistory is returned by Simulate when the history does not cover
// one whole window.
var ErrShortHistory = errors.New("monitor: history is shorter than one window")

// ConfigError is one rejected config key. Key is the YAML path relative to
// Config (e.g. "rules.rate_ratio"); a caller that embeds Config under
// another key can prefix it.
type ConfigError struct {
	Key     string
	Problem string // e.g. "must be in (0,1], got 1.5"
}

func (e *ConfigError) Error() string { return fmt.Sprintf("monitor: %s %s", e.Key, e.Problem) }

// Unwrap makes every ConfigError match ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

func fmtErr(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)
}

// ErrClockBackwards is returned by Engine.Tick when now is not after the
// start of the current window (a clock step back, or a double tick).
var ErrClockBackwards = errors.New("monitor: tick is not after the window start")
