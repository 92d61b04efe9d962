package dispatch

import "errors"

// ErrInvalidConfig is wrapped by New when the Config is incomplete or
// inconsistent; the message names the field.
var ErrInvalidConfig = errors.New("dispatch: invalid config")

// ErrCloneID is returned when a clone's campaign or event id would be longer
// than the contract allows (128 bytes); that copy is dropped and counted.
var ErrCloneID = errors.New("dispatch: clone id too long")

// ErrNoTarget is returned by ClearTarget when no such dark target exists.
var ErrNoTarget = errors.New("dispatch: no such dark target")
