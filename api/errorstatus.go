package api

import (
	"net/http"

	"github.com/agentsvc/svc/gen"
	"github.com/agentsvc/svc/internal/vocab/svcerr"
)

// errorStatus is the one map from an error category to an HTTP status and envelope code (the
// server's error responses, the per-item errors of a batch and the protocol endpoints all read
// it through Classify).
var errorStatus = []struct {
	kind   error
	status int
	code   gen.ErrorCode
}{
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
	{svcerr.ErrBudgetExceeded, http.StatusTooManyRequests, gen.ErrorCodeBUDGETEXCEEDED},
	{svcerr.ErrSkillsMissing, http.StatusInternalServerError, gen.ErrorCodeTOOLSRECOMMENDSSKILLSMISSING},
	{svcerr.ErrNotImplemented, http.StatusNotImplemented, gen.ErrorCodeNOTIMPLEMENTED},
	{svcerr.ErrUnavailable, http.StatusServiceUnavailable, gen.ErrorCodeSERVICEUNAVAILABLE},
}

// Classify maps a categorised error (svcerr) to its HTTP status, envelope code and the message
// the caller may see; ok is false for an error outside every category (an internal one).
func Classify(err error) (status int, code gen.ErrorCode, msg string, ok bool) {
	msg, kind, ok := svcerr.Public(err)
	if !ok {
		return 0, "", "", false
	}
	for _, e := range errorStatus {
		if kind == e.kind {
			return e.status, e.code, msg, true
		}
	}
	return 0, "", "", false
}

// publicError is the envelope code and message of a categorised err (Classify); an
// uncategorised one is INTERNAL "internal error" (its text may hold what a caller must not
// see) and ok is false. The protocol endpoints (MCP tool errors, A2A error data) read it.
func publicError(err error) (code gen.ErrorCode, msg string, ok bool) {
	if _, code, msg, ok := Classify(err); ok {
		return code, msg, true
	}
	return gen.ErrorCodeINTERNAL, "internal error", false
}
