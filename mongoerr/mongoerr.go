// Package mongoerr is the MongoDB error vocabulary shared by every layer:
// numeric codes with their code names, and an error type that carries one.
//
// It lives below engine and server so that the engine and its subpackages can
// report the exact code a client expects without importing the server.
package mongoerr

import (
	"errors"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/bson"
)

//go:generate go run gen.go

// Code is a MongoDB error code.
type Code int32

// String returns the code name MongoDB reports as codeName.
func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "Location" + strconv.Itoa(int(c))
}

// Error is an error a client sees as {ok: 0, code, codeName, errmsg}.
type Error struct {
	Code Code
	Msg  string
	// Extra fields appended to the error document or write error entry,
	// such as keyPattern and keyValue of a duplicate key.
	Extra bson.D
	// Labels are the reply's errorLabels, such as RetryableWriteError.
	Labels []string
}

func (e *Error) Error() string { return e.Msg }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{Code: code, Msg: format}
	}
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// CodeOf returns err's code, or InternalError for errors that carry none.
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return e.Code
	}
	return InternalError
}
