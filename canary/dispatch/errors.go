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

// ErrACL is wrapped when ZooKeeper refuses to change a target document:
// only the operator identity may.
var ErrACL = errors.New("dispatch: ZooKeeper refused the change (dark targets are writable only by the operator identity: pass --auth user:password)")
