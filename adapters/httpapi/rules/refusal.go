package rules

import "github.com/pmgate/pmgate/domain/errs"

// Refusal is a refusal of the request naming the offending parameter. Its
// detail is a short fixed sentence written in this package or a
// translation: it never contains client content or secrets. Its param is the
// path of the parameter as the API writes paths, e.g.
// "messages[2].content[0].type"; client-chosen names appear in it only when
// they are plain identifiers. The transport's error writer (adapters/httpapi)
// adds both to the catalog's message, in the shape of the route's API.
type Refusal struct {
	cause  error // carries the code (errs.New)
	param  string
	detail string
}

func (e *Refusal) Error() string  { return e.cause.Error() }
func (e *Refusal) Unwrap() error  { return e.cause }
func (e *Refusal) Param() string  { return e.param }
func (e *Refusal) Detail() string { return e.detail }

// Refuse returns a refusal with code c (invalid_request, unsupported_parameter,
// request_too_large, model_not_found, …) for param.
func Refuse(c errs.Code, param, detail string) error {
	return &Refusal{cause: errs.New(c), param: param, detail: detail}
}

// Invalid is an invalid_request refusal of param.
func Invalid(param, detail string) error { return Refuse(errs.InvalidRequest, param, detail) }

// Unsupported is an unsupported_parameter refusal of param: valid in the
// API, not something the gateway can honour.
func Unsupported(param, detail string) error {
	return Refuse(errs.UnsupportedParameter, param, detail)
}

// At is err (which carries its own code) as a refusal of param with no
// detail of its own: the catalog's message and the param path.
func At(err error, param string) error { return &Refusal{cause: err, param: param} }
