package core

import "github.com/agentsvc/svc/tools"

// TimeTool tells the current time and formats or converts timestamps between time zones.
type TimeTool struct{}

// Spec declares the tool.
func (TimeTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.TimeTool",
		Name:        "time",
		DisplayName: "Time",
		Description: "Current date and time, and formatting or time-zone conversion of timestamps.",
		Category:    tools.CategoryGeneral,
		Icon:        "clock",
		Base:        &timezoneBase,
		Operations: []tools.Operation{
			op("now", "Return the current date and time in the time zone."),
			op("format", "Format a timestamp in the time zone and layout."),
		},
		Params: []tools.Param{
			{
				Name: "timestamp", Type: tools.TypeString,
				Description: "RFC 3339 timestamp (2025-03-02T16:05:12Z) or Unix seconds as a string.",
				Required:    tools.RequiredFor("format"),
			},
			{
				Name: "layout", Type: tools.TypeString, Description: "Output layout.",
				Enum:    []string{"rfc3339", "date", "time", "datetime", "human", "unix"},
				Default: "rfc3339",
			},
		},
	}
}

// CalculatorTool evaluates arithmetic expressions exactly where a model would guess.
type CalculatorTool struct{}

// Spec declares the tool.
func (CalculatorTool) Spec() tools.Spec {
	return tools.Spec{
		Class:       "core.CalculatorTool",
		Name:        "calculator",
		DisplayName: "Calculator",
		Description: "Evaluate an arithmetic expression: + - * / % ^, parentheses and functions such as sqrt, abs, round, min, max, log, sin, cos.",
		Category:    tools.CategoryData,
		Icon:        "calculator",
		Operations:  []tools.Operation{op("calculate", "Evaluate the expression.")},
		Params: []tools.Param{
			{Name: "expression", Type: tools.TypeString, Description: "The expression, for example (17.5 * 3) / 4."},
			{
				Name: "precision", Type: tools.TypeInteger, Description: "Decimal places of the result.",
				Default: 10, Minimum: tools.Float(0), Maximum: tools.Float(20),
			},
		},
	}
}
