package schedule

import (
	"strings"

	"github.com/agentsvc/svc/internal/domain/agent"
	"github.com/agentsvc/svc/internal/vocab/fieldcheck"
	"github.com/agentsvc/svc/internal/vocab/limits"
	"github.com/agentsvc/svc/store"
)

// CheckTemplateFields applies the field rules of a prompt template (the contract's lengths,
// which the columns share): a name that is not blank, a template text, at most
// limits.PromptVariables variables with distinct non-empty keys, max_steps as an
// agent's (agent.CheckMaxSteps). The service calls it before the store, so a refused write
// writes nothing. Errors: ErrInvalid naming the field.
func CheckTemplateFields(f store.PromptTemplateFields) error {
	if strings.TrimSpace(f.Name) == "" {
		return fieldcheck.Invalidf("name is required")
	}
	if err := fieldcheck.Text("name", f.Name, limits.PromptTemplateNameLen); err != nil {
		return err
	}
	if err := fieldcheck.Text("description", f.Description, limits.PromptTemplateDescriptionLen); err != nil {
		return err
	}
	if f.Template == "" {
		return fieldcheck.Invalidf("template is required")
	}
	if err := fieldcheck.Text("template", f.Template, limits.PromptTemplateTextLen); err != nil {
		return err
	}
	if len(f.Variables) > limits.PromptVariables {
		return fieldcheck.Invalidf("variables: at most %d", limits.PromptVariables)
	}
	seen := map[string]bool{}
	for _, v := range f.Variables {
		if v.Key == "" {
			return fieldcheck.Invalidf("variables: key is required")
		}
		if err := fieldcheck.Text("variables key", v.Key, limits.PromptVariableKeyLen); err != nil {
			return err
		}
		if seen[v.Key] {
			return fieldcheck.Invalidf("variables: duplicate key %q", v.Key)
		}
		seen[v.Key] = true
		if v.DefaultValue != nil {
			if err := fieldcheck.Text("variables default_value", *v.DefaultValue, limits.PromptVariableValueLen); err != nil {
				return err
			}
		}
	}
	if f.MaxSteps != nil {
		return agent.CheckMaxSteps("max_steps", *f.MaxSteps)
	}
	return nil
}

// CheckRunFields applies the field rules of a scheduled run (the contract's lengths, which the
// columns share): a name that is not blank, the prompt within a task prompt's length, the cron
// expression, time zone and at most limits.PromptVariables variables within theirs,
// max_steps_override as an agent's max_steps (agent.CheckMaxSteps). The one-of, cron and time
// zone rules are prepareRun's. Errors: ErrInvalid naming the field.
func CheckRunFields(f store.ScheduledRunFields) error {
	if strings.TrimSpace(f.Name) == "" {
		return fieldcheck.Invalidf("name is required")
	}
	if err := fieldcheck.Text("name", f.Name, limits.ScheduleNameLen); err != nil {
		return err
	}
	if f.Prompt != nil {
		if err := fieldcheck.Text("prompt", *f.Prompt, store.MaxTaskPromptLen); err != nil {
			return err
		}
	}
	if f.CronExpression != nil {
		if err := fieldcheck.Text("cron_expression", *f.CronExpression, limits.CronLen); err != nil {
			return err
		}
	}
	if err := fieldcheck.Text("timezone", f.Timezone, limits.TimezoneLen); err != nil {
		return err
	}
	if len(f.Variables) > limits.PromptVariables {
		return fieldcheck.Invalidf("variables: at most %d", limits.PromptVariables)
	}
	for k, v := range f.Variables {
		if err := fieldcheck.Text("variables key", k, limits.PromptVariableKeyLen); err != nil {
			return err
		}
		if err := fieldcheck.Text("variables value", v, limits.PromptVariableValueLen); err != nil {
			return err
		}
	}
	if f.MaxStepsOverride != nil {
		return agent.CheckMaxSteps("max_steps_override", *f.MaxStepsOverride)
	}
	return nil
}
