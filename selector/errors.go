package selector

import "errors"

var (
	// ErrBadTag is returned by ParseTag for a value that is not a tag of this
	// version. A retriever answers such a request from its own snapshot.
	ErrBadTag = errors.New("selector: bad selection tag")
	// ErrNoTag is returned by TagFromHeader when the request carries no tag.
	ErrNoTag = errors.New("selector: no selection tag")
	// ErrInvalidOption is wrapped by every constructor validation error.
	ErrInvalidOption = errors.New("selector: invalid option")
	// ErrAlreadyRunning is returned by a second call of Run.
	ErrAlreadyRunning = errors.New("selector: Run was already called")
)
