package agenttemplate

// Finding codes of document 2 ("Template validation codes"). None aborts validation: every
// applicable finding is collected. Error-severity codes refuse an import; warnings do not.
const (
	CodeParseError                   = "PARSE_ERROR"
	CodeEmptyPayload                 = "EMPTY_PAYLOAD"
	CodeIDRequired                   = "ID_REQUIRED"
	CodeIDInvalid                    = "ID_INVALID"
	CodeIDPattern                    = "ID_PATTERN"
	CodeNameRequired                 = "NAME_REQUIRED"
	CodeNameInvalid                  = "NAME_INVALID"
	CodeVersionRequired              = "VERSION_REQUIRED"
	CodeVersionInvalid               = "VERSION_INVALID"
	CodeVersionPattern               = "VERSION_PATTERN"
	CodeAgentRequired                = "AGENT_REQUIRED"
	CodeMaxStepsRange                = "MAX_STEPS_RANGE"
	CodeToolsNotList                 = "TOOLS_NOT_LIST"
	CodeToolClassRequired            = "TOOL_CLASS_REQUIRED"
	CodeToolClassDuplicate           = "TOOL_CLASS_DUPLICATE"
	CodeToolEnabledRequired          = "TOOL_ENABLED_REQUIRED"
	CodeOperationsNotList            = "OPERATIONS_NOT_LIST"
	CodeOperationNotObject           = "OPERATION_NOT_OBJECT"
	CodeOperationNameRequired        = "OPERATION_NAME_REQUIRED"
	CodeAutoApproveType              = "AUTO_APPROVE_TYPE"
	CodeOperationEnabledType         = "OPERATION_ENABLED_TYPE"
	CodeSettingsUnknownKey           = "SETTINGS_UNKNOWN_KEY"
	CodeSettingsPasswordKeyForbidden = "SETTINGS_PASSWORD_KEY_FORBIDDEN"
	CodeSettingsInvalidValueType     = "SETTINGS_INVALID_VALUE_TYPE"
	CodeRequiredPluginsNotList       = "REQUIRED_PLUGINS_NOT_LIST"
	CodeRequiredPluginsInvalid       = "REQUIRED_PLUGINS_INVALID"
	CodeMetadataNotObject            = "METADATA_NOT_OBJECT"
	CodeMetadataIconType             = "METADATA_ICON_TYPE"
	CodeUnknownTopLevelKey           = "UNKNOWN_TOP_LEVEL_KEY"
	CodeUnknownAgentKey              = "UNKNOWN_AGENT_KEY"
	CodeUnknownMetadataKey           = "UNKNOWN_METADATA_KEY"
	CodeApprovalPolicyInvalid        = "APPROVAL_POLICY_INVALID"

	CodeSystemPromptMissing     = "SYSTEM_PROMPT_MISSING"
	CodeOperationUnknown        = "OPERATION_UNKNOWN"
	CodeSkillMissing            = "SKILL_MISSING"
	CodeMetadataCategoryUnknown = "METADATA_CATEGORY_UNKNOWN"
	CodeNamespaceMismatch       = "NAMESPACE_MISMATCH"
	CodePluginMissing           = "PLUGIN_MISSING"
	CodeToolPluginMissing       = "TOOL_PLUGIN_MISSING"
	CodeToolNeedsConfiguration  = "TOOL_NEEDS_CONFIGURATION"
)

// Rule breaks that document 2 gives no code of their own, and the code reported for them (the
// closest one), so that everything the JSON schema refuses yields at least one error:
//
//	rule break                                                      code
//	--------------------------------------------------------------  -------------------------
//	root is not an object/mapping; duplicate key; YAML tag, merge   PARSE_ERROR
//	  key or number with no JSON equivalent; several YAML
//	  documents; nesting deeper than 64; more than 262144 values;
//	  input larger than 1 MiB
//	id: "" or longer than 130 characters                            ID_INVALID
//	name: "" or longer than 200 characters                          NAME_INVALID
//	description not a string or longer than 1000 characters         NAME_INVALID
//	$schema not a string or longer than 2048 characters             UNKNOWN_TOP_LEVEL_KEY
//	agent not an object                                             AGENT_REQUIRED
//	agent.description (2000), system_prompt, notes (200000) not a   AGENT_REQUIRED
//	  string or too long; allow_followup not a boolean
//	max_steps not an integer (10.0 counts as one)                   MAX_STEPS_RANGE
//	retry_after_minutes, max_retries not an integer in 0..2^31-1    MAX_STEPS_RANGE
//	tools[i] not an object; tool_class "" or longer than 200        TOOL_CLASS_REQUIRED
//	tools[i].enabled not a boolean                                  TOOL_ENABLED_REQUIRED
//	tools[i].operations missing                                     OPERATIONS_NOT_LIST
//	operation name not a string, "" or longer than 100              OPERATION_NAME_REQUIRED
//	unknown key in a tools[i] or operations[j] entry                UNKNOWN_AGENT_KEY
//	settings not an object; a number beyond float64 in settings     SETTINGS_INVALID_VALUE_TYPE
//	metadata.category not a string or longer than 64;               METADATA_NOT_OBJECT
//	  archetype, variant_key, palette_key not an allowed value
//	metadata.icon longer than 64                                    METADATA_ICON_TYPE
//
// A JSON null is never a valid value: for a required key it counts as missing (…_REQUIRED),
// for an optional key it is a value of the wrong type.

var errorCodes = []string{
	CodeParseError, CodeEmptyPayload, CodeIDRequired, CodeIDInvalid, CodeIDPattern,
	CodeNameRequired, CodeNameInvalid, CodeVersionRequired, CodeVersionInvalid, CodeVersionPattern,
	CodeAgentRequired, CodeMaxStepsRange, CodeToolsNotList, CodeToolClassRequired,
	CodeToolClassDuplicate, CodeToolEnabledRequired, CodeOperationsNotList, CodeOperationNotObject,
	CodeOperationNameRequired, CodeAutoApproveType, CodeOperationEnabledType, CodeSettingsUnknownKey,
	CodeSettingsPasswordKeyForbidden, CodeSettingsInvalidValueType, CodeRequiredPluginsNotList,
	CodeRequiredPluginsInvalid, CodeMetadataNotObject, CodeMetadataIconType, CodeUnknownTopLevelKey,
	CodeUnknownAgentKey, CodeUnknownMetadataKey, CodeApprovalPolicyInvalid,
}

var warningCodes = []string{
	CodeSystemPromptMissing, CodeOperationUnknown, CodeSkillMissing, CodeMetadataCategoryUnknown,
	CodeNamespaceMismatch, CodePluginMissing, CodeToolPluginMissing, CodeToolNeedsConfiguration,
}

var severity = func() map[string]bool {
	m := make(map[string]bool, len(errorCodes)+len(warningCodes))
	for _, c := range errorCodes {
		m[c] = true
	}
	for _, c := range warningCodes {
		m[c] = false
	}
	return m
}()

// ErrorCodes lists the error-severity codes in document 2's order (a fresh slice).
func ErrorCodes() []string { return append([]string(nil), errorCodes...) }

// WarningCodes lists the warning-severity codes in document 2's order (a fresh slice).
func WarningCodes() []string { return append([]string(nil), warningCodes...) }

// IsError reports whether code is an error-severity code (one that refuses an import).
func IsError(code string) bool { return severity[code] }

// IsWarning reports whether code is a warning-severity code.
func IsWarning(code string) bool {
	isErr, ok := severity[code]
	return ok && !isErr
}
