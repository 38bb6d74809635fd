package storage

import (
	"errors"
	"fmt"
)

// ErrorCode classifies a storage failure so the API layer can map it to a Kubernetes Status.
type ErrorCode int

const (
	ErrCodeNotFound ErrorCode = iota + 1
	ErrCodeExists
	ErrCodeConflict         // resourceVersion/uid precondition failed or CAS lost on a precondition
	ErrCodeExpired          // revision compacted (410 Gone)
	ErrCodeTooLargeRevision // a future revision was asked for (504 / retry)
	ErrCodeInvalidObject    // stored bytes do not decode
	ErrCodeUnreachable      // etcd did not answer
	ErrCodeNoSpace          // etcd refuses writes for lack of space (its NOSPACE alarm, or skiff's disk fence)
)

// Error is the one error type storage returns for the conditions above.
type Error struct {
	Code ErrorCode
	Key  string
	// Revision is the revision involved (current revision for TooLarge, compacted revision for Expired).
	Revision int64
	Detail   string
	Err      error

	// Fields below were added after the first contract; zero values keep the old meaning.

	// Requested is the revision the caller asked for (TooLargeRevision, Expired).
	Requested int64
	// Op is the operation that failed (OpGet, OpList, ...), so the API layer can word its Status.
	Op string
	// Precondition marks a Conflict caused by a uid/resourceVersion precondition of a delete (or a
	// uid precondition of an update), which Kubernetes reports with the precondition in the message;
	// false means the object changed under an update (the "object has been modified" conflict).
	Precondition bool
	// Continue, on an Expired error caused by a compacted continue token, is a token that continues
	// the list from the same key at the latest revision (an inconsistent continuation).
	Continue string
}

// Operations named in Error.Op.
const (
	OpGet    = "get"
	OpList   = "list"
	OpWatch  = "watch"
	OpCreate = "create"
	OpUpdate = "update"
	OpDelete = "delete"
)

func (e *Error) Error() string {
	msg := ""
	switch e.Code {
	case ErrCodeNotFound:
		msg = "key not found"
	case ErrCodeExists:
		msg = "key exists"
	case ErrCodeConflict:
		msg = "precondition failed"
	case ErrCodeExpired:
		msg = "revision compacted"
	case ErrCodeTooLargeRevision:
		msg = "revision too large"
	case ErrCodeInvalidObject:
		msg = "invalid stored object"
	case ErrCodeUnreachable:
		msg = "storage unreachable"
	case ErrCodeNoSpace:
		msg = "no space"
	}
	s := fmt.Sprintf("%s: %s", e.Key, msg)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// NewError builds a storage error.
func NewError(code ErrorCode, key string, detail string, err error) *Error {
	return &Error{Code: code, Key: key, Detail: detail, Err: err}
}

func hasCode(err error, code ErrorCode) bool {
	var se *Error
	return errors.As(err, &se) && se.Code == code
}

func IsNotFound(err error) bool         { return hasCode(err, ErrCodeNotFound) }
func IsExists(err error) bool           { return hasCode(err, ErrCodeExists) }
func IsConflict(err error) bool         { return hasCode(err, ErrCodeConflict) }
func IsExpired(err error) bool          { return hasCode(err, ErrCodeExpired) }
func IsTooLargeRevision(err error) bool { return hasCode(err, ErrCodeTooLargeRevision) }
func IsInvalidObject(err error) bool    { return hasCode(err, ErrCodeInvalidObject) }
func IsNoSpace(err error) bool          { return hasCode(err, ErrCodeNoSpace) }
func IsUnreachable(err error) bool      { return hasCode(err, ErrCodeUnreachable) }

// DetailContinueExpired is the Detail of an Expired list error whose continue token is too old and
// for which no inconsistent continuation could be offered.
const DetailContinueExpired = "continue token expired"
