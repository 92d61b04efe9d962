package pipeline

import "errors"

var (
	// ErrInvalidOptions is returned by New when the options are unusable.
	ErrInvalidOptions = errors.New("pipeline: invalid options")
	// ErrRunning is returned by Run when the pipeline already runs.
	ErrRunning = errors.New("pipeline: already running")
	// ErrNoSuchStage is returned when a stage name is not one this pipeline runs.
	ErrNoSuchStage = errors.New("pipeline: no such stage")
	// ErrNotRunning is returned when a stage's processor is not running.
	ErrNotRunning = errors.New("pipeline: stage not running")
)
