package compare

import "errors"

// ErrConfig is wrapped by every configuration error; the message names the
// key and the fix.
var ErrConfig = errors.New("compare: bad config")

// ErrNotOutput is returned by Engine.ObserveOutput for a topic that is not a
// compared output.
var ErrNotOutput = errors.New("compare: not a compared output")
