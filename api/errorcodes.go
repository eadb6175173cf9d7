package api

import (
	"net/http"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// ErrorCategory maps one error category to its HTTP status and envelope code.
type ErrorCategory struct {
	Kind   error
	Status int
	Code   gen.ErrorCode
}

// ErrorCategories is the one map from an error category to an HTTP status and envelope code:
// the server's envelope and the protocol endpoints (MCP tool errors, A2A error data) read it.
var ErrorCategories = []ErrorCategory{
	{svcerr.ErrBadRequest, http.StatusBadRequest, gen.ErrorCodeBADREQUEST},
	{svcerr.ErrUnauthenticated, http.StatusUnauthorized, gen.ErrorCodeUNAUTHENTICATED},
	{svcerr.ErrCSRF, http.StatusForbidden, gen.ErrorCodeCSRFTOKENINVALID},
	{svcerr.ErrForbidden, http.StatusForbidden, gen.ErrorCodeFORBIDDEN},
	{svcerr.ErrNotFound, http.StatusNotFound, gen.ErrorCodeNOTFOUND},
	{svcerr.ErrAgentAPIDisabled, http.StatusNotFound, gen.ErrorCodeAGENTAPIDISABLED},
	{svcerr.ErrMethodNotAllowed, http.StatusMethodNotAllowed, gen.ErrorCodeMETHODNOTALLOWED},
	{svcerr.ErrInvalidState, http.StatusConflict, gen.ErrorCodeINVALIDSTATE},
	{svcerr.ErrConflict, http.StatusConflict, gen.ErrorCodeCONFLICT},
	{svcerr.ErrTooLarge, http.StatusRequestEntityTooLarge, gen.ErrorCodePAYLOADTOOLARGE},
	{svcerr.ErrUnsupportedMediaType, http.StatusUnsupportedMediaType, gen.ErrorCodeUNSUPPORTEDMEDIATYPE},
	{svcerr.ErrInvalid, http.StatusUnprocessableEntity, gen.ErrorCodeVALIDATIONERROR},
	{svcerr.ErrRateLimited, http.StatusTooManyRequests, gen.ErrorCodeTOOMANYREQUESTS},
	{svcerr.ErrSkillsMissing, http.StatusInternalServerError, gen.ErrorCodeTOOLSRECOMMENDSSKILLSMISSING},
	{svcerr.ErrNotImplemented, http.StatusNotImplemented, gen.ErrorCodeNOTIMPLEMENTED},
	{svcerr.ErrUnavailable, http.StatusServiceUnavailable, gen.ErrorCodeSERVICEUNAVAILABLE},
}

// publicError is the envelope code and message of a categorised err; an uncategorised one is
// INTERNAL "internal error" (its text may hold what a caller must not see) and ok is false.
func publicError(err error) (code gen.ErrorCode, msg string, ok bool) {
	if msg, kind, ok := svcerr.Public(err); ok {
		for _, e := range ErrorCategories {
			if kind == e.Kind {
				return e.Code, msg, true
			}
		}
	}
	return gen.ErrorCodeINTERNAL, "internal error", false
}
